"""Reading files for linting: bounded size, UTF-8 only, never executed."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MAX_BYTES = 4 * 1024 * 1024  # far above any real recipe or run script


@dataclass(frozen=True)
class TextFile:
    path: str
    text: str


class UnreadableFile(Exception):
    """A file that cannot be linted as text; the message says why, in one line."""


def read_text(path: Path) -> TextFile:
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise UnreadableFile(f"file is {size / 2**20:.1f} MiB; sapo-lint reads files up to {MAX_BYTES // 2**20} MiB")
        data = path.read_bytes()
    except OSError as exc:
        raise UnreadableFile(f"cannot read: {exc.strerror or exc}") from None
    if b"\0" in data:
        raise UnreadableFile("binary file (contains NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"not UTF-8 text (invalid byte at offset {exc.start})") from None
    return TextFile(str(path), text)


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
