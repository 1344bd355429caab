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
VERL_VERSION = click.option("--verl-version", help="Check against this verl schema snapshot instead of the recipe's.")
ACCELERATOR = click.option(
    "--accelerator", help="Accelerator from schemas/devices.json, instead of the recipe's `hardware.accelerator`."
)
