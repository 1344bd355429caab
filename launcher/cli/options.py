"""The options and arguments more than one command takes, declared once."""

from __future__ import annotations

from pathlib import Path

import click

from sapo_toolkit.linter.core.device import kind_names

DEVICE = click.option(
    "--device",
    type=click.Choice(["auto", *kind_names()]),
    default="auto",
    show_default=True,
    help="Device kind; auto: the DEVICE environment variable, else what this machine has (Ascend first).",
)
FORMAT = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
FAIL_ON_GATES = click.option(
    "--fail-on-gates", is_flag=True, help="Exit 8 when the trainer succeeded but a recipe gate failed."
)
RUN_DIR = click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))


def jobs_address(ctx, param, value: str | None) -> str | None:
    """An --address checked as a Ray Jobs API URL (`http://` added where it has no scheme): what verl users give
    `ray.init` (`auto`, `ray://`, a GCS port) is a usage error with a hint."""
    if value is None:
        return None
    from ..executors.ray_client import RayJobError
    from ..executors.ray_client import jobs_address as checked

    try:
        return checked(value)
    except RayJobError as exc:
        raise click.BadParameter(exc.message) from None


ADDRESS = click.option(
    "--address",
    default=None,
    metavar="URL",
    callback=jobs_address,
    help="The Ray dashboard address (default: the one job.json records).",
)
