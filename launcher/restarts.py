"""`--max-restarts N`: a run that failed for a cluster reason is resumed from its last checkpoint, up to N times, as
SkyPilot's managed jobs are; a run that failed for a reason of its own is never restarted.

A cluster reason (`cluster_reason`, read from summary.json as the executor recorded the end), and nothing else:
- the Ray cluster no longer knew the job while it was followed (`lost`: its head restarted or was replaced);
- Ray failed the job without an exit code of its driver's (Ray's message in summary.json's `reason`): the runtime
  environment could not be set up (a pip package, a conda environment), the node that ran the driver died, the
  job's supervisor died or could not be scheduled;
- the trainer (a Ray job's driver, or the child process here) was killed by SIGKILL that the launcher did not send
  (no `signals` recorded): the kernel's out-of-memory killer, a node going down.

Never, so that a broken run is not run again and again: an exit code of the trainer's own (a Python exception
exits 1, `sys.exit(N)`, Ray's "Job entrypoint command failed with exit code N"), any other signal (SIGSEGV or
SIGABRT: the trainer crashed; SIGTERM: what a user's `kill` sends), a stopped run (`interrupted`: Ctrl-C,
`sapo-launch stop`, `ray job stop`), a run that succeeded (whatever its gates say), a refused one.

Each attempt is a run directory of its own beside the first (`<first>-attempt-N`), a resume of the one before
(`replay.resume_from`: from the checkpoint verl's tracker names, or over again in the same checkpoint directory
when none was saved yet; linked both ways, its gates judged over the whole curve: `lineage`). The plan is the one
in memory, so the recipe's secrets, which plan.json redacts, go along. The first run's summary.json lists every
attempt under `attempts` (`attempt`, `run_dir`, `started`, `ended`, `status`, `exit_code`, and for a restart the
`reason` it was made for), written as each one ends (a restart's entry when it is made); each restart's plan.json
records its attempt and reason in `resume`. The exit code is the last attempt's. Restarting needs a launcher that
follows the run: not with `--detach`.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
from pathlib import Path

from sapo_toolkit.linter.core.printable import printable

from .execution import run as run_once
from .executors import Executor
from .plan import Plan
from .replay import Replay, ReplayError, record_replay, resume_from
from .rundir import PLAN_FILE, SUMMARY_FILE, Labels, read_json, read_summary, write_json

ATTEMPTS_KEY = "attempts"  # the first run's summary.json: every attempt of the launch
# Ray's message for a driver that exited with a code of its own (Ray 2.x job_supervisor.py)
DRIVER_EXITED = "Job entrypoint command failed with exit code"


def cluster_reason(summary: dict) -> str | None:
    """Why the run summary.json records failed for a cluster reason (module docstring), in words; None when it did
    not fail for one."""
    status = summary.get("status")
    if status == "lost":
        return summary.get("reason") or "the cluster lost the run"
    if status != "failed":
        return None
    message = str(summary.get("message") or "")
    if summary.get("job_status") == "FAILED" and summary.get("reason") and not message.startswith(DRIVER_EXITED):
        return f"Ray: {summary['reason']}"
    if summary.get("exit_code") == 128 + signal.SIGKILL and not summary.get("signals"):
        return "the trainer was killed by SIGKILL, which the launcher did not send"
    return None


def run(
    executor: Executor,
    plan: Plan,
    run_dir: Path,
    *,
    secret_env: tuple[str, ...] = (),
    fail_on_gates: bool = False,
    detach: bool = False,
    max_restarts: int = 0,
) -> int:
    """Run the plan (`execution.run`) and, while an attempt failed for a cluster reason, resume it in a new run
    directory, at most `max_restarts` times (module docstring); the last attempt's exit code."""
    code = run_once(executor, plan, run_dir, fail_on_gates=fail_on_gates, detach=detach)
    if not max_restarts:
        return code
    visible = executor.destination() is None  # the trainer runs here: it sees the checkpoints as this process does
    first, attempts = Path(run_dir), [(Path(run_dir), None)]
    try:
        while (reason := cluster_reason(read_summary(run_dir))) is not None:
            if len(attempts) > max_restarts:
                _say(f"not restarted: {reason}; all {max_restarts} restarts used")
                break
            previous = run_dir
            plan, run_dir, step = _restart(plan, previous, first, len(attempts) + 1, reason, visible, secret_env)
            attempts.append((run_dir, reason))
            _record_attempts(first, attempts)
            since = "its latest checkpoint" if step is None else f"step {step}" if step else "the start (none saved)"
            restart = f"restart {len(attempts) - 1} of {max_restarts}"
            _say(f"{restart}: {reason}; resuming {previous} from {since} in {run_dir}")
            code = run_once(executor, plan, run_dir, fail_on_gates=fail_on_gates)
    except ReplayError as exc:
        _say(f"not restarted: {exc}")
    finally:
        _record_attempts(first, attempts)
    return code


def _restart(
    plan: Plan, previous: Path, first: Path, attempt: int, reason: str, visible: bool, secret_env: tuple[str, ...]
) -> tuple[Plan, Path, int | None]:
    """The plan of attempt number `attempt`, resuming `previous` (`replay.resume_from`, `visible` as it takes it),
    its run directory (made and linked) and the step it resumes from (`Resume.step`)."""
    checkpoints = plan.checkpoints
    plan = dataclasses.replace(plan, resolved=dict(plan.resolved))
    plan.move_to(str(first.with_name(f"{first.name}-attempt-{attempt}")))
    resume = resume_from(plan, previous, checkpoints, visible=visible, restart=(attempt, reason))
    labels = Labels.recorded(read_json(previous / PLAN_FILE))
    replay = Replay(plan, [], list(secret_env), previous, checkpoints, labels, resume=resume)
    return plan, record_replay(replay), resume.step


def _record_attempts(first: Path, attempts: list[tuple[Path, str | None]]) -> None:
    """The first run's summary.json with `attempts` as the attempts' own summaries now stand, one write."""
    entries = []
    for number, (run_dir, reason) in enumerate(attempts, 1):
        summary = read_summary(run_dir)
        entry = {"attempt": number, "run_dir": str(run_dir)}
        entry.update({key: summary.get(key) for key in ("started", "ended", "status", "exit_code")})
        if reason is not None:
            entry["reason"] = reason
        entries.append(entry)
    write_json(first / SUMMARY_FILE, {**read_summary(first), ATTEMPTS_KEY: entries})


def _say(text: str) -> None:
    print(printable(f"sapo-launch: {text}"), file=sys.stderr)
