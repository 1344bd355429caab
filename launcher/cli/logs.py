"""`sapo-launch logs RUN_DIR [--follow]`: the log of a Ray job."""

from __future__ import annotations

import sys

import click

from .options import ADDRESS, RUN_DIR


@click.command("logs")
@RUN_DIR
@click.option("--follow", "-f", is_flag=True, help="Stream until the job ends; exit with its exit code.")
@ADDRESS
def logs_command(run_dir, follow, address):
    """Print the log of the Ray job RUN_DIR submitted (re-attach with --follow). Once the job has ended, the run
    directory gets its log, metrics.jsonl and gate verdicts, whichever way it was followed."""
    from ..execution import conclude, follow_again
    from ..executors import ray_jobs

    if follow:
        sys.exit(follow_again(ray_jobs.RayExecutor(address), ray_jobs.attach(run_dir, address=address), run_dir))
    code = ray_jobs.logs(run_dir, address=address)
    conclude(run_dir)
    sys.exit(code)
