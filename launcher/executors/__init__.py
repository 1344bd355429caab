"""Executors: where a plan's trainer runs. Each one starts it, follows its output to the end, stops it and reports
its status; the sequence around them (gates, live view, summary.json, exit codes) is written once, in
`launcher/execution.py`. `local` runs the trainer as a child process here, `ray_jobs` as a job on a Ray cluster.

Nothing here knows of click: errors are `ExecutorError` (one line; the CLI prints `sapo-launch: MESSAGE` and exits
2) and what a user reads goes to stderr with `print`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:  # the CLI imports this package for `ExecutorError`: planning stays unloaded until a run
    from ..plan import Plan

Handle = TypeVar("Handle")
Sink = Callable[[bytes], None]


class ExecutorError(Exception):
    """A run cannot be started or followed; the message says why, in one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Refused(ExecutorError):
    """Where the executor would run it cannot hold the plan: nothing started, exit 1, summary status `refused`."""


class Executor(Protocol[Handle]):
    """What `execution.run` drives. `summary_fields` are the keys summary.json has while the run starts;
    `start` returns the handle that the other calls take and the keys summary.json gains once it has started."""

    def summary_fields(self) -> dict: ...

    def start(self, plan: Plan, run_dir: Path) -> tuple[Handle, dict]: ...

    def follow(self, handle: Handle, run_dir: Path, sink: Sink) -> int:
        """Pass the run's output to `sink` until it ends, the launcher's stop signals handled as the executor
        documents; record the outcome in summary.json (also when following fails) and return the exit code."""

    def stop(self, handle: Handle, signum: int) -> None: ...

    def status(self, run_dir: Path) -> int:
        """Print the run's status; the exit code `sapo-launch status` gives."""
