"""The Ray Jobs executor (`RayExecutor`, registered as `ray`): a plan run as a job on a Ray cluster, through its
Jobs API (`ray_client.py`: addresses, bounded requests, the client), submitted as `ray_submit.py` assembles and
checks it (entrypoint, runtime_env, metadata, resources, the working directory), the job's versions read by
`ray_probe.py`. Here: following the job, its log, its status, stopping it, and recording how it ended.

The job's log is followed into the run directory's train.log and the live view (`execution.py`: gates), and its
end recorded in summary.json whatever happens: the keys `local.py` writes (`pid` is None: the driver runs on the
cluster) plus `submission_id`, `address`, Ray's `job_status` and its `message`. `job.json` holds the address and
the submission id, so `logs`, `stop` and `status` find the job again from the run directory. Credentials in the
address (`http://me:pw@head:8265`) are redacted wherever it is written or printed; those commands then need
`--address` again. The run directory should be on storage the cluster's nodes share: verl's file logger opens the
plan's VERL_FILE_LOGGER_PATH (metrics.jsonl in the run directory) on whichever node runs the trainer, and fails
where that directory does not exist.

Exit codes follow local.py: SUCCEEDED 0; FAILED the driver's exit code (128 + N when signal N ended it), or 1
when Ray reports none (the runtime environment could not be set up); STOPPED 128 + N for the signal N that made
this launcher stop the job, else 130 (as for Ctrl-C). What prevents submitting or following at all (ray not
installed, no cluster at the address, a working directory over the limit or with a link out of it) raises
`RayJobError`: one line, exit 2.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import signal
import sys
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, NamedTuple

from sapo_toolkit.atomicio import write_atomically

from ..live import LineTail
from ..plan import REDACTED, Plan, redact_urls
from ..rundir import LOG_FILE, PLAN_FILE, SUMMARY_FILE, exit_code_of, read_summary, write_json
from .base import Described, Live, Options, Record
from .ray_client import RayJobError, connect, first_line, with_scheme
from .ray_submit import DEFAULT_PYTHON, JOB_FILE, JobRecord, job_request, shown_request, submit

SIGNALS = (signal.SIGINT, signal.SIGTERM)
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")  # Ray's job statuses once it has ended
STOP_WAIT_S = 60.0  # how long `stop` waits for Ray to report the job ended


class RayJob(NamedTuple):
    """A submitted job, the client that follows it, and whether the launcher's first SIGINT/SIGTERM stops the job
    (as for the run that submitted it) or only stops following (`attach`)."""

    client: object
    job: JobRecord
    stop_on_signal: bool = True


class RayExecutor:
    """Submit the plan as a Ray job (module docstring). Following it, the first SIGINT or SIGTERM stops the job
    and keeps following until Ray reports it STOPPED; a second one stops waiting. The log feeds the live view
    (and the gates: metrics from the console lines, or from metrics.jsonl when the run directory is on storage the
    cluster shares). `address` is the cluster's (for `status`, `logs`, `stop` and `attach`: over the one job.json
    records); `working_dir`, `excludes` and `python` go over the plan's (`rerun_of`: as a run directory recorded
    them)."""

    NAME = "ray"
    __slots__ = ("address", "excludes", "python", "secret_env", "working_dir")

    def __init__(
        self,
        address: str | None,
        *,
        working_dir: Path | None = None,
        excludes: Iterable[str] = (),
        python: str = DEFAULT_PYTHON,
        secret_env: Iterable[str] = (),
    ):
        self.address, self.working_dir = with_scheme(address), working_dir
        self.excludes, self.python, self.secret_env = tuple(excludes), python, tuple(secret_env)

    @classmethod
    def configured(cls, options: Options) -> RayExecutor:
        return cls(options.address, secret_env=options.secret_env)

    @classmethod
    def rerun_of(cls, run_dir: Path, options: Options, read_text: Callable[[Path], str]) -> RayExecutor:
        """The cluster RUN_DIR's job ran on, with the working directory (absolute: a relative one recorded is taken
        from the run's cwd), excludes and interpreter (the entrypoint's first word) job.json records; a run that
        never reached its cluster (no job.json) goes to the address its summary.json records. `options.address`
        goes over the recorded one (a run from this machine goes as `sapo-launch RECIPE --address URL` sends it)."""
        run_dir = Path(run_dir)
        recorded: dict = {}
        if (run_dir / JOB_FILE).exists():
            try:
                job = json.loads(read_text(run_dir / JOB_FILE))
                working_dir = job.get("working_dir")
                cwd = json.loads(read_text(run_dir / PLAN_FILE)).get("cwd") or "/"
                recorded = {
                    "address": job["address"],
                    "working_dir": Path(cwd, working_dir) if working_dir else None,
                    "excludes": tuple(job.get("excludes") or ()),
                    "python": shlex.split(job["entrypoint"])[0],
                }
            except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
                raise RayJobError(
                    f"{run_dir / JOB_FILE} does not say where the run ran ({type(exc).__name__}: {exc})"
                ) from None
        elif not options.address:
            try:
                recorded = {"address": json.loads(read_text(run_dir / SUMMARY_FILE)).get("address")}
            except (OSError, ValueError, AttributeError) as exc:
                raise RayJobError(f"{run_dir / SUMMARY_FILE} cannot be read: {exc}") from None
        address = recorded.pop("address", None)
        if options.address:
            address = options.address
        elif address and REDACTED in address:
            raise RayJobError(f"{run_dir}/{JOB_FILE} records {address}, its credentials redacted: pass --address")
        return cls(address, **recorded, secret_env=options.secret_env)

    def where(self) -> str:
        return f"on the Ray cluster at {redact_urls(self.address or '')}"

    def destination(self) -> str | None:
        return redact_urls(self.address) if self.address else None

    def describe(self, plan: Plan) -> Described:
        """What the Jobs API would be sent (`ray_submit.job_request`), secrets redacted."""
        request = shown_request(
            job_request(plan, self.python, working_dir=self.working_dir, excludes=self.excludes), self.secret_env
        )
        address = redact_urls(self.address)
        lines = [f"ray      {address}: what the Jobs API is sent"]
        for key, value in request.items():
            fields = value.items() if key == "runtime_env" else [(None, value)]
            lines.extend(
                f"  {key}{'.' + name if name else ''}  {item if isinstance(item, str) else json.dumps(item)}"
                for name, item in fields
            )
        return Described({"address": address, **request}, tuple(lines))

    def summary_fields(self) -> dict:
        return {"submission_id": None, "address": self.address and redact_urls(self.address)}

    def start(self, plan: Plan, run_dir: Path) -> tuple[RayJob, dict]:
        client = connect(self.address, run_dir=run_dir)
        submission_id = submit(
            client,
            plan,
            run_dir,
            self.address,
            working_dir=self.working_dir,
            excludes=self.excludes,
            python=self.python,
            secret_env=self.secret_env,
        )
        print(f"sapo-launch: submitted {submission_id} to {redact_urls(self.address)}", file=sys.stderr)
        return RayJob(client, JobRecord(self.address, submission_id)), {"submission_id": submission_id}

    def attach(self, run_dir: Path) -> RayJob:
        """The job a run directory submitted, to follow again (`sapo-launch logs --follow`, after `--detach` or a
        lost connection): its log from the start into train.log until the job ends, the outcome in summary.json,
        the job's exit code (unlike `ray job logs`, which exits 0 for a failed job); Ctrl-C stops following, not
        the job (that is `stop`), exit 130. `self.address` overrides the one job.json records (a tunnel, a moved
        dashboard)."""
        job = _job(run_dir, self.address)
        return RayJob(connect(job.address, run_dir=run_dir), job, stop_on_signal=False)

    def follow(self, handle: RayJob, run_dir: Path, live: Live, record: Record) -> int:
        return _attach(handle, run_dir, live, record)

    def stop(self, run_dir: Path, record: Record, timeout_s: float = STOP_WAIT_S) -> int:
        """Stop the job and wait (at most `timeout_s`) until Ray reports it ended; record the outcome. Exit 0 when
        the job has ended (now or before), 1 when it is still running after the wait."""
        job = _job(run_dir, self.address)
        client = connect(job.address, run_dir=run_dir)
        try:
            client.stop_job(job.submission_id)
        except Exception as exc:  # noqa: BLE001
            raise RayJobError(f"cannot stop job {job.submission_id} at {job.address}: {first_line(exc)}") from None
        deadline = time.monotonic() + timeout_s
        while not _status(client, job.submission_id).is_terminal():
            if time.monotonic() > deadline:
                print(
                    f"sapo-launch: {job.submission_id} is still running {timeout_s:.0f} s after the stop request",
                    file=sys.stderr,
                )
                return 1
            time.sleep(0.5)
        details = _details(client, job)
        print(f"{job.submission_id} {details.status}", file=sys.stderr)
        _complete(client, job, run_dir, details, record)
        return 0

    def logs(self, run_dir: Path, record: Record, terminal: BinaryIO) -> int:
        """Print what the job's log holds so far; exit 0 (and complete the run directory if the job has ended)."""
        job = _job(run_dir, self.address)
        client = connect(job.address, run_dir=run_dir)
        text = _logs(client, job)
        terminal.write(text.encode("utf-8", "replace"))
        _complete(client, job, run_dir, _details(client, job), record, text)
        return 0

    def status(self, run_dir: Path, record: Record) -> int:
        """Print `<submission id> <STATUS> <Ray's message>`. While the job is PENDING or RUNNING, exit 0; once it
        has ended, the exit code of the mapping in the module docstring, and the run directory is completed
        (train.log, summary.json) if a detached run left it open. A run that never reached its cluster (refused,
        failed before submitting: no job.json) has the status its summary.json records, as a run here prints it."""
        run_dir = Path(run_dir)
        if not (run_dir / JOB_FILE).exists() and (run_dir / SUMMARY_FILE).exists():
            from .local import recorded_status

            return recorded_status(run_dir, record)
        job = _job(run_dir, self.address)
        client = connect(job.address, run_dir=run_dir)
        details = _details(client, job)
        print(f"{job.submission_id} {details.status} {first_line(details.message)}".rstrip())
        return _complete(client, job, run_dir, details, record)


