"""`sapo-launch stop RUN_DIR`: stop a Ray job and wait until it has ended."""

from __future__ import annotations

import sys

import click

from .options import ADDRESS, RUN_DIR


@click.command("stop")
@RUN_DIR
@ADDRESS
def stop_command(run_dir, address):
    """Stop the Ray job RUN_DIR submitted and wait until it has ended (its gates are then judged, as for every
    ended run)."""
    from ..execution import conclude
    from ..executors import ray_jobs

    code = ray_jobs.stop(run_dir, address=address)
    conclude(run_dir)
    sys.exit(code)
