"""What every reader of one run takes: the command line's and `[tool.sapo-lint]`'s options, and the config a trainer
call composes when nothing names one. Apart from the YAML recipe reader, so that reading a run script never imports
a YAML parser."""

from __future__ import annotations

from typing import NamedTuple

from ..core.command import LocatedOverride, Stack

DEFAULT_CONFIG_NAME = "ppo_trainer"


class ReadOptions(NamedTuple):
    """What the command line and `[tool.sapo-lint]` add to every file read in one run."""

    default_verl: str  # the snapshot a file is checked against when nothing else says which verl it runs
    stack: Stack  # the settings' megatron-core and mbridge; None where they name none
    cli_verl: str | None = None
    cli_overrides: tuple[LocatedOverride, ...] = ()
    cli_accelerator: str | None = None
    accelerator: str | dict[str, str] | None = None  # `[tool.sapo-lint] accelerator`: a name, or kind -> name
    # Site limits as (name, value) pairs (`core.command.RESOURCE_KEYS`): `[tool.sapo-lint]`'s, which a recipe's
    # `hardware` refines, and the command line's, which win over both.
    resources: tuple[tuple[str, float], ...] = ()
    cli_resources: tuple[tuple[str, float], ...] = ()
    verl_pin: str | None = None  # `[tool.sapo-lint] verl-version`: a pin, in `verl_source`'s order
    cli_verl_named: str | None = None  # `--verl-version` as written (`main`); `cli_verl` is the snapshot it names
    model: str | None = None  # `[tool.sapo-lint] model`: for files whose model path is known only at run time
    model_dir: str = "."  # the directory a relative `model` is taken from: its pyproject.toml's
    fetch_model_config: bool = False  # fetch an unknown model's config.json from the Hugging Face Hub
