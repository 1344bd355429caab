"""What a Ray job's working directory ships (`--working-dir`): the files git lists (tracked, and untracked but not
ignored) when the directory is in a git repository, else every file; less the default and given excludes. A link
that leads out of the directory (an absolute target, a `..` escape, a chain of links, a linked directory) refuses
the whole directory: shipping it would upload the target's content (Ray follows links when it zips). Links that
stay inside are fine, and so is the directory itself being reached through a link."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from fnmatch import fnmatchcase
from pathlib import Path

from . import git

# Never shipped: Ray's own default excludes (RAY_RUNTIME_ENV_DEFAULT_EXCLUDES in ray_constants.py); `.git` alone
# can exceed the upload limit (https://github.com/ray-project/ray/issues/45602).
DEFAULT_EXCLUDES = (".git", ".venv", "venv", "__pycache__")
NAMED = 5  # escaping links named in the message; the rest are counted


class UnsafeWorkingDir(Exception):
    """The working directory cannot be shipped; the message says why, in one line."""


def shipped_files(root: Path, excludes: Iterable[str]) -> list[str]:
    """The regular files (paths relative to `root`, sorted) that ship from `root`. Exclude patterns are as in
    .gitignore: one without a slash matches a file or directory name at any depth, one with a slash a path
    relative to `root`; a matching directory excludes what is under it. Raises `UnsafeWorkingDir` when `root` is
    not a directory or a link in what ships leads out of it."""
    if not root.is_dir():
        raise UnsafeWorkingDir(f"working directory {root} is not a directory")
    patterns = [p.strip("/") for p in (*DEFAULT_EXCLUDES, *excludes) if p.strip("/")]
    candidates = [rel for rel in _candidates(root) if not _excluded(rel, patterns)]
    inside = os.path.realpath(root)
    escaping = [
        (rel, target)
        for rel, target in zip(candidates, _targets(root, candidates), strict=True)
        if os.path.commonpath([inside, target]) != inside
    ]
    if escaping:
        named = ", ".join(f"{rel} -> {target}" for rel, target in escaping[:NAMED])
        more = f" and {len(escaping) - NAMED} more" if len(escaping) > NAMED else ""
        raise UnsafeWorkingDir(
            f"working directory {root} has links that lead out of it: {named}{more}; remove "
            "them, or exclude them (.gitignore, or an exclude pattern)"
        )
    return [rel for rel in candidates if (root / rel).is_file()]


def _targets(root: Path, candidates: list[str]) -> list[str]:
    """Where each candidate really is (os.path.realpath), each directory resolved once: git lists what its index
    holds, under a directory that has since become a link too."""
    real_dir = functools.cache(lambda parent: os.path.realpath(root / parent))
    targets = []
    for rel in candidates:
        parent, _, name = rel.rpartition("/")
        path = os.path.join(real_dir(parent), name)
        targets.append(os.path.realpath(path) if os.path.islink(path) else path)
    return targets


def _candidates(root: Path) -> list[str]:
    """What git lists in `root` (it lists a linked directory as one entry, never what is under it), else every
    file and every linked directory (which os.walk does not enter)."""
    listed = git.run(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", timeout_s=60)
    if listed is not None:
        return sorted({rel for rel in listed.decode("utf-8", "surrogateescape").split("\0") if rel})
    return sorted(
        str(Path(dirpath, name).relative_to(root))
        for dirpath, dirnames, names in os.walk(root)
        for name in [*names, *(d for d in dirnames if os.path.islink(os.path.join(dirpath, d)))]
    )


def _excluded(rel: str, patterns: list[str]) -> bool:
    parts = rel.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return any(
        any(fnmatchcase(prefix, p) for prefix in prefixes) if "/" in p else any(fnmatchcase(part, p) for part in parts)
        for p in patterns
    )
