"""The local executor: run a plan's argv as a child process in its own process group, tee its output to the
run directory's train.log and the terminal (with a live view of the metrics and the recipe's gates, `live.py`),
forward SIGINT/SIGTERM to the group (a second Ctrl-C kills it), and record the outcome in summary.json whatever
happens, the gates' verdicts under `gates`. Exit code: the child's; 128 + N when a signal N ended it (or interrupted
it and it exited 0); 3 (`EXIT_GATES_FAILED`) when the trainer succeeded, a gate did not pass and `fail_on_gates`
is set; 2 when the plan's gates cannot be read (nothing is started).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from .gates import GateError, gate_exit_code, gates_json, parse_gates
from .live import LiveMonitor
from .plan import METRICS_FILE, Plan
from .rundir import LOG_FILE, SUMMARY_FILE, TAIL_LINES, exit_code_of, write_json

EXIT_BAD_GATES = 2


def run_local(plan: Plan, run_dir: Path, terminal: BinaryIO | None = None, fail_on_gates: bool = False) -> int:
    terminal = terminal or sys.stdout.buffer
    started, clock = datetime.now(timezone.utc), time.monotonic()
    try:
        gates = parse_gates(plan.gates)
    except GateError as exc:  # a hand-edited plan.json: lint refuses a recipe with bad gates before this
        print(f"sapo-launch: {exc}", file=sys.stderr)
        write_json(run_dir / SUMMARY_FILE, {"status": "refused", "exit_code": EXIT_BAD_GATES, "error": str(exc)})
        return EXIT_BAD_GATES
    summary = {"status": "running", "started": started.isoformat(), "pid": None}
    write_json(run_dir / SUMMARY_FILE, summary)
    monitor = LiveMonitor(run_dir / METRICS_FILE, plan.total_steps, gates, terminal)
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    forwarded: list[int] = []
    code = None
    try:
        proc = subprocess.Popen(list(plan.argv), cwd=plan.cwd, env={**os.environ, **plan.env_dict()},
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        summary["pid"] = proc.pid

        def forward(signum, _frame):
            # The first SIGINT/SIGTERM goes to the trainer's whole group so it can stop cleanly; a second Ctrl-C
            # kills it.
            if forwarded and signum == signal.SIGINT:
                _signal_group(proc.pid, signal.SIGKILL)
            else:
                _signal_group(proc.pid, signum)
            forwarded.append(signum)

        previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            with open(run_dir / LOG_FILE, "ab") as log:
                for line in proc.stdout:
                    log.write(line)
                    log.flush()
                    monitor.output(line)
                    tail.append(line.decode("utf-8", "replace").rstrip("\n"))
            code = proc.wait()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
    except OSError as exc:  # the trainer could not be started (interpreter missing, cwd gone)
        tail.append(f"sapo-launch: cannot start {plan.argv[0]}: {exc.strerror or exc}")
        code = 127
    finally:
        exit_code = exit_code_of(code) if code is not None else 1
        if forwarded:
            status = "interrupted"
            exit_code = exit_code or 128 + forwarded[0]  # a trainer that stops cleanly on a signal still did not finish
        else:
            status = "succeeded" if exit_code == 0 else "failed"
        summary.update(status=status, exit_code=exit_code, duration_s=round(time.monotonic() - clock, 3),
                       ended=datetime.now(timezone.utc).isoformat(), last_lines=list(tail),
                       signals=[signal.Signals(s).name for s in forwarded])
        try:
            verdicts = monitor.finish()
            exit_code = gate_exit_code(exit_code, verdicts, fail_on_gates)
            summary.update(exit_code=exit_code, gates=gates_json(verdicts))
        finally:
            write_json(run_dir / SUMMARY_FILE, summary)
    return exit_code


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass
