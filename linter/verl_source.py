"""Which verl a file is linted against, and that verl's snapshot (SPEC §5).

For each file, the first of these that applies:

1. `--verl-version` on the command line: the user named it for the run, so it wins over everything below (an
   explicit flag that a discovered tree overrode would be a surprise).
2. A recipe's `verl:`: the file names the verl it is for; over what is discovered, under the command line.
3. A verl source tree: a `verl/` package with `trainer/config/` (or a nested checkout's, `verl/verl/`, beside its
   `setup.py`) in a directory Python would import `verl` from when the script runs (`python -m` looks in the
   working directory, then in `PYTHONPATH`): the directory the script `cd`s into, else the one it is started from,
   each directory from the file's own up to the repository root (the closest directory above holding `.git`, else
   the home directory; never a tree another user owns) tried as the start, then the script's `PYTHONPATH` entries
   from there (the bash reader's `sources.entry_module`), a directory this machine does not have being the
   repository's one its last components name (`in_repository`); then the repository's own tree, which a script
   that `cd`s elsewhere (or into a directory this machine does not have) runs once it is installed (`src/verl` too,
   in a project of the src layout). A vendored, often modified verl is what the repository runs.
4. The verl installed in the environment that runs sapo-lint, located with `importlib.util.find_spec("verl")`: a
   top-level package is found, never imported. A release installed from the package index (its dist-info holds no
   `direct_url.json`) that has a committed snapshot is checked against that snapshot; any other (an editable
   install, one from a directory, an archive or git, a version without a committed snapshot) is snapshotted from its
   files, like a source tree.
5. A pin, the first found: `pip install verl==X` (or `uv add verl==X`) in the script, comments included (a set-up
   note says what to install); `[tool.sapo-lint] verl-version`; `verl==X` in a `requirements*.txt` or in the
   dependencies of a `pyproject.toml`, beside the file, then at the repository root. Only `==` (or `===`, `==X.*`)
   names a release: a range pins nothing. The snapshot is `schema.committed_for(X)`; a pin without one is checked
   against X itself, which RF004 reports as having no snapshot.
6. The newest committed snapshot of a verl release (`schema.newest_release`).

A source tree (3, and 4 where it is not a release from the index) is snapshotted with the builder of `sapo-lint
schema build --verl-root` (`schemas.build.build_verl_snapshot`: verl, torch and megatron are never imported) and
cached under `verl/` in the user cache directory (`core.user_cache`: `$SAPO_LINT_CACHE_DIR`, else
`$XDG_CACHE_HOME/sapo-lint`, else `~/.cache/sapo-lint`), named by a hash of what the builder reads (every `*.py` and
`*.yaml` file of the package and its `version/version`, by path and content), the snapshot format and sapo-toolkit's
version. The hash is itself cached by the files' paths, sizes and modification times, so that an unchanged tree is
not read again on the next run. A build holds a lock on its entry, so that concurrent runs (pre-commit starts
several) build a tree once, the others waiting for it and reading the result; files are written atomically. A tree
that cannot be built is one warning (RF004), remembered in the cache too; it is still the verl the file runs, so its
commands are checked against no other verl (the file is reported as not checked: `snapshot-not-built`).

A command that names a config directory of its own (`--config-path`, or a wrapper module's `@hydra.main`) is checked
against that config composed as Hydra composes it (`custom_configs.config_for`), snapshotted and cached the same way.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import NamedTuple

from .core.budget import not_counted
from .core.diagnostics import Location
from .core.files import MAX_BYTES, UnreadableFile, read_bytes, toml_parser
from .core.problems import SnapshotNotBuilt
from .core.user_cache import read_cached, trusted_directory, user_cache_dir, write_cached
from .schema import (
    code_patterns,
    committed_for,
    installed_verl_version,
    newest_release,
    resolve_verl_version,
    snapshot_version,
)

MAX_VERSION_BYTES = 4096  # verl/version/version: one line
MAX_REASON_BYTES = 4096  # why a tree could not be built, as the cache keeps it
MAX_TREE_FILES = 20_000  # verl main: about 1,000 Python and YAML files
MAX_TREE_BYTES = 256 * 2**20  # verl main: about 12 MiB

# Where each choice comes from (`VerlChoice.source`, the JSON's `verl.source`), in the order they are tried.
COMMAND_LINE, RECIPE, SOURCE_TREE, INSTALLED, PIN, NEWEST = (
    "command-line",
    "recipe",
    "source-tree",
    "installed",
    "pin",
    "newest",
)


class VerlChoice(NamedTuple):
    """The verl one file is linted against: where it was found, and the snapshot of it."""

    snapshot: str  # what `schema.load_snapshot` takes: a committed version, or the path of a built snapshot
    version: str  # verl's own version
    source: str  # COMMAND_LINE, RECIPE, SOURCE_TREE, INSTALLED, PIN or NEWEST
    path: str | None = None  # the package directory (a source tree, an installed verl), or the file that pins it
    cached: bool | None = None  # a built snapshot: True read from the cache, False built by this run; else None
    package_dir: str | None = None  # where verl's own files are (its config YAML), when they are on this machine
    unbuilt: SnapshotNotBuilt | None = None  # the tree it runs cannot be snapshotted: nothing is checked against it

    @property
    def state(self) -> str:
        """`committed` (a committed snapshot), `cached` (built by an earlier run), `built` (by this one) or
        `unbuilt` (it cannot be)."""
        if self.unbuilt is not None:
            return "unbuilt"
        return "committed" if self.cached is None else "cached" if self.cached else "built"

    def as_dict(self) -> dict:
        """The JSON's per-file `verl` object."""
        return {"version": self.version, "source": self.source, "path": shown_path(self.path), "snapshot": self.state}

    def describe(self) -> str:
        """The text report's note: `verl 0.10.0.dev from ./verl (source tree, snapshot cached)`."""
        snapshot = (
            "committed snapshot"
            if self.cached is None and self.unbuilt is None
            else "no snapshot: it cannot be built"
            if self.unbuilt is not None
            else f"snapshot {self.state}"
        )
        where = shown_path(self.path)
        where = where if where is None or os.path.isabs(where) else os.path.join(".", where)
        if self.source == SOURCE_TREE:
            return f"verl {self.version} from {where} (source tree, {snapshot})"
        if self.source == INSTALLED:
            return f"verl {self.version} installed{f' at {where}' if where else ''} ({snapshot})"
        if self.source == PIN:
            return f"verl {self.version} pinned in {where} (snapshot {self.snapshot})"
        stands_in = (
            f", the {snapshot_version(self.snapshot)} snapshot standing in" if self.snapshot != self.version else ""
        )
        if self.source == COMMAND_LINE:
            return f"verl {self.version} (--verl-version{stands_in})"
        if self.source == RECIPE:
            return f"verl {self.version} (the recipe's `verl:`{stands_in})"
        return f"verl {self.version} (the newest committed snapshot: no verl source tree, installed verl or pin found)"


