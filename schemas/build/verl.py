"""A verl package directory -> its snapshot: composed trees per ``model_engine`` option, the read-set, and the
entry modules' default configs."""

from __future__ import annotations

import logging
from pathlib import Path

import libcst as cst

from . import SchemaBuildError
from .compose import CONFIG_NAMES, GROUP, compose_trees, group_default
from .layout import verl_document
from .registries import registry_choices
from .source_index import Index, dotted_name, module_name, string_value
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


def entrypoint_defaults(package_dir: Path) -> dict[str, str]:
    """verl entry modules (``verl.trainer.main_ppo``, ...) -> the ``config_name`` of their ``@hydra.main``: every
    module under ``package_dir`` (the ``verl/`` package directory) with such a decorator, read with libcst."""
    package_dir = Path(package_dir)
    out: dict[str, str] = {}
    for path in sorted(package_dir.rglob("*.py")):
        try:
            source = path.read_bytes()
        except OSError:  # pragma: no cover - unreadable file in a wheel
            continue
        if b"hydra" not in source or b"config_name" not in source:
            continue
        try:
            module = cst.parse_module(source)
        except cst.ParserSyntaxError:  # pragma: no cover - files libcst cannot parse
            continue
        name, _ = module_name(package_dir.parent, path)
        for stmt in module.body:
            if not isinstance(stmt, cst.FunctionDef):
                continue
            for dec in stmt.decorators:
                call = dec.decorator
                if not isinstance(call, cst.Call) or dotted_name(call.func) not in ("hydra.main", "main"):
                    continue
                for arg in call.args:
                    if arg.keyword is not None and arg.keyword.value == "config_name":
                        value = string_value(arg.value)
                        if value:
                            out[name] = value.removesuffix(".yaml")
    return dict(sorted(out.items()))


def build_verl_snapshot(package_dir: Path, version: str, source: str) -> dict:
    """The format 2 snapshot of the verl package in ``package_dir`` (FORMAT.md): every config of ``CONFIG_NAMES``
    with its group defaults, one tree per ``model_engine`` option, the read-set and the entry modules."""
    package_dir = Path(package_dir)
    config_dir = package_dir / "trainer" / "config"
    if not (config_dir / "ppo_trainer.yaml").is_file():
        raise SchemaBuildError(f"{package_dir}: no trainer/config/ppo_trainer.yaml")
    group_dir = config_dir / GROUP
    options = sorted(p.stem for p in group_dir.glob("*.yaml")) if group_dir.is_dir() else []
    if not options:
        raise SchemaBuildError(f"{config_dir}: no {GROUP}/*.yaml options")
    defaults = {c: group_default(config_dir, c, GROUP) for c in CONFIG_NAMES}
    for c, d in defaults.items():
        if d not in options:
            raise SchemaBuildError(f"{c}.yaml: {GROUP} default {d!r} is not one of {options}")

    index, read_set = _verl_index(package_dir)
    choices = registry_choices(package_dir, index)
    composed = compose_trees(config_dir, options)  # the same for every config: only the group default differs

    problems: list[str] = []
    trees = {opt: TreeWalker(index, choices, options, problems).walk(composed[opt]) for opt in options}
    for p in sorted(set(problems)):
        log.info("schema build (verl %s): %s", version, p)

    configs = {c: {"groups": {GROUP: {"default": defaults[c], "options": options}}} for c in CONFIG_NAMES}
    return verl_document(version, source, configs, trees, read_set, entrypoint_defaults(package_dir))
