"""Loading committed schema snapshots (plain JSON; linting never composes with Hydra)."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import NamedTuple

from sapo_toolkit import schemas as _schemas_package
from sapo_toolkit.atomicio import read_regular
from sapo_toolkit.schemas.build.layout import (
    VERL_FORMAT,
    applied,
    nested_in,
    override_text,
    placed,
    region_without,
    selected_option,
    subtree_at,
)

from .core.dotted import ancestors

# The installed `sapo_toolkit.schemas` package's directory, in editable and wheel installs alike (the package is
# never zipped). `importlib.resources.files()` resolves to the same directory but imports tempfile, zipfile, lzma
# and more: ~5 ms on every cold `sapo-lint` run, measured with `-X importtime`.
SCHEMA_DIR = Path(_schemas_package.__file__).parent
DEFAULT_VERL_VERSION = "0.9.1"
# Newest snapshots of the libraries that consume pass-through dicts: the default when a recipe names no stack.
DEFAULT_MEGATRON_CORE = "0.16.1"
DEFAULT_MBRIDGE = "0.15.1"  # what `pip install mbridge` gives (verl's Ascend images)
DEFAULT_RAY = "2.60.0"  # `ray_kwargs.ray_init` goes to `ray.init`; the one ray snapshot
# What MindSpeed adds to TransformerConfig on NPU: one transcribed snapshot (MindSpeed is not on PyPI).
DEFAULT_MINDSPEED = "git-master"
MAX_BUILT_SNAPSHOT_BYTES = 256 * 2**20  # verl main's: 0.6 MB


class SnapshotNotFound(LookupError):
    pass


class ConfigNotInSnapshot(SnapshotNotFound):
    """The verl version has a snapshot, but not of this config."""


_MINOR = re.compile(r"[0-9]+\.[0-9]+")


@cache
def version_key(version: str) -> tuple:
    """A sort key in PEP 440 order (`packaging`): `0.10.0.dev` before `0.10.0`, `0.16.0rc1` before `0.16`. A name
    that is no version (`git-main`, a tree's `unknown`) sorts before every version, by its text."""
    from packaging.version import InvalidVersion, Version

    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)


@cache
def _facts() -> dict:
    return json.loads((SCHEMA_DIR / "facts.json").read_text(encoding="utf-8"))


def fact(package: str, name: str, version: str):
    """The value of one fact of `schemas/facts.json` (`package`: `verl` or `megatron-core`) for `version`: the
    value of the last `[since, value]` pair whose `since` is not newer, else the fact's `before`."""
    entry = _facts()[package][name]
    key = version_key(version)
    value = entry["before"]
    for since, then in entry["values"]:
        if version_key(since) <= key:
            value = then
    return value


def code_patterns() -> dict[str, str]:
    """The verl facts that a source tree's own code decides: name -> the regular expression its Python matches
    where the fact holds (`schemas/facts.json` `code`)."""
    return {name: entry["code"] for name, entry in _facts()["verl"].items() if "code" in entry}


def fact_names(package: str) -> list[str]:
    """The facts `schemas/facts.json` holds for `package`."""
    return list(_facts()[package])


def available_verl_versions() -> list[str]:
    """The verl versions with a committed snapshot (`schemas/verl/<version>.json`), oldest first. Listed with
    os.listdir, not Path.glob: asked for every unknown or unread key (`other_versions`), where a glob took longer than
    the answer."""
    names = os.listdir(SCHEMA_DIR / "verl")
    return sorted((name.removesuffix(".json") for name in names if name.endswith(".json")), key=version_key)


def _is_release(version: str) -> bool:
    return all(part.isdigit() for part in version.split("."))


def newest_release() -> str:
    """The newest committed snapshot of a verl release (a `.dev` snapshot of verl main is used only when named):
    what a file is linted against when nothing says which verl it runs."""
    releases = [v for v in available_verl_versions() if _is_release(v)]
    return releases[-1] if releases else DEFAULT_VERL_VERSION


