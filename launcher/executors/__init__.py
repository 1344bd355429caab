"""Executors: where a plan's trainer runs, chosen by name through one registry (`EXECUTORS`). Each one starts a run,
follows it, stops it, prints its log and its status, and records how it ended; the lifecycle around them (gates,
live view, metrics.jsonl, summary.json's verdicts, exit codes, the closing line) is written once, in
`launcher/execution.py`. What an executor is: `base.Executor`. `local` runs the trainer as a child process here,
`ray` as a job on a Ray cluster (`ray_jobs.py`, with `ray_client.py`, `ray_submit.py` and `ray_probe.py`).

The registry maps a name to `"module:Class"`, imported when that executor is used: `sapo-launch --help` and a run
on this machine never import the Ray executor's modules (nor Ray). A run records its executor's name in summary.json
(`NAME_KEY`) when it starts; `executor_for` reads it back, so `status`, `logs`, `stop` and `rerun` go through the
executor that ran it. Adding an executor is one module with a class that has `base.Executor`'s methods and one
line here (or `register` from a plugin or a test).

Nothing here knows of click: errors are `ExecutorError` (one line; the CLI prints `sapo-launch: MESSAGE` and exits
2). While a run is followed, what a user reads goes through the live view (`Live.message`), so that a progress bar
does not draw over it; otherwise to stderr with `print`.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from .base import Described, Executor, Live, Options, Record

if TYPE_CHECKING:
    from .base import ExecutorClass

__all__ = [
    "EXECUTORS",
    "NAME_KEY",
    "Described",
    "Executor",
    "ExecutorError",
    "Live",
    "Options",
    "Record",
    "Refused",
    "create",
    "executor_class",
    "executor_for",
    "for_run",
    "named",
    "register",
]

# name -> "module:Class"; the class's NAME is the name.
EXECUTORS: dict[str, str] = {
    "local": f"{__name__}.local:LocalExecutor",
    "ray": f"{__name__}.ray_jobs:RayExecutor",
}
NAME_KEY = "executor"  # summary.json's key for the name of the executor that ran the run
# The file only one executor writes in a run directory, by its name. It names the executor of a run directory
# written before names were recorded, and of any that holds it: a job record says where the run's job is.
RECORD_FILES = {"ray": "job.json"}
# Where a Ray cluster's Jobs API address may come from, in Ray's order: what `ray start` tells users to export for
# `ray job submit`, then what `ray.init` reads (here so that a local launch reads them without importing Ray's client)
RAY_ADDRESS_VARIABLES = ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS")
# A run directory without summary.json was taken for a Ray job's (whose job.json is then missing: the error says so).
WITHOUT_SUMMARY = "ray"


class ExecutorError(Exception):
    """A run cannot be started or followed; the message says why, in one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Refused(ExecutorError):
    """Where the executor would run it cannot hold the plan: nothing started, exit 1, summary status `refused`."""


def register(name: str, target: str) -> None:
    """Make the executor `target` ("module:Class", imported when used) available as `name`."""
    EXECUTORS[name] = target


def executor_class(name: str) -> ExecutorClass:
    """The class registered as `name`, imported now; `ExecutorError` for a name no executor has."""
    try:
        target = EXECUTORS[name]
    except (KeyError, TypeError):
        raise ExecutorError(f"no executor is named {name!r} (there are: {', '.join(sorted(EXECUTORS))})") from None
    module, _, attribute = target.partition(":")
    cls = getattr(import_module(module), attribute)
    if cls.NAME != name:
        raise ExecutorError(f"the executor registered as {name!r} ({target}) is named {cls.NAME!r}")
    return cls


def create(name: str, options: Options | None = None) -> Executor:
    """The executor `name`, with the command line's `options`."""
    return executor_class(name).configured(options or Options())


def named(address: str | None) -> str:
    """The executor a launch's command line names: Ray's with a cluster's address, else this machine's."""
    return "ray" if address else "local"


def executor_for(run_dir: Path) -> str:
    """The name of the executor that ran RUN_DIR: the one whose own record the directory holds (`RECORD_FILES`: a
    submitted job's record says where the job is), else the one summary.json records (`NAME_KEY`). A run directory
    written before names were recorded, with neither, is told as then: without summary.json, `WITHOUT_SUMMARY`'s;
    with one, this machine's."""
    from ..rundir import SUMMARY_FILE, read_summary

    run_dir = Path(run_dir)
    for name, record in RECORD_FILES.items():
        if (run_dir / record).exists():
            return name
    name = read_summary(run_dir).get(NAME_KEY)
    if isinstance(name, str):
        return name
    return "local" if (run_dir / SUMMARY_FILE).exists() else WITHOUT_SUMMARY


def for_run(run_dir: Path, options: Options | None = None) -> Executor:
    """The executor that ran RUN_DIR (`executor_for`), with the command line's `options`."""
    return create(executor_for(run_dir), options)
