"""Atomic file replacement, shared by the linter (`--fix`, `convert`, caches) and the snapshot generator.

It lives in `sapo_toolkit.schemas` because imports flow one way: the linter imports schemas, never the reverse.
Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, content: str | bytes) -> None:
    """Replace the file's content in one step: a crash leaves the old file or the new one, never half of it.
    An existing file keeps its mode; a new one gets the usual mode for the umask."""
    import tempfile  # only --fix and schema builds write files

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with (os.fdopen(fd, "wb") if isinstance(content, bytes) else os.fdopen(fd, "w", encoding="utf-8", newline="")) as handle:
            handle.write(content)
        if path.exists():
            mode = path.stat().st_mode & 0o7777
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
