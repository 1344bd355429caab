"""Composing verl's trainer configs with hydra-core: every selection of the config groups that have more than one
option, the config-group placements of each config's defaults list, and the config as Hydra composes it after each
single config-group override of each selection (`group@package=option` for every other option, `~group@package`).

Hydra composes a config by merging, in the order of its defaults list, the content of each config file at its
package (hydra's `ConfigLoaderImpl._compose_config_from_defaults_list`). So the content at a package `R` depends
only on the files of the defaults list whose content reaches `R` (`_touches`), and on their order. A single override
replaces the files of one placement's subtree, all inside one region: the config after it is the selection's
config with that region taken from any composition whose files reaching the region are the same, in the same order
(`_region_signature`). The build composes, with Hydra, every single override of a config's default selection (in
batches of overrides whose regions are disjoint, which do not reach each other's region) and takes the other
selections' regions from these compositions wherever the signatures match, composing again where none does."""

from __future__ import annotations

import copy
import io
import itertools
import json
import math
import posixpath
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra._internal import config_loader_impl
from hydra.core.default_element import DefaultsTreeNode, GroupDefault, InputDefault
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, OmegaConf

from . import SchemaBuildError
from .layout import override_text, selected_option

# The build's bounds, in units of work (a repository's tree is untrusted input: 2^k group selections, thousands of
# options, alias bombs, huge files). verl main needs 80 compositions (about 0.1 s each); its largest config file is
# 40 KB, 1,800 nodes.
MAX_COMPOSITIONS = 200
MAX_YAML_BYTES = 4 * 1024 * 1024
MAX_YAML_NODES = 200_000  # after expanding aliases

# A package no verl config uses: where the options of groups that no config places are composed on their own.
PROBE_PACKAGE = "_sapo_lint_probe"
# An override key Hydra's grammar can write: a group path of names, then an optional @package. Nested defaults of
# a group's option name their group relatively (`../optim@optim`): their keys (`actor/../optim@...`) cannot be.
_WRITABLE_KEY = re.compile(r"[A-Za-z_][\w-]*(/[A-Za-z_][\w-]*)*(@[\w.-]+)?")
_ABSENT = object()


@dataclass(slots=True)
class ConfigSource:
    """A primary config: its name, the directory holding it, and the directories on its search path."""

    name: str
    config_dir: Path
    search_path: tuple[Path, ...] = ()

    @property
    def dirs(self) -> tuple[Path, ...]:
        return (self.config_dir, *self.search_path)


@dataclass(slots=True)
class Placement:
    """A config group in a config's defaults list that an override can name (FORMAT.md `defaults`)."""

    key: str  # Hydra's override key: `actor@actor_rollout_ref.actor`, `critic`, `model_engine`
    group: str
    package: str  # where its option lands ('' = the root)
    default: str  # the option as the defaults list writes it: `${model_engine}_actor`


@dataclass(frozen=True, slots=True)
class Item:
    """One config of a composed defaults list (merge order). Two items with the same `content` at the same package
    merge the same keys and values."""

    content: str  # the config's content (its defaults list removed) as JSON; hydra's own configs: their path
    package: str
    placement: str | None  # the override key of the top-level placement whose subtree holds it
    paths: frozenset[str]  # what it writes: its package and every key below it
    leaves: frozenset[str]  # those of `paths` that hold a value other than a mapping
    # the config it is (`actor/dp_actor`, `ppo_trainer`), where verl's YAML comments on its keys are read (docs.py)
    config_path: str = field(default="", compare=False)

    @property
    def identity(self) -> tuple[str, str]:
        return self.content, self.package


@dataclass(slots=True)
class Composition:
    container: dict
    items: tuple[Item, ...]
    choices: dict[str, str]  # placement key -> selected option (Hydra's known choices)
    # The placements whose option Hydra would take a second time (`+distillation=distillation`): those whose
    # option has a defaults list without config groups. Any other's second copy repeats an override key in the
    # defaults list (`data appears more than once in the final defaults list`).
    repeatable: frozenset[str] = frozenset()