def committed_for(version: str) -> str | None:
    """The committed snapshot for a verl version a pin or the command line names: that version's own, else the newest
    of the same minor (`0.6.1` -> `0.6.3`; a minor alone, `0.6`, names its newest), else None."""
    known = available_verl_versions()
    if version in known:
        return version
    minor = version.split(".")[:2]
    if len(minor) < 2 or not all(part.isdigit() for part in minor):
        return None
    same = [v for v in known if v.split(".")[:2] == minor]
    return same[-1] if same else None


# Names of verl's development branch: its newest `.dev` snapshot stands for it.
DEVELOPMENT_ALIASES = ("main",)


def resolve_verl_version(requested: str) -> str:
    """The snapshot a verl version named on the command line or in a recipe stands for: its own; for `main`, the
    newest development (`.dev`) snapshot; for a release without a snapshot of its own (`0.7.0`) or a minor (`0.6`),
    the newest snapshot of that minor (`committed_for`). Anything else comes back unchanged, and loading it reports
    the snapshots there are."""
    if requested in DEVELOPMENT_ALIASES:
        development = [v for v in available_verl_versions() if not _is_release(v)]
        return development[-1] if development else requested
    if version_key(requested)[0] == 0:  # no version (`0.6.x`): nothing is guessed
        return requested
    return committed_for(requested) or requested


def known_verl_version(requested: str) -> bool:
    """Whether a version named on the command line has a snapshot to check against (`resolve_verl_version`), or
    names a built snapshot file."""
    return is_built(requested) or resolve_verl_version(requested) in available_verl_versions()


def installed_verl_version() -> str | None:
    """verl's version from its dist-info directory name, without importing verl or importlib.metadata."""
    for entry in sys.path:
        base = Path(entry or ".")
        if not base.is_dir():
            continue
        for info in base.glob("verl-*.dist-info"):
            return info.name[len("verl-") : -len(".dist-info")]
    return None


