"""Safe file I/O, shared by the launcher (run directories, reports), the linter (`--fix`, `convert`, caches) and the
snapshot generator: atomic replacement (`write_atomically`), and the one bounded reader of files that someone else
may have written (`read_regular`: a linted repository's files, its verl tree, caches).

A package of its own at the bottom of the project: it imports nothing else of it (a contract in pyproject.toml), so
every other package may import it. Standard library only.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class UnreadableError(OSError):
    """A file `read_regular` refuses: the message says why, in one line (`strerror`), without the file's content."""


def read_regular(
    path: str | os.PathLike, limit: int, *, follow_symlinks: bool = True, owner: int | None = None
) -> bytes:
    """The bytes of a regular file of at most `limit` bytes. The file is opened without blocking and checked on the
    open descriptor (no window between a check and the read), so a FIFO, device or socket is refused, never waited
    on; `follow_symlinks=False` refuses a symbolic link too (`O_NOFOLLOW`: a planted link cannot redirect the read);
    `owner`: a file another user owns is refused. Raises `UnreadableError` (or the `OSError` of a missing or
    forbidden file)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise UnreadableError(errno.ELOOP, "a symbolic link, not followed", str(path)) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableError(errno.EINVAL, "not a regular file (a FIFO, device or socket)", str(path))
        if owner is not None and info.st_uid != owner:
            raise UnreadableError(errno.EPERM, "owned by another user", str(path))
        if info.st_size > limit:
            raise UnreadableError(errno.EFBIG, f"{info.st_size} bytes, over the bound of {limit}", str(path))
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # grew while being read
            raise UnreadableError(errno.EFBIG, f"over the bound of {limit} bytes", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_atomically(path: Path, content: str | bytes) -> None:
    """Replace the file's content in one step: a crash leaves the old file or the new one, never half of it.

    A symlink is followed: its target is rewritten and the link stays a link. An existing file keeps its mode
    and, where the process may set it, its owner and group; a new one gets the usual mode for the umask. Text is
    written as given (no newline translation), as UTF-8. Only a regular file (or a new one) is replaced: a device,
    FIFO or socket is written in place (`-o /dev/null` leaves /dev/null a device, even as root). Raises OSError
    (an unwritable directory, a directory, a FIFO that no process reads) with nothing left behind."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    target = Path(os.path.realpath(path))
    try:
        info = target.stat()
    except FileNotFoundError:
        info = None
    if info is None or stat.S_ISREG(info.st_mode):
        _replace(target, data, info)
    elif stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    else:
        _write_in_place(target, data, info.st_mode)


def _replace(target: Path, data: bytes, info: os.stat_result | None) -> None:
    import tempfile  # only --fix, convert, plots, caches, run directories and schema builds write files

    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if info is not None:
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


# What open(2)'s ENXIO means for a path that is not a device.
_NOT_OPENED = {stat.S_IFIFO: "a FIFO that no process reads", stat.S_IFSOCK: "a socket, not a file"}


def _write_in_place(target: Path, data: bytes, mode: int) -> None:
    """Write into a device or FIFO, which a replacement would turn into a regular file. Opened without blocking,
    so a FIFO that no process reads is an error, not a hang; then written blocking, as fast as its reader reads."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        why = _NOT_OPENED.get(stat.S_IFMT(mode)) if exc.errno == errno.ENXIO else None
        if why is None:
            raise
        raise OSError(errno.ENXIO, why, str(target)) from None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # replaced by a regular file since the check: never write over it
            raise OSError(errno.EAGAIN, "became a regular file while being written", str(target))
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
