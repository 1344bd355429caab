"""Where sapo-lint keeps what it computes once and reuses across runs (shellcheck's findings, built verl snapshots),
and when it trusts what it finds there.

Cache keys are content hashes anyone can compute, so a cache is trusted only when it is the user's own, as pip and git
decide: a cache directory owned by another user, or writable by anyone else, is not used at all (nothing is read from
it or written to it; the run computes what it needs). In a trusted directory a file is read only when it is a regular
file (never through a symbolic link: `O_NOFOLLOW`) owned by the user, up to a bound; a write replaces a link instead of
writing through it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sapo_toolkit.atomicio import read_regular, write_atomically


def user_cache_dir() -> Path:
    """`$SAPO_LINT_CACHE_DIR`, else `$XDG_CACHE_HOME/sapo-lint` (an absolute `XDG_CACHE_HOME` only, as the XDG base
    directory specification says), else `~/.cache/sapo-lint`; absolute (a relative `$SAPO_LINT_CACHE_DIR` is taken
    from the working directory sapo-lint started in)."""
    root = os.environ.get("SAPO_LINT_CACHE_DIR")
    if root:
        return Path(os.path.abspath(root))
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "sapo-lint"


def trusted_directory(directory: Path) -> bool:
    """Whether the cache directory `directory` may be used: it and each directory between it and the cache root (the
    root included) are created for the user alone (mode 0700) where missing, and must each be a directory (not a
    link) owned by the user that no one else can write."""
    root = user_cache_dir()
    try:
        below = directory.relative_to(root).parts
        chain = [root, *(root.joinpath(*below[: i + 1]) for i in range(len(below)))]
    except ValueError:  # a cache directory of its own (shellcheck's, given by a caller)
        chain = [directory]
    for d in chain:
        try:
            d.parent.mkdir(parents=True, exist_ok=True)
            d.mkdir(mode=0o700, exist_ok=True)
            info = os.lstat(d)
        except OSError:
            return False
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            return False
    return True


def read_cached(path: Path, limit: int) -> bytes | None:
    """A cache file's bytes, or None: a miss, a directory that is not trusted, a link, not a regular file, another
    user's file, or over `limit` bytes."""
    if not trusted_directory(path.parent):
        return None
    try:
        return read_regular(path, limit, follow_symlinks=False, owner=os.geteuid())
    except OSError:
        return None


def write_cached(path: Path, text: str) -> bool:
    """Write a cache file atomically, replacing a link rather than writing through it; False when the directory is
    not trusted or cannot be written (it is then no cache, not an error)."""
    if not trusted_directory(path.parent):
        return False
    try:
        if os.path.islink(path):
            os.unlink(path)
        write_atomically(path, text)
    except OSError:
        return False
    return True
