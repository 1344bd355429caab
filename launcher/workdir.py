"""What Ray ships from a local directory it uploads (a job's `working_dir`, a `py_modules` directory), decided by
Ray's own rules (ray/_private/runtime_env/packaging.py of Ray 2.60: `_dir_travel`, `get_excludes_from_ignore_files`)
with Ray's own matcher (the gitwildmatch patterns of its vendored pathspec, `ray._private.thirdparty.pathspec`, as
Ray matches them: against the path relative to a pattern's directory, a directory without a trailing slash). Every
file under the directory ships, less:
- Ray's default excludes, `.git`, `.venv`, `venv` and `__pycache__` (`$RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES`,
  comma-separated, replaces them, as in Ray; `.git` alone can exceed the upload limit,
  https://github.com/ray-project/ray/issues/45602);
- the runtime_env's `excludes`, patterns relative to the directory;
- what a `.gitignore` (unless `$RAY_RUNTIME_ENV_IGNORE_GITIGNORE=1`) or `.rayignore` file excludes, its patterns
  relative to the directory holding it, for everything under that directory: inside a git repository or not (Ray
  reads these files itself and never asks git, so a tracked file that a .gitignore matches does not ship either).
A directory that matches is not entered. Ray before 2.60 reads no `.rayignore` and has no default excludes: what
ships here is then a subset of what it would ship. Empty directories, which Ray zips too, do not ship.

Ray follows links when it zips (a linked directory is walked, a linked file's content is read). A link that leads
out of the directory (an absolute target, a `..` escape, a chain of links, a linked directory) refuses the whole
directory: shipping it would upload the target's content; so does a linked directory that holds the link (Ray
would walk it without end). Links that stay inside are followed, and the directory itself may be reached through a
link."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from sapo_toolkit.linter.core.files import UnreadableFile, read_bytes

DEFAULT_EXCLUDES = (".git", ".venv", "venv", "__pycache__")  # RAY_RUNTIME_ENV_DEFAULT_EXCLUDES in ray_constants.py
DEFAULT_EXCLUDES_ENV = "RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES"
IGNORE_GITIGNORE_ENV = "RAY_RUNTIME_ENV_IGNORE_GITIGNORE"
NAMED = 5  # escaping links named in the message; the rest are counted
HOW_TO_EXCLUDE = ".gitignore, .rayignore, or the runtime_env's `excludes`"


class UnsafeWorkingDir(Exception):
    """The directory cannot be shipped; the message says why, in one line."""


def shipped_files(
    root: Path, excludes: Iterable[str], *, label: str = "working directory", environ: Mapping[str, str] = os.environ
) -> list[str]:
    """The files (paths relative to `root`, sorted) that Ray ships from `root` with the runtime_env's `excludes`
    (module docstring). Raises `UnsafeWorkingDir` when `root` is not a directory, cannot be read, or a link in what
    ships leads out of it or loops; `label` names `root` in the message."""
    if not root.is_dir():
        raise UnsafeWorkingDir(f"{label} {root} is not a directory")
    from ray._private.thirdparty.pathspec import PathSpec

    root = Path(os.path.abspath(root))  # as Ray: absolute, links kept
    inside = os.path.realpath(root)
    defaults = environ.get(DEFAULT_EXCLUDES_ENV)
    patterns = [*([p.strip() for p in defaults.split(",")] if defaults is not None else DEFAULT_EXCLUDES), *excludes]
    ignore_files = (".rayignore",) if environ.get(IGNORE_GITIGNORE_ENV) == "1" else (".gitignore", ".rayignore")
    files: list[str] = []
    escaping: list[tuple[str, str]] = []

    def matcher(base: Path, lines: Iterable[str]):
        spec = PathSpec.from_lines("gitwildmatch", lines)
        return lambda path: spec.match_file(os.path.relpath(path, base))

    # Ray's `_dir_travel`, without recursion (a tree 1,000 levels deep is walked like any other): the ignore files of
    # a directory count for it and what is under it; `real` is where a path really is.
    pending: list[tuple[Path, str, list, frozenset[str]]] = [(root, inside, [matcher(root, patterns)], frozenset())]
    while pending:
        path, real, matchers, ancestors = pending.pop()
        matchers = [*matchers, *(_ignore_file(path / name, matcher) for name in ignore_files)]
        matchers = [m for m in matchers if m is not None]
        if any(match(path) for match in matchers):
            continue
        rel = os.path.relpath(path, root)
        if os.path.commonpath([inside, real]) != inside:
            escaping.append((rel, real))
            continue
        if not path.is_dir():
            if path.is_file():
                files.append(rel)
            continue
        if real in ancestors:
            raise UnsafeWorkingDir(
                f"{label} {root} has a link that loops: {rel} -> {real}, a directory holding it; remove it, or "
                f"exclude it ({HOW_TO_EXCLUDE})"
            )
        try:
            children = sorted(path.iterdir())
        except OSError as exc:
            raise UnsafeWorkingDir(f"{label} {root}: cannot read {path}: {exc.strerror or exc}") from None
        for child in reversed(children):  # popped in order
            where = os.path.realpath(child) if child.is_symlink() else os.path.join(real, child.name)
            pending.append((child, where, matchers, ancestors | {real}))

    if escaping:
        named = ", ".join(f"{rel} -> {target}" for rel, target in escaping[:NAMED])
        more = f" and {len(escaping) - NAMED} more" if len(escaping) > NAMED else ""
        raise UnsafeWorkingDir(
            f"{label} {root} has links that lead out of it: {named}{more}; remove them, or exclude them "
            f"({HOW_TO_EXCLUDE})"
        )
    return sorted(files)


def _ignore_file(path: Path, matcher):
    """A matcher for the patterns of the ignore file `path`, relative to its directory; None without one (or for one
    that is not a regular file or over the linter's file bound: never waited on)."""
    try:
        text = read_bytes(path).decode("utf-8", "surrogateescape") if path.is_file() else None
    except (OSError, UnreadableFile):
        return None
    return None if text is None else matcher(path.parent, text.splitlines())
