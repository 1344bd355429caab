"""`sapo-launch status RUN_DIR`: the status of a run, on Ray or on this machine."""

from __future__ import annotations

import sys

import click

from ..rundir import SUMMARY_FILE
from .options import ADDRESS, RUN_DIR


@click.command("status")
@RUN_DIR
@ADDRESS
def status_command(run_dir, address):
    """Print the status of the run RUN_DIR holds (a Ray job, or a run on this machine); exit 0 while it runs, its
    exit code once it ended (2 for a local run whose launcher died: it is marked lost). A run that ended and that
    nobody followed to its end (`--detach`) gets its metrics.jsonl and gate verdicts now, as `logs --follow` would
    have recorded them."""
    from ..execution import status
    from ..executors import local, ray_jobs

    on_ray = (run_dir / ray_jobs.JOB_FILE).exists() or not (run_dir / SUMMARY_FILE).exists()
    executor = ray_jobs.RayExecutor(address) if on_ray else local.LocalExecutor()
    sys.exit(status(executor, run_dir))
