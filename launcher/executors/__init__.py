"""Executors: where a plan's trainer runs. Each one starts it, follows its output to the end, stops it, reports
its status, and records how the run ended (`rundir.record_outcome`); the lifecycle around them (gates, live view,
metrics.jsonl, summary.json's verdicts, exit codes, the closing line) is written once, in `launcher/execution.py`.
`local` runs the trainer as a child process here, `ray_jobs` as a job on a Ray cluster.

Nothing here knows of click: errors are `ExecutorError` (one line; the CLI prints `sapo-launch: MESSAGE` and exits
2). While a run is followed, what a user reads goes through the live view (`Live.message`), so that a progress bar
does not draw over it; otherwise to stderr with `print`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:  # the CLI imports this package for `ExecutorError`: planning stays unloaded until a run
    from ..plan import Plan

Handle = TypeVar("Handle")


class ExecutorError(Exception):
    """A run cannot be started or followed; the message says why, in one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Refused(ExecutorError):
    """Where the executor would run it cannot hold the plan: nothing started, exit 1, summary status `refused`."""


class Live(Protocol):
    """Where a followed run goes (`live.LiveMonitor`): the trainer's output, and the launcher's own notices."""

    def output(self, data: bytes) -> None: ...

    def message(self, text: str) -> None: ...


class Executor(Protocol[Handle]):
    """What `execution.run` drives. `summary_fields` are the keys summary.json has while the run starts;
    `start` returns the handle that the other calls take and the keys summary.json gains once it has started."""

    def summary_fields(self) -> dict: ...

    def start(self, plan: Plan, run_dir: Path) -> tuple[Handle, dict]: ...

    def follow(self, handle: Handle, run_dir: Path, live: Live) -> int:
        """Pass the run's output to `live` until it ends, the launcher's stop signals handled as the executor
        documents (a notice for each through `live.message`); record the outcome in summary.json
        (`rundir.record_outcome`, also when following fails) and return the run's exit code."""

    def stop(self, handle: Handle, signum: int) -> None: ...

    def status(self, run_dir: Path) -> int:
        """Print the run's status; the exit code `sapo-launch status` gives."""
