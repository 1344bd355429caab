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
   from there (the bash reader's `sources.entry_module`); then the repository's own tree, which a script that `cd`s
   elsewhere (or into a directory this machine does not have) runs once it is installed (`src/verl` too, in a
   project of the src layout). A vendored, often modified verl is what the repository runs.
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
against that config composed as Hydra composes it (`config_for`), snapshotted and cached the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import NamedTuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .core.budget import not_counted
from .core.command import Command
from .core.diagnostics import Location
from .core.files import MAX_BYTES, UnreadableFile, read_bytes
from .core.problems import SnapshotNotBuilt
from .core.user_cache import read_cached, trusted_directory, user_cache_dir, write_cached
from .engine import searchpath
from .schema import (
    ConfigNotInSnapshot,
    code_patterns,
    committed_for,
    installed_verl_version,
    load_snapshot,
    newest_release,
    resolve_verl_version,
    snapshot_document,
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
        version = _tree_version(package_dir)
        built = _tree_snapshot(package_dir, version, f"{SOURCE_TREE} verl")
        where = str(package_dir)
        if isinstance(built, str):
            unbuilt = SnapshotNotBuilt(location=Location(file), tree=where, reason=built)
            return VerlChoice("", version, SOURCE_TREE, where, package_dir=where, unbuilt=unbuilt)
        return VerlChoice(built[0], version, SOURCE_TREE, where, built[1], where)
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
        built = _tree_snapshot(package_dir, version, f"{INSTALLED} verl")
        if isinstance(built, str):
            unbuilt = SnapshotNotBuilt(location=Location(file), tree=where, reason=built)
            return VerlChoice("", version, INSTALLED, where, package_dir=where, unbuilt=unbuilt)
        return VerlChoice(built[0], version, INSTALLED, where, built[1], where)
    found = _pin(Path(file), pin, text)
    if found is not None:
        version, where = found
        return VerlChoice(committed_for(version) or version, version, PIN, where)
    newest = default or newest_release()
    return VerlChoice(newest, newest, NEWEST)


# --- where verl is imported from ---------------------------------------------------------------------------------


def repository_dirs(directory: Path) -> list[Path]:
    """`directory` and each directory above it up to the repository root (the closest one holding `.git`), else up
    to the user's home directory, else up to the filesystem root."""
    home = os.path.abspath(os.path.expanduser("~"))
    out = [directory]
    while not (out[-1] / ".git").exists() and str(out[-1]) != home and out[-1].parent != out[-1]:
        out.append(out[-1].parent)
    return out


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
        if path.name == "verl" and _inside(path, top) and not source_trees([path, path.parent]):
            return path
    return None


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
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
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

        _BUILT[real] = _cached(key, build)
    return _BUILT[real]


def tree_code_facts(snapshot: str, package_dir: Path) -> tuple[tuple[str, bool], ...]:
    """(fact, holds) for each verl fact its own code decides (`schema.code_patterns`): whether any Python file of the
    tree matches the fact's pattern. Kept beside the tree's built `snapshot` (whose name is the tree's content
    hash), so a tree is read for them once."""
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


# --- choices the repository registers with verl's registries ----------------------------------------------------

# The keys whose values verl looks up in a registry its code fills with a decorator: a repository's own module (a
# recipe's `core_algos.py` that the repository's verl imports) may add to it. The name written is the one looked up.
REGISTRIES = {
    "register_policy_loss": "actor_rollout_ref.actor.policy_loss.loss_mode",
    "register_adv_est": "algorithm.adv_estimator",
}
# `@register_policy_loss("vespo")`, `@core_algos.register_adv_est('my_est')`: a string literal (an enum member is
# verl's own, which the snapshot reads); one line, linear (the file is untrusted input).
_REGISTRATION = re.compile(rb"@[ \t]*(?:[A-Za-z_][\w.]*\.)?(register_policy_loss|register_adv_est)[ \t]*\([ \t]*"
                           rb"[\"']([A-Za-z0-9_.+-]{1,100})[\"']")  # fmt: skip


# What repository code reads: each key name with the name it is read from (`config.algorithm.my_key` ->
# (algorithm, my_key); `data_cfg.get("k")`, `data_cfg["k"]` -> (data_cfg, k)), so that a key counts as read only
# where code reads it off a node named like its own parent: a name read off another node (`recurrent_config.k`)
# says nothing of `data.k`. Read as text, linear (the files are untrusted input).
_READ = re.compile(
    rb"([A-Za-z_][A-Za-z0-9_]{0,100})\s{0,8}(?:\.get\(\s{0,8}[\"']|\[\s{0,8}[\"']|\.)(?=([A-Za-z_][A-Za-z0-9_]{0,100}))"
)  # the key's name in a lookahead: `config.algorithm.my_key` gives (config, algorithm) and (algorithm, my_key)
MAX_REPOSITORY_BYTES = MAX_TREE_BYTES  # Python of the repository read for registrations and reads


class RepositoryCode(NamedTuple):
    """What a repository's own Python, outside the verl package it runs, adds to that verl."""

    registered: tuple[tuple[str, tuple[str, ...]], ...]  # (key, values) registered with verl's registries
    reads: frozenset[tuple[str, str]]  # (the name a key is read off, the key's name)


@cache
def repository_code(root: Path, package_dir: Path | None) -> RepositoryCode:
    """The registrations (`REGISTRIES`: a loss mode or an advantage estimator a recipe's code adds) and the key
    names read (a wrapper's trainer subclass reading `config.algorithm.my_key`) of the Python files under the
    repository `root`, outside `package_dir` (whose own the snapshot holds). Read as text, never imported; virtual
    environments, hidden and `__pycache__` directories are skipped, and reading stops after `MAX_TREE_FILES` files
    or `MAX_REPOSITORY_BYTES` bytes."""
    package = os.path.realpath(package_dir) if package_dir is not None else None
    found: dict[str, dict[str, None]] = {}
    reads: set[tuple[bytes, bytes]] = set()
    pending, files, total = [root], 0, 0
    while pending and files < MAX_TREE_FILES and total < MAX_REPOSITORY_BYTES:
        directory = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        if any(e.name == "pyvenv.cfg" for e in entries):  # a virtual environment: installed packages, not the repo's
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    skipped = entry.name == "__pycache__" or entry.name.startswith(".")
                    if not skipped and os.path.realpath(entry.path) != package:
                        pending.append(Path(entry.path))
                    continue
                if not entry.name.endswith(".py") or not entry.is_file(follow_symlinks=False):
                    continue
                data = read_bytes(Path(entry.path))
            except (OSError, UnreadableFile):
                continue
            files, total = files + 1, total + len(data)
            reads.update(_READ.findall(data))
            if b"register_" in data:
                for registry, value in _REGISTRATION.findall(data):
                    found.setdefault(REGISTRIES[registry.decode()], {})[value.decode()] = None
    registered = tuple((key, tuple(values)) for key, values in sorted(found.items()))
    return RepositoryCode(registered, frozenset((left.decode(), name.decode()) for left, name in reads))


def repository_root(file: str, verl: VerlChoice) -> Path | None:
    """The repository whose code runs with `file`'s trainer: the one holding its verl source tree, else the git
    repository the file is in; None for a file in no repository (its directories up to the home directory are no
    project: they are never read)."""
    start = Path(verl.package_dir).parent if verl.source == SOURCE_TREE and verl.package_dir else None
    top = repository_dirs(start or Path(os.path.abspath(file)).parent)[-1]
    return top if start is not None or (top / ".git").exists() else None


class TreeRefused(Exception):
    """A verl tree that is not snapshotted: it holds a file that is not a regular one, or is over a bound (the
    message, one line, names it)."""


def _builder_stamp() -> str:
    """What else a snapshot depends on: the snapshot format the builder writes, and sapo-toolkit's version."""
    from sapo_toolkit.schemas.build.layout import VERL_FORMAT

    from . import __version__

    return f"format {VERL_FORMAT}\0sapo-toolkit {__version__}\0"


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
    files = _tree_files(package_dir)
    stamp = _builder_stamp() + f"verl {version}\0"
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


def _cached(key: str, build) -> tuple[str, bool] | str:
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


# --- custom configs ----------------------------------------------------------------------------------------------


class UnresolvedConfig(ConfigNotInSnapshot):
    """A command's config directory cannot be composed: no snapshot holds its config; the message says why (one
    line). `placeholder`: the path is a template's blank left unfilled (`/path/to/your/project/config`)."""

    def __init__(self, message: str, placeholder: bool = False) -> None:
        super().__init__(message)
        self.placeholder = placeholder


# A template's blank in a path: `/path/to/...`, `/your/project`, `<project_dir>`, `YOUR_DIR`.
_PLACEHOLDER_PATH = re.compile(r"/path/to/|(?:^|/)your[_/-]|<[A-Za-z][\w. -]{0,80}>|\bYOUR_[A-Z]", re.IGNORECASE)


# Hydra's `pkg://` and `file://` search path entries.
_PKG, _FILE = "pkg://", "file://"
_VERL_CONFIG = ("verl", "trainer", "config")
# A value the bash reader could not evaluate holds a private-use character from U+F0000 (`sources.bash.markers`),
# or reads `$NAME`.
_UNRESOLVED = re.compile("[\U000f0000-\U0010ffff$`]")


def config_for(snapshot: str, verl: VerlChoice | None, command: Command, file: str) -> tuple[str, str]:
    """(the snapshot reference, the config name) that `command` of `file` is checked against, for the verl snapshot
    `snapshot` of `verl` (`_config_for`). Raises `UnresolvedConfig`, its message naming the config."""
    try:
        return _config_for(snapshot, verl, command, file)
    except UnresolvedConfig as exc:
        raise UnresolvedConfig(f"config `{command.config_name}`: {exc}", exc.placeholder) from None


def _config_for(snapshot: str, verl: VerlChoice | None, command: Command, file: str) -> tuple[str, str]:
    """(the snapshot reference, the config name) that `command` is checked against: verl's snapshot, unless the
    command names a config directory of its own (`Command.config_path`), which is then composed as Hydra would and
    snapshotted (`schemas.build.build_custom_snapshot`, cached like a tree) with verl's own config files (`verl`'s
    package directory). Raises `UnresolvedConfig`.

    The directory is Hydra's `--config-path`: absolute; `pkg://a.b` (package a.b's directory); or relative to the
    directory of the module that declares `@hydra.main` (`hydra/_internal/utils.py` `compute_search_path_dir`: Hydra
    sees a module run with `-m` as `__main__`, its file's directory is the base), which for `python -m
    verl.trainer.main_ppo` is verl's `trainer/`: `--config-path=config` is verl's own. A directory inside verl's
    package, or whose path ends in `verl/trainer/config` (another machine's verl), is verl's own config directory.
    The config's `hydra.searchpath` (the command's `hydra.searchpath=[...]` override, else the config's own) is
    followed: `pkg://verl.x` in verl's package, `file://` and other `pkg://` entries from the directory holding
    verl's package, else the repository root."""
    written = command.config_path
    if written is None:
        return snapshot, command.config_name
    anchored = _anchored(written, file)
    if anchored is not None:  # `$(pwd)/config`, `$(dirname "$0")/config`: a directory on this machine
        written = str(next((d for d in anchored if d.is_dir()), anchored[0]))
    elif _UNRESOLVED.search(written):
        raise UnresolvedConfig(f"--config-path `{written}` is not known statically")
    package = Path(verl.package_dir) if verl is not None and verl.package_dir is not None else None
    directory = _config_directory(written, command.entry_module, package, file)
    if directory is None or (package is not None and _inside(directory, package) and _ships(snapshot, command)):
        return snapshot, command.config_name  # verl's own config directory, or one of verl's configs
    yaml_file = directory / f"{command.config_name}.yaml"
    if not yaml_file.is_file():
        raise UnresolvedConfig(f"--config-path `{written}` ({directory}) holds no `{command.config_name}.yaml`")
    if package is None:
        raise UnresolvedConfig(
            f"composing `{yaml_file}` needs verl's own config files, and the verl linted against "
            f"({snapshot_version(snapshot)}) has none on this machine: a verl source tree in the repository or an "
            "installed verl has them"
        )
    search = _search_path(command, yaml_file, package, file)
    return _custom_snapshot(snapshot, package, directory, command.config_name, search), command.config_name


# How scripts name the directory they are started in, and their own directory (bash's idioms, as the bash reader shows
# a construct it does not evaluate): a `--config-path` starting with one is a directory on this machine.
_STARTED_IN = re.compile(r"\$\(\s*pwd(?:\s+-[LP])?\s*\)|`pwd`|\$\{PWD\}|\$PWD")
_OWN_DIRECTORY = re.compile(r"\$\(.*\bdirname\b.*(?:\$0\b|\$\{0\}|BASH_SOURCE).*\)", re.DOTALL)


def _anchored(written: str, file: str) -> list[Path] | None:
    """The directories a path may be that starts with the directory the script is started in (`$(pwd)/x`, `$PWD/x`:
    each directory from the script's own up to the repository root, `repository_dirs`) or with the
    script's own (`$(dirname "$0")/x`, `$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/x`); None for any other."""
    head = _leading_construct(written)
    rest = written[len(head) :] if head else ""
    if not head or (rest and not rest.startswith("/")) or _UNRESOLVED.search(rest):
        return None
    own = Path(os.path.abspath(file)).parent
    if _STARTED_IN.fullmatch(head):
        bases = repository_dirs(own)
    elif _OWN_DIRECTORY.fullmatch(head):
        bases = [own]
    else:
        return None
    return [Path(os.path.normpath(base / rest.lstrip("/"))) for base in bases]


def _leading_construct(text: str) -> str:
    """The `$(...)` (parentheses balanced), `` `...` `` or `$NAME`/`${NAME}` that `text` starts with, else ''."""
    if text.startswith("$("):
        depth = 0
        for i, ch in enumerate(text):
            depth += (ch == "(") - (ch == ")")
            if depth == 0 and ch == ")":
                return text[: i + 1]
        return ""
    m = re.match(r"`[^`]*`|\$\{[^}]*\}|\$\w+", text)
    return m[0] if m else ""


def _config_directory(written: str, module: str | None, package: Path | None, file: str) -> Path | None:
    """The directory a `--config-path` names, or None for verl's own config directory. Raises `UnresolvedConfig`."""
    if written.startswith(_PKG):
        dotted = written[len(_PKG) :].strip("/").replace("/", ".")
        if dotted == "verl" or dotted.startswith("verl."):
            return None
        found = _first_dir(Path(*dotted.split(".")), file, package)
        if found is None:
            raise UnresolvedConfig(f"--config-path `{written}`: package `{dotted}` is not found in the repository")
        return found
    if os.path.isabs(written):
        directory = Path(os.path.normpath(written))
    elif module is not None and module.startswith("verl."):
        relative = Path(*module.split(".")[1:-1], written)
        inside = os.path.normpath(relative)
        if package is None:
            if inside.startswith(".."):
                raise UnresolvedConfig(
                    f"--config-path `{written}` is relative to `{module}`'s directory in verl's package (Hydra), "
                    "outside it, and no verl source tree or installed verl was found"
                )
            return None
        directory = Path(os.path.normpath(package / relative))
    else:
        raise UnresolvedConfig(
            f"--config-path `{written}` is relative to the directory of the file of `{module}`, the module that "
            "declares `@hydra.main` (Hydra), which is not resolved"
        )
    if directory.is_dir():
        return directory
    if directory.parts[-3:] == _VERL_CONFIG:
        return None  # verl's own config directory, on the machine the script was written on
    if _PLACEHOLDER_PATH.search(written):
        raise UnresolvedConfig(
            f"--config-path `{written}` is a placeholder to fill in before a run (the directory does not exist)",
            placeholder=True,
        )
    raise UnresolvedConfig(f"--config-path `{written}` is {directory}, which does not exist")


def _inside(path: Path, directory: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(directory)
    return real == top or real.startswith(top + os.sep)


def _ships(snapshot: str, command: Command) -> bool:
    """Whether verl's snapshot holds the command's config (one verl ships, in a directory of its package)."""
    try:
        load_snapshot(snapshot, command.config_name)
    except LookupError:
        return False
    return True


def _first_dir(relative: Path, file: str, package: Path | None) -> Path | None:
    """`relative` from the directory holding verl's package, else from each directory up to the repository root."""
    bases = ([package.parent] if package is not None else []) + repository_dirs(Path(os.path.abspath(file)).parent)
    return next((base / relative for base in bases if (base / relative).is_dir()), None)


def _search_path(command: Command, yaml_file: Path, package: Path, file: str) -> tuple[Path, ...]:
    """The directories Hydra searches after the primary config's: the command's `hydra.searchpath`, else the
    config's own, each entry as a directory (those that are not found are left out: Hydra does not find them
    either), then verl's own config directory, which verl's configs are written to be composed with (`- ppo_trainer`,
    `- /ppo_trainer@_here_`). Never empty: the builder then passes it to Hydra in place of the config's own list, so
    that Hydra never imports a package a `pkg://` entry names (the linted repository's code is never run)."""
    entries = searchpath(command)
    if not entries:
        import yaml

        try:
            document = yaml.safe_load(read_bytes(yaml_file).decode("utf-8"))
        except (UnreadableFile, UnicodeDecodeError, yaml.YAMLError, RecursionError):
            document = None
        hydra = document.get("hydra") if isinstance(document, dict) else None
        listed = hydra.get("searchpath") if isinstance(hydra, dict) else None
        entries = [str(e) for e in listed] if isinstance(listed, list) else []
    out: dict[Path, None] = {}
    for entry in entries:
        if entry.startswith(_PKG):
            parts = entry[len(_PKG) :].strip("/").replace("/", ".").split(".")
            found = package.joinpath(*parts[1:]) if parts[0] == "verl" else _first_dir(Path(*parts), file, package)
        else:
            written = Path(entry.removeprefix(_FILE))
            if written.parts[-3:] == _VERL_CONFIG:
                found = package / "trainer" / "config"
            elif written.is_absolute():
                found = written
            else:
                found = _first_dir(written, file, package)
        if found is not None and found.is_dir():
            out[Path(os.path.realpath(found))] = None
    out[Path(os.path.realpath(package / "trainer" / "config"))] = None
    return tuple(out)


# `_target_: a.b.C` in a config file: the dataclass the build walks the config's tree against.
_TARGET = re.compile(rb"^\s*_target_\s*:\s*['\"]?([A-Za-z_][\w.]*)", re.MULTILINE)


def _custom_key(snapshot: str, package: Path, directory: Path, name: str, search: tuple[Path, ...]) -> str:
    """The hash of what a custom config's build reads, each part framed by its length: the builder, the config, the
    verl snapshot (a built one's path names its content), every YAML file of the directories Hydra searches, and the
    Python files of each top-level package outside verl that a `_target_` of those files names (the repository's
    own dataclasses, which the build types the config's keys with). Raises `UnresolvedConfig` for a file that is
    not a regular one or over a bound (`_tree_files`' bounds)."""
    key = hashlib.blake2b()

    def framed(part: str | bytes) -> None:
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        key.update(len(data).to_bytes(8, "big") + data)

    def read(path: Path) -> bytes:
        try:
            return read_bytes(path)
        except UnreadableFile as exc:
            raise UnresolvedConfig(f"{path}: {exc}") from None

    for part in (_builder_stamp(), "custom", name, snapshot, str(directory)):
        framed(part)
    packages: set[str] = set()
    for d in (directory, *search):
        framed(str(d))
        for path in _bounded(sorted(d.rglob("*.yaml"))):
            data = read(path)
            framed(str(path.relative_to(d)))
            framed(data)
            packages.update(m.group(1).split(b".")[0].decode() for m in _TARGET.finditer(data))
    for top in sorted(packages - {package.name}):
        framed(top)
        for path in _bounded(sorted((package.parent / top).rglob("*.py")) + [package.parent / f"{top}.py"]):
            if os.path.lexists(path):
                framed(str(path.relative_to(package.parent)))
                framed(read(path))
    return key.hexdigest()[:40]


def _bounded(paths: list[Path]) -> list[Path]:
    if len(paths) > MAX_TREE_FILES:
        raise UnresolvedConfig(f"over {MAX_TREE_FILES} files to read (the bound of a snapshot build)")
    return paths


def _custom_snapshot(snapshot: str, package: Path, directory: Path, name: str, search: tuple[Path, ...]) -> str:
    """The reference of the snapshot of config `name` in `directory`, with the verl of `snapshot` whose files are in
    `package`: built (`_cached`) or cached. Raises `UnresolvedConfig` with the builder's reason."""
    key = _custom_key(snapshot, package, directory, name, search)

    def build() -> dict:
        from sapo_toolkit.schemas.build.isolated import build_isolated

        base = snapshot_document(snapshot)
        if base is None:  # the verl snapshot itself is missing: RF004 reports it for the file
            raise UnresolvedConfig(f"no snapshot of verl {snapshot}")
        config = {"name": name, "config_dir": str(directory), "search_path": [str(d) for d in search]}
        return build_isolated({"kind": "custom", "base": base, "package_dir": str(package), "config": config})

    built = _cached(key, build)
    if isinstance(built, str):
        raise UnresolvedConfig(f"config `{directory / name}.yaml` cannot be composed: {built}")
    return built[0]


__all__ = [
    "COMMAND_LINE",
    "INSTALLED",
    "NEWEST",
    "PIN",
    "RECIPE",
    "SOURCE_TREE",
    "UnresolvedConfig",
    "VerlChoice",
    "choose",
    "config_for",
    "named",
    "repository_dirs",
]
