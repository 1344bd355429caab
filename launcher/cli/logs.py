"""`sapo-launch logs RUN_DIR [--follow]`: the log of a run, through the executor that ran it."""

from __future__ import annotations

import sys

import click

from .options import ADDRESS, HEADERS, RUN_DIR, VERIFY


@click.command("logs")
@RUN_DIR
@click.option("--follow", "-f", is_flag=True, help="Stream until the run ends; exit with its exit code.")
@click.option("--tail", "last", type=click.IntRange(min=0), metavar="N", help="Print only the log's last N lines.")
@ADDRESS
@HEADERS
@VERIFY
def logs_command(run_dir, follow, last, address, headers, verify):
    """Print the log of the run RUN_DIR holds (the Ray job it submitted, streamed, or its train.log here; re-attach
    with --follow: Ctrl-C then stops following, not the run). Once the run has ended, the run directory gets its
    log, metrics.jsonl and gate verdicts, whichever way it was followed."""
    from .. import executors
    from ..execution import follow_again, logs

    if follow and last is not None:
        raise click.UsageError("--tail prints the log so far: it does not go with --follow")
    executor = executors.for_run(run_dir, executors.Options(address, headers=headers, verify=verify))
    sys.exit(follow_again(executor, run_dir) if follow else logs(executor, run_dir, last=last))