@dataclass(slots=True)
class Tree:
    """One composed key tree: dotted path -> entry (schemas/FORMAT.md)."""

    entries: dict[str, dict]
    _by_leaf: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _children: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _suggestions: dict[str, tuple[str | None, bool]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for path in self.entries:
            parent, _, leaf = path.rpartition(".")
            self._by_leaf.setdefault(leaf, []).append(path)
            self._children.setdefault(parent, []).append(leaf)

    def get(self, path: str) -> dict | None:
        return self.entries.get(path)

    def children(self, path: str) -> list[str]:
        return self._children.get(path, [])

    def deepest_existing(self, path: str) -> str:
        """The longest existing prefix of a dotted path ('' for the root)."""
        return next((prefix for prefix in ancestors(path) if prefix in self.entries), "")

    def suggest(self, path: str) -> tuple[str | None, bool]:
        """Nearest real path for an unknown one, and whether the match is unambiguous.

        Searches other levels by exact leaf name first (`actor.policy_loss.tau_pos` -> `actor.tau_pos`),
        preferring the candidate that shares the longest prefix, then near spellings at the same level,
        then near leaf names anywhere (again the longest shared prefix first: `actor.policy_loss.tua_neg` ->
        `actor.tau_neg`, not the ref's). Memoised: every variant of a script asks again.
        """
        if path not in self._suggestions:
            self._suggestions[path] = self._suggest(path)
        return self._suggestions[path]

    def _suggest(self, path: str) -> tuple[str | None, bool]:
        import difflib  # only when something is unknown

        parts = path.split(".")
        leaf = parts[-1]

        def shared(candidate: str) -> int:
            n = 0
            for a, b in zip(candidate.split("."), parts, strict=False):
                if a != b:
                    break
                n += 1
            return n

        same_leaf = [p for p in self._by_leaf.get(leaf, []) if p != path]
        if same_leaf:
            best = max(shared(c) for c in same_leaf)
            top = sorted((c for c in same_leaf if shared(c) == best), key=len)
            return top[0], len(top) == 1 and best > 0
        anchor = self.deepest_existing(path)
        depth = len(anchor.split(".")) if anchor else 0
        if depth < len(parts):
            near = difflib.get_close_matches(parts[depth], self.children(anchor), n=1, cutoff=0.6)
            if near:
                return ".".join([*parts[:depth], near[0], *parts[depth + 1 :]]), False
        near_leaf = difflib.get_close_matches(leaf, list(self._by_leaf), n=1, cutoff=0.8)
        if near_leaf:
            return min(self._by_leaf[near_leaf[0]], key=lambda c: (-shared(c), len(c))), False
        return None, False


def selection_key(selection: dict[str, str]) -> str:
    """`engine=megatron,optim=fsdp`: a tree's key in its tree set (schemas/FORMAT.md)."""
    return ",".join(f"{g}={selection[g]}" for g in sorted(selection))


def tree_entries(snapshot: dict, tree_set: str, key: str) -> dict[str, dict]:
    """One tree of a verl snapshot file (schemas/FORMAT.md, format 4): the set's `base` (or, for a set that
    `extends` another, that set's tree of the same key) without the tree's `unset` paths, with its `set` entries
    added or replaced; sorted by path, as built."""
    stored = snapshot["tree_sets"][tree_set]
    diff = stored["trees"][key]
    entries = tree_entries(snapshot, stored["extends"], key) if "extends" in stored else dict(stored["base"])
    for path in diff["unset"]:
        del entries[path]
    entries.update(diff["set"])
    return dict(sorted(entries.items()))


def selecting_groups(groups: dict[str, dict]) -> tuple[str, ...]:
    """The config groups whose option picks the tree: those with more than one option (schemas/FORMAT.md)."""
    return tuple(sorted(g for g, spec in groups.items() if len(spec["options"]) > 1))


def subtree_entries(snapshot: dict, name: str) -> dict[str, dict]:
    """A group option's subtree (`actor/megatron_actor`), its entries relative to where it lands (`""`: the
    package's own entry): schemas/FORMAT.md `subtrees`."""
    stored = snapshot["subtrees"][name]
    if "entries" in stored:
        return stored["entries"]
    region = subtree_at(tree_entries(snapshot, stored["tree_set"], stored["selection"]), stored["package"])
    return applied(region_without(region, stored.get("except", [])), stored)


class GroupChange(NamedTuple):
    """One config-group override as Hydra applies it to the defaults list before any key is set: another option
    at a placement (`actor@actor_rollout_ref.actor=dp_actor`), its deletion (`~critic`, `option` None), or an
    option appended at a package (`+profiler@profiler=profiler`, `append`)."""

    key: str  # the placement's override key; for an append, the key as written (`profiler@profiler`)
    group: str
    package: str
    option: str | None
    append: bool = False

    @property
    def text(self) -> str:
        return ("+" if self.append else "") + override_text(self.key, self.option)


# How `schemas.build.layout.snapshot_text` writes a verl snapshot (schemas/FORMAT.md, Layout): keys sorted, one part
# after another, `tree_sets` the last but `verl_version`, each tree set starting on a line of its own.
_TREE_SETS_LINE = '\n"tree_sets":{\n'
_VERSION_LINE = '\n"verl_version":'
_DECODER = json.JSONDecoder()


def _snapshot_document(data: bytes) -> dict:
    """A verl snapshot file's document. Laid out as `snapshot_text` writes it (a committed snapshot), its tree sets,
    most of the file, are decoded one at a time when first asked for (`_TreeSets`): a run reads one or two of a
    snapshot's tree sets, and of the other versions' snapshots (`other_versions`) no more. Any other text (a snapshot
    built on the fly, written on one line) is decoded whole. Raises ValueError for text that is no JSON."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return json.loads(data)
    at, tail = text.find(_TREE_SETS_LINE), text.rfind(_VERSION_LINE)
    if 0 <= at < tail:
        try:
            parts = json.loads(text[: at + 1] + text[tail + 1 :])  # every part but `tree_sets`
        except ValueError:
            parts = None
        if isinstance(parts, dict) and parts.get("format") == VERL_FORMAT and "tree_sets" not in parts:
            parts["tree_sets"] = _TreeSets(text, at + len(_TREE_SETS_LINE) - 2)
            return dict(sorted(parts.items()))
    return json.loads(text)


class _TreeSets(Mapping):
    """A laid-out snapshot's `tree_sets` (`_snapshot_document`): each tree set decoded from the file's text when first
    asked for, found by the line `"<name>":{` that opens it (the first such line in `tree_sets`: the containers a
    tree set holds are named `base`, `trees`, `corrections`, by a selection or by an override, none a config's name;
    what is found there is a tree set or the whole part is decoded instead)."""

    def __init__(self, text: str, start: int) -> None:
        self._text, self._start = text, start  # `start`: where the part's own `{` is
        self._decoded: dict[str, dict] = {}
        self._whole: dict[str, dict] | None = None

    def __getitem__(self, name: str) -> dict:
        if self._whole is not None:
            return self._whole[name]
        if name not in self._decoded:
            opener = f"\n{json.dumps(name)}:{{\n"
            at = self._text.find(opener, self._start)
            stored = _DECODER.raw_decode(self._text, at + len(opener) - 2)[0] if at >= 0 else None
            if not (isinstance(stored, dict) and "trees" in stored and ("base" in stored or "extends" in stored)):
                return self._all()[name]
            self._decoded[name] = stored
        return self._decoded[name]

    def _all(self) -> dict[str, dict]:
        if self._whole is None:
            self._whole = _DECODER.raw_decode(self._text, self._start)[0]
        return self._whole

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


class _VerlSnapshot:
    """One parsed `schemas/verl/<version>.json`, shared by its configs; each tree is built on first use."""

    __slots__ = ("_subtrees", "_trees", "data", "entry_reads", "main_modules", "read_set")

    def __init__(self, data: dict) -> None:
        self.data = data
        self.read_set = frozenset(data["read_set"])
        self.entry_reads = {node: frozenset(modules) for node, modules in data["entry_reads"].items()}
        self.main_modules = frozenset(data["main_modules"])
        self._trees: dict[tuple, Tree] = {}
        self._subtrees: dict[str, dict[str, dict]] = {}

    def tree(self, tree_set: str, key: str) -> Tree:
        if (tree_set, key) not in self._trees:
            self._trees[tree_set, key] = Tree(tree_entries(self.data, tree_set, key))
        return self._trees[tree_set, key]

    def entry(self, tree_set: str, key: str, path: str) -> dict | None:
        """Tree `key`'s entry at `path`, read from the stored diffs without building the tree (what
        `other_versions` asks of every other snapshot: building each tree took longer than the question)."""
        stored = self.data["tree_sets"][tree_set]
        diff = stored["trees"][key]
        if path in diff["set"]:
            return diff["set"][path]
        if path in diff["unset"]:
            return None
        return self.entry(stored["extends"], key, path) if "extends" in stored else stored["base"].get(path)

    def subtree(self, name: str) -> dict[str, dict] | None:
        """`group/option`'s subtree; None for an option that does not compose on its own."""
        if name not in self.data["subtrees"]:
            return None
        if name not in self._subtrees:
            self._subtrees[name] = subtree_entries(self.data, name)
        return self._subtrees[name]

    def correction(self, tree_set: str, key: str, text: str) -> dict | None:
        """What turns the rebuilt tree of one single group override into Hydra's (FORMAT.md `corrections`)."""
        corrections = self.data["tree_sets"][tree_set].get("corrections", {})
        return corrections.get(key, {}).get(text) or corrections.get("*", {}).get(text)

    def changed_tree(self, tree_set: str, key: str, changes: tuple[GroupChange, ...], packages: tuple) -> Tree:
        """Tree `key` after the group overrides `changes`, in defaults-list order: each rebuilt as the option's
        subtree at its package, with the build's correction of that single override."""
        if (tree_set, key, changes) not in self._trees:
            entries = tree_entries(self.data, tree_set, key)
            for change in changes:
                subtree = None if change.option is None else self.subtree(f"{change.group}/{change.option}")
                if change.append:
                    entries = placed(entries, change.package, subtree, replace=False)
                    continue
                entries = placed(entries, change.package, subtree, True, nested_in(change.package, packages))
                fix = self.correction(tree_set, key, change.text)
                if fix is not None and "error" not in fix:
                    entries = applied(entries, fix)
            self._trees[tree_set, key, changes] = Tree(dict(sorted(entries.items())))
        return self._trees[tree_set, key, changes]