@dataclass(slots=True)
class ComposedConfig:
    """One config, composed with Hydra. ``groups``: the groups at their own package (override key = group name) ->
    ``{"default", "options"}``; ``placements``: every placement an override can name, in defaults-list order;
    ``options``: every group on the config's search path -> its options; ``selections``: selection key
    (``selection_key``) -> composition; ``overrides``: selection key -> single group override (``override_text``)
    -> the container Hydra composes with it, or Hydra's error message."""

    groups: dict[str, dict]
    placements: list[Placement]
    options: dict[str, list[str]]
    selections: dict[str, Composition]
    overrides: dict[str, dict[str, dict | str]]


@dataclass(slots=True)
class Workspace:
    """What the compositions of one verl package share: every composition so far (any config's regions may serve
    another's), and each config's result by the identity of its selections' defaults lists."""

    pool: list[Composition] = field(default_factory=list)
    compositions: int = 0  # counted against MAX_COMPOSITIONS
    by_identity: dict[tuple, ComposedConfig] = field(default_factory=dict)
    contents: dict[tuple[str, str], tuple[str, frozenset[str], frozenset[str]]] = field(default_factory=dict)
    _signatures: dict[tuple[int, str], tuple] = field(default_factory=dict)

    def signature(self, composition: Composition, region: str) -> tuple:
        key = (id(composition), region)
        if key not in self._signatures:
            self._signatures[key] = _region_signature(composition.items, region)
        return self._signatures[key]


def selection_key(selection: dict[str, str]) -> str:
    """``engine=megatron,optim=fsdp``: the selected option of each tree-selecting group, groups sorted (FORMAT.md);
    ``""`` for a config without such groups."""
    return ",".join(f"{g}={selection[g]}" for g in sorted(selection))


def selecting_groups(groups: dict[str, dict]) -> list[str]:
    """The groups whose option picks the tree: those with more than one option."""
    return sorted(g for g, spec in groups.items() if len(spec["options"]) > 1)


def _overrides(source: ConfigSource) -> list[str]:
    """The search path of every composition, given explicitly: the config's directory, then the directories of its
    `hydra.searchpath` as the build resolved them (absolute, existing). Hydra then never reads the config's own
    `hydra.searchpath` entries, so a `pkg://` entry never imports a package and no resolver in it is evaluated."""
    entries = [f"file://{p}" for p in source.dirs if Path(p).is_dir()]
    if not entries:
        raise SchemaBuildError(f"{source.config_dir}: not a directory")
    text = "hydra.searchpath=[" + ",".join(_quoted(e) for e in entries) + "]"
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if OverridesParser.create().parse_override(text).value() != entries:  # a path Hydra's grammar cannot quote
        raise SchemaBuildError(f"{source.config_dir}: a directory on its search path cannot be written for Hydra")
    return [text]


def _quoted(text: str) -> str:
    """A Hydra quoted string: backslashes before a quote and at the end doubled, the quote escaped."""
    return "'" + re.sub(r"(\\*)(?='|$)", r"\1\1", text).replace("'", "\\'") + "'"


def group_options(source: ConfigSource) -> dict[str, list[str]]:
    """Every config group on the search path (a directory holding YAML files, `a/b` for nested ones) -> its
    options, the YAML files' names. Hydra takes an override whose key names one as a group override."""
    found: dict[str, set[str]] = {}
    for d in source.dirs:
        for path in Path(d).rglob("*.yaml"):
            group = path.parent.relative_to(d).as_posix()
            if group != "." and "__pycache__" not in group:
                found.setdefault(group, set()).add(path.stem)
    return {g: sorted(found[g]) for g in sorted(found)}


@contextmanager
def config_files_parsed_once() -> Iterator[None]:
    """Hydra parses every YAML file of the defaults tree (verl's and its own) again for each `compose`: its caching
    repository lives for one composition. A build composes dozens of selections of the same files, and YAML parsing
    was most of its time. Inside this block each text is parsed once and every caller gets its own copy (Hydra
    edits the configs it loads). `OmegaConf.load` is where both of Hydra's config sources parse; their classes
    themselves cannot be patched, as Hydra's plugin scan loads them as module copies of its own."""
    parse = OmegaConf.load
    parsed: dict[str, object] = {}

    def load_parsed_once(file_):
        text = file_.read() if hasattr(file_, "read") else Path(file_).read_text(encoding="utf-8")
        if text not in parsed:
            _within_bounds(text, getattr(file_, "name", file_))
            parsed[text] = parse(io.StringIO(text))
        return copy.deepcopy(parsed[text])

    OmegaConf.load = staticmethod(load_parsed_once)
    try:
        yield
    finally:
        OmegaConf.load = staticmethod(parse)


