"""Reading files for linting: bounded size, UTF-8 only, never executed."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import NamedTuple

# One definition, in schemas (the linter imports schemas, never the reverse); re-exported for --fix, convert, caches.
from sapo_toolkit.atomicio import write_atomically

from ..core.files import MAX_BYTES, UnreadableFile, read_bytes

__all__ = ["MAX_BYTES", "TextFile", "UnreadableFile", "read_bytes", "read_text", "write_atomically"]


class TextFile(NamedTuple):
    path: str
    text: str


def is_regular_file(path: Path) -> bool:
    """A regular file (after symlinks): never a FIFO, device or socket, whose reading could block forever."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def read_text(path: Path) -> TextFile:
    """The file's text (`read_bytes`, then UTF-8 without NUL bytes)."""
    return decode_text(str(path), read_bytes(path))


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