class Snapshot:
    """One trainer config of one verl version: its config groups, verl's read-set, and a tree per selection of the
    groups that have several options (`model_engine` for `ppo_trainer`; `engine` and `optim` for
    `sft_trainer_engine`), rebuilt after config-group overrides of its other placements."""

    __slots__ = (
        "_versioned",
        "config_name",
        "entry_reads",
        "group_options",
        "groups",
        "main_modules",
        "placements",
        "read_set",
        "repeatable",
        "selecting",
        "tree_set",
        "verl_version",
    )

    def __init__(self, versioned: _VerlSnapshot, config_name: str) -> None:
        self.verl_version: str = versioned.data["verl_version"]
        self.config_name = config_name
        config = versioned.data["configs"][config_name]
        self.groups: dict[str, dict] = config["groups"]
        # override key -> {"group", "package", "default" (as written: `${model_engine}_actor`)}, defaults-list order
        self.placements: dict[str, dict] = config["defaults"]
        self.group_options: dict[str, list[str]] = config["options"]  # every group on the search path
        # `group/option`s that `+group=option` may append where the option already is (FORMAT.md `repeatable`)
        self.repeatable = frozenset(versioned.data["repeatable"])
        self.tree_set: str = config["trees"]
        self.selecting = selecting_groups(self.groups)
        self.read_set: frozenset[str] = versioned.read_set
        # top-level node -> the entry modules that read it, where some whose config has it do not (FORMAT.md)
        self.entry_reads: dict[str, frozenset[str]] = versioned.entry_reads
        self.main_modules: frozenset[str] = versioned.main_modules  # the modules `python -m` runs
        self._versioned = versioned

    @property
    def label(self) -> str:
        """`0.10.0.dev (main @ 1dda039)` for a snapshot built from a git archive, else the version."""
        return version_label(self._versioned.data)

    def default_selection(self) -> dict[str, str]:
        return {g: self.groups[g]["default"] for g in self.selecting}

    def tree(self, selection: dict[str, str], changes: tuple[GroupChange, ...] = ()) -> Tree:
        """The tree of a selection of every group in `selecting` (`{"model_engine": "megatron"}`), after the
        group overrides `changes` (in defaults-list order) when there are any."""
        if not changes:
            return self._versioned.tree(self.tree_set, selection_key(selection))
        packages = tuple(p["package"] for p in self.placements.values())
        return self._versioned.changed_tree(self.tree_set, selection_key(selection), changes, packages)

    def selected(self, key: str, selection: dict[str, str]) -> str:
        """The option a placement selects in a tree selection: its default as written, with `${group}` read from
        the selection (`${model_engine}_actor` -> `megatron_actor`)."""
        return selected_option(self.placements[key]["default"], selection)

    def refusal(self, selection: dict[str, str], change: GroupChange) -> str | None:
        """Hydra's error for a single group override that its defaults list cannot compose (`~model_engine`, which
        `${model_engine}_actor` needs), as the build recorded it; None when it composes."""
        fix = self._versioned.correction(self.tree_set, selection_key(selection), change.text)
        return fix["error"] if fix is not None and "error" in fix else None

    def subtree(self, group: str, option: str) -> dict[str, dict] | None:
        """A group option's entries relative to where it lands; None when it does not compose on its own."""
        return self._versioned.subtree(f"{group}/{option}")


