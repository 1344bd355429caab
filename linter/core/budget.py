"""The work one file may take to lint, counted in units where the work is divided anyway (each override read, each
rule run on each override of a command, every 1,024 steps of the bash interpreter), never with a signal or a timer
thread: those would interrupt forked workers and the C code of parsers at arbitrary points.

Units, not seconds, so that a file gets the same findings on any machine, however busy (a wall-clock budget once cut
files short on a loaded machine only). A wall-clock guard stays as a last resort, far above what the units allow
(`FILE_TIME_GUARD_S`): only a defect that does unbounded work between two charges could reach it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

# Real recipes and run scripts use well under 1% of it (the largest of verl's examples: about 60,000 units); a file
# crafted to be slow (300,000 overrides) gets RF011 instead of holding up the run (docs/security.md, "Bounds").
FILE_WORK_UNITS = 5_000_000
FILE_TIME_GUARD_S = 600.0


class OutOfBudget(Exception):
    """The file's budget is spent; `stage` says what was being done then, `bound` which budget it was."""

    def __init__(self, stage: str, bound: str) -> None:
        super().__init__(stage)
        self.stage = stage
        self.bound = bound


@dataclass(slots=True)
class _Budget:
    units: int
    deadline: float
    used: int = 0


_budget: ContextVar[_Budget | None] = ContextVar("sapo_lint_budget", default=None)


@contextmanager
def work_budget(units: int, guard_s: float = FILE_TIME_GUARD_S) -> Iterator[None]:
    """Within the block, `charge` raises `OutOfBudget` once more than `units` are charged (or, the last resort,
    `guard_s` seconds have passed). Outside any such block (`explain`, `convert`, the launcher) there is no limit."""
    token = _budget.set(_Budget(units, time.monotonic() + guard_s))
    try:
        yield
    finally:
        _budget.reset(token)


def charge(stage: str, units: int = 1) -> None:
    """Count `units` of work against the current file's budget; raise `OutOfBudget(stage, ...)` when it is spent."""
    budget = _budget.get()
    if budget is None:
        return
    budget.used += units
    if budget.used > budget.units:
        raise OutOfBudget(stage, f"{budget.units:,} units of work, the budget of one file")
    if time.monotonic() > budget.deadline:
        raise OutOfBudget(stage, f"{FILE_TIME_GUARD_S:g} s, the last-resort time guard of one file")


@contextmanager
def not_counted() -> Iterator[None]:
    """Within the block, time does not count against the current file's guard: work done once for every file that
    needs it (building a verl snapshot, cached for the next run), which no one file should be stopped for."""
    budget = _budget.get()
    start = time.monotonic()
    try:
        yield
    finally:
        if budget is not None:
            budget.deadline += time.monotonic() - start