def _within_bounds(text: str, name: object) -> None:
    """Raise `SchemaBuildError` for a config file over `MAX_YAML_BYTES`, or over `MAX_YAML_NODES` once its aliases
    are expanded (counted on PyYAML's node graph, where an alias is a shared node: linear in the text)."""
    import yaml

    if len(text) > MAX_YAML_BYTES:
        raise SchemaBuildError(f"config file {name} is over {MAX_YAML_BYTES} bytes (the build's bound)")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return  # OmegaConf reports it as it parses
    sizes: dict[int, int] = {}
    pending = [(root, False)] if root is not None else []
    while pending:  # post-order without recursion: a node's size is 1 + its children's, each computed once
        node, expanded = pending.pop()
        if id(node) in sizes:
            continue
        children = (
            [c for pair in node.value for c in pair]
            if isinstance(node, yaml.MappingNode)
            else (node.value if isinstance(node, yaml.SequenceNode) else [])
        )
        if expanded:
            sizes[id(node)] = min(1 + sum(sizes.get(id(c), 0) for c in children), MAX_YAML_NODES + 1)
        else:
            pending.append((node, True))
            pending.extend((c, False) for c in children if id(c) not in sizes)
    if root is not None and sizes[id(root)] > MAX_YAML_NODES:
        raise SchemaBuildError(f"config file {name} expands to over {MAX_YAML_NODES} nodes (the build's bound)")


@contextmanager
def _defaults_lists_recorded(record: list) -> Iterator[None]:
    """Each `compose` inside the block appends the defaults list (hydra's `DefaultsList`) it composed from to
    `record`: the tree of which config sits at which package, for the price of the composition itself."""
    create = config_loader_impl.create_defaults_list

    def recorded(*args, **kwargs):
        result = create(*args, **kwargs)
        record.append(result)
        return result

    config_loader_impl.create_defaults_list = recorded
    try:
        yield
    finally:
        config_loader_impl.create_defaults_list = create


class _Composer:
    """Composes one config (inside its Hydra context) and reads each composition's defaults list."""

    def __init__(self, source: ConfigSource, workspace: Workspace) -> None:
        self.source = source
        self.workspace = workspace
        self.base = _overrides(source)
        self.placements: dict[str, Placement] = {}
        self.leaf_keys: set[str] = set()  # override keys of the first composition's options without a defaults list

    def compose(self, overrides: list[str], placements: bool = False) -> Composition:
        self.workspace.compositions += 1
        if self.workspace.compositions > MAX_COMPOSITIONS:
            raise _over_bound(self.source)
        record: list = []
        with _defaults_lists_recorded(record):
            cfg = compose(config_name=self.source.name, overrides=self.base + overrides)
        defaults = record[-1]
        if placements and not self.leaf_keys:
            self.leaf_keys = {d.override_key for d in defaults.defaults if d.override_key}
        items = tuple(self._items(defaults.defaults_tree, placements))
        composition = Composition(
            OmegaConf.to_container(cfg, resolve=False),
            items,
            dict(defaults.overrides.known_choices),
            frozenset(_repeatable(defaults.defaults_tree)),
        )
        self.workspace.pool.append(composition)
        return composition

    def _items(self, tree: DefaultsTreeNode, placements: bool) -> Iterator[Item]:
        """The configs in merge order, as hydra's `_tree_to_list` flattens the tree, each with the top-level
        placement holding it; ``placements``: record the placements too."""

        def visit(node: DefaultsTreeNode, placement: str | None) -> Iterator[Item]:
            for child in node.children or ():
                child_node = child.node if isinstance(child, DefaultsTreeNode) else child
                inner = placement
                if placement is None and isinstance(child_node, GroupDefault):
                    inner = self._placement(child_node, node, placements)
                if isinstance(child, DefaultsTreeNode) and child.children:
                    yield from visit(child, inner)
                else:
                    item = self._item(child_node, node, inner)
                    if item is not None:
                        yield item

        yield from visit(tree, None)

    def _placement(self, node: GroupDefault, parent: DefaultsTreeNode, record: bool) -> str:
        key = node.get_override_key()
        if record and _WRITABLE_KEY.fullmatch(key) and not key.startswith("hydra/") and key not in self.placements:
            written = _written_default(self.source, parent.node.get_config_path(), node)
            self.placements[key] = Placement(key, node.get_group_path(), node.get_final_package(), written)
        return key

    def _item(self, node: InputDefault, parent: DefaultsTreeNode, placement: str | None) -> Item | None:
        if node.is_virtual() or node.is_deleted() or node.is_missing() or node.get_name() is None:
            return None
        if node.is_self():
            config_path, package = parent.node.get_config_path(), parent.node.get_final_package()
        else:
            config_path, package = node.get_config_path(), node.get_final_package()
        if config_path == "_dummy_empty_config_":
            return None
        key = (config_path, package)
        if key not in self.workspace.contents:
            self.workspace.contents[key] = _content(self.source, config_path, package)
        content, paths, leaves = self.workspace.contents[key]
        return Item(content, package, placement, paths, leaves, config_path)


