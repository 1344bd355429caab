"""A run's lifecycle on any executor (`executors/`), written once: starting it, following it, and recording how it
ended, whichever way it is followed and whichever executor runs it.

- `run`: read the recipe's gates, record summary.json `running` (with the executor's name, and `fail_on_gates:
  true` for `--fail-on-gates`), start, then, unless detached (`submitted`), `follow`.
- `follow` (an attached run, and `sapo-launch logs --follow` through `follow_again`): the executor passes the run's
  output to the live view (`live.py`) until the run ends, and records its end through the `Record` it is given:
  the outcome and the gates judged on what the live view parsed, in one write; then the closing line goes to
  stderr. A run whose end another process recorded (its own launcher, an earlier follower) is shown as recorded.
- `status`, `logs`, `stop` (and `report`): the executor records an end it finds through `recorder`, which judges
  the gates on the run's files (train.log, with the file logger's metrics.jsonl); `conclude` then judges a run that
  ended without verdicts (one recorded before they were judged with the outcome).

Judging a run that ended, the one way: metrics.jsonl is completed with the steps only the console showed, the gates
are judged (`gates.judged`: on a run that did not succeed, only a reading that broke an `every` bound decides; other
gates are `not judged`), and the verdicts go into summary.json under `gates` with the exit code they give. Each file
is written atomically, summary.json once per change of state (running, submitted, how it ended); judging again, or
following an ended job again, writes the same files.

Exit codes: the executor's (the trainer's own, 128 + N for a signal); `EXIT_GATES_FAILED` (8) when the trainer
succeeded, a gate held against it (`gates.unmet`) and `--fail-on-gates` was given; 2 when the plan's gates cannot
be read (nothing is started); 1 when the executor refuses the plan (`Refused`: nothing started); 0 once a detached
run is started. An `ExecutorError` while starting is recorded (status `failed`, exit code 2) and raised.

The closing line of a followed run that ended: `sapo-launch: succeeded | failed (exit N)[: REASON] | stopped
(SIGNAL) | gates failed: NAME, ... | lost: REASON; run directory DIR` (a reason: what Ray said of a job that never
started; why a run was lost). It is printed only for an end this process saw or found recorded, never after
following failed: a stale end is not news.
"""

from __future__ import annotations

import signal
import sys
from collections import deque
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from sapo_toolkit.linter.core.printable import printable

from .executors import NAME_KEY, Executor, ExecutorError, Record, Refused
from .gates import Gate, GateError, Verdict, gate_exit_code, gates_json, parse_gates, unmet
from .lineage import described, judged_over_curve
from .live import LiveMonitor, judge
from .metrics import READ_CHUNK, MetricsWatcher, kept
from .plan import METRICS_FILE, Plan
from .rundir import EXIT_REFUSED, LOG_FILE, PLAN_FILE, SUMMARY_FILE, read_json, read_summary, write_json

EXIT_BAD_GATES = 2
# summary.json's status once the run has ended (an executor recorded the outcome, or `rundir.settle_lost` found
# its launcher gone).
ENDED = ("succeeded", "failed", "interrupted", "lost")


def run(
    executor: Executor,
    plan: Plan,
    run_dir: Path,
    *,
    terminal: BinaryIO | None = None,
    fail_on_gates: bool = False,
    detach: bool = False,
) -> int:
    run_dir = Path(run_dir)
    try:
        gates = parse_gates(plan.gates)
    except GateError as exc:  # a hand-edited plan.json: lint refuses a recipe with bad gates before this
        print(f"sapo-launch: {exc}", file=sys.stderr)
        refused = {"status": "refused", "exit_code": EXIT_BAD_GATES, "error": str(exc), NAME_KEY: executor.NAME}
        write_json(run_dir / SUMMARY_FILE, refused)
        return EXIT_BAD_GATES
    summary = {
        "status": "running",
        "started": datetime.now(timezone.utc).isoformat(),
        "pid": None,
        NAME_KEY: executor.NAME,
        **executor.summary_fields(),
    }
    if plan.checkpoints is not None and plan.checkpoints.dir:
        summary["checkpoint_dir"] = plan.checkpoints.dir
    if fail_on_gates:  # for whoever judges the gates: this launcher, `logs --follow` or `status`
        summary["fail_on_gates"] = True
    write_json(run_dir / SUMMARY_FILE, summary)
    try:
        # Started before the live view: rich's refresh thread must not exist when a child is forked.
        handle, started = executor.start(plan, run_dir)
    except Refused as exc:
        summary.update(status="refused", exit_code=EXIT_REFUSED, reason=exc.message)
        write_json(run_dir / SUMMARY_FILE, summary)
        print(f"sapo-launch: refused: {exc.message} (run directory {run_dir})", file=sys.stderr)
        return EXIT_REFUSED
    except ExecutorError as exc:
        summary.update(status="failed", exit_code=2, last_lines=[f"sapo-launch: {exc.message}"])
        write_json(run_dir / SUMMARY_FILE, summary)
        raise
    except KeyboardInterrupt:  # Ctrl-C before the run was followed (a large working directory uploads for a while)
        summary.update(
            status="interrupted",
            exit_code=128 + signal.SIGINT,
            last_lines=["sapo-launch: interrupted while starting"],
            signals=["SIGINT"],
        )
        write_json(run_dir / SUMMARY_FILE, summary)
        raise
    if detach:
        summary.update(started, status="submitted", exit_code=0)
        write_json(run_dir / SUMMARY_FILE, summary)
        print(f"sapo-launch: follow it with `sapo-launch logs --follow {run_dir}`", file=sys.stderr)
        return 0
    # What starting gave (a pid, a submission id) is recorded with the run's end: the state has not changed.
    return follow(executor, handle, run_dir, gates, plan.total_steps, terminal=terminal, started=started)


