"""`sapo-launch stop RUN_DIR`: stop a run and wait until it has ended, through the executor that ran it."""

from __future__ import annotations

import sys

import click

from .options import ADDRESS, HEADERS, RUN_DIR, VERIFY


@click.command("stop")
@RUN_DIR
@ADDRESS
@HEADERS
@VERIFY
def stop_command(run_dir, address, headers, verify):
    """Stop the run RUN_DIR holds (the Ray job it submitted, or the launcher running it here: SIGTERM, as Ctrl-C
    would) and wait until it has ended (its gates are then judged, as for every ended run)."""
    from .. import executors
    from ..execution import stop

    sys.exit(stop(executors.for_run(run_dir, executors.Options(address, headers=headers, verify=verify)), run_dir))
