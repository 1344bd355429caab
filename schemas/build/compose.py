"""Composing verl's trainer configs with hydra-core: every selection of the config groups that have more than one
option, and the groups themselves as Hydra's own defaults list reports them."""

from __future__ import annotations

import copy
import io
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import OmegaConf

from . import SchemaBuildError


@dataclass(slots=True)
class ConfigSource:
    """A primary config: its name, the directory holding it, and the directories on its search path."""

    name: str
    config_dir: Path
    search_path: tuple[Path, ...] = ()


@dataclass(slots=True)
class ComposedConfig:
    """One config composed once per selection: ``groups`` maps each override key (``model_engine``, ``engine``)
    to ``{"default", "options"}``; ``containers`` maps a selection key (``selection_key``) to the composed tree."""

    groups: dict[str, dict]
    containers: dict[str, dict]


def selection_key(selection: dict[str, str]) -> str:
    """``engine=megatron,optim=fsdp``: the selected option of each tree-selecting group, groups sorted (FORMAT.md);
    ``""`` for a config without such groups."""
    return ",".join(f"{g}={selection[g]}" for g in sorted(selection))


def selecting_groups(groups: dict[str, dict]) -> list[str]:
    """The groups whose option picks the tree: those with more than one option."""
    return sorted(g for g, spec in groups.items() if len(spec["options"]) > 1)


def _overrides(source: ConfigSource) -> list[str]:
    # verl's experimental configs name `file://verl/trainer/config` (relative to the working directory) on their
    # `hydra.searchpath`; the build gives the absolute directory instead.
    if not source.search_path:
        return []
    return ["hydra.searchpath=[" + ",".join(f"file://{p}" for p in source.search_path) + "]"]


def _group_options(source: ConfigSource, group: str) -> list[str]:
    """The options of ``group``: its YAML files in the config directory and the directories on the search path."""
    dirs = (source.config_dir, *source.search_path)
    return sorted({p.stem for d in dirs for p in (Path(d) / group).glob("*.yaml")})


def _groups(source: ConfigSource, base: list[str]) -> dict[str, dict]:
    """The config groups ``name`` selects from in its defaults list, under the keys an override uses.

    Only groups placed at their own package (``model_engine``, ``engine@engine``): their override key is the group
    name. Groups placed elsewhere (``actor@actor_rollout_ref.actor``) and those inside a group option
    (``actor/../engine@...``) are not recorded."""
    loader = GlobalHydra.instance().config_loader()
    defaults = loader.compute_defaults_list(source.name, base, RunMode.RUN).defaults
    groups: dict[str, dict] = {}
    for d in defaults:
        key = d.override_key
        if not key or "@" in key or "/" in key or key.startswith("hydra") or d.config_path is None:
            continue
        group, _, option = d.config_path.rpartition("/")
        if group != key:
            continue
        groups[key] = {"default": option, "options": _group_options(source, group)}
    return dict(sorted(groups.items()))


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
            parsed[text] = parse(io.StringIO(text))
        return copy.deepcopy(parsed[text])

    OmegaConf.load = staticmethod(load_parsed_once)
    try:
        yield
    finally:
        OmegaConf.load = staticmethod(parse)


def compose_config(source: ConfigSource) -> ComposedConfig:
    """Compose ``source`` for every combination of the options of its tree-selecting groups."""
    base = _overrides(source)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(source.config_dir), version_base=None, job_name="sapo_lint_schema"):
            groups = _groups(source, base)
            selecting = selecting_groups(groups)
            containers: dict[str, dict] = {}
            for options in itertools.product(*(groups[g]["options"] for g in selecting)):
                selection = dict(zip(selecting, options, strict=True))
                cfg = compose(config_name=source.name, overrides=base + [f"{g}={o}" for g, o in selection.items()])
                containers[selection_key(selection)] = OmegaConf.to_container(cfg, resolve=False)
    except Exception as e:  # noqa: BLE001 - hydra and omegaconf errors alike become one CLI line
        msg = " ".join(str(e).split())
        raise SchemaBuildError(
            f"hydra compose of {source.config_dir / source.name}.yaml failed: {type(e).__name__}: {msg[:300]}"
        ) from None
    finally:
        GlobalHydra.instance().clear()
    return ComposedConfig(groups, containers)
