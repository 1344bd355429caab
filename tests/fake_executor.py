"""A fake executor for the executor contract (tests/test_executor_contract.py), added as any executor is: this one
file and one registry line, `executors.register(NAME, TARGET)`.

Its "cluster" is a file in the run directory, fake_job.json: when the job started, the stand-in trainer's settings
from the plan's environment (FAKE_STEPS, FAKE_SLEEP, FAKE_EXIT_CODE, as tests/fake_trainer.py reads them) and when
it was stopped. The job's log and status follow from the clock, as a remote job's do for whoever asks: step k is
printed FAKE_SLEEP * k seconds after the start; the job ends after its last step (SUCCEEDED, or FAILED with
FAKE_EXIT_CODE), or when stopped (STOPPED: exit 130). No process runs, and nothing here knows of another process: the
launcher that started the job, `status`, `logs`, `stop` and followers each read the file.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from pathlib import Path
from typing import NamedTuple

from sapo_toolkit.atomicio import write_atomically
from sapo_toolkit.launcher.executors import Described, ExecutorError, Options
from sapo_toolkit.launcher.live import LineTail
from sapo_toolkit.launcher.rundir import LOG_FILE, read_summary

NAME = "fake"
TARGET = "tests.fake_executor:FakeExecutor"
JOB_FILE = "fake_job.json"
POLL_S = 0.05
EXIT_STOPPED = 130


class FakeJob(NamedTuple):
    started: float  # time.time()
    steps: int
    sleep: float
    exit_code: int
    stopped: float | None = None

    @classmethod
    def read(cls, run_dir: Path) -> FakeJob:
        try:
            return cls(**json.loads((Path(run_dir) / JOB_FILE).read_text()))
        except (OSError, ValueError, TypeError) as exc:
            raise ExecutorError(f"{run_dir} holds no fake job ({JOB_FILE}: {exc})") from None

    def write(self, run_dir: Path) -> None:
        write_atomically(Path(run_dir) / JOB_FILE, json.dumps(self._asdict()))

    def done(self, now: float) -> int:
        """The steps printed by `now`."""
        until = min(now, self.stopped if self.stopped is not None else math.inf)
        if self.sleep <= 0:
            return self.steps
        return max(0, min(self.steps, math.floor((until - self.started) / self.sleep + 1e-9)))

    def status(self, now: float) -> str:
        end = self.started + self.steps * self.sleep
        if self.stopped is not None and self.stopped < end:
            return "STOPPED"
        if now < end:
            return "RUNNING"
        return "SUCCEEDED" if self.exit_code == 0 else "FAILED"

    def log(self, now: float) -> str:
        return "".join(
            f"step:{k} - perf/throughput:{100.0 + k} - critic/rewards/mean:{0.1 * k}\n"
            for k in range(1, self.done(now) + 1)
        )

    def code(self, status: str) -> int | None:
        return {"SUCCEEDED": 0, "FAILED": self.exit_code, "STOPPED": EXIT_STOPPED}.get(status)


class FakeHandle(NamedTuple):
    run_dir: Path
    owner: bool  # the launcher that started it: it writes train.log as the job prints


class FakeExecutor:
    NAME = NAME

    @classmethod
    def configured(cls, options: Options) -> FakeExecutor:
        return cls()

    @classmethod
    def rerun_of(cls, run_dir: Path, options: Options, read_text) -> FakeExecutor:
        return cls()

    def where(self) -> str:
        return "on the fake cluster"

    def destination(self) -> str | None:
        return None

    def describe(self, plan) -> Described:
        steps = int(plan.env_dict().get("FAKE_STEPS", "3"))
        return Described({"steps": steps}, (f"fake     {steps} steps",))

    def summary_fields(self) -> dict:
        return {"job": None}

    def start(self, plan, run_dir: Path) -> tuple[FakeHandle, dict]:
        env = plan.env_dict()
        FakeJob(
            time.time(),
            int(env.get("FAKE_STEPS", "3")),
            float(env.get("FAKE_SLEEP", "0")),
            int(env.get("FAKE_EXIT_CODE", "0")),
        ).write(run_dir)
        return FakeHandle(Path(run_dir), owner=True), {"job": f"fake-{Path(run_dir).name}"}

    def attach(self, run_dir: Path) -> FakeHandle:
        FakeJob.read(run_dir)
        return FakeHandle(Path(run_dir), owner=False)

    def follow(self, handle: FakeHandle, run_dir: Path, live, record) -> int:
        sent = 0
        log_file = open(run_dir / LOG_FILE, "a", encoding="utf-8") if handle.owner else contextlib.nullcontext()
        with log_file as log:
            while True:
                job, now = FakeJob.read(run_dir), time.time()
                text, status = job.log(now), job.status(now)
                if text[sent:]:
                    if handle.owner:
                        log.write(text[sent:])
                        log.flush()
                    live.output(text[sent:].encode())
                    sent = len(text)
                if status != "RUNNING":
                    break
                time.sleep(POLL_S)
        summary = read_summary(run_dir)
        if not handle.owner and summary.get("job_status") == status and "gates" in summary:
            return summary["exit_code"]
        return _finish(run_dir, job, status, text, record)

    def stop(self, run_dir: Path, record) -> int:
        job = FakeJob.read(run_dir)
        if job.status(time.time()) == "RUNNING":
            job._replace(stopped=time.time()).write(run_dir)
        status = FakeJob.read(run_dir).status(time.time())
        print(f"fake {status}", file=sys.stderr)
        _complete(run_dir, record)
        return 0

    def logs(self, run_dir: Path, record, terminal) -> int:
        terminal.write(FakeJob.read(run_dir).log(time.time()).encode())
        _complete(run_dir, record)
        return 0

    def status(self, run_dir: Path, record) -> int:
        print(f"fake {FakeJob.read(run_dir).status(time.time())}")
        return _complete(run_dir, record)

    def settle(self, run_dir: Path, record) -> dict:
        _complete(run_dir, record)
        return read_summary(run_dir)


def _complete(run_dir: Path, record) -> int:
    """Record an ended job nobody recorded (train.log then holds its whole log); its exit code, 0 while it runs."""
    job, now = FakeJob.read(run_dir), time.time()
    status = job.status(now)
    if status == "RUNNING":
        return 0
    summary = read_summary(run_dir)
    if summary.get("job_status") == status:
        return summary["exit_code"]
    text = job.log(now)
    write_atomically(run_dir / LOG_FILE, text)
    return _finish(run_dir, job, status, text, record)


def _finish(run_dir: Path, job: FakeJob, status: str, text: str, record) -> int:
    tail = LineTail()
    tail.add(text.encode())
    return record(
        status={"SUCCEEDED": "succeeded", "FAILED": "failed"}.get(status, "interrupted"),
        exit_code=job.code(status),
        job_status=status,
        last_lines=tail.lines(),
        signals=[],
    )["exit_code"]