def _repeatable(tree: DefaultsTreeNode) -> Iterator[str]:
    """The override keys of the top-level placements whose option has a defaults list without config groups."""

    def has_groups(node: DefaultsTreeNode) -> bool:
        return any(
            isinstance(c.node if isinstance(c, DefaultsTreeNode) else c, GroupDefault)
            or (isinstance(c, DefaultsTreeNode) and has_groups(c))
            for c in node.children or ()
        )

    def visit(node: DefaultsTreeNode) -> Iterator[str]:
        for child in node.children or ():
            if not isinstance(child, DefaultsTreeNode):
                continue
            if isinstance(child.node, GroupDefault):
                if child.children and not has_groups(child):
                    yield child.node.get_override_key()
            else:
                yield from visit(child)

    yield from visit(tree)


def _config_file(source: ConfigSource, config_path: str) -> Path | None:
    path = posixpath.normpath(config_path)
    return next((d / f"{path}.yaml" for d in source.dirs if (d / f"{path}.yaml").is_file()), None)


def _content(source: ConfigSource, config_path: str, package: str) -> tuple[str, frozenset[str], frozenset[str]]:
    """(identity, paths written, leaves written) of a config at a package. Hydra's own configs (`hydra/...`, not
    in verl's directories) stay under `hydra`: only their package is recorded."""
    file = _config_file(source, config_path)
    if file is None:
        return config_path, frozenset([package] if package else []), frozenset()
    loaded = OmegaConf.load(file)
    content = OmegaConf.to_container(loaded, resolve=False) if isinstance(loaded, DictConfig) else {}
    content.pop("defaults", None)
    paths: set[str] = {package} if package else set()
    leaves: set[str] = set()

    def walk(prefix: str, value: Any) -> None:
        for k, v in value.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            paths.add(path)
            if isinstance(v, dict):
                walk(path, v)
            else:
                leaves.add(path)

    walk(package, content)
    return json.dumps(content, sort_keys=True), frozenset(paths), frozenset(leaves)


def _written_default(source: ConfigSource, parent_path: str, node: GroupDefault) -> str:
    """The option a defaults list names for `node`, as written there when it is an interpolation
    (`${model_engine}_actor`, which each tree selection resolves), else as selected (after the config's own
    `override` entries)."""
    file = _config_file(source, parent_path)
    if file is not None and not node.config_name_overridden:
        written_key = node.group + (f"@{node.package}" if node.package else "")
        loaded = OmegaConf.load(file)
        for entry in OmegaConf.to_container(loaded, resolve=False).get("defaults") or ():
            if isinstance(entry, dict) and len(entry) == 1:
                ((key, value),) = entry.items()
                if key.split()[-1] == written_key and isinstance(value, str) and "${" in value:
                    return value
    return str(node.get_name())