def shown_path(path: str | None) -> str | None:
    """A path relative to the working directory when it is below it, as the file paths of a report are."""
    if path is None or not os.path.isabs(path):
        return path
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def named(version: str, source: str) -> VerlChoice:
    """The choice of the version the command line (`COMMAND_LINE`) or a recipe (`RECIPE`) names: its snapshot is
    the one that stands for it (`schema.resolve_verl_version`: `main`, a release without a snapshot of its own)."""
    return VerlChoice(resolve_verl_version(version), version, source)


def choose(
    file: str,
    cli_verl: str | None,
    pin: str | None,
    roots: Iterable[Path] | None = None,
    text: str | None = None,
    declared: str | None = None,
    default: str | None = None,
) -> VerlChoice:
    """The verl `file` is linted against (the module docstring's order). `pin`: `[tool.sapo-lint] verl-version`;
    `roots`: where Python imports `verl` from when the script runs (default: as if it ran from its own directory
    or one above it up to the repository root, without a `cd` or `PYTHONPATH`); `text`: the script's, for `pip
    install` pins; `declared`: a recipe's `verl:`; `default`: the verl when nothing names or holds one (the newest
    committed release).

    A source tree found that cannot be snapshotted is what the file runs all the same: the choice names it, with
    `unbuilt` saying why, and its commands are checked against no other verl."""
    if cli_verl:
        return named(cli_verl, COMMAND_LINE)
    if declared:
        return named(declared, RECIPE)
    own = installed_roots(repository_dirs(Path(os.path.abspath(file)).parent))
    # The trainer's import roots first; then the repository's own verl, which a script that `cd`s elsewhere (or
    # into a directory this machine does not have) still runs once installed (`pip install -e .`).
    for package_dir in source_trees(own if roots is None else [*roots, *own]):
        return _from_files(file, package_dir, _tree_version(package_dir), SOURCE_TREE)
    submodule = _absent_verl_submodule(own)
    if submodule is not None:  # the repository's verl is known, but not here: no other verl judges its keys
        reason = f"it is the git submodule `{submodule.name}`, not checked out here (`git submodule update --init`)"
        unbuilt = SnapshotNotBuilt(location=Location(file), tree=shown_path(str(submodule)), reason=reason)
        return VerlChoice("", "unknown", SOURCE_TREE, str(submodule), unbuilt=unbuilt)
    installed = _installed()
    if installed is not None:
        package_dir, version, from_index = installed
        where = package_dir and str(package_dir)
        if package_dir is None or (from_index and committed_for(version) == version):
            return VerlChoice(version, version, INSTALLED, where, package_dir=where)
        return _from_files(file, package_dir, version, INSTALLED)
    found = _pin(Path(file), pin, text)
    if found is not None:
        version, where = found
        return VerlChoice(committed_for(version) or version, version, PIN, where)
    newest = default or newest_release()
    return VerlChoice(newest, newest, NEWEST)


