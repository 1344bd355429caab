"""A trainer config outside verl's own config directory (a team's `--config-path`, a wrapper module's
`@hydra.main`): composed as Hydra would, with verl's config directory on its search path, and snapshotted like
verl's own configs (FORMAT.md), for the linter to check a run against it."""

from __future__ import annotations

from pathlib import Path

from .compose import ConfigSource
from .registries import registry_choices
from .source_index import Index
from .verl import configs_snapshot


def build_custom_snapshot(verl: dict, package_dir: Path, config: ConfigSource) -> dict:
    """A snapshot holding one config, `config`, for the verl whose snapshot is `verl` and whose package is in
    `package_dir`: composed with hydra-core like verl's own configs (`config.search_path` names the directories
    Hydra searches after `config.config_dir`, verl's `trainer/config` among them, as absolute paths), each tree
    walked against the dataclasses its `_target_`s name, read from the sources under the directory holding `verl/`
    (verl's, and a vendoring repository's own), and verl's read-set, entry modules, main modules and
    `entry_reads` taken from `verl`. Raises `SchemaBuildError` (one line) when Hydra cannot compose it."""
    index = Index(Path(package_dir).parent)  # parsed on demand: only the modules a `_target_` names
    return configs_snapshot(
        [config],
        index,
        registry_choices(Path(package_dir), index),
        verl["verl_version"],
        f"config {config.config_dir / config.name}.yaml composed with verl {verl['verl_version']}",
        verl.get("commit"),
        verl["read_set"],
        verl["entrypoints"],
        verl["main_modules"],
        lambda _entry_nodes: verl["entry_reads"],
    )