def _touches(item: Item, region: str) -> bool:
    """Whether merging `item` changes what is at `region` (or below): it writes there, or replaces a mapping above
    it with a value."""
    if not region:
        return bool(item.paths)
    below = region + "."
    return any(p == region or p.startswith(below) for p in item.paths) or any(
        region.startswith(leaf + ".") for leaf in item.leaves
    )


def _region_signature(items: tuple[Item, ...], region: str) -> tuple:
    return tuple(i.identity for i in items if _touches(i, region))


def _common_ancestor(packages: list[str]) -> str:
    parts = [p.split(".") if p else [] for p in packages]
    common = []
    for names in zip(*parts, strict=False):
        if any(n != names[0] for n in names):
            break
        common.append(names[0])
    return ".".join(common)


def _select(container: dict, region: str) -> Any:
    value: Any = container
    for name in region.split(".") if region else ():
        if not isinstance(value, dict) or name not in value:
            return _ABSENT
        value = value[name]
    return value


def _with_region(container: dict, region: str, value: Any, kept: set[str]) -> dict:
    """`container` with `value` at `region` (`_ABSENT`: without it, and without the mappings above it that held
    nothing else and that no config writes, `kept` being those that one does); copied along the path only."""
    if not region:
        return value
    names = region.split(".")
    out = dict(container)
    node = out
    for name in names[:-1]:
        node[name] = dict(node.get(name) or {})
        node = node[name]
    if value is _ABSENT:
        node.pop(names[-1], None)
        for depth in range(len(names) - 1, 0, -1):
            ancestor = ".".join(names[:depth])
            if ancestor in kept or _select(out, ancestor):
                break
            parent = _select(out, ".".join(names[: depth - 1])) if depth > 1 else out
            parent.pop(names[depth - 1], None)
    else:
        node[names[-1]] = value
    return out


@dataclass(slots=True)
class _Override:
    """One single group override of one selection: its placement and option (None: `~key`)."""

    selection: str
    placement: Placement
    option: str | None

    @property
    def text(self) -> str:
        return override_text(self.placement.key, self.option)


def _segment(items: tuple[Item, ...], key: str) -> tuple[int, int]:
    at = [n for n, i in enumerate(items) if i.placement == key]
    return (at[0], at[-1] + 1) if at else (len(items), len(items))


def _resolve(
    target: _Override, selected: Composition, mine: list[Composition], workspace: Workspace, compose_only: bool
) -> dict | None:
    """The container Hydra composes for ``target``, from the compositions so far (`mine`: the config's own, for
    the files the new option brings), or None when none has the region's files. ``compose_only``: only from a
    composition whose region comes from the same files and which selected the same option (one composed for it)."""
    key = target.placement.key
    start, end = _segment(selected.items, key)
    if target.option is None:
        new: tuple[Item, ...] = ()
    else:
        source = next((c for c in mine if c.choices.get(key) == target.option), None)
        if source is None:
            return None
        new = tuple(i for i in source.items if i.placement == key)
    items = selected.items[:start] + new + selected.items[end:]
    packages = [target.placement.package, *(i.package for i in selected.items[start:end] + new)]
    region = _common_ancestor(packages)
    signature = _region_signature(items, region)
    if not signature and not compose_only:
        value = _ABSENT
    else:
        for composition in workspace.pool if not compose_only else mine:
            if compose_only and key in composition.choices and composition.choices[key] != target.option:
                continue
            if compose_only and target.option is None and key in composition.choices:
                continue
            if workspace.signature(composition, region) == signature:
                value = _select(composition.container, region)
                break
        else:
            return None
    kept = {a for a in _ancestors(region) if any(_touches(i, a) for i in items)}
    return _with_region(selected.container, region, value, kept)


def _ancestors(path: str) -> list[str]:
    names = path.split(".") if path else []
    return [".".join(names[:n]) for n in range(1, len(names))]


def _batches(targets: list[_Override]) -> list[list[_Override]]:
    """Targets in groups whose regions (their placements' packages) are disjoint: one composition each."""
    batches: list[list[_Override]] = []
    for t in targets:
        for batch in batches:
            if all(_disjoint(t.placement.package, o.placement.package) for o in batch):
                batch.append(t)
                break
        else:
            batches.append([t])
    return batches


def _disjoint(a: str, b: str) -> bool:
    return bool(a) and bool(b) and a != b and not a.startswith(b + ".") and not b.startswith(a + ".")