def _from_files(file: str, package_dir: Path, version: str, source: str) -> VerlChoice:
    """The choice of the verl whose files are in `package_dir`, snapshotted (or, where it cannot be, `unbuilt`)."""
    where = str(package_dir)
    built = _tree_snapshot(package_dir, version, f"{source} verl")
    if isinstance(built, str):
        unbuilt = SnapshotNotBuilt(location=Location(file), tree=where, reason=built)
        return VerlChoice("", version, source, where, package_dir=where, unbuilt=unbuilt)
    return VerlChoice(built[0], version, source, where, built[1], where)


# --- where verl is imported from ---------------------------------------------------------------------------------


def repository_dirs(directory: Path) -> list[Path]:
    """`directory` and each directory above it up to the repository root (the closest one holding `.git`), else up
    to the user's home directory, else up to the filesystem root."""
    home = os.path.abspath(os.path.expanduser("~"))
    out = [directory]
    while not (out[-1] / ".git").exists() and str(out[-1]) != home and out[-1].parent != out[-1]:
        out.append(out[-1].parent)
    return out


def in_repository(script: Path, written: str) -> Path | None:
    """The directory of the script's repository that a directory it names, and this machine does not have, stands
    for: the longest run of the path's last components (after any `..`) below the script's own directory or one
    above it up to the repository root (`luffy/verl` of `/mnt/someone/LUFFY/luffy/verl`, `verl_arpo_entropy` of
    `<your_path_to_ARPO>/verl_arpo_entropy`); None where no run of them is a directory there, or where the script
    is in no git repository (the directories above it are then no project's)."""
    bases = repository_dirs(script.resolve().parent)
    if not (bases[-1] / ".git").exists():
        return None
    parts = [p for p in written.split("/") if p not in ("", ".")]
    if ".." in parts:
        parts = parts[len(parts) - parts[::-1].index("..") :]
    for first in range(len(parts)):
        found = next((b.joinpath(*parts[first:]) for b in bases if b.joinpath(*parts[first:]).is_dir()), None)
        if found is not None:
            return found
    return None


_SUBMODULE_PATH = re.compile(r"^[ \t]*path[ \t]*=[ \t]*(\S[^\n]{0,500}?)[ \t]*$", re.MULTILINE)


