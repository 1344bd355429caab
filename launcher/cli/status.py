"""`sapo-launch status RUN_DIR`: the status of a run, through the executor that ran it."""

from __future__ import annotations

import sys

import click

from .options import ADDRESS, HEADERS, RUN_DIR, VERIFY


@click.command("status")
@RUN_DIR
@ADDRESS
@HEADERS
@VERIFY
def status_command(run_dir, address, headers, verify):
    """Print the status of the run RUN_DIR holds (a Ray job, or a run on this machine); exit 0 while it runs, its
    exit code once it ended (2 for a local run whose launcher died: it is marked lost). A run that ended and that
    nobody followed to its end (`--detach`) gets its metrics.jsonl and gate verdicts now, as `logs --follow` would
    have recorded them."""
    from .. import executors
    from ..execution import status

    sys.exit(status(executors.for_run(run_dir, executors.Options(address, headers=headers, verify=verify)), run_dir))