def _hydra_error(e: Exception) -> str:
    """Hydra's message, first line (the rest lists the search path), without this machine's directories."""
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return re.sub(r"(file://)?/\S*?/(?=verl/)", "", first)


class _ConfigComposition:
    """The compositions of one config: its selections, then its single group overrides."""

    def __init__(self, source: ConfigSource, workspace: Workspace) -> None:
        self.composer = _Composer(source, workspace)
        self.workspace = workspace
        self.mine: list[Composition] = []

    def run(self) -> ComposedConfig:
        composer = self.composer
        first = composer.compose([], placements=True)
        options = group_options(composer.source)
        groups = _own_package_groups(composer, first.choices, options)
        selecting = selecting_groups(groups)
        if math.prod(len(groups[g]["options"]) for g in selecting) > MAX_COMPOSITIONS:  # refused before composing
            raise _over_bound(composer.source)
        selections: dict[str, Composition] = {}
        for chosen in itertools.product(*(groups[g]["options"] for g in selecting)):
            selection = dict(zip(selecting, chosen, strict=True))
            if selection == {g: groups[g]["default"] for g in selecting}:
                selections[selection_key(selection)] = first
            else:
                overrides = [f"{g}={o}" for g, o in selection.items()]
                selections[selection_key(selection)] = composer.compose(overrides, placements=True)
        self.mine = list(selections.values())
        placements = list(composer.placements.values())
        for key, composition in selections.items():  # the linter reads a placement's option the same way
            chosen = dict(kv.split("=", 1) for kv in key.split(",") if kv)
            for p in placements:
                option = composition.choices.get(p.key)
                if option is not None and p.key not in chosen and selected_option(p.default, chosen) != option:
                    raise SchemaBuildError(
                        f"{composer.source.name}: `{p.key}: {p.default}` selects {option} in {key or 'its tree'}"
                    )
        identity = (
            tuple((k, tuple(i.identity for i in c.items if i.paths)) for k, c in sorted(selections.items())),
            tuple(p.key for p in placements),
            json.dumps(options),
        )
        if identity in self.workspace.by_identity:  # composes like an earlier config (ppo_megatron_trainer)
            earlier = self.workspace.by_identity[identity]
            return ComposedConfig(groups, placements, options, selections, earlier.overrides)
        overrides = self._single_overrides(groups, placements, options, selections)
        composed = ComposedConfig(groups, placements, options, selections, overrides)
        self.workspace.by_identity[identity] = composed
        return composed

    def _single_overrides(self, groups, placements, options, selections) -> dict[str, dict[str, dict | str]]:
        selecting = set(selecting_groups(groups))
        default_key = selection_key({g: groups[g]["default"] for g in selecting})
        targets: list[_Override] = []
        for key in sorted(selections, key=lambda k: (k != default_key, k)):
            chosen = selections[key].choices
            for p in placements:
                if p.key not in chosen:
                    continue
                if p.key not in selecting:
                    targets += [_Override(key, p, o) for o in options.get(p.group, []) if o != chosen[p.key]]
                targets.append(_Override(key, p, None))
        out: dict[str, dict[str, dict | str]] = {k: {} for k in selections}
        pending = targets
        while pending:
            unresolved = []
            for t in pending:
                found = _resolve(t, selections[t.selection], self.mine, self.workspace, t.selection == default_key)
                if found is None:
                    unresolved.append(t)
                else:
                    out[t.selection][t.text] = found
            if not unresolved:
                break
            selection = unresolved[0].selection
            batch_targets = [t for t in unresolved if t.selection == selection]
            for batch in _batches(batch_targets):
                self._compose_batch(batch, selection, selections, out)
            pending = [t for t in unresolved if t.text not in out[t.selection]]
        return out

    def _compose_batch(self, batch: list[_Override], selection: str, selections, out) -> None:
        """Compose the batch's overrides together; a refused batch is split until the refused override is alone,
        and then its error is what it gets."""
        chosen = [f"{kv}" for kv in selection.split(",") if kv]
        try:
            composition = self.composer.compose(chosen + [t.text for t in batch])
        except Exception as e:  # noqa: BLE001 - hydra and omegaconf errors alike are the override's verdict
            if len(batch) == 1:
                out[selection][batch[0].text] = _hydra_error(e)
                return
            half = len(batch) // 2
            self._compose_batch(batch[:half], selection, selections, out)
            self._compose_batch(batch[half:], selection, selections, out)
            return
        self.mine.append(composition)
        for t in batch:
            found = _resolve(t, selections[selection], [composition], self.workspace, True)
            if found is None and len(batch) > 1:  # its region reaches another's after all: on its own
                self._compose_batch([t], selection, selections, out)
            elif found is not None:
                out[selection][t.text] = found
            else:
                raise SchemaBuildError(f"{self.composer.source.name}: `{t.text}` composed but its region did not")


