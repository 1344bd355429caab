"""Reading files for linting: bounded size, UTF-8 only, never executed."""

from __future__ import annotations

import errno
import stat
from pathlib import Path
from typing import NamedTuple

# One definition, in schemas (the linter imports schemas, never the reverse); re-exported for --fix, convert, caches.
from sapo_toolkit.atomicio import UnreadableError, read_regular, write_atomically

__all__ = ["MAX_BYTES", "TextFile", "UnreadableFile", "read_text", "write_atomically"]

MAX_BYTES = 4 * 1024 * 1024  # far above any real recipe or run script


class TextFile(NamedTuple):
    path: str
    text: str


class UnreadableFile(Exception):
    """A file that cannot be linted as text; the message says why, in one line."""


def is_regular_file(path: Path) -> bool:
    """A regular file (after symlinks): never a FIFO, device or socket, whose reading could block forever."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def read_text(path: Path) -> TextFile:
    """The file's text. Only regular files are read (`read_regular`: checked on the open descriptor), so a FIFO or
    device never hangs a run."""
    try:
        data = read_regular(path, MAX_BYTES)
    except UnreadableError as exc:
        if exc.errno == errno.EFBIG:
            raise UnreadableFile(f"file is over {MAX_BYTES // 2**20} MiB; sapo-lint reads files up to that") from None
        raise UnreadableFile(f"{exc.strerror}; only regular files are read") from None
    except OSError as exc:
        raise UnreadableFile(f"cannot read: {exc.strerror or exc}") from None
    return decode_text(str(path), data)


def decode_text(name: str, data: bytes) -> TextFile:
    """Bytes read from a file (or standard input, `name` standing for it) as its text, on the same terms."""
    if len(data) > MAX_BYTES:  # standard input, or a file that grew while being read
        raise UnreadableFile(f"file is over {MAX_BYTES // 2**20} MiB; sapo-lint reads files up to that")
    if b"\0" in data:
        raise UnreadableFile("binary file (contains NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"not UTF-8 text (invalid byte at offset {exc.start})") from None
    return TextFile(name, text)
