"""The local executor: run a plan's argv as a child process in its own process group, tee its output to the
run directory's train.log and the live view (`execution.py`), and record the outcome in summary.json whatever
happens. Exit code: the child's; 128 + N when a signal N ended it; 128 + N for the signal N the launcher received
when the trainer then exited 0 or died of a signal; 127 when it could not be started.

Stopping, and what is guaranteed:
- The launcher's first SIGINT, SIGTERM or SIGHUP (as SIGTERM) goes to the trainer's process group; `KILL_GRACE_S`
  later the group gets SIGKILL; a second signal kills it at once. Each is noted in the live view. A SIGHUP the
  launcher was started ignoring (`nohup`) stays ignored.
- The trainer starts with SIGINT, SIGTERM, SIGHUP and SIGQUIT at their defaults and unblocked, whatever the
  launching shell ignored (`trap '' INT`, a background job).
- When the trainer exits, what it left in its process group gets SIGTERM, and SIGKILL `KILL_GRACE_S` later if it
  is still there: nothing of its group outlives the run, and output held open by a process that left the group
  is not waited on longer than that.
- When the launcher itself dies without cleaning up (SIGKILL, a crash): on Linux the kernel kills the trainer
  (PR_SET_PDEATHSIG, which reaches only the direct child), and a watchdog process, started in a session of its
  own, sees the launcher's end of a pipe close and gives the trainer's group SIGTERM, then SIGKILL after
  `KILL_GRACE_S`. Processes that left the group (setsid, daemons) are not followed. summary.json records the
  launcher's identity (`rundir.launcher_identity`), and the next `sapo-launch status` or `report` of the run marks
  it `lost` with its last step.

Memory stays bounded whatever the trainer prints: its output is read in chunks of `READ_BYTES`, train.log gets
every byte, and the live view, the metrics and the tail in summary.json keep bounded lines (`live.py`,
`metrics.py`).

From another process, a run here is found by its run directory: `status` prints what summary.json records,
`logs` prints train.log, `logs --follow` (`attach`) reads train.log as it grows until summary.json records the
end (Ctrl-C stops following, not the run: exit 130), and `stop` sends the launcher SIGTERM, as a user's kill
would (it stops the trainer's group and records the outcome), then waits for it to be recorded. A run whose
launcher ended without recording an outcome is recorded `lost` by whichever of them finds it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, NamedTuple

from ..live import LineTail
from ..metrics import read_files
from ..plan import METRICS_FILE, Plan
from ..rundir import (
    EXIT_LOST,
    LOG_FILE,
    SUMMARY_FILE,
    exit_code_of,
    launcher_identity,
    settle_lost,
)
from . import ExecutorError
from .base import Live, Options, Record

KILL_GRACE_S = 10.0
READ_BYTES = 64 * 1024
TICK_S = 0.2  # how often deadlines are checked while the output is quiet (and a followed train.log read)
STOP_WAIT_S = 60.0  # how long `stop` waits for the launcher to record the end
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
TRAINER_DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
PR_SET_PDEATHSIG = 1  # linux/prctl.h

# Run as `python -I -S -c WATCHDOG GROUP GRACE`, stdin the read end of a pipe that only the launcher writes to: a
# byte means the launcher has dealt with the group itself; end of file means it died.
WATCHDOG = """
import os, signal, sys, time
group, grace = int(sys.argv[1]), float(sys.argv[2])
if os.read(0, 1):
    sys.exit()
def signal_group(signum):
    try:
        os.killpg(group, signum)
        return True
    except ProcessLookupError:
        return False
if signal_group(signal.SIGTERM):
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and signal_group(0):
        time.sleep(0.1)
    signal_group(signal.SIGKILL)
