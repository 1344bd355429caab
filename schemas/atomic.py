"""Atomic file replacement, shared by the linter (`--fix`, `convert`, caches) and the snapshot generator.

It lives in `sapo_toolkit.schemas` because imports flow one way: the linter imports schemas, never the reverse.
Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, content: str | bytes) -> None:
    """Replace the file's content in one step: a crash leaves the old file or the new one, never half of it.

    A symlink is followed: its target is rewritten and the link stays a link. An existing file keeps its mode
    and, where the process may set it, its owner and group; a new one gets the usual mode for the umask. Text is
    written as given (no newline translation). Raises OSError (e.g. an unwritable directory) with nothing left
    behind."""
    import tempfile  # only --fix, convert, plots, caches, run directories and schema builds write files

    target = Path(os.path.realpath(path))
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with (os.fdopen(fd, "wb") if isinstance(content, bytes) else os.fdopen(fd, "w", encoding="utf-8", newline="")) as handle:
            handle.write(content)
        if target.exists():
            info = target.stat()
            mode = info.st_mode & 0o7777
            try:
                os.chown(tmp, info.st_uid, info.st_gid)
            except PermissionError:  # only root (or the owner, for the group) may; the content still lands
                pass
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
