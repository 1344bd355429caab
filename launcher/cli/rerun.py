"""`sapo-launch rerun RUN_DIR`: run again exactly what a run directory ran."""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from sapo_toolkit.linter.core.printable import printable

from .options import FAIL_ON_GATES, RUN_DIR


@click.command("rerun")
@RUN_DIR
@click.option(
    "--runs-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the new run directory goes (default: beside RUN_DIR).",
)
@FAIL_ON_GATES
def rerun(run_dir, runs_dir, fail_on_gates):
    """Run again exactly what RUN_DIR ran (same argv, environment and working directory) in a new run directory.
    Redacted variables are taken from the current environment."""
    from ..execution import run as run_plan
    from ..executors.local import LocalExecutor
    from ..replay import ReplayError, replay

    try:
        launch, new_dir = replay(run_dir, runs_dir or run_dir.parent, datetime.now(timezone.utc), os.environ)
    except ReplayError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(printable(f"sapo-launch: rerun of {run_dir} in {new_dir}"), err=True)
    sys.exit(run_plan(LocalExecutor(), launch, new_dir, fail_on_gates=fail_on_gates))
