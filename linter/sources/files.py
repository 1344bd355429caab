"""Reading files for linting: bounded size, UTF-8 only, never executed."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

# One definition, in schemas (the linter imports schemas, never the reverse); re-exported for --fix, convert, caches.
from sapo_toolkit.schemas.atomic import write_atomically

__all__ = ["MAX_BYTES", "TextFile", "UnreadableFile", "read_text", "write_atomically"]

MAX_BYTES = 4 * 1024 * 1024  # far above any real recipe or run script


class TextFile(NamedTuple):
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
