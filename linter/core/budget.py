"""The time one file may take to lint. It is checked cooperatively, where the work is divided anyway (before each
rule on each command, every so many steps of the bash interpreter), never with a signal or a timer thread: those
would interrupt forked workers and the C code of parsers at arbitrary points."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# No real recipe or run script comes near it (verl's largest scripts lint in well under a second); a file crafted
# to be slow gets RF011 after this long instead of holding up the run (docs/security.md, "Bounds").
FILE_TIME_BUDGET_S = 10.0

_deadline: ContextVar[float | None] = ContextVar("sapo_lint_deadline", default=None)


class OutOfTime(Exception):
    """The file's time budget is spent; `stage` says what was being done then."""

    def __init__(self, stage: str) -> None:
        super().__init__(stage)
        self.stage = stage


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Within the block, `check_time` raises `OutOfTime` once `seconds` have passed. Outside any such block (the
    `explain` and `convert` commands, the launcher) there is no limit."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def check_time(stage: str) -> None:
    """Raise `OutOfTime(stage)` when the current file's time budget is spent."""
    deadline = _deadline.get()
    if deadline is not None and time.monotonic() > deadline:
        raise OutOfTime(stage)


@contextmanager
def not_counted() -> Iterator[None]:
    """Within the block, time does not count against the current file's budget: work done once for every file that
    needs it (building a verl snapshot, cached for the next run), which no one file should be stopped for."""
    deadline = _deadline.get()
    start = time.monotonic()
    try:
        yield
    finally:
        if deadline is not None:
            _deadline.set(deadline + (time.monotonic() - start))
