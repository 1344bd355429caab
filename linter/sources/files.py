"""Reading files for linting: bounded size, UTF-8 only, never executed."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple

# One definition, in schemas (the linter imports schemas, never the reverse); re-exported for --fix, convert, caches.
from sapo_toolkit.atomicio import write_atomically

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
    """The file's text. Only regular files are read: the file is opened without blocking and checked on the open
    descriptor (no window between a check and the read), so a FIFO or device never hangs a run."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise UnreadableFile(f"cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile("not a regular file (a FIFO, device or socket); only regular files are read")
        if info.st_size > MAX_BYTES:
            raise UnreadableFile(
                f"file is {info.st_size / 2**20:.1f} MiB; sapo-lint reads files up to {MAX_BYTES // 2**20} MiB"
            )
        data = _read_all(fd, MAX_BYTES + 1)
    except OSError as exc:
        raise UnreadableFile(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
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


def _read_all(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(1 << 20, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
