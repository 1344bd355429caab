"""The options more than one command takes, declared once."""

from __future__ import annotations

import click

OVERRIDES = click.option(
    "--override",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="A Hydra override applied on top of every recipe (repeatable).",
)


def _known_verl(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An unknown version is a usage error once (exit 2), not a finding per file."""
    from ..schema import available_verl_versions, known_verl_version

    if value is not None and not known_verl_version(value):
        raise click.BadParameter(
            f"no snapshot of verl {value} or of its minor release; snapshots: "
            f"{', '.join(available_verl_versions())}, or `main` for the newest development one"
        )
    return value


VERL_VERSION = click.option(
    "--verl-version",
    callback=_known_verl,
    help="Check against this verl's schema snapshot instead of the one found (`main`: the newest development "
    "snapshot; a release without a snapshot of its own: its minor's newest).",
)
ACCELERATOR = click.option(
    "--accelerator",
    help="The accelerator, by name or alias (ascend-910b3, 910B3, nvidia-h100, H100; an unknown name lists the "
    "known), instead of the recipe's `hardware.accelerator`.",
)