def version_label(data: dict) -> str:
    """A snapshot's version in messages: the commit of a source build is named (`0.10.0.dev (main @ 1dda039)`,
    the branch from the archive's name `verl-main-...`)."""
    commit = data.get("commit")
    if not commit:
        return data["verl_version"]
    m = re.search(r"verl-([A-Za-z0-9_.]+?)-[0-9a-f]{7,40}\b", data.get("source", ""))
    return f"{data['verl_version']} ({m.group(1) + ' @ ' if m else 'commit '}{commit[:7]})"


# A version is joined into a path: letters, digits, dots, `+` and `-` only (no `/`, no `..`).
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+-]*")


def is_built(snapshot: str) -> bool:
    """Whether a snapshot reference names a built snapshot file (an absolute path: `verl_source` builds them from a
    verl source tree and caches them) rather than a committed version."""
    return os.path.isabs(snapshot)


@cache
def _verl_snapshot(snapshot: str) -> _VerlSnapshot | None:
    """The parsed snapshot of a reference, read once for all its configs; None when there is none. A reference is a
    verl version with a committed snapshot (`schemas/verl/<version>.json`), or the path of a built snapshot file."""
    try:
        if is_built(snapshot):  # a file of the user cache (or this run's scratch): the user's own, never a link
            data = read_regular(snapshot, MAX_BUILT_SNAPSHOT_BYTES, follow_symlinks=False, owner=os.geteuid())
        elif not _VERSION.fullmatch(snapshot) or ".." in snapshot:
            return None
        else:
            data = (SCHEMA_DIR / "verl" / f"{snapshot}.json").read_bytes()
        return _VerlSnapshot(_snapshot_document(data))
    except (OSError, ValueError):  # none (a cache file removed since: the next run builds it again)
        return None