"""


class LocalRun(NamedTuple):
    """A started trainer (`proc` None when it could not be started: exit 127, the reason in `tail`)."""

    proc: subprocess.Popen | None
    stopper: _Stopper | None
    tail: LineTail
    clock: float  # time.monotonic() at the start


class Follower(NamedTuple):
    """A run another launcher runs here (or ran), followed through its run directory (`attach`)."""

    run_dir: Path


class LocalExecutor:
    """The trainer as a child process of this launcher (module docstring)."""

    NAME = "local"

    @classmethod
    def configured(cls, options: Options) -> LocalExecutor:
        return cls()

    @classmethod
    def rerun_of(cls, run_dir: Path, options: Options, read_text) -> LocalExecutor:
        return cls()

    def where(self) -> str:
        return "on this machine"

    def destination(self) -> None:
        return None

    def describe(self, plan: Plan) -> None:
        return None

    def summary_fields(self) -> dict:
        return {"launcher": launcher_identity()}

    def start(self, plan: Plan, run_dir: Path) -> tuple[LocalRun, dict]:
        tail, clock = LineTail(), time.monotonic()
        try:
            proc = _start_trainer(plan)
        except OSError as exc:  # the trainer could not be started (interpreter missing, cwd gone)
            tail.note(f"sapo-launch: cannot start {plan.argv[0]}: {exc.strerror or exc}")
            return LocalRun(None, None, tail, clock), {}
        return LocalRun(proc, _Stopper(proc, tail), tail, clock), {"pid": proc.pid}

    def attach(self, run_dir: Path) -> Follower:
        if not (Path(run_dir) / SUMMARY_FILE).is_file():
            raise ExecutorError(f"{run_dir} holds no run ({SUMMARY_FILE} is missing)")
        return Follower(Path(run_dir))

    def follow(self, handle: LocalRun | Follower, run_dir: Path, live: Live, record: Record) -> int:
        """Tee the trainer's output to train.log and `live` until it has ended, its process group stopped on
        the launcher's signals (module docstring); record the outcome whatever happens. A `Follower` reads
        train.log instead (`_follow_log`)."""
        if isinstance(handle, Follower):
            return _follow_log(run_dir, live, record)
        stopper, tail = handle.stopper, handle.tail
        code = None if handle.proc is not None else 127
        try:
            if stopper is not None:
                previous = {
                    s: signal.signal(s, stopper.on_signal)
                    for s in STOP_SIGNALS
                    if not (s == signal.SIGHUP and signal.getsignal(s) == signal.SIG_IGN)
                }
                try:
                    with open(run_dir / LOG_FILE, "ab") as log:

                        def tee(data: bytes) -> None:
                            log.write(data)
                            log.flush()
                            live.output(data)
                            tail.add(data)

                        code = stopper.pump(tee, live.message)
                finally:
                    stopper.end()
                    for s, handler in previous.items():
                        signal.signal(s, handler)
        finally:
            exit_code = exit_code_of(code) if code is not None else 1
            forwarded = stopper.received if stopper else []
            if forwarded:
                status = "interrupted"
                if code is not None and code <= 0:  # it stopped cleanly, or of the signal sent or the SIGKILL after it
                    exit_code = 128 + forwarded[0]
            else:
                status = "succeeded" if exit_code == 0 else "failed"
            summary = record(
                status=status,
                exit_code=exit_code,
                duration_s=round(time.monotonic() - handle.clock, 3),
                ended=datetime.now(timezone.utc).isoformat(),
                last_lines=tail.lines(),
                signals=[signal.Signals(s).name for s in forwarded],
            )
        return summary["exit_code"]

    def stop(self, run_dir: Path, record: Record, timeout_s: float = STOP_WAIT_S) -> int:
        """SIGTERM to the launcher that runs RUN_DIR's trainer (it stops the trainer's group and records the
        outcome), then wait (at most `timeout_s`) until summary.json records the end; print its status line (on
        stderr). Exit 0 once the run has ended (now or before), 1 when it still runs after the wait."""
        summary = _settled(run_dir, record)
        if summary.get("status") == "running":
            identity = summary.get("launcher")
            pid = identity.get("pid") if isinstance(identity, dict) else None
            if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:  # never 0 or -N: a process group
                raise ExecutorError(f"{run_dir} records no launcher to stop")
            if identity.get("host") != socket.gethostname():
                raise ExecutorError(f"{run_dir} runs on {identity.get('host')}: stop it there")
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:  # it ended meanwhile: recorded, or lost (below)
                pass
            except PermissionError as exc:
                raise ExecutorError(f"cannot signal the launcher of {run_dir} (pid {pid}): {exc.strerror}") from None
            deadline = time.monotonic() + timeout_s
            while (summary := _settled(run_dir, record)).get("status") == "running":
                if time.monotonic() > deadline:
                    print(
                        f"sapo-launch: {run_dir} is still running {timeout_s:.0f} s after SIGTERM to its launcher",
                        file=sys.stderr,
                    )
                    return 1
                time.sleep(TICK_S)
        print(_status_line(summary, run_dir), file=sys.stderr)
        return 0

    def logs(self, run_dir: Path, record: Record, terminal: BinaryIO) -> int:
        """Print train.log as it stands (a run whose launcher was lost is recorded so); exit 0."""
        _settled(run_dir, record)
        try:
            with open(Path(run_dir) / LOG_FILE, "rb") as log:
                while data := log.read(READ_BYTES):
                    terminal.write(data)
        except FileNotFoundError:  # nothing started
            pass
        terminal.flush()
        return 0

    def status(self, run_dir: Path, record: Record) -> int:
        return recorded_status(run_dir, record)

    def settle(self, run_dir: Path, record: Record) -> dict:
        return _settled(run_dir, record)


def _start_trainer(plan: Plan) -> subprocess.Popen:
    """The trainer in a new session (its own process group), output piped, with the launcher's death signal."""
    libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
    launcher = os.getpid()

    def in_child() -> None:  # between fork and exec: no imports, no locks
        for signum in TRAINER_DEFAULT_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, TRAINER_DEFAULT_SIGNALS)
        if libc is not None:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != launcher:  # the launcher died before the death signal was set
                os.kill(os.getpid(), signal.SIGKILL)

    return subprocess.Popen(
        list(plan.argv),
        cwd=plan.cwd,
        env={**os.environ, **plan.env_dict()},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=in_child,
    )


