"""A verl package directory -> its snapshot: the key trees of every trainer config verl ships (one per selection
of its config groups), the read-set, and the entry modules' default configs."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from . import SchemaBuildError
from .compose import (
    PROBE_PACKAGE,
    ComposedConfig,
    ConfigSource,
    Workspace,
    compose_config,
    config_files_parsed_once,
    probe_options,
)
from .entry_reads import entry_reads
from .hydra_main import hydra_mains, parse_module
from .layout import difference, nested_in, placed, region_without, subtree_at, verl_document
from .registries import registry_choices
from .source_index import Index, module_name, package_reads
from .tree_walker import TreeWalker

log = logging.getLogger(__name__)

# Keep the last package's index (its modules are parsed as they are looked up) and read-set.
_INDEX_CACHE: dict[tuple[str, str], tuple[Index, list[str]]] = {}


def _verl_index(package_dir: Path) -> tuple[Index, list[str]]:
    """(index of the verl modules, sorted read-set of all of them)."""
    key = (str(package_dir.resolve()), str(package_dir.stat().st_mtime_ns))
    if key not in _INDEX_CACHE:
        _INDEX_CACHE.clear()
        _INDEX_CACHE[key] = (Index(package_dir.parent, packages=[package_dir.name]), package_reads(package_dir))
    return _INDEX_CACHE[key]


def _hydra_entries(package_dir: Path) -> dict[str, tuple[str, Path]]:
    """verl entry modules (``verl.trainer.main_ppo``, ...) -> (``config_name``, config directory) of their
    ``@hydra.main``: every module under ``package_dir`` (the ``verl/`` package directory) with such a decorator,
    read with `ast`; the directory is ``config_path`` relative to the module's own."""
    out: dict[str, tuple[str, Path]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        try:
            source = path.read_bytes()
        except OSError:  # pragma: no cover - unreadable file in a wheel
            continue
        if b"hydra" not in source or b"config_name" not in source:
            continue
        module = parse_module(source)
        if module is None:  # pragma: no cover - files the parser refuses
            continue
        name, _ = module_name(package_dir.parent, path)
        for main in hydra_mains(module):
            if main.config_name:
                out[name] = (main.config_name.removesuffix(".yaml"), path.parent / (main.config_path or "."))
    return dict(sorted(out.items()))


def entrypoint_defaults(package_dir: Path) -> dict[str, str]:
    """verl entry modules (``verl.trainer.main_ppo``, ...) -> the ``config_name`` of their ``@hydra.main``; less a
    module whose config is another file of that name than the one ``config_sources`` keeps (a fork's edited copy of
    ``ppo_trainer.yaml`` beside its own entry module): the snapshot does not hold the config it composes."""
    package_dir = Path(package_dir)
    kept = {source.name: source.config_dir / f"{source.name}.yaml" for source in config_sources(package_dir)}
    return {
        m: c
        for m, (c, directory) in _hydra_entries(package_dir).items()
        if c not in kept or not (directory / f"{c}.yaml").is_file() or _same_file(directory / f"{c}.yaml", kept[c])
    }


_MAIN_BLOCK = re.compile(rb"""^if\s+__name__\s*==\s*["']__main__["']\s*:""", re.MULTILINE)


def main_modules(package_dir: Path) -> list[str]:
    """The verl modules ``python -m`` runs (FORMAT.md ``main_modules``): every module with a top-level ``if __name__
    == "__main__":`` block, and every package with a ``__main__.py`` (named as the package). Any other name given to
    ``python -m`` stops the run at start (``No module named ...``) or runs nothing."""
    package_dir = Path(package_dir)
    found = set()
    for path in package_dir.rglob("*.py"):
        if path.name == "__main__.py":
            found.add(module_name(package_dir.parent, path.parent / "__init__.py")[0])
        elif _MAIN_BLOCK.search(path.read_bytes()):
            found.add(module_name(package_dir.parent, path)[0])
    return sorted(found)


def _search_path(package_dir: Path, yaml_path: Path) -> tuple[Path, ...]:
    """The directories a primary config's ``hydra.searchpath`` names. verl's experimental configs name
    ``file://verl/trainer/config`` (relative to the directory verl runs from, the one holding the package) or
    ``pkg://verl.trainer.config`` (verl main 1dda039, verl/experimental/fully_async_policy/config/)."""
    cfg = OmegaConf.load(yaml_path)
    # Read as written: an entry that interpolates (`file://${oc.env:X}`) is never resolved, and not followed.
    written = OmegaConf.to_container(cfg, resolve=False) if isinstance(cfg, DictConfig) else {}
    hydra = written.get("hydra") if isinstance(written.get("hydra"), dict) else {}
    entries = hydra.get("searchpath") if isinstance(hydra.get("searchpath"), list) else []
    dirs = []
    for entry in entries:
        if not isinstance(entry, str) or "${" in entry:
            continue
        if entry.startswith("file://"):
            p = Path(entry[len("file://") :])
            dirs.append(p if p.is_absolute() else package_dir.parent / p)
        elif entry.startswith("pkg://"):
            dirs.append(package_dir.parent.joinpath(*entry[len("pkg://") :].split(".")))
    return tuple(d.resolve() for d in dirs if d.is_dir())


def _includes(yaml_path: Path) -> set[str]:
    """The plain config names a YAML file's defaults list includes (``- ppo_trainer``)."""
    cfg = OmegaConf.load(yaml_path)
    defaults = cfg.get("defaults") if isinstance(cfg, DictConfig) else None
    return {d for d in (defaults or []) if isinstance(d, str)}


def _same_file(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve() or a.read_bytes() == b.read_bytes()


def config_sources(package_dir: Path) -> list[ConfigSource]:
    """The primary configs of a verl package: each entry module's ``config_name``, plus every YAML file beside one
    that includes it in its defaults list (``ppo_megatron_trainer``: ``ppo_trainer`` with another
    ``model_engine``) or that none includes, sorted by name. A fork that copies verl's config directory beside an
    entry module of its own (``verl/mix_src/config/``) holds two files of one name: one config where they are the
    same; else verl's own (``trainer/config/``) is the config of that name, and the copy is left out (its entry
    modules with it, ``entrypoint_defaults``). Two other directories with different files of one name cannot be
    told apart."""
    package_dir = Path(package_dir)
    own = (package_dir / "trainer" / "config").resolve()
    entry: dict[Path, set[str]] = {}
    for config_name, config_dir in _hydra_entries(package_dir).values():
        if (config_dir / f"{config_name}.yaml").is_file():
            entry.setdefault(config_dir.resolve(), set()).add(config_name)
    known = {name for names in entry.values() for name in names}
    candidates = {p: _includes(p) for d in entry for p in sorted(d.glob("*.yaml"))}
    # A YAML there that no other includes is a config of its own (verl <= 0.7's ppo_megatron_trainer, run with
    # `--config-name`), except verl's `_generated_*` flattened references ("only for reference and never used").
    included = {name for includes in candidates.values() for name in includes}
    known |= {p.stem for p in candidates if p.stem not in included and not p.stem.startswith("_")}
    while True:  # a config that includes a known one is known too (fully_async_ppo_megatron_trainer)
        more = {p.stem for p, includes in candidates.items() if includes & known} - known
        if not more:
            break
        known |= more
    found: dict[str, ConfigSource] = {}
    for yaml_path in candidates:
        name = yaml_path.stem
        if name not in known:
            continue
        if name in found:
            kept = found[name].config_dir
            if _same_file(yaml_path, kept / f"{name}.yaml"):
                continue  # a copy of the same file
            if own not in (yaml_path.parent.resolve(), kept.resolve()):
                raise SchemaBuildError(f"config {name!r} is in both {kept} and {yaml_path.parent}")
            if yaml_path.parent.resolve() != own:
                continue  # a fork's edited copy: verl's own is the config of that name
        found[name] = ConfigSource(name, yaml_path.parent, _search_path(package_dir, yaml_path))
    return [found[n] for n in sorted(found)]


def build_verl_snapshot(package_dir: Path, version: str, source: str, commit: str | None = None) -> dict:
    """The format 4 snapshot of the verl package in ``package_dir`` (FORMAT.md): every config of
    ``config_sources`` with its groups and placements, one key tree per selection of its tree-selecting groups,
    each single group override's correction (configs with the same trees and corrections share one tree set),
    every group option's subtree, the read-set, the entry modules and the modules ``python -m`` runs."""
    package_dir = Path(package_dir)
    if not (package_dir / "trainer" / "config" / "ppo_trainer.yaml").is_file():
        raise SchemaBuildError(f"{package_dir}: no trainer/config/ppo_trainer.yaml")
    sources = config_sources(package_dir)
    if "ppo_trainer" not in {s.name for s in sources}:
        raise SchemaBuildError(f"{package_dir}: no entry module's @hydra.main names ppo_trainer")

    index, read_set = _verl_index(package_dir)
    return configs_snapshot(
        sources,
        index,
        registry_choices(package_dir, index),
        version,
        source,
        commit,
        read_set,
        entrypoint_defaults(package_dir),
        main_modules(package_dir),
        lambda entry_nodes: entry_reads(package_dir, entry_nodes),
    )


def configs_snapshot(
    sources: list[ConfigSource],
    index: Index,
    choices,
    version: str,
    source: str,
    commit: str | None,
    read_set: list[str],
    entrypoints: dict[str, str],
    mains: list[str],
    nodes_read: Callable[[Mapping[str, set[str]]], dict[str, list[str]]],
) -> dict:
    """The format 4 snapshot of the configs in ``sources`` (composed with hydra-core, their trees walked against the
    dataclasses ``index`` finds), with the read-set, entry modules and main modules given, and the entry modules that
    read each top-level node only some take (``nodes_read``, given each entry module's top-level nodes): what
    ``build_verl_snapshot`` writes for verl's own configs and ``custom.build_custom_snapshot`` for one of a team's."""
    problems: list[str] = []
    workspace = Workspace()
    # Shorter names first, so that a tree set is named after the config the others extend (ppo_trainer).
    ordered = sorted(sources, key=lambda src: (len(src.name), src.name))
    with config_files_parsed_once():
        composed = {src.name: compose_config(src, workspace) for src in ordered}
        walker = _Walker(index, choices, problems)
        trees = {
            n: {k: walker.walk(s.container, c.groups) for k, s in c.selections.items()} for n, c in composed.items()
        }
        exact = {name: _exact_trees(c, walker) for name, c in composed.items()}
        standalone = _standalone_subtrees(ordered, composed, walker, workspace)
    configs: dict[str, dict] = {}
    tree_sets: dict[str, dict[str, dict[str, dict]]] = {}
    corrections: dict[str, dict[str, dict[str, dict]]] = {}
    for name, c in composed.items():
        fixes = _corrections(c, trees[name], exact[name], standalone)
        same = next((n for n in tree_sets if tree_sets[n] == trees[name] and corrections[n] == fixes), None)
        if same is None:
            same = name
            tree_sets[name], corrections[name] = trees[name], fixes
        configs[name] = {
            "defaults": {p.key: {"default": p.default, "group": p.group, "package": p.package} for p in c.placements},
            "groups": c.groups,
            "options": c.options,
            "trees": same,
        }
    regions = [
        (name, key, p, c)
        for name, c in composed.items()
        if name in tree_sets
        for key in sorted(trees[name])
        for p in c.placements
        if p.package
    ]
    subtrees = {go: _stored_form(go, entries, regions, trees) for go, entries in sorted(standalone.items())}
    repeatable = sorted(
        {f"{key.split('@')[0]}/{c.choices[key]}" for c in workspace.pool for key in c.repeatable if key in c.choices}
    )
    for p in sorted(set(problems)):
        log.info("schema build (verl %s): %s", version, p)
    top_nodes = {name: {p.split(".")[0] for tree in trees[name].values() for p in tree if p} for name in trees}
    entry_nodes = {module: top_nodes[name] for module, name in entrypoints.items() if name in top_nodes}
    return verl_document(
        version,
        source,
        commit,
        configs,
        tree_sets,
        corrections,
        subtrees,
        repeatable,
        read_set,
        entrypoints,
        mains,
        nodes_read(entry_nodes),
    )


class _Walker:
    """Each composed container walked once (configs and overrides share many)."""

    def __init__(self, index: Index, choices, problems: list[str]) -> None:
        self.index, self.choices, self.problems = index, choices, problems
        self._walked: dict[str, dict[str, dict]] = {}
        self._by_id: dict[int, tuple[dict, dict[str, dict]]] = {}

    def walk(self, container: dict, groups: dict[str, dict]) -> dict[str, dict]:
        if id(container) in self._by_id:
            return self._by_id[id(container)][1]
        text = json.dumps(container, sort_keys=True)
        if text not in self._walked:
            self._walked[text] = TreeWalker(self.index, self.choices, groups, self.problems).walk(container)
        self._by_id[id(container)] = (container, self._walked[text])  # the container kept: its id stays its own
        return self._walked[text]


def _exact_trees(c: ComposedConfig, walker: _Walker) -> dict[str, dict[str, dict | str]]:
    """Selection -> single group override -> the tree Hydra composes with it, or Hydra's error."""
    return {
        key: {t: r if isinstance(r, str) else walker.walk(r, c.groups) for t, r in sorted(c.overrides[key].items())}
        for key in sorted(c.overrides)
    }


def _standalone_subtrees(ordered: list[ConfigSource], composed, walker: _Walker, workspace) -> dict[str, dict]:
    """`group/option` -> the entries of each option of each group on a config's search path (the first config
    that has the group), composed on its own as `+group@package=option` appends it at a new package."""
    out: dict[str, dict] = {}
    seen: set[str] = set()
    for src in ordered:
        c = composed[src.name]
        wanted = [(g, o) for g, options in c.options.items() for o in options if f"{g}/{o}" not in seen]
        seen.update(f"{g}/{o}" for g, o in wanted)
        for go, container in probe_options(src, wanted, workspace).items():
            out[go] = subtree_at(walker.walk({PROBE_PACKAGE: container}, c.groups), PROBE_PACKAGE)
    return out


def _stored_form(name: str, entries: dict[str, dict], regions, trees) -> dict:
    """How a subtree is stored (FORMAT.md `subtrees`): as the region of a tree where its group is placed (without
    what the placements nested below that package add, `except`), with the differences, or as its entries;
    whichever is the smallest."""
    group = name.split("/")[0]
    forms = [{"entries": entries}]
    for config, key, p, c in regions:
        if p.group != group:
            continue
        region = subtree_at(trees[config][key], p.package)
        nested = [n[len(p.package) + 1 :] for n in nested_in(p.package, (q.package for q in c.placements))]
        for without in ([], nested) if nested else ([],):
            base = region_without(region, without)
            diff = {k: v for k, v in difference(base, entries).items() if v}
            forms.append(
                {
                    "package": p.package,
                    "selection": key,
                    "tree_set": config,
                    **({"except": without} if without else {}),
                    **diff,
                }
            )
    return min(forms, key=lambda f: len(json.dumps(f, sort_keys=True)))


def _corrections(c: ComposedConfig, trees, exact, standalone) -> dict[str, dict[str, dict]]:
    """Selection -> group override -> what turns the linter's rebuilt tree (`placed`) into the exact one, or
    `{"error": message}` for an override Hydra refuses."""
    placements = {p.key: p for p in c.placements}
    out: dict[str, dict[str, dict]] = {}
    for key in sorted(exact):
        out[key] = {}
        for text in sorted(exact[key]):
            result = exact[key][text]
            if isinstance(result, str):
                out[key][text] = {"error": result}
                continue
            placement_key, _, option = text.lstrip("~").partition("=")
            p = placements[placement_key]
            subtree = standalone.get(f"{p.group}/{option}") if option else None
            nested = nested_in(p.package, (n.package for n in c.placements))
            out[key][text] = difference(placed(trees[key], p.package, subtree, True, nested), result)
    return out
