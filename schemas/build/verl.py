"""A verl package directory -> its snapshot: the key trees of every trainer config verl ships (one per selection
of its config groups), the read-set, and the entry modules' default configs."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from . import SchemaBuildError
from .compose import ConfigSource, compose_config, config_files_parsed_once
from .hydra_main import hydra_mains, parse_module
from .layout import verl_document
from .registries import registry_choices
from .source_index import Index, module_name
from .tree_walker import TreeWalker

log = logging.getLogger(__name__)

# Scanning verl's ~1,000 source files is the slow part of a build: keep the last package's index.
_INDEX_CACHE: dict[tuple[str, str], tuple[Index, list[str]]] = {}


def _verl_index(package_dir: Path) -> tuple[Index, list[str]]:
    """(index of every verl module, sorted read-set of all of them)."""
    key = (str(package_dir.resolve()), str(package_dir.stat().st_mtime_ns))
    if key not in _INDEX_CACHE:
        index = Index(package_dir.parent, packages=[package_dir.name])
        index.scan_package(package_dir, want_reads=True)
        reads: set[str] = set()
        for m in index.modules.values():
            if m is not None:
                reads.update(m.reads)
        _INDEX_CACHE.clear()
        _INDEX_CACHE[key] = (index, sorted(reads))
    return _INDEX_CACHE[key]


def _hydra_entries(package_dir: Path) -> dict[str, tuple[str, Path]]:
    """verl entry modules (``verl.trainer.main_ppo``, ...) -> (``config_name``, config directory) of their
    ``@hydra.main``: every module under ``package_dir`` (the ``verl/`` package directory) with such a decorator,
    read with libcst; the directory is ``config_path`` relative to the module's own."""
    out: dict[str, tuple[str, Path]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        try:
            source = path.read_bytes()
        except OSError:  # pragma: no cover - unreadable file in a wheel
            continue
        if b"hydra" not in source or b"config_name" not in source:
            continue
        module = parse_module(source)
        if module is None:  # pragma: no cover - files libcst cannot parse
            continue
        name, _ = module_name(package_dir.parent, path)
        for main in hydra_mains(module):
            if main.config_name:
                out[name] = (main.config_name.removesuffix(".yaml"), path.parent / (main.config_path or "."))
    return dict(sorted(out.items()))


def entrypoint_defaults(package_dir: Path) -> dict[str, str]:
    """verl entry modules (``verl.trainer.main_ppo``, ...) -> the ``config_name`` of their ``@hydra.main``."""
    return {m: c for m, (c, _) in _hydra_entries(Path(package_dir)).items()}


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
    entries = OmegaConf.select(cfg, "hydra.searchpath", default=None) or []
    dirs = []
    for entry in entries:
        if isinstance(entry, str) and entry.startswith("file://"):
            p = Path(entry[len("file://") :])
            dirs.append(p if p.is_absolute() else package_dir.parent / p)
        elif isinstance(entry, str) and entry.startswith("pkg://"):
            dirs.append(package_dir.parent.joinpath(*entry[len("pkg://") :].split(".")))
    return tuple(d.resolve() for d in dirs if d.is_dir())


def _includes(yaml_path: Path) -> set[str]:
    """The plain config names a YAML file's defaults list includes (``- ppo_trainer``)."""
    cfg = OmegaConf.load(yaml_path)
    defaults = cfg.get("defaults") if isinstance(cfg, DictConfig) else None
    return {d for d in (defaults or []) if isinstance(d, str)}


def config_sources(package_dir: Path) -> list[ConfigSource]:
    """The primary configs of a verl package: each entry module's ``config_name``, plus every YAML file beside one
    that includes it in its defaults list (``ppo_megatron_trainer``: ``ppo_trainer`` with another
    ``model_engine``), sorted by name."""
    package_dir = Path(package_dir)
    entry: dict[Path, set[str]] = {}
    for config_name, config_dir in _hydra_entries(package_dir).values():
        if (config_dir / f"{config_name}.yaml").is_file():
            entry.setdefault(config_dir.resolve(), set()).add(config_name)
    known = {name for names in entry.values() for name in names}
    candidates = {p: _includes(p) for d in entry for p in sorted(d.glob("*.yaml"))}
    while True:  # a config that includes a known one is known too (fully_async_ppo_megatron_trainer)
        more = {p.stem for p, includes in candidates.items() if includes & known} - known
        if not more:
            break
        known |= more
    found: dict[str, ConfigSource] = {}
    for yaml_path in candidates:
        name = yaml_path.stem
        if name in known:
            if name in found:
                raise SchemaBuildError(f"config {name!r} is in both {found[name].config_dir} and {yaml_path.parent}")
            found[name] = ConfigSource(name, yaml_path.parent, _search_path(package_dir, yaml_path))
    return [found[n] for n in sorted(found)]


def build_verl_snapshot(package_dir: Path, version: str, source: str, commit: str | None = None) -> dict:
    """The format 3 snapshot of the verl package in ``package_dir`` (FORMAT.md): every config of
    ``config_sources`` with its groups, one key tree per selection of its tree-selecting groups (configs with the
    same trees share one tree set), the read-set, the entry modules and the modules ``python -m`` runs."""
    package_dir = Path(package_dir)
    if not (package_dir / "trainer" / "config" / "ppo_trainer.yaml").is_file():
        raise SchemaBuildError(f"{package_dir}: no trainer/config/ppo_trainer.yaml")
    sources = config_sources(package_dir)
    if "ppo_trainer" not in {s.name for s in sources}:
        raise SchemaBuildError(f"{package_dir}: no entry module's @hydra.main names ppo_trainer")

    index, read_set = _verl_index(package_dir)
    choices = registry_choices(package_dir, index)
    problems: list[str] = []
    walked: dict[str, dict[str, dict]] = {}  # composed container (as JSON) -> its tree: configs share most of them
    configs: dict[str, dict] = {}
    tree_sets: dict[str, dict[str, dict[str, dict]]] = {}
    # Shorter names first, so that a tree set is named after the config the others extend (ppo_trainer).
    with config_files_parsed_once():
        composed_configs = [(src, compose_config(src)) for src in sorted(sources, key=lambda s: (len(s.name), s.name))]
    for src, composed in composed_configs:
        trees = {}
        for key, container in composed.containers.items():
            text = json.dumps(container, sort_keys=True)
            if text not in walked:
                walked[text] = TreeWalker(index, choices, composed.groups, problems).walk(container)
            trees[key] = walked[text]
        same = next((name for name, other in tree_sets.items() if other == trees), None)
        if same is None:
            same = src.name
            tree_sets[same] = trees
        configs[src.name] = {"groups": composed.groups, "trees": same}
    for p in sorted(set(problems)):
        log.info("schema build (verl %s): %s", version, p)
    return verl_document(
        version,
        source,
        commit,
        configs,
        tree_sets,
        read_set,
        entrypoint_defaults(package_dir),
        main_modules(package_dir),
    )