def _attach(ray_job: RayJob, run_dir: Path, live: Live, record: Record) -> int:
    """Follow the job's log (from its start) into train.log and `live` until it ends, then record the outcome
    (a follower that `attach` made: unless summary.json records that end already). With `stop_on_signal` the
    first SIGINT/SIGTERM stops the job; otherwise, and on a second signal, a signal only stops following (exit
    128 + N; the summary is left as it was unless the job has ended, and then the signals of a follower that did
    not stop it are not its outcome's)."""
    client, job = ray_job.client, ray_job.job
    tail = LineTail()
    with open(run_dir / LOG_FILE, "wb") as log:

        def tee(text: str) -> None:
            data = text.encode("utf-8", "replace")
            log.write(data)
            log.flush()
            live.output(data)
            tail.add(data)

        try:
            signals = asyncio.run(_follow(client, job.submission_id, tee, ray_job.stop_on_signal, live.message))
            details = _details(client, job)
        except RayJobError as exc:
            _record_lost(run_dir, job, exc)
            raise
    if not details.status.is_terminal():
        live.message(
            f"stopped following {job.submission_id} ({details.status}); "
            f"`sapo-launch status {run_dir}` tells how it ends"
        )
        if not ray_job.stop_on_signal:
            return 128 + signals[0]
    if not ray_job.stop_on_signal:
        summary = read_summary(run_dir)
        if summary.get("job_status") == str(details.status) and "gates" in summary:
            return summary["exit_code"]
    return _finish(run_dir, job, details, tail.lines(), signals if ray_job.stop_on_signal else (), record)


