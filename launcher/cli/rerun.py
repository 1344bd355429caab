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
    from .. import executors
    from ..execution import run as run_plan
    from ..replay import ReplayError, load_replay, record_replay, trusted_text

    if local and address:
        raise click.UsageError("--local and --address name two places: give one")
    name = executors.named(address) if local or address else executors.executor_for(run_dir)
    try:
        replay = load_replay(run_dir, runs_dir or run_dir.parent, datetime.now(timezone.utc), os.environ)
        options = executors.Options(address, tuple(replay.secret_env))
        executor = executors.executor_class(name).rerun_of(run_dir, options, trusted_text)
    except ReplayError as exc:
        raise click.UsageError(str(exc)) from None
    launch = replay.plan
    target = executor.where()
    _show(launch, replay.filled, target)
    if name == "local":
        dropped = _ray_only(launch.ray.runtime_env)
        if dropped:
            click.echo(
                printable(f"sapo-launch: not applied on this machine: the Ray runtime_env's {dropped}"), err=True
            )
    if dry_run:
        return
    destination = executor.destination()
    if destination and replay.filled and not address:
        question = f"send {', '.join(replay.filled)} from this environment to {destination}?"
        if not (sys.stdin.isatty() and click.confirm(printable(question), err=True)):
            raise click.UsageError(printable(f"{question} Not confirmed: pass --address {destination} to confirm it"))
    new_dir = record_replay(replay)
    why = "--local" if local else "--address" if address else f"where {run_dir} ran"
    click.echo(printable(f"sapo-launch: rerun of {run_dir} in {new_dir}, {target} ({why})"), err=True)
    sys.exit(run_plan(executor, launch, new_dir, fail_on_gates=fail_on_gates))


def _ray_only(runtime_env: dict) -> str:
    """What of a recorded runtime_env a run on this machine does without, for a sentence: `env_vars (A, B), pip,
    py_modules`; "" when nothing. (The trainer runs with this machine's packages, in the recorded cwd, with the
    plan's environment only.)"""
    parts = []
    for key, value in runtime_env.items():
        if key == "env_vars" and isinstance(value, dict) and value:
            parts.append(f"env_vars ({', '.join(sorted(value))})")
        elif key != "env_vars" and value not in (None, [], {}, ""):
            parts.append(key)
    return ", ".join(parts)


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
