"""The one sequence that runs a plan on any executor (`executors/`): read the recipe's gates, record summary.json
`running`, start, then (unless detached) follow the output through the live view (`live.py`) and the gates, and
record their verdicts under `gates`. The executor records its own outcome; this adds the gates and the exit code.

Exit codes: the executor's (the trainer's own, 128 + N for a signal); 3 (`EXIT_GATES_FAILED`) when it succeeded, a
gate did not pass and `fail_on_gates` is set; 2 when the plan's gates cannot be read (nothing is started); 1 when
the executor refuses the plan (`Refused`: nothing started); 0 once a detached run is started. An `ExecutorError`
while starting is recorded (status `failed`, exit code 2) and raised.
"""

from __future__ import annotations

import signal
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from .executors import Executor, ExecutorError, Refused
from .gates import Gate, GateError, gate_exit_code, gates_json, parse_gates
from .live import LiveMonitor
from .plan import METRICS_FILE, Plan
from .rundir import EXIT_REFUSED, PLAN_FILE, SUMMARY_FILE, read_json, read_summary, write_json

EXIT_BAD_GATES = 2
ENDED = ("succeeded", "failed", "interrupted")  # summary.json's status once an executor recorded the outcome


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
        write_json(run_dir / SUMMARY_FILE, {"status": "refused", "exit_code": EXIT_BAD_GATES, "error": str(exc)})
        return EXIT_BAD_GATES
    summary = {
        "status": "running",
        "started": datetime.now(timezone.utc).isoformat(),
        "pid": None,
        **executor.summary_fields(),
    }
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
    summary.update(started)
    write_json(run_dir / SUMMARY_FILE, summary)
    if detach:
        summary.update(status="submitted", exit_code=0)
        write_json(run_dir / SUMMARY_FILE, summary)
        print(f"sapo-launch: follow it with `sapo-launch logs --follow {run_dir}`", file=sys.stderr)
        return 0
    return follow(executor, handle, run_dir, gates, plan.total_steps, terminal=terminal, fail_on_gates=fail_on_gates)


def follow(
    executor: Executor,
    handle,
    run_dir: Path,
    gates: tuple[Gate, ...],
    total_steps: int | None,
    *,
    terminal: BinaryIO | None = None,
    fail_on_gates: bool = False,
) -> int:
    """Follow a started run through the live view and the gates. Once the executor has recorded how the run ended
    (also when following failed after that), the verdicts go into summary.json with the exit code they give; a
    run left running (following stopped) keeps its summary as it was."""
    monitor = LiveMonitor(run_dir / METRICS_FILE, total_steps, gates, terminal or sys.stdout.buffer)
    code = None
    try:
        code = executor.follow(handle, run_dir, monitor.output)
    finally:
        verdicts = monitor.finish()  # closes the live view, also when following failed
        summary = read_summary(run_dir)
        if summary.get("status") in ENDED:
            summary["gates"] = gates_json(verdicts)
            if code is not None:
                summary["exit_code"] = code = gate_exit_code(code, verdicts, fail_on_gates)
            write_json(run_dir / SUMMARY_FILE, summary)
    return code


def follow_again(executor: Executor, handle, run_dir: Path, *, terminal: BinaryIO | None = None) -> int:
    """Follow a run started earlier (`sapo-launch logs --follow` after `--detach`) as `run` would have: with the
    gates and total steps its plan.json records."""
    recorded = read_json(run_dir / PLAN_FILE)
    try:
        gates = parse_gates(recorded.get("gates") or ())
    except GateError as exc:
        raise ExecutorError(str(exc)) from None
    return follow(executor, handle, run_dir, gates, recorded.get("total_steps"), terminal=terminal)