def snapshot_document(snapshot: str) -> dict | None:
    """The whole snapshot of a reference, as its file holds it (what a custom config's snapshot takes verl's read-set
    and entry modules from); None when there is none."""
    versioned = _verl_snapshot(snapshot)
    if versioned is None:
        return None
    return {**versioned.data, "tree_sets": dict(versioned.data["tree_sets"])}


def snapshot_version(snapshot: str) -> str:
    """The verl version of a snapshot reference (a built snapshot's own; a committed one is named by it)."""
    versioned = _verl_snapshot(snapshot) if is_built(snapshot) else None
    return versioned.data["verl_version"] if versioned is not None else snapshot


@cache
def entrypoints(verl_version: str) -> dict[str, str]:
    """Entry module -> default config name, the `entrypoints` of a snapshot (`verl_version`: a reference, as
    `_verl_snapshot` takes; built from verl's `@hydra.main` decorators by `schemas.build.entrypoint_defaults`); the
    newest snapshot's when the version has none."""
    versioned = _verl_snapshot(verl_version)
    if versioned is None:
        known = available_verl_versions()
        if not known:
            return {"verl.trainer.main_ppo": "ppo_trainer"}
        versioned = _verl_snapshot(known[-1])
    return versioned.data["entrypoints"]


def main_modules(verl_version: str) -> frozenset[str]:
    """The modules a snapshot's verl runs with `python -m` (`verl_version`: a reference); empty when it has no
    snapshot."""
    versioned = _verl_snapshot(verl_version) if verl_version else None
    return versioned.main_modules if versioned is not None else frozenset()


@cache
def load_snapshot(verl_version: str, config_name: str) -> Snapshot:
    """One config of a snapshot (`verl_version`: a reference, as `_verl_snapshot` takes). Raises `SnapshotNotFound`
    for an unknown version or config, or a version that is not a plain version string."""
    versioned = _verl_snapshot(verl_version)
    if versioned is None:
        known = ", ".join(available_verl_versions()) or "none"
        raise SnapshotNotFound(
            f"no schema snapshot for verl {verl_version} config '{config_name}' (snapshots: {known}); "
            "build one with `sapo-lint schema build`"
        )
    if config_name not in versioned.data["configs"]:
        raise ConfigNotInSnapshot(
            f"the verl {version_label(versioned.data)} snapshot has no config '{config_name}' (it has: "
            f"{', '.join(sorted(versioned.data['configs']))})"
        )
    return Snapshot(versioned, config_name)


class _TreeOf(NamedTuple):
    """Where the tree of a config and selection is stored in a snapshot: its tree set and key."""

    tree_set: str
    key: str


@cache
def _tree_of(verl_version: str, config_name: str, selection: tuple[tuple[str, str], ...]) -> _TreeOf | None:
    """The tree of another version's config that matches a group selection: that version's groups take the
    selection's option, or their default where the selection does not name them (verl 0.4-0.7's ppo_trainer has no
    `model_engine`: its one tree matches every selection). None where the version lacks the config, or a group of
    it lacks the selected option (verl 0.7's ppo_trainer has no `model_engine=megatron`)."""
    try:
        other = load_snapshot(verl_version, config_name)
    except SnapshotNotFound:
        return None
    chosen = other.default_selection() | {g: o for g, o in selection if g in other.selecting}
    if any(chosen[g] not in other.groups[g]["options"] for g in chosen):
        return None
    return _TreeOf(other.tree_set, selection_key(chosen))


class OtherVersion(NamedTuple):
    version: str
    label: str  # version_label: `0.10.0.dev (main @ 1dda039)`
    newer: bool  # than the snapshot in use


