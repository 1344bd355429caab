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
@click.option("--dry-run", is_flag=True, help="Show what would run, and where, and start nothing.")
def rerun(run_dir, runs_dir, local, address, fail_on_gates, dry_run):
    """Run again exactly what RUN_DIR ran (same argv, environment and working directory) in a new run directory,
    where it ran: on this machine, or on the Ray cluster its job.json records, with the same working directory,
    excludes and interpreter (--local: here; --address URL: that cluster). What will run is shown first. Redacted
    variables are taken from the current environment; sending them to the cluster job.json names needs that address
    confirmed (at the prompt, or with --address). RUN_DIR and its files must be the user's own and writable by no one
    else."""
    from ..execution import run as run_plan
    from ..plan import REDACTED, redact_urls
    from ..replay import RayTarget, ReplayError, load_replay, record_replay, where_it_ran

    if local and address:
        raise click.UsageError("--local and --address name two places: give one")
    try:
        ray = None if local else where_it_ran(run_dir)
        if address:  # a run from this machine goes as `sapo-launch RECIPE --address URL` would send it
            ray = ray._replace(address=address) if ray else RayTarget(address)
        if ray and REDACTED in ray.address:
            raise ReplayError(f"{run_dir}/job.json records {ray.address}, its credentials redacted: pass --address")
        replay = load_replay(run_dir, runs_dir or run_dir.parent, datetime.now(timezone.utc), os.environ)
    except ReplayError as exc:
        raise click.UsageError(str(exc)) from None
    launch = replay.plan
    target = f"on the Ray cluster at {redact_urls(ray.address)}" if ray else "on this machine"
    _show(launch, replay.filled, target)
    if dry_run:
        return
    if ray and replay.filled and not address:
        question = f"send {', '.join(replay.filled)} from this environment to {redact_urls(ray.address)}?"
        if not (sys.stdin.isatty() and click.confirm(printable(question), err=True)):
            raise click.UsageError(
                printable(f"{question} Not confirmed: pass --address {redact_urls(ray.address)} to confirm it")
            )
    new_dir = record_replay(replay)
    if ray:
        from ..executors.ray_jobs import RayExecutor

        executor = RayExecutor(ray.address, working_dir=ray.working_dir, excludes=ray.excludes, python=ray.python)
    else:
        from ..executors.local import LocalExecutor

        executor = LocalExecutor()
    why = "--local" if local else "--address" if address else f"where {run_dir} ran"
    click.echo(printable(f"sapo-launch: rerun of {run_dir} in {new_dir}, {target} ({why})"), err=True)
    sys.exit(run_plan(executor, launch, new_dir, fail_on_gates=fail_on_gates))


def _show(launch, filled: list[str], target: str) -> None:
    """What a rerun runs, on standard error: the argv, the environment's names (values filled from this environment
    marked), the working directory, and where."""
    lines = [
        f"rerun    {target}",
        f"cwd      {launch.cwd}",
        "argv     " + " ".join(launch.argv),
        "env      " + " ".join(f"{k}{' (from this environment)' if k in filled else ''}" for k, _ in launch.env),
    ]
    for line in lines:
        click.echo(printable(line), err=True)
