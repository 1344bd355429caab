"""Reading a file on behalf of a linted repository: bounded, regular files only, never waited on."""

from __future__ import annotations

import errno
import sys
from pathlib import Path
from types import ModuleType

from sapo_toolkit.atomicio import UnreadableError, read_regular

MAX_BYTES = 4 * 1024 * 1024  # far above any real recipe, run script, module or config file


class UnreadableFile(Exception):
    """A file that cannot be read (or linted as text); the message says why, in one line."""


def read_bytes(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of a file read on behalf of a linted repository (a script, a recipe, a wrapper module, its verl
    tree, a pin, a config). Only regular files of at most `limit` bytes are read (`read_regular`: checked on the open
    descriptor), so a FIFO or device never hangs a run. Raises `UnreadableFile` (one line)."""
    try:
        return read_regular(path, limit)
    except UnreadableError as exc:
        if exc.errno == errno.EFBIG:
            size = f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit} bytes"
            raise UnreadableFile(f"file is over {size}; sapo-lint reads files up to that") from None
        raise UnreadableFile(f"{exc.strerror}; only regular files are read") from None
    except OSError as exc:
        raise UnreadableFile(f"cannot read: {exc.strerror or exc}") from None


def toml_parser() -> ModuleType:
    """The TOML parser (`tomllib`; `tomli` before Python 3.11), imported when a pyproject.toml is read: a lint of files
    outside any project reads none."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    import tomli  # pragma: no cover

    return tomli  # pragma: no cover
