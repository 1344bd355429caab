"""`sapo-launch rerun RUN_DIR [KEY=VALUE ...]`: run again exactly what a run directory ran, where it ran; and what
it shares with `resume` (`resume.py`), which continues the run from its checkpoint instead: the arguments and
options (`replay_options`) and the flow (`replay_run`)."""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from sapo_toolkit.linter.core.printable import printable

from .options import ADDRESS, FAIL_ON_GATES, HEADERS, MAX_RESTARTS, RUN_DIR, VERIFY

REPLAY_OPTIONS = (
    RUN_DIR,
    click.argument("overrides", nargs=-1),
    click.option(
        "--runs-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Where the new run directory goes (default: beside RUN_DIR).",
    ),
    click.option("--local", is_flag=True, help="Run it on this machine, also when RUN_DIR ran on a Ray cluster."),
    ADDRESS,
    HEADERS,
    VERIFY,
    FAIL_ON_GATES,
    MAX_RESTARTS,
    click.option("--detach", is_flag=True, help="On a Ray cluster: return once the job is submitted."),
    click.option("--dry-run", is_flag=True, help="Show what would run, and where, and start nothing."),
)


def replay_options(command):
    """The arguments and options `rerun` and `resume` take, in the order `--help` lists them."""
    for option in reversed(REPLAY_OPTIONS):
        command = option(command)
    return command


@click.command("rerun")
@replay_options
def rerun(**given):
    """Run again exactly what RUN_DIR ran (same argv, environment and working directory) in a new run directory,
    where it ran: on this machine, or on the Ray cluster its job.json records, with the same working directory,
    excludes and interpreter (--local: here; --address URL: that cluster). OVERRIDES (Hydra `key=value`) replace the
    recorded override of the same key or follow the others, linted with the recorded recipe (errors refuse the
    rerun, exit 1). What will run is shown first. Redacted variables are
    taken from the current environment; sending them to the cluster job.json names needs that address confirmed (at
    the prompt, or with --address). RUN_DIR and its files must be the user's own and writable by no one else."""
    replay_run(resume=False, **given)


def replay_run(
    run_dir: Path,
    overrides: tuple[str, ...],
    runs_dir: Path | None,
    local: bool,
    address: str | None,
    headers,
    verify,
    fail_on_gates: bool,
    max_restarts: int,
    detach: bool,
    dry_run: bool,
    *,
    resume: bool,
) -> None:
    """`rerun` (`resume` False) or `resume` RUN_DIR with the command line's arguments; exits with the run's code,
    1 when the lint gate refuses the overrides (`replay.linted`), as a launch's."""
    from .. import executors, restarts
    from ..replay import ReplayError, linted, load_replay, record_replay, resumed, trusted_text
    from ..rundir import EXIT_REFUSED

    command = "resume" if resume else "rerun"
    if local and address:
        raise click.UsageError("--local and --address name two places: give one")
    if detach and max_restarts:
        raise click.UsageError("--max-restarts needs the launcher to follow the run: not with --detach")
    name = executors.named(address) if local or address else executors.executor_for(run_dir)
    try:
        if resume:
            _check_ended(run_dir, executors.Options(address, (), headers, verify))
        replay = linted(
            load_replay(run_dir, runs_dir or run_dir.parent, datetime.now(timezone.utc), os.environ, overrides)
        )
        options = executors.Options(address, tuple(replay.secret_env), headers, verify)
        executor = executors.executor_class(name).rerun_of(run_dir, options, trusted_text)
        if resume:  # the trainer sees the checkpoints as this process does when it runs here
            replay = resumed(replay, visible=executor.destination() is None)
    except ReplayError as exc:
        raise click.UsageError(str(exc)) from None
    destination = executor.destination()  # None: the run goes on this machine
    if detach and destination is None:
        raise click.UsageError("--detach needs a Ray cluster: this run goes on this machine")
    launch = replay.plan
    target = executor.where()
    _show(command, replay, target)
    for diagnostic in replay.lint.diagnostics:
        click.echo(printable(diagnostic.text_line()), err=True)
    if replay.lint.refuses:  # as a launch's lint gate: nothing is made
        click.echo(printable("sapo-launch: refused: the overrides have lint errors"), err=True)
        sys.exit(EXIT_REFUSED)
    if destination is None:
        dropped = _ray_only(launch.ray.runtime_env)
        if dropped:
            click.echo(
                printable(f"sapo-launch: not applied on this machine: the Ray runtime_env's {dropped}"), err=True
            )
    if dry_run:
        return
    if destination and replay.filled and not address:
        question = f"send {', '.join(replay.filled)} from this environment to {destination}?"
        if not (sys.stdin.isatty() and click.confirm(printable(question), err=True)):
            raise click.UsageError(printable(f"{question} Not confirmed: pass --address {destination} to confirm it"))
    new_dir = record_replay(replay)
    why = "--local" if local else "--address" if address else f"where {run_dir} ran"
    click.echo(printable(f"sapo-launch: {command} of {run_dir} in {new_dir}, {target} ({why})"), err=True)
    sys.exit(
        restarts.run(
            executor,
            launch,
            new_dir,
            secret_env=tuple(replay.secret_env),
            fail_on_gates=fail_on_gates,
            detach=detach,
            max_restarts=max_restarts,
        )
    )


def _check_ended(run_dir: Path, options) -> None:
    """A run is resumed once it has ended: asked where it runs first (`execution.settle`, as `report` does), a run
    still `running` or `submitted` is a usage error."""
    from .. import executors
    from ..execution import ENDED, settle

    status = settle(executors.for_run(run_dir, options), run_dir).get("status")
    if status not in ENDED:
        raise click.UsageError(
            f"{run_dir} has not ended ({status or 'no status'}): resume it once it has, or `sapo-launch stop {run_dir}`"
        )


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


def _show(command: str, replay, target: str) -> None:
    """What a rerun or a resume runs, on standard error: where, what it resumes (from which checkpoint), the argv,
    the environment's names (values filled from this environment marked), the working directory."""
    launch, resume = replay.plan, replay.resume
    lines = [f"{command:<9}{target}"]
    if resume is not None:
        since = f"step {resume.step}" if resume.step is not None else "the latest checkpoint verl finds there"
        lines.append(f"resumes  {resume.of} from {since} (trainer.resume_mode={resume.mode})")
        lines.append(f"ckpt     {resume.checkpoint_dir}")
    lines += [
        f"cwd      {launch.cwd}",
        "argv     " + " ".join(launch.argv),
        "env      " + " ".join(f"{k}{' (from this environment)' if k in replay.filled else ''}" for k, _ in launch.env),
    ]
    for line in lines:
        click.echo(printable(line), err=True)