class _Stopper:
    """Follows the trainer's process group to its end: reads its output, forwards the launcher's stop signals,
    escalates to SIGKILL, and keeps a watchdog that ends the group should the launcher die (module docstring).
    The group is signalled by the trainer's pid, also once the trainer is reaped: Linux does not reuse a pid while
    it names a group with members, so the signal reaches what is left of that group or nobody."""

    __slots__ = (
        "_done",
        "_kill_at",
        "_killed_at",
        "_notices",
        "_watchdog",
        "_watchdog_pipe",
        "proc",
        "received",
        "tail",
    )

    def __init__(self, proc: subprocess.Popen, tail: LineTail):
        self.proc, self.tail = proc, tail
        self.received: list[int] = []
        self._notices: list[str] = []  # what the signal handler has to say, shown by `pump` (not from a handler)
        self._done = False
        self._kill_at: float | None = None  # when the group gets SIGKILL
        self._killed_at: float | None = None
        read_end, self._watchdog_pipe = os.pipe()
        try:
            self._watchdog = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", WATCHDOG, str(proc.pid), str(KILL_GRACE_S)],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:  # the trainer still dies with the launcher (Linux); its children may not
            self._watchdog = None
        finally:
            os.close(read_end)

    def on_signal(self, signum: int, _frame) -> None:
        self.received.append(signum)
        name = signal.Signals(signum).name
        if len(self.received) > 1:
            self._notices.append(f"{name}: killing the trainer's process group")
            self._kill()
        else:
            forwarded = signal.SIGTERM if signum == signal.SIGHUP else signum
            self._notices.append(
                f"{name}: stopping the trainer ({signal.Signals(forwarded).name} to its process group, SIGKILL "
                f"in {KILL_GRACE_S:.0f} s; again to kill it now)"
            )
            self._signal(forwarded)
            self._kill_at = time.monotonic() + KILL_GRACE_S

    def pump(self, sink, notify) -> int:
        """Pass the output to `sink` and the stop notices to `notify` until the trainer has exited and its output
        has ended and its group is gone, or the group was killed (module docstring); returns the trainer's return
        code."""
        fd = self.proc.stdout.fileno()
        output_ended = False
        while True:
            while self._notices:
                notify(self._notices.pop(0))
            now = time.monotonic()
            if self.proc.returncode is None and self.proc.poll() is not None:
                # The trainer has exited: what it left in its group goes too.
                if self._signal(signal.SIGTERM) and self._kill_at is None:
                    self._kill_at = now + KILL_GRACE_S
            if self._kill_at is not None and now >= self._kill_at and self._killed_at is None:
                self.tail.note(
                    f"sapo-launch: the trainer's process group was still running {KILL_GRACE_S:.0f} s "
                    "after SIGTERM: killed it"
                )
                self._kill()
            if self.proc.returncode is not None and (
                (output_ended and not self._signal(0)) or (self._killed_at is not None and now > self._killed_at + 1)
            ):  # output held outside the group
                self._done = True
                return self.proc.returncode
            if output_ended:
                time.sleep(TICK_S)
            elif select.select([fd], [], [], TICK_S)[0]:
                data = os.read(fd, READ_BYTES)
                if data:
                    sink(data)
                else:
                    output_ended = True

    def end(self) -> None:
        """Nothing of the group outlives the run, also when following it failed; then tell the watchdog."""
        if not self._done:
            self._kill()
            self.proc.wait()
        self.proc.stdout.close()
        with contextlib.suppress(OSError):
            os.write(self._watchdog_pipe, b"x")
        os.close(self._watchdog_pipe)
        if self._watchdog is not None:
            self._watchdog.wait()

    def _kill(self) -> None:
        self._killed_at = time.monotonic()
        self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> bool:
        """Signal the trainer's group; whether it still has members."""
        try:
            os.killpg(self.proc.pid, signum)
        except ProcessLookupError:
            return False
        except PermissionError:  # a member that changed its user: still there
            pass
        return True