async def _follow(client, submission_id: str, sink, stop_on_signal: bool, notify) -> list[int]:
    """Stream the job's log to `sink` until the job is in a terminal state, the stop notice to `notify`; returns
    the signals received. The log stream is reopened (skipping what was already received) if it ends before the
    job does."""
    loop = asyncio.get_running_loop()
    following = asyncio.current_task()
    signals: list[int] = []
    stopping: list[asyncio.Future] = []

    def on_signal(signum: int) -> None:
        signals.append(signum)
        if stop_on_signal and len(signals) == 1:
            notify(f"{signal.Signals(signum).name}: stopping {submission_id} (again to stop waiting)")
            stopping.append(loop.run_in_executor(None, client.stop_job, submission_id))
        else:
            following.cancel()

    for signum in SIGNALS:
        loop.add_signal_handler(signum, on_signal, signum)
    received = 0
    try:
        while True:
            skip = received
            with contextlib.suppress(Exception):  # a dropped log stream is reopened while the job runs
                async for chunk in client.tail_job_logs(submission_id):
                    if skip >= len(chunk):
                        skip -= len(chunk)
                        continue
                    sink(chunk[skip:])
                    received += len(chunk) - skip
                    skip = 0
            status = await loop.run_in_executor(None, _status, client, submission_id)
            if status.is_terminal():
                break
            await asyncio.sleep(1)
    except asyncio.CancelledError:
        pass
    finally:
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)
        await asyncio.gather(*stopping, return_exceptions=True)
    return signals