def other_versions(
    snapshot: Snapshot,
    selection: dict[str, str],
    path: str | None = None,
    read: str | None = None,
    entry_read: tuple[str, str] | None = None,
) -> list[OtherVersion]:
    """The other committed verl snapshots where the same config and group selection has the key `path`, or whose
    verl reads a key named `read`, or (`entry_read`: top-level node, entry module) whose entry module reads the node
    its config has, oldest first. Only asked when a key is unknown or unread, so the other files are read then,
    each once (`_verl_snapshot`, `_tree_of` are cached)."""
    out = []
    wanted = tuple(sorted(selection.items()))
    for version in available_verl_versions():
        if version == snapshot.verl_version:
            continue
        tree = _tree_of(version, snapshot.config_name, wanted)
        if tree is None:
            continue
        versioned = _verl_snapshot(version)
        if (
            (path is not None and versioned.entry(*tree, path) is not None)
            or (read is not None and read in versioned.read_set)
            or (entry_read is not None and _entry_reads_node(versioned, tree, *entry_read))
        ):
            newer = version_key(version) > version_key(snapshot.verl_version)
            out.append(OtherVersion(version, version_label(versioned.data), newer))
    return out


def declared_elsewhere(snapshot: Snapshot, selection: dict[str, str], path: str) -> frozenset[str]:
    """The types a dataclass declares for the key `path` in the other committed verl snapshots of the same config
    and group selection (an entry typed by more than its YAML default: not `inferred`, FORMAT.md), each union
    member apart (`float|str` gives float and str). A config no committed verl ships (a recipe's `dapo_trainer`,
    which extends verl's) is looked up in `ppo_trainer`, whose keys it holds under the same paths."""
    found: set[str] = set()
    wanted = tuple(sorted(selection.items()))
    for version in available_verl_versions():
        if version == snapshot.verl_version:
            continue
        tree = _tree_of(version, snapshot.config_name, wanted) or _tree_of(version, "ppo_trainer", wanted)
        entry = _verl_snapshot(version).entry(*tree, path) if tree is not None else None
        if entry is not None and not entry.get("inferred") and entry.get("type"):
            found.update(entry["type"].split("|"))
    return frozenset(found)


def _entry_reads_node(versioned: _VerlSnapshot, tree: _TreeOf, node: str, entry_module: str) -> bool:
    """Whether the entry module of that verl reads the top-level node its config has (FORMAT.md `entry_reads`)."""
    readers = versioned.entry_reads.get(node)
    has = versioned.entry(*tree, node) is not None and entry_module in versioned.data["entrypoints"]
    return has and (readers is None or entry_module in readers)


@dataclass(slots=True)
class Consumer:
    package: str
    version: str  # the snapshot actually used
    classes: dict[str, dict]

    def accepts(self, cls: str) -> frozenset[str]:
        return frozenset(self.classes.get(cls, {}).get("fields", {}))

    def choices(self, cls: str, name: str) -> tuple[str, ...] | None:
        """The values a field takes (its `Literal` or the values its `__post_init__` accepts), None when any."""
        found = self.classes.get(cls, {}).get("fields", {}).get(name, {}).get("choices")
        return tuple(found) if found is not None else None


@cache
def consumer_versions(package: str) -> tuple[str, ...]:
    """The committed snapshot versions of `package`, oldest first (`megatron-core` -> 0.12.1, 0.15.3, ...)."""
    root = SCHEMA_DIR / "consumers"
    return tuple(sorted((p.stem[len(package) + 1 :] for p in root.glob(f"{package}-*.json")), key=version_key))


@cache
def load_consumer(package: str, version: str) -> Consumer:
    """The snapshot of `package` at `version`, or the newest one not newer than it (named in messages)."""
    root = SCHEMA_DIR / "consumers"
    versions = consumer_versions(package)
    if not versions:
        raise SnapshotNotFound(f"no consumer snapshot for {package}")
    chosen = version if version in versions else None
    if chosen is None:
        older = [v for v in versions if v[0].isdigit() and version_key(v) <= version_key(version)]
        chosen = older[-1] if older else versions[0]
    data = json.loads((root / f"{package}-{chosen}.json").read_text(encoding="utf-8"))
    return Consumer(package, chosen, data["classes"])