def _own_package_groups(composer: _Composer, choices: dict[str, str], options) -> dict[str, dict]:
    """The groups at their own package (`model_engine: dp`, `engine@engine: fsdp`: the override key is the group)
    whose options have no defaults list of their own and whose default is written plainly: a tree is selected by
    those with several options (`actor@actor_rollout_ref.actor: ${model_engine}_actor` follows `model_engine`)."""
    return {
        p.key: {"default": choices[p.key], "options": options.get(p.group, [])}
        for p in sorted(composer.placements.values(), key=lambda p: p.key)
        if p.key == p.group and p.key in composer.leaf_keys and "${" not in p.default
    }


def probe_options(source: ConfigSource, wanted: list[tuple[str, str]], workspace: Workspace) -> dict[str, dict]:
    """``group/option`` -> the container at the package each of ``wanted`` lands at when appended on its own
    (`+group@package=option` at a package nothing else writes); options Hydra cannot compose so are left out."""
    out: dict[str, dict] = {}
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(source.config_dir), version_base=None, job_name="sapo_lint_schema"):
            composer = _Composer(source, workspace)

            def probe(batch: list[tuple[int, str, str]]) -> None:
                try:
                    composition = composer.compose([f"+{g}@{PROBE_PACKAGE}.o{n}={o}" for n, g, o in batch])
                except Exception:  # noqa: BLE001 - an option that does not compose on its own is left out
                    if len(batch) > 1:
                        probe(batch[: len(batch) // 2])
                        probe(batch[len(batch) // 2 :])
                    return
                for n, g, o in batch:
                    value = _select(composition.container, f"{PROBE_PACKAGE}.o{n}")
                    if isinstance(value, dict):
                        out[f"{g}/{o}"] = value

            if wanted:
                probe([(n, g, o) for n, (g, o) in enumerate(wanted)])
    finally:
        GlobalHydra.instance().clear()
    return out


def compose_config(source: ConfigSource, workspace: Workspace) -> ComposedConfig:
    """Compose ``source`` for every combination of the options of its tree-selecting groups, and for every single
    group override of each combination."""
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(source.config_dir), version_base=None, job_name="sapo_lint_schema"):
            return _ConfigComposition(source, workspace).run()
    except Exception as e:  # noqa: BLE001 - hydra and omegaconf errors alike become one CLI line
        raise _composition_error(e, source) from None
    finally:
        GlobalHydra.instance().clear()


def _over_bound(source: ConfigSource) -> SchemaBuildError:
    return SchemaBuildError(
        f"{source.name}: composing its group selections and options takes over {MAX_COMPOSITIONS} Hydra compositions "
        "(the build's bound)"
    )


def _composition_error(e: Exception, source: ConfigSource) -> SchemaBuildError:
    """The one line for a config Hydra cannot compose. The builder's own error (a bound, a refused resolver: in
    `e` or what caused it) as it is; Hydra's message is never quoted, as it may hold text the config computed: the
    config, the exception's type and, for a missing config, the entry Hydra looked for."""
    seen = e
    while seen is not None:
        if isinstance(seen, SchemaBuildError):
            return seen
        seen = seen.__cause__ or seen.__context__
    missing = getattr(e, "missing_cfg_file", None)
    entry = f": its defaults list names `{missing}`, which is not found" if isinstance(missing, str) else ""
    return SchemaBuildError(f"hydra cannot compose {source.config_dir / source.name}.yaml ({type(e).__name__}){entry}")