def _status(client, submission_id: str):
    try:
        return client.get_job_status(submission_id)
    except Exception as exc:  # noqa: BLE001
        raise RayJobError(f"lost the Ray Jobs API while following {submission_id}: {first_line(exc)}") from None


def _details(client, job: JobRecord):
    try:
        return client.get_job_info(job.submission_id)
    except Exception as exc:  # noqa: BLE001
        raise RayJobError(f"cannot read job {job.submission_id} at {job.address}: {first_line(exc)}") from None


def _record_lost(run_dir: Path, job: JobRecord, exc: RayJobError) -> None:
    """The job was submitted but cannot be followed: it may still run, so the summary says `submitted`, unless it
    records the job's end already (following again an ended job)."""
    summary = read_summary(run_dir)
    if summary.get("job_status") in TERMINAL:
        return
    summary.update(
        status="submitted",
        exit_code=2,
        submission_id=job.submission_id,
        address=redact_urls(job.address),
        last_lines=[f"sapo-launch: {exc.message}"],
    )
    write_json(run_dir / SUMMARY_FILE, summary)


def exit_code(status: str, driver_exit_code: int | None, signals: Iterable[int] = ()) -> int | None:
    """The exit code for Ray's job status (module docstring); None while the job has not ended."""
    signals = tuple(signals)
    if status == "SUCCEEDED":
        return 0
    if status == "FAILED":
        if not driver_exit_code:
            return 1
        return exit_code_of(driver_exit_code)
    if status == "STOPPED":
        return 128 + (signals[0] if signals else signal.SIGINT)
    return None


def _finish(
    run_dir: Path, job: JobRecord, details, last_lines: list[str], signals: Iterable[int], record: Record
) -> int:
    """Record the job's outcome (`record`: with the gate verdicts) and return its exit code. `signals`: those that
    made this launcher stop the job; without any, those summary.json records (the launcher that stopped it, when
    another records the end). A job that has not ended here was left running on a second signal: it counts as
    interrupted by the first."""
    summary = read_summary(run_dir)
    signals = list(signals) or [signal.Signals[name] for name in summary.get("signals", [])]
    status = str(details.status)
    code = exit_code(status, getattr(details, "driver_exit_code", None), signals)
    summary = record(
        status={"SUCCEEDED": "succeeded", "FAILED": "failed"}.get(status, "interrupted"),
        exit_code=128 + signals[0] if code is None else code,
        job_status=status,
        message=first_line(details.message),
        submission_id=job.submission_id,
        address=redact_urls(job.address),
        pid=None,
        started=_when(details.start_time) or summary.get("started"),
        ended=_when(details.end_time) or datetime.now(timezone.utc).isoformat(),
        duration_s=_duration(details.start_time, details.end_time),
        last_lines=last_lines,
        signals=[signal.Signals(s).name for s in signals],
    )
    return summary["exit_code"]


def _when(epoch_ms: int | None) -> str | None:
    return datetime.fromtimestamp(epoch_ms / 1000, timezone.utc).isoformat() if epoch_ms else None


def _duration(start_ms: int | None, end_ms: int | None) -> float | None:
    if not start_ms:
        return None
    return round(((end_ms or time.time() * 1000) - start_ms) / 1000, 3)


def _job(run_dir: Path, address: str | None) -> JobRecord:
    """The job job.json records, at `address` when one is given."""
    job = JobRecord.read(Path(run_dir))
    if address:
        return job._replace(address=with_scheme(address))
    if REDACTED in job.address:
        raise RayJobError(f"{JOB_FILE} records {job.address}, its credentials redacted: pass --address with them")
    return job


def _logs(client, job: JobRecord) -> str:
    try:
        return client.get_job_logs(job.submission_id)
    except Exception as exc:  # noqa: BLE001
        raise RayJobError(f"cannot read the log of {job.submission_id} at {job.address}: {first_line(exc)}") from None


def _complete(client, job: JobRecord, run_dir: Path, details, record: Record, text: str | None = None) -> int:
    """Once the job has ended, write its whole log (`text`, else read) to train.log and its outcome to
    summary.json (`record`), unless they already record it (an attached launcher, an earlier `status`); returns
    the exit code, 0 while the job runs."""
    if not details.status.is_terminal():
        return 0
    summary = read_summary(run_dir)
    if summary.get("job_status") == str(details.status):
        return summary["exit_code"]
    data = (_logs(client, job) if text is None else text).encode("utf-8", "replace")
    write_atomically(run_dir / LOG_FILE, data)
    tail = LineTail()
    tail.add(data)
    return _finish(run_dir, job, details, tail.lines(), (), record)
