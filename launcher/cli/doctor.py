"""`sapo-launch doctor [RECIPE]`: can this environment run the recipe? (`launcher.doctor`)"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..device import DEFAULT_PROBE
from ..doctor import DoctorError, doctor_report, read_recipe_facts, render_rich, render_text
from ..doctor.facts import EXIT_USAGE
from .options import DEVICE, FORMAT


class _OneLineUsage(click.Command):
    """Usage errors as one line on stderr and exit 2, inside a group or alone."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            click.echo(f"sapo-launch doctor: {exc.format_message()}", err=True)
            ctx.exit(EXIT_USAGE)


@click.command("doctor", cls=_OneLineUsage)
@click.argument("recipe", required=False, type=click.Path(dir_okay=False, path_type=Path))
@FORMAT
@DEVICE
def doctor(recipe, fmt, device):
    """Check this environment: installed versions of the training stack and their known compatibility, visible
    devices against RECIPE's devices per node, the CANN toolkit on Ascend, and the vLLM NPU patch variant. Exit 1
    when something blocking is found, else 0."""
    import json
    import os

    from ..versions import installed_versions, mbridge_save_weights_params

    facts = None
    if recipe is not None:
        try:
            facts = read_recipe_facts(recipe)
        except DoctorError as exc:
            click.echo(f"sapo-launch doctor: {exc}", err=True)
            sys.exit(EXIT_USAGE)
    versions = installed_versions()
    report = doctor_report(
        facts,
        os.environ,
        DEFAULT_PROBE,
        versions,
        requested=None if device == "auto" else device,
        mbridge_params=mbridge_save_weights_params(),
    )
    if fmt == "json":
        click.echo(json.dumps(report.to_json(), indent=2))
    elif sys.stdout.isatty():
        from rich.console import Console

        render_rich(report, Console())
    else:
        click.echo(render_text(report), nl=False)
    sys.exit(report.exit_code)