def recorded_status(run_dir: Path, record: Record) -> int:
    """`sapo-launch status RUN_DIR` for a run on this machine (and one that never reached its cluster): print
    `<status> [step N] [exit N]`; exit 0 while it runs, its exit code once it ended, `EXIT_LOST` when its launcher
    ended without recording one (the run is then recorded `lost`, through `record`)."""
    summary = _settled(run_dir, record)
    print(_status_line(summary, run_dir))
    if summary.get("status") == "lost":
        return EXIT_LOST
    code = summary.get("exit_code")
    return 0 if summary.get("status") == "running" or code is None else code


def _settled(run_dir: Path, record: Record) -> dict:
    """summary.json, a run whose launcher ended without recording the outcome recorded `lost` (`settle_lost`)."""
    return settle_lost(Path(run_dir), lambda: last_step(Path(run_dir)), record)


def _status_line(summary: dict, run_dir: Path) -> str:
    state = summary.get("status", "unknown")
    step = summary.get("last_step") if state == "lost" else last_step(Path(run_dir))
    code = summary.get("exit_code")
    return " ".join(
        [state, *([f"step {step}"] if step is not None else []), *([f"exit {code}"] if code is not None else [])]
    )


def _follow_log(run_dir: Path, live: Live, record: Record) -> int:
    """Follow a run that another launcher runs here: train.log into `live` as it grows, until summary.json records
    that the run is no longer running (its launcher recorded the end, or was lost: then recorded here); then the
    rest of the log, and the run's exit code. The first SIGINT or SIGTERM stops following, not the run: exit
    128 + N, summary.json as it was."""
    received: list[int] = []
    previous = {s: signal.signal(s, lambda signum, _frame: received.append(signum)) for s in STOP_SIGNALS[:2]}
    position = 0

    def read_on() -> None:
        nonlocal position
        try:
            with open(run_dir / LOG_FILE, "rb") as log:
                log.seek(position)
                while data := log.read(READ_BYTES):
                    position += len(data)
                    live.output(data)
        except FileNotFoundError:  # not started yet, or nothing to show
            pass

    try:
        while True:
            read_on()  # before a lost run is recorded (and judged on what was read): its log grows no more
            summary = _settled(run_dir, record)
            read_on()  # and after: a launcher writes the last of the log before it records the end
            if summary.get("status") == "lost":
                return EXIT_LOST
            if summary.get("status") != "running":
                return summary.get("exit_code") or 0
            if received:
                live.message(f"stopped following {run_dir} (running); `sapo-launch status {run_dir}` tells how it ends")
                return 128 + received[0]
            time.sleep(TICK_S)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def last_step(run_dir: Path) -> int | None:
    """The last step a run directory's metrics.jsonl or train.log shows; None when none (or they cannot be read)."""
    files = [run_dir / name for name in (METRICS_FILE, LOG_FILE) if (run_dir / name).is_file()]
    try:
        return read_files(files, keep=lambda _: False).last_step
    except OSError:
        return None