def _absent_verl_submodule(directories: list[Path]) -> Path | None:
    """A git submodule named `verl` (its path's last part) that the repository holding `directories` declares in
    `.gitmodules` but that is not checked out (no verl package in it): the repository's own verl, absent here."""
    top = directories[-1]
    if not (top / ".git").exists():
        return None
    try:
        text = read_bytes(top / ".gitmodules", MAX_VERSION_BYTES * 16).decode("utf-8", "replace")
    except UnreadableFile:
        return None
    for written in _SUBMODULE_PATH.findall(text):
        path = top / written.strip().strip("/")
        if path.name == "verl" and inside(path, top) and not source_trees([path, path.parent]):
            return path
    return None


def inside(path: Path, directory: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(directory)
    return real == top or real.startswith(top + os.sep)


def installed_roots(directories: list[Path]) -> list[Path]:
    """Where `pip install -e .` of a project in one of `directories` makes Python import from: the directory, and
    for a project in the src layout (PyPA's: a `setup.py` or `pyproject.toml` beside `src/`) its `src/` too."""
    out = []
    for directory in directories:
        out.append(directory)
        packaged = (directory / "setup.py").is_file() or (directory / "pyproject.toml").is_file()
        if packaged and (directory / "src").is_dir():
            out.append(directory / "src")
    return out


def source_trees(roots: Iterable[Path]) -> list[Path]:
    """The verl packages under `roots`, first found first, each once: `<root>/verl` holding `trainer/config/`, or
    in a nested checkout (`<root>/verl/setup.py` or `pyproject.toml`, the package at `<root>/verl/verl/`: cloned or
    a submodule, then `pip install -e ./verl`) the checkout's package. Only trees the user (or root) owns: another
    user's `/tmp/verl` is never linted against."""
    found: dict[str, Path] = {}
    for root in roots:
        checkout = root / "verl"
        nested = (checkout / "setup.py").is_file() or (checkout / "pyproject.toml").is_file()
        for package in (checkout, *([checkout / "verl"] if nested else [])):
            config = package / "trainer" / "config"
            if config.is_dir() and _owned(package) and _owned(config):
                found.setdefault(os.path.realpath(package), package)
                break
    return list(found.values())


def foreign_verl(roots: Iterable[Path]) -> Path | None:
    """The first package named `verl` under `roots` that is not verl (no `trainer/config/`, nor a nested checkout's
    package): a fork with its own entry points and config system (`python3 -m verl.trainer.main config=x.yaml`)."""
    for root in roots:
        package = root / "verl"
        if (package / "__init__.py").is_file() and not source_trees([root]):
            return package
    return None


def _owned(path: Path) -> bool:
    try:
        return os.stat(path).st_uid in (os.geteuid(), 0)
    except OSError:
        return False


def _tree_version(package_dir: Path) -> str:
    try:
        text = read_bytes(package_dir / "version" / "version", MAX_VERSION_BYTES).decode("utf-8")
    except (UnreadableFile, UnicodeDecodeError):
        return "unknown"
    return text.strip() or "unknown"


@cache
def _installed() -> tuple[Path | None, str, bool] | None:
    """(the installed verl's package directory, its version, whether it is a release from the package index), or
    None. A dist-info without the package (a broken install) still names a version; no directory then."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("verl")  # a top-level name: located, not imported
    except (ImportError, ValueError):
        spec = None
    locations = (spec.submodule_search_locations or []) if spec is not None else []
    package = next((Path(p) for p in locations if (Path(p) / "trainer" / "config").is_dir()), None)
    if package is None:
        version = installed_verl_version()
        return None if version is None else (None, version, True)
    from importlib import metadata

    try:
        distribution = metadata.distribution("verl")
    except metadata.PackageNotFoundError:  # on the path without being installed (a checkout in PYTHONPATH)
        return package, _tree_version(package), False
    return package, distribution.version, distribution.read_text("direct_url.json") is None


# --- pins --------------------------------------------------------------------------------------------------------

# `verl==0.6.1`, `"verl[vllm]==0.6.1"`, `verl===0.6.1`, `verl==0.6.*` (PEP 508 / PEP 440): one release, or one minor.
# Linear-time patterns (a pin file is untrusted input): within one line (`[ \t]`, never `\s`, which crosses lines),
# and character classes that never overlap their neighbours, so that no failed match backtracks.
_REQUIREMENT = r"(?<![\w.-])verl(?:[ \t]*\[[^\]\n]*\])?[ \t]*===?[ \t]*v?(?P<version>\d[0-9A-Za-z.+!-]*\*?)"
_INSTALLER = re.compile(r"\b(?:pip3?[ \t]+install|uv[ \t]+add)\b")
_REQUIREMENT_IN_LINE = re.compile(_REQUIREMENT)
_REQUIREMENT_LINE = re.compile(r"^[ \t]*" + _REQUIREMENT + r"[ \t]*(?:;|#|$)", re.MULTILINE)


def _pin(file: Path, setting: str | None, text: str | None) -> tuple[str, str] | None:
    """(the version, where it is pinned) for the first pin found (the module docstring's order), or None."""
    if text is not None:
        for number, line in enumerate(text.splitlines(), 1):
            installer = _INSTALLER.search(line)
            m = _REQUIREMENT_IN_LINE.search(line, installer.end()) if installer else None
            if m:
                return _release(m["version"]), f"{file}:{number}"
    if setting:
        return setting, "[tool.sapo-lint] verl-version"
    directory = Path(os.path.abspath(file)).parent
    top = repository_dirs(directory)[-1]
    for place in dict.fromkeys([directory, *([top] if (top / ".git").exists() else [])]):
        found = _pinned_in_directory(place)
        if found is not None:
            return found
    return None


@cache
def _pinned_in_directory(place: Path) -> tuple[str, str] | None:
    """(the version, where) of the first `verl==X` in the directory's `requirements*.txt`, then its `pyproject.toml`;
    read once per run for all the files beside them."""
    for candidate in [*sorted(place.glob("requirements*.txt")), place / "pyproject.toml"]:
        found = _pinned_in(candidate)
        if found is not None:
            return _release(found[0]), f"{candidate}:{found[1]}"
    return None


def _release(version: str) -> str:
    return version.removesuffix(".*")


def _pinned_in(path: Path) -> tuple[str, int] | None:
    """(the version, its line) of a `verl==X` requirement in a requirements file or a pyproject.toml's dependencies
    (`[project] dependencies`, `optional-dependencies`, `[dependency-groups]`)."""
    try:
        text = read_bytes(path).decode("utf-8")
    except (UnreadableFile, UnicodeDecodeError):
        return None
    if path.name != "pyproject.toml":
        m = _REQUIREMENT_LINE.search(text)
        return (m["version"], text.count("\n", 0, m.start()) + 1) if m else None
    toml = toml_parser()
    try:
        document = toml.loads(text)
    except toml.TOMLDecodeError:
        return None
    project = document.get("project") if isinstance(document.get("project"), dict) else {}
    lists = [
        project.get("dependencies"),
        *_values(project.get("optional-dependencies")),
        *_values(document.get("dependency-groups")),
    ]
    for requirement in (r for group in lists if isinstance(group, list) for r in group if isinstance(r, str)):
        m = re.match(r"[ \t]*" + _REQUIREMENT + r"[ \t]*(?:;|$)", requirement)
        if m:
            return m["version"], text.count("\n", 0, text.find(requirement)) + 1
    return None


def _values(table) -> list:
    return list(table.values()) if isinstance(table, dict) else []


# --- snapshots of source trees, cached ---------------------------------------------------------------------------

_BUILT: dict[str, tuple[str, bool] | str] = {}  # per process: key -> (snapshot path, was cached) or why not built


def _tree_snapshot(package_dir: Path, version: str, what: str) -> tuple[str, bool] | str:
    """(the path of the snapshot of the verl package in `package_dir`, whether it was in the cache already), or why
    it cannot be built (one line); `what` it is, for the snapshot's `source`. Looked up once per process."""
    real = os.path.realpath(package_dir)
    if real not in _BUILT:
        try:
            key = _content_key(Path(real), version)
        except TreeRefused as exc:
            _BUILT[real] = str(exc)
            return _BUILT[real]

        def build() -> dict:
            from sapo_toolkit.schemas.build.isolated import build_isolated

            source = f"{what} (content {key[:16]})"
            return build_isolated({"kind": "verl", "package_dir": real, "version": version, "source": source})

        _BUILT[real] = cached_build(key, build)
    return _BUILT[real]


@cache
def tree_code_facts(snapshot: str, package_dir: Path) -> tuple[tuple[str, bool], ...]:
    """(fact, holds) for each verl fact its own code decides (`schema.code_patterns`): whether any Python file of the
    tree matches the fact's pattern. Kept beside the tree's built `snapshot` (whose name is the tree's content
    hash), so a tree is read for them once, and the file once per process."""
    patterns = code_patterns()
    memo = Path(snapshot + ".facts")
    stored = read_cached(memo, MAX_REASON_BYTES)
    if stored is not None:
        try:
            found = json.loads(stored)
        except ValueError:
            found = None
        if isinstance(found, dict) and set(found) == set(patterns) and all(isinstance(v, bool) for v in found.values()):
            return tuple(sorted(found.items()))
    compiled = {name: re.compile(pattern.encode()) for name, pattern in patterns.items()}
    holds = dict.fromkeys(compiled, False)
    for relative, _, _ in _tree_files(package_dir):
        if not relative.endswith(".py") or all(holds.values()):
            continue
        try:
            data = read_bytes(package_dir / relative)
        except UnreadableFile:
            continue
        for name, pattern in compiled.items():
            holds[name] = holds[name] or pattern.search(data) is not None
    write_cached(memo, json.dumps(holds, sort_keys=True))
    return tuple(sorted(holds.items()))


class TreeRefused(Exception):
    """A verl tree that is not snapshotted: it holds a file that is not a regular one, or is over a bound (the
    message, one line, names it)."""


def builder_stamp() -> str:
    """What else a snapshot depends on: the snapshot format the builder writes and the parts it writes (a part added
    within a format, `entry_reads`, is built anew rather than missing from a cached snapshot), and sapo-toolkit's
    version."""
    from sapo_toolkit.schemas.build.layout import VERL_FORMAT, VERL_PARTS

    from . import __version__

    return f"format {VERL_FORMAT}\0parts {' '.join(VERL_PARTS)}\0sapo-toolkit {__version__}\0"


def _tree_files(package_dir: Path) -> list[tuple[str, int, int]]:
    """(path relative to the package, size, modification time in ns) of each file the builder reads: every `*.py`
    and `*.yaml` file, and `version/version`; sorted. `__pycache__` and hidden directories are not walked. Raises
    `TreeRefused` for one that is not a regular file (a FIFO or device would hang the build) or over `MAX_BYTES`,
    and for a tree over `MAX_TREE_FILES` files or `MAX_TREE_BYTES` bytes."""
    out = []
    total = 0
    pending = [package_dir]
    while pending:
        directory = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__" and not entry.name.startswith("."):
                        pending.append(Path(entry.path))
                    continue
                if not (
                    entry.name.endswith((".py", ".yaml")) or entry.path.endswith(os.path.join("version", "version"))
                ):
                    continue
                st = entry.stat()
            except OSError:
                continue
            shown = os.path.relpath(entry.path, package_dir)
            if not stat.S_ISREG(st.st_mode):
                raise TreeRefused(f"verl/{shown} is not a regular file (a FIFO, device or socket)")
            if st.st_size > MAX_BYTES:
                raise TreeRefused(f"verl/{shown} is over {MAX_BYTES // 2**20} MiB")
            total += st.st_size
            out.append((shown, st.st_size, st.st_mtime_ns))
            if len(out) > MAX_TREE_FILES or total > MAX_TREE_BYTES:
                raise TreeRefused(
                    f"the tree holds over {MAX_TREE_FILES} files or {MAX_TREE_BYTES // 2**20} MiB of Python and YAML "
                    "(the bound of a snapshot build)"
                )
    return sorted(out)


def _content_key(package_dir: Path, version: str) -> str:
    """The hash of what the builder reads (and of `_builder_stamp`, and the version): looked up first by the files'
    paths, sizes and modification times in the cache's `stat/`, so that an unchanged tree is only listed. Raises
    `TreeRefused` (`_tree_files`, or a file that cannot be read)."""
    import hashlib  # here, not at import: loading OpenSSL is ~4 ms of every cold run, which hashes no tree

    files = _tree_files(package_dir)
    stamp = builder_stamp() + f"verl {version}\0"
    listing = hashlib.blake2b((stamp + str(package_dir) + "\0" + repr(files)).encode("utf-8", "surrogateescape"))
    memo = _cache_dir() / "stat" / listing.hexdigest()[:40]
    known = (read_cached(memo, 64) or b"").strip().decode("ascii", "replace")
    if re.fullmatch(r"[0-9a-f]{40}", known):
        return known
    content = hashlib.blake2b(stamp.encode("utf-8"))
    for relative, _, _ in files:
        try:
            data = read_bytes(package_dir / relative)
        except UnreadableFile as exc:
            raise TreeRefused(f"verl/{relative}: {exc}") from None
        content.update(f"{relative}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
        content.update(data)
    key = content.hexdigest()[:40]
    write_cached(memo, key)
    return key


def cached_build(key: str, build) -> tuple[str, bool] | str:
    """(the path of the snapshot `key`, whether it was cached) or why it cannot be built, from the cache or by
    `build()` (then stored: the snapshot, or the reason). Concurrent runs build a key once: the first holds its
    lock, the others wait for it and read what it stored."""
    directory = _cache_dir()
    snapshot, failed = directory / f"{key}.json", directory / f"{key}.failed"
    found = _stored(snapshot, failed)
    if found is not None:
        return found
    with _locked(directory / f"{key}.lock"):
        found = _stored(snapshot, failed)  # built by another run while this one waited
        if found is not None:
            return found
        with not_counted():
            try:
                document = build()
            except Exception as exc:  # noqa: BLE001 - any failure of the builder is a reason, never a traceback
                reason = (" ".join(str(exc).split()) or type(exc).__name__)[:MAX_REASON_BYTES]
                write_cached(failed, reason)
                return reason
        if write_cached(snapshot, json.dumps(document, sort_keys=True, separators=(",", ":"))):  # before the lock goes
            return str(snapshot), False
    return _scratch(key, document), False


def _stored(snapshot: Path, failed: Path) -> tuple[str, bool] | str | None:
    """What the cache holds for a key: (the snapshot's path, True), or why it could not be built; None: nothing (or
    nothing this user may trust: `core.user_cache`). The reason is bounded to `MAX_REASON_BYTES`."""
    if not trusted_directory(snapshot.parent):
        return None
    try:
        info = os.lstat(snapshot)
    except OSError:
        info = None
    if info is not None and stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid():
        return str(snapshot), True
    data = read_cached(failed, MAX_REASON_BYTES)
    if data is None:
        return None
    return " ".join(data.decode("utf-8", "replace").split()) or "the build failed"


def _cache_dir() -> Path:
    return user_cache_dir() / "verl"


_SCRATCH: list[str] = []


def _scratch(key: str, document: dict) -> str:
    """A snapshot written where this run can read it, when the cache cannot be written: a temporary directory,
    removed at exit."""
    import atexit
    import shutil
    import tempfile

    if not _SCRATCH:
        _SCRATCH.append(tempfile.mkdtemp(prefix="sapo-lint-verl-"))
        atexit.register(shutil.rmtree, _SCRATCH[0], True)
    path = Path(_SCRATCH[0], f"{key}.json")
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (POSIX `flock`), waited for; none where it cannot be taken (no `fcntl`, a cache
    that cannot be written or is not trusted, a lock file that is a link, FIFO or device: never waited on)."""
    try:
        import fcntl

        if not trusted_directory(path.parent):
            raise OSError("not trusted")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    except (ImportError, OSError):
        yield
        return
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


__all__ = [
    "COMMAND_LINE",
    "INSTALLED",
    "NEWEST",
    "PIN",
    "RECIPE",
    "SOURCE_TREE",
    "VerlChoice",
    "choose",
    "named",
    "repository_dirs",
]