def follow(
    executor: Executor,
    handle,
    run_dir: Path,
    gates: tuple[Gate, ...],
    total_steps: int | None,
    *,
    terminal: BinaryIO | None = None,
    started: dict | None = None,
) -> int:
    """Follow a started run through the live view. The executor records the run's end through `record`: the
    outcome (with `started`, the keys starting gave) and the gates judged on what the live view parsed, one write,
    also when following fails after it ended; then the closing line is printed. A run whose end another process
    recorded is shown as recorded (judged here only if nobody judged it); a run left running (following stopped)
    keeps its summary as it was, and metrics.jsonl untouched."""
    monitor = LiveMonitor(
        run_dir / METRICS_FILE,
        total_steps,
        gates,
        terminal or sys.stdout.buffer,
        over_curve=lambda status, own: judged_over_curve(run_dir, gates, status, own),
    )
    ended: list[dict] = []

    def record(**outcome) -> dict:
        summary = _record(run_dir, {**(started or {}), **outcome}, monitor.finish)  # closes the live view
        ended.append(summary)
        return summary

    code = None
    try:
        code = executor.follow(handle, run_dir, monitor, record)
    finally:
        if not ended and code is None:  # following failed: the summary stands as it was, nothing to announce
            monitor.close()
        elif not ended:
            summary = read_summary(run_dir)
            # Recorded by another (the launcher that runs it, a follower), and the end the executor found: not when
            # a signal stopped following (128 + N) a run that records another end.
            if summary.get("status") in ENDED and code == summary.get("exit_code", code):
                verdicts = monitor.finish(summary["status"])
                if "gates" in summary:  # as recorded, in the recipe's order (summary.json's keys are sorted)
                    order = {gate.name: i for i, gate in enumerate(gates)}
                    summary["gates"] = dict(sorted(summary["gates"].items(), key=lambda g: order.get(g[0], len(order))))
                else:
                    summary = _record(run_dir, {}, lambda _: verdicts)
                ended.append(summary)
            else:
                monitor.close()
        if ended:
            print(closing_line(ended[-1], run_dir), file=sys.stderr)
            if code is not None and ended[-1].get("exit_code") is not None:
                code = ended[-1]["exit_code"]
    return code


def follow_again(executor: Executor, run_dir: Path, *, terminal: BinaryIO | None = None) -> int:
    """Follow a run started earlier (`sapo-launch logs --follow`, after `--detach` or from another terminal) as
    `run` would have: with the gates and total steps its plan.json records, and the `--fail-on-gates` its
    summary.json records."""
    handle = executor.attach(run_dir)
    gates, total_steps = _recorded_plan(run_dir)
    return follow(executor, handle, run_dir, gates, total_steps, terminal=terminal)


def recorder(run_dir: Path) -> Record:
    """How a run's end found by `status`, `logs`, `stop` or `report` is recorded: with the gates judged on the run's
    files (module docstring), in one write. Raises `ExecutorError` when plan.json's gates cannot be read (the
    outcome is recorded without verdicts)."""
    run_dir = Path(run_dir)

    def record(**outcome) -> dict:
        return _record(run_dir, outcome, lambda status: _judged_on_files(run_dir, status))

    return record


def conclude(run_dir: Path) -> dict:
    """Judge the gates of a run that ended and that nobody judged (see the module docstring), from its files;
    returns summary.json as it stands. Raises `ExecutorError` when plan.json's gates cannot be read."""
    summary = read_summary(run_dir)
    if summary.get("status") not in ENDED or "gates" in summary:
        return summary
    return recorder(run_dir)()


def status(executor: Executor, run_dir: Path) -> int:
    """`sapo-launch status RUN_DIR`: the executor prints the run's status (and records an end it finds), then the
    run is concluded if it has ended; a line for each link to another run and for the whole curve of a resumed one
    (`lineage.described`), and a run that succeeded while gates held against it gets `gates failed: NAME, ...`.
    Exit: the executor's (0 while the run goes), or for a run that succeeded the code its gates give."""
    code = executor.status(run_dir, recorder(run_dir))
    summary = conclude(run_dir)
    for line in described(run_dir):
        print(printable(line))
    if summary.get("status") != "succeeded":
        return code
    failed = unmet(summary.get("gates") or {})
    if failed:
        print(printable(f"gates failed: {', '.join(failed)}"))
    return summary["exit_code"]


