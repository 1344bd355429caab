"""`sapo-launch rerun RUN_DIR`: run again exactly what a run directory ran, where it ran."""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from sapo_toolkit.linter.core.printable import printable

from .options import ADDRESS, FAIL_ON_GATES, RUN_DIR


@click.command("rerun")
@RUN_DIR
@click.option(
    "--runs-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the new run directory goes (default: beside RUN_DIR).",
)
@click.option("--local", is_flag=True, help="Run it on this machine, also when RUN_DIR ran on a Ray cluster.")
@ADDRESS
@FAIL_ON_GATES
def rerun(run_dir, runs_dir, local, address, fail_on_gates):
    """Run again exactly what RUN_DIR ran (same argv, environment and working directory) in a new run directory,
    where it ran: on this machine, or on the Ray cluster its job.json records, with the same working directory,
    excludes and interpreter (--local: here; --address URL: that cluster). Redacted variables are taken from the
    current environment."""
    from ..execution import run as run_plan
    from ..plan import REDACTED, redact_urls
    from ..replay import RayTarget, ReplayError, replay, where_it_ran

    if local and address:
        raise click.UsageError("--local and --address name two places: give one")
    try:
        ray = None if local else where_it_ran(run_dir)
        if address:  # a run from this machine goes as `sapo-launch RECIPE --address URL` would send it
            ray = ray._replace(address=address) if ray else RayTarget(address)
        if ray and REDACTED in ray.address:
            raise ReplayError(f"{run_dir}/job.json records {ray.address}, its credentials redacted: pass --address")
        launch, new_dir = replay(run_dir, runs_dir or run_dir.parent, datetime.now(timezone.utc), os.environ)
    except ReplayError as exc:
        raise click.UsageError(str(exc)) from None
    if ray:
        from ..executors.ray_jobs import RayExecutor

        executor = RayExecutor(ray.address, working_dir=ray.working_dir, excludes=ray.excludes, python=ray.python)
        target = f"on the Ray cluster at {redact_urls(ray.address)}"
    else:
        from ..executors.local import LocalExecutor

        executor, target = LocalExecutor(), "on this machine"
    why = "--local" if local else "--address" if address else f"where {run_dir} ran"
    click.echo(printable(f"sapo-launch: rerun of {run_dir} in {new_dir}, {target} ({why})"), err=True)
    sys.exit(run_plan(executor, launch, new_dir, fail_on_gates=fail_on_gates))