def settle(executor: Executor, run_dir: Path) -> dict:
    """summary.json once the executor has recorded an end it can find (a detached job that ended, a launcher that
    is gone) and the run, if ended, is concluded: what `report` reads, as `status` would leave it."""
    executor.settle(run_dir, recorder(run_dir))
    return conclude(run_dir)


def logs(executor: Executor, run_dir: Path, *, terminal: BinaryIO | None = None, last: int | None = None) -> int:
    """`sapo-launch logs RUN_DIR [--tail N]`: the run's log so far on `terminal` (stdout), or its `last` N lines;
    an ended run is concluded."""
    terminal = terminal or sys.stdout.buffer
    shown = terminal if last is None else LastLines(last)
    code = executor.logs(run_dir, recorder(run_dir), shown)
    if last is not None:
        shown.write_to(terminal)
    conclude(run_dir)
    return code


class LastLines:
    """A sink that keeps the last `count` lines written to it (`logs --tail N`): what streams through is never held
    whole, only those lines (and the line being written)."""

    def __init__(self, count: int):
        self.lines: deque[bytes] = deque(maxlen=count) if count > 0 else deque(maxlen=0)
        self.partial = b""

    def write(self, data: bytes) -> int:
        *complete, self.partial = (self.partial + data).split(b"\n")
        self.lines.extend(line + b"\n" for line in complete)
        return len(data)

    def flush(self) -> None:
        pass

    def write_to(self, terminal: BinaryIO) -> None:
        if self.partial:  # a last line without its line break counts as a line
            self.lines.append(self.partial)
        terminal.writelines(self.lines)
        terminal.flush()


def stop(executor: Executor, run_dir: Path) -> int:
    """`sapo-launch stop RUN_DIR`: stop the run and wait for its end (then concluded); the executor's exit code."""
    code = executor.stop(run_dir, recorder(run_dir))
    conclude(run_dir)
    return code


def closing_line(summary: dict, run_dir: Path) -> str:
    """How an ended run ended, in one line (module docstring); names from the recipe escaped for a terminal."""
    state, code = summary.get("status"), summary.get("exit_code")
    if state == "succeeded":
        failed = unmet(summary.get("gates") or {})
        how = f"gates failed: {', '.join(failed)}" if failed else "succeeded"
    elif state == "interrupted":
        signals = summary.get("signals") or []
        how = f"stopped ({signals[0]})" if signals else f"stopped (exit {code})"
    elif state == "lost":
        how = f"lost: {summary.get('reason') or 'its launcher ended without recording how the run ended'}"
    else:
        how = f"failed (exit {code})" + (f": {summary['reason']}" if summary.get("reason") else "")
    return printable(f"sapo-launch: {how}; run directory {run_dir}")


def _record(run_dir: Path, outcome: dict, verdicts_for: Callable[[str | None], tuple[Verdict, ...]]) -> dict:
    """summary.json with `outcome` over it (verdicts judged on an earlier outcome dropped) and the verdicts judged
    on it (`verdicts_for(status)`), with the exit code they give: one write. When the verdicts cannot be judged
    (`ExecutorError`), the outcome is written without them and the error raised."""
    summary = read_summary(run_dir)
    summary.pop("gates", None)
    summary.update(outcome)
    try:
        verdicts = verdicts_for(summary.get("status"))
    except ExecutorError:
        write_json(run_dir / SUMMARY_FILE, summary)
        raise
    summary["gates"] = gates_json(verdicts)
    summary["exit_code"] = gate_exit_code(summary.get("exit_code"), verdicts, bool(summary.get("fail_on_gates")))
    write_json(run_dir / SUMMARY_FILE, summary)
    return summary


def _judged_on_files(run_dir: Path, status: str | None) -> tuple[Verdict, ...]:
    """The gates plan.json records, judged on the run's log (train.log) and the file logger's metrics.jsonl (once
    it is completed: a resumed run's over its whole curve)."""
    gates, _ = _recorded_plan(run_dir)
    watcher = MetricsWatcher(run_dir / METRICS_FILE, kept(g.metric for g in gates))
    try:
        with open(run_dir / LOG_FILE, "rb") as log:
            while chunk := log.read(READ_CHUNK):
                watcher.feed(chunk)
    except FileNotFoundError:  # the run never started, or its log was not kept
        pass
    return judged_over_curve(run_dir, gates, status, judge(watcher, gates, status))


def _recorded_plan(run_dir: Path) -> tuple[tuple[Gate, ...], int | None]:
    """The gates and total steps plan.json records."""
    recorded = read_json(run_dir / PLAN_FILE)
    try:
        gates = parse_gates(recorded.get("gates") or ())
    except GateError as exc:
        raise ExecutorError(f"{run_dir / PLAN_FILE}: {exc}") from None
    return gates, recorded.get("total_steps")
