"""The Ray Jobs executor (`RayExecutor`, registered as `ray`): a plan run as a job on a Ray cluster, through its
Jobs API (`ray_client.py`: addresses, bounded requests, the client), submitted as `ray_submit.py` assembles and
checks it (entrypoint, runtime_env, metadata, resources, the working directory), the job's versions read by
`ray_probe.py`. Here: following the job, its log, its status, stopping it, and recording how it ended.

The job's log is followed into the run directory's train.log and the live view (`execution.py`: gates), and its
end recorded in summary.json whatever happens: the keys `local.py` writes (`pid` is None: the driver runs on the
cluster) plus `submission_id`, `address`, Ray's `job_status` and its `message`. `job.json` holds the address and
the submission id, so `logs`, `stop` and `status` find the job again from the run directory. Credentials in the
address (`http://me:pw@head:8265`) are redacted wherever it is written or printed; those commands then need
`--address` again. So for a dashboard's headers (`--headers`, $RAY_JOB_HEADERS): job.json records their names,
values redacted, and a later command takes them from its own --headers or $RAY_JOB_HEADERS, or stops with a hint;
the TLS verification (`--verify`) is recorded as given. The run directory should be on storage the cluster's
nodes share: verl's file logger opens the plan's VERL_FILE_LOGGER_PATH (metrics.jsonl in the run directory) on
whichever node runs the trainer, and fails where that directory does not exist.

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

from ..live import LineTail
from ..metrics import READ_CHUNK
from ..plan import REDACTED, Plan, redact_urls
from ..rundir import EXIT_LOST, LOG_FILE, PLAN_FILE, SUMMARY_FILE, exit_code_of, read_summary, write_json
from .base import Described, Live, Options, Record
from .local import last_step
from .ray_client import (
    JobUnknown,
    RayJobError,
    connect,
    first_line,
    recorded_connection,
    shown_headers,
    unknown_job,
    with_scheme,
)
from .ray_submit import DEFAULT_PYTHON, JOB_FILE, JobRecord, job_request, shown_request, submit

SIGNALS = (signal.SIGINT, signal.SIGTERM)
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")  # Ray's job statuses once it has ended
STOP_WAIT_S = 60.0  # how long `stop` waits for Ray to report the job ended
PENDING_POLL_S = 1.0  # how often a followed job that has not started is asked what it waits for
STREAM_TRIES = 2  # log streams in a row that fail before giving anything, while the job goes on: following fails
REASON_CHARS = 500  # of Ray's reason that the closing line quotes


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
    them). `headers` and `verify` go with every request to the dashboard (None: not given; for a recorded run, the
    ones job.json records)."""

    NAME = "ray"
    __slots__ = ("address", "excludes", "headers", "python", "secret_env", "verify", "working_dir")

    def __init__(
        self,
        address: str | None,
        *,
        working_dir: Path | None = None,
        excludes: Iterable[str] = (),
        python: str = DEFAULT_PYTHON,
        secret_env: Iterable[str] = (),
        headers: dict[str, str] | None = None,
        verify: bool | str | None = None,
    ):
        self.address, self.working_dir = with_scheme(address), working_dir
        self.excludes, self.python, self.secret_env = tuple(excludes), python, tuple(secret_env)
        self.headers, self.verify = headers, verify

    @classmethod
    def configured(cls, options: Options) -> RayExecutor:
        return cls(options.address, secret_env=options.secret_env, headers=options.headers, verify=options.verify)

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
                headers, verify = job.get("headers"), job.get("verify", True)
                recorded["headers"], recorded["verify"] = recorded_connection(
                    (dict(headers) if headers else None, verify if isinstance(verify, (bool, str)) else True),
                    (options.headers, options.verify),
                    str(run_dir / JOB_FILE),
                )
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
        recorded.setdefault("headers", options.headers)
        recorded.setdefault("verify", options.verify)
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
        connection = {}
        if self.headers:
            connection["headers"] = shown_headers(self.headers)
            lines.append(f"  headers  {json.dumps(connection['headers'])} (with every request)")
        if self.verify is not None and self.verify is not True:
            connection["verify"] = self.verify
            lines.append(f"  verify  {json.dumps(self.verify)} (the dashboard's TLS certificate)")
        for key, value in request.items():
            fields = value.items() if key == "runtime_env" else [(None, value)]
            lines.extend(
                f"  {key}{'.' + name if name else ''}  {item if isinstance(item, str) else json.dumps(item)}"
                for name, item in fields
            )
        return Described({"address": address, **connection, **request}, tuple(lines))

    def summary_fields(self) -> dict:
        return {"submission_id": None, "address": self.address and redact_urls(self.address)}

    def start(self, plan: Plan, run_dir: Path) -> tuple[RayJob, dict]:
        client = connect(self.address, run_dir=run_dir, headers=self.headers, verify=self._verify())
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
        job = JobRecord(self.address, submission_id, self.headers, self._verify())
        return RayJob(client, job), {"submission_id": submission_id}

    def _verify(self) -> bool | str:
        """The TLS verification given, else Ray's default: verified against the system's certificate authorities."""
        return True if self.verify is None else self.verify

    def _job(self, run_dir: Path) -> JobRecord:
        """The job RUN_DIR's job.json records, at `self.address` when given, with the headers and verification of
        this command over the recorded ones (`recorded_connection`: a hint when recorded values are redacted)."""
        job = _job(run_dir, self.address)
        headers, verify = recorded_connection(
            (job.headers, job.verify), (self.headers, self.verify), str(Path(run_dir) / JOB_FILE)
        )
        return job._replace(headers=headers, verify=verify)

    def attach(self, run_dir: Path) -> RayJob:
        """The job a run directory submitted, to follow again (`sapo-launch logs --follow`, after `--detach` or a
        lost connection): its log from the start into train.log until the job ends, the outcome in summary.json,
        the job's exit code (unlike `ray job logs`, which exits 0 for a failed job); Ctrl-C stops following, not
        the job (that is `stop`), exit 130. `self.address` overrides the one job.json records (a tunnel, a moved
        dashboard)."""
        job = self._job(run_dir)
        return RayJob(_connect(job, run_dir), job, stop_on_signal=False)

    def follow(self, handle: RayJob, run_dir: Path, live: Live, record: Record) -> int:
        return _attach(handle, run_dir, live, record)

    def stop(self, run_dir: Path, record: Record, timeout_s: float = STOP_WAIT_S) -> int:
        """Stop the job and wait (at most `timeout_s`) until Ray reports it ended; record the outcome. Exit 0 when
        the job has ended (now or before), 1 when it has not after the wait (Ray stops no job that has not started:
        one still PENDING says so, with what it waits for), `EXIT_LOST` when the cluster no longer knows it."""
        job = self._job(run_dir)
        client = _connect(job, run_dir)
        try:
            details = _details(client, job)
            client.stop_job(job.submission_id)
        except JobUnknown as exc:
            return _forgotten(run_dir, job, exc, record)
        except Exception as exc:  # noqa: BLE001
            raise RayJobError(f"cannot stop job {job.submission_id} at {job.address}: {first_line(exc)}") from None
        deadline = time.monotonic() + timeout_s
        while not (details := _details(client, job)).status.is_terminal():
            if time.monotonic() > deadline:
                said = f"{_not_ended(job, details)} {timeout_s:.0f} s after the stop request"
                print(f"sapo-launch: {said}", file=sys.stderr)
                return 1
            time.sleep(0.5)
        print(f"{job.submission_id} {details.status}", file=sys.stderr)
        _complete(client, job, run_dir, details, record)
        return 0

    def logs(self, run_dir: Path, record: Record, terminal: BinaryIO) -> int:
        """Print what the job's log holds so far, streamed (never held whole); exit 0. A job that has ended gets its
        log into train.log and its outcome recorded in the same pass; one the cluster no longer knows prints the
        train.log the run directory kept."""
        job = self._job(run_dir)
        client = _connect(job, run_dir)
        try:
            _complete(client, job, run_dir, _details(client, job), record, shown=terminal)
        except JobUnknown as exc:
            _forgotten(run_dir, job, exc, record)
            _print_kept_log(run_dir, terminal)
        terminal.flush()
        return 0

    def status(self, run_dir: Path, record: Record) -> int:
        """Print `<submission id> <STATUS> <Ray's message>`. While the job is PENDING or RUNNING, exit 0; once it
        has ended, the exit code of the mapping in the module docstring, and the run directory is completed
        (train.log, summary.json) if a detached run left it open; `EXIT_LOST` (the run recorded `lost`, with the
        last step seen) when the cluster no longer knows a job whose end nobody recorded. A run that never reached
        its cluster (refused, failed before submitting: no job.json) has the status its summary.json records, as a
        run here prints it."""
        run_dir = Path(run_dir)
        if not (run_dir / JOB_FILE).exists() and (run_dir / SUMMARY_FILE).exists():
            from .local import recorded_status

            return recorded_status(run_dir, record)
        job = self._job(run_dir)
        client = _connect(job, run_dir)
        try:
            details = _details(client, job)
        except JobUnknown as exc:
            return _forgotten(run_dir, job, exc, record, say=print)
        print(f"{job.submission_id} {details.status} {first_line(details.message)}".rstrip())
        return _complete(client, job, run_dir, details, record)

    def settle(self, run_dir: Path, record: Record) -> dict:
        """Ask the cluster, as `status` does, and record an end summary.json does not hold yet; summary.json. A
        cluster that cannot be asked leaves it as it was (a note on stderr)."""
        run_dir = Path(run_dir)
        if (run_dir / JOB_FILE).exists() and read_summary(run_dir).get("status") in ("running", "submitted"):
            try:
                job = self._job(run_dir)
                client = _connect(job, run_dir)
                try:
                    _complete(client, job, run_dir, _details(client, job), record)
                except JobUnknown as exc:
                    _forgotten(run_dir, job, exc, record)
            except RayJobError as exc:
                print(f"sapo-launch: {exc.message}; the run directory as it was", file=sys.stderr)
        return read_summary(run_dir)


class _Log:
    """train.log, appended to and never truncated: a job's log arrives from its start whenever it is read, so the
    bytes train.log holds already (an earlier follower's; after a cluster restart the only copy) are skipped and
    only what lies beyond them is appended. Nothing read, nothing written: a stream that fails leaves the file as
    it was."""

    def __init__(self, path: Path):
        self.path, self.file = path, None
        try:
            self.held = path.stat().st_size
        except FileNotFoundError:
            self.held = 0

    def write(self, data: bytes) -> None:
        if self.held >= len(data):
            self.held -= len(data)
            return
        data, self.held = data[self.held :], 0
        if self.file is None:
            self.file = open(self.path, "ab")  # noqa: SIM115 - closed with the log
        self.file.write(data)
        self.file.flush()

    def __enter__(self) -> _Log:
        return self

    def __exit__(self, *_exc) -> None:
        if self.file is not None:
            self.file.close()


def _attach(ray_job: RayJob, run_dir: Path, live: Live, record: Record) -> int:
    """Follow the job's log (from its start) into train.log (`_Log`: appended beyond what it holds) and `live`
    until it ends, then record the outcome (a follower that `attach` made: unless summary.json records that end
    already). With `stop_on_signal` the first SIGINT/SIGTERM stops the job; otherwise, and on a second signal, a
    signal only stops following (exit 128 + N; the summary is left as it was unless the job has ended, and then the
    signals of a follower that did not stop it are not its outcome's). Ray stops no job before it starts: one left
    PENDING stays `submitted`. A job the cluster no longer knows is shown as recorded, or recorded `lost`."""
    client, job = ray_job.client, ray_job.job
    tail = LineTail()
    received = []
    with _Log(run_dir / LOG_FILE) as log:

        def tee(text: str) -> None:
            data = text.encode("utf-8", "replace")
            log.write(data)
            live.output(data)
            tail.add(data)
            received.append(len(data))

        try:
            signals = asyncio.run(_follow(client, job.submission_id, tee, ray_job.stop_on_signal, live.message))
            details = _details(client, job)
        except JobUnknown as exc:
            if not received:
                _print_kept_log(run_dir, live)
            return _forgotten(run_dir, job, exc, record, say=live.message)
        except RayJobError as exc:
            _record_lost(run_dir, job, exc)
            raise
    if not details.status.is_terminal():
        live.message(f"stopped following; {_not_ended(job, details)}: `sapo-launch status {run_dir}` tells how it ends")
        if str(details.status) == "PENDING" and ray_job.stop_on_signal:  # queued on: as a detached run
            _record_submitted(run_dir, job, _not_ended(job, details))
        if not ray_job.stop_on_signal or str(details.status) == "PENDING":
            return 128 + signals[0]
    if not ray_job.stop_on_signal:
        summary = read_summary(run_dir)
        if summary.get("job_status") == str(details.status) and "gates" in summary:
            return summary["exit_code"]
    return _finish(run_dir, job, details, tail, signals if ray_job.stop_on_signal else (), record)


async def _follow(client, submission_id: str, sink, stop_on_signal: bool, notify) -> list[int]:
    """Stream the job's log to `sink` until the job is in a terminal state, the stop notice and what a job that has
    not started waits for (`_say_pending`) to `notify`; returns the signals received. The log stream is reopened
    (skipping what was already received) if it ends before the job does; `STREAM_TRIES` streams in a row that fail
    before giving anything raise `RayJobError` (`JobUnknown` at once)."""
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
    pending = asyncio.ensure_future(_say_pending(client, submission_id, notify))
    received, failed = 0, 0
    try:
        while True:
            skip, before, error = received, received, None
            try:
                async for chunk in client.tail_job_logs(submission_id):
                    if skip >= len(chunk):
                        skip -= len(chunk)
                        continue
                    sink(chunk[skip:])
                    received += len(chunk) - skip
                    skip = 0
            except Exception as exc:  # noqa: BLE001 - a dropped log stream is reopened while the job runs
                if unknown_job(exc):
                    raise JobUnknown(f"the Ray cluster no longer knows job {submission_id}") from None
                error = exc
            status = await loop.run_in_executor(None, _status, client, submission_id)
            if status.is_terminal():
                break
            failed = failed + 1 if error is not None and received == before else 0
            if failed >= STREAM_TRIES:
                raise RayJobError(f"cannot stream the log of {submission_id}: {first_line(error)}")
            await asyncio.sleep(1)
    except asyncio.CancelledError:
        pass
    finally:
        pending.cancel()
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)
        await asyncio.gather(pending, *stopping, return_exceptions=True)
    return signals


async def _say_pending(client, submission_id: str, notify) -> None:
    """While the job has not started, say so, with what its entrypoint asks for and Ray's message (what it waits
    for: resources, the runtime environment), each change once. Errors end it quietly: following reports them."""
    loop = asyncio.get_running_loop()
    said = None
    with contextlib.suppress(Exception):
        while True:
            details = await loop.run_in_executor(None, client.get_job_info, submission_id)
            if str(details.status) != "PENDING":
                return
            text = f"{submission_id} PENDING{_asks(details)}: {first_line(details.message)}"
            if text != said:
                notify(text)
                said = text
            await asyncio.sleep(PENDING_POLL_S)


def _asks(details) -> str:
    """What the job's entrypoint asks of a node, as ` (its entrypoint asks 4 CPU, 1 GPU)`; empty when nothing."""
    asked = [
        f"{amount:g} {name}"
        for name, amount in (
            ("CPU", getattr(details, "entrypoint_num_cpus", None)),
            ("GPU", getattr(details, "entrypoint_num_gpus", None)),
            ("bytes of memory", getattr(details, "entrypoint_memory", None)),
            *(dict(getattr(details, "entrypoint_resources", None) or {}).items()),
        )
        if amount
    ]
    return f" (its entrypoint asks {', '.join(asked)})" if asked else ""


def _not_ended(job: JobRecord, details) -> str:
    """A job that has not ended, in words: still running, or still PENDING with what it waits for."""
    if str(details.status) == "PENDING":
        return (
            f"{job.submission_id} is still PENDING{_asks(details)}, which Ray does not stop before it starts: "
            f"{first_line(details.message)}"
        )
    return f"{job.submission_id} is still {details.status}"


def _status(client, submission_id: str):
    try:
        return client.get_job_status(submission_id)
    except Exception as exc:  # noqa: BLE001
        if unknown_job(exc):
            raise JobUnknown(f"the Ray cluster no longer knows job {submission_id}") from None
        raise RayJobError(f"lost the Ray Jobs API while following {submission_id}: {first_line(exc)}") from None


def _details(client, job: JobRecord):
    try:
        return client.get_job_info(job.submission_id)
    except Exception as exc:  # noqa: BLE001
        if unknown_job(exc):
            raise JobUnknown(f"the Ray cluster at {job.address} no longer knows job {job.submission_id}") from None
        raise RayJobError(f"cannot read job {job.submission_id} at {job.address}: {first_line(exc)}") from None


def _forgotten(run_dir: Path, job: JobRecord, exc: JobUnknown, record: Record, say=None) -> int:
    """A job the cluster no longer knows (a restarted head forgets its jobs): an end summary.json records stands,
    with train.log as kept; otherwise the run is recorded `lost` with the last step its files show. Says so
    through `say` (`print`, the live view's message); returns the recorded exit code, or `EXIT_LOST`."""
    summary = read_summary(run_dir)
    if summary.get("job_status") in TERMINAL:
        if say is not None:
            say(f"{job.submission_id} {summary['job_status']} (as recorded: {exc.message})")
        return summary.get("exit_code") or 0
    step = last_step(run_dir)
    reason = f"{exc.message} (restarted?); the last step seen: {step if step is not None else 'none'}"
    record(status="lost", exit_code=None, last_step=step, reason=reason, pid=None)
    if say is not None:
        say(f"{job.submission_id} LOST: {reason}")
    return EXIT_LOST


def _print_kept_log(run_dir: Path, out) -> None:
    """train.log as the run directory kept it, to `out` (a terminal, or the live view)."""
    write = out.write if hasattr(out, "write") else out.output
    with contextlib.suppress(FileNotFoundError), open(run_dir / LOG_FILE, "rb") as log:
        while data := log.read(READ_CHUNK):
            write(data)


def _record_lost(run_dir: Path, job: JobRecord, exc: RayJobError) -> None:
    """The job was submitted but cannot be followed: it may still run, so the summary says `submitted`, unless it
    records the job's end already (following again an ended job)."""
    _record_submitted(run_dir, job, exc.message, exit_code=2)


def _record_submitted(run_dir: Path, job: JobRecord, why: str, exit_code: int = 0) -> None:
    """summary.json `submitted` (the job may still run: `status` finds it), saying `why` nobody follows it; unless
    it records an end already."""
    summary = read_summary(run_dir)
    if summary.get("job_status") in TERMINAL or summary.get("status") == "lost":
        return
    summary.update(
        status="submitted",
        exit_code=exit_code,
        submission_id=job.submission_id,
        address=redact_urls(job.address),
        last_lines=[f"sapo-launch: {why}"],
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


def _finish(run_dir: Path, job: JobRecord, details, tail: LineTail, signals: Iterable[int], record: Record) -> int:
    """Record the job's outcome (`record`: with the gate verdicts) and return its exit code. `signals`: those that
    made this launcher stop the job; without any, those summary.json records (the launcher that stopped it, when
    another records the end). A job that has not ended here was left running on a second signal: it counts as
    interrupted by the first. What Ray says of a job whose driver never ran (`_never_ran`) goes into train.log,
    `last_lines` and `reason`, which the closing line quotes."""
    summary = read_summary(run_dir)
    signals = list(signals) or [signal.Signals[name] for name in summary.get("signals", [])]
    status = str(details.status)
    code = exit_code(status, getattr(details, "driver_exit_code", None), signals)
    why = {}
    said = _never_ran(details)
    if said:
        data = "".join(f"sapo-launch: Ray: {line}\n" for line in said.splitlines()).encode("utf-8", "replace")
        with _Log(run_dir / LOG_FILE) as log:
            log.held = 0  # Ray's message is no part of the job's log: appended after it
            log.write(data)
        tail.add(data)
        why = {"reason": _reason(said)}
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
        last_lines=tail.lines(),
        signals=[signal.Signals(s).name for s in signals],
        **why,
    )
    return summary["exit_code"]


def _never_ran(details) -> str | None:
    """Ray's message for a job that ended before its driver ran (its runtime environment could not be set up, it was
    stopped while PENDING): the only account of why, since the job has no log. None for a job whose driver ran."""
    if str(details.status) not in ("FAILED", "STOPPED") or getattr(details, "driver_exit_code", None) is not None:
        return None
    return str(details.message or "").strip() or None


def _reason(message: str) -> str:
    """The line of Ray's message that says why: the last `ERROR` line (pip's, conda's), else its first line."""
    errors = [line.strip() for line in message.splitlines() if line.strip().startswith("ERROR")]
    line = errors[-1] if errors else first_line(message)
    return line if len(line) <= REASON_CHARS else line[:REASON_CHARS] + " [...]"


def _when(epoch_ms: int | None) -> str | None:
    return datetime.fromtimestamp(epoch_ms / 1000, timezone.utc).isoformat() if epoch_ms else None


def _duration(start_ms: int | None, end_ms: int | None) -> float | None:
    if not start_ms:
        return None
    return round(((end_ms or time.time() * 1000) - start_ms) / 1000, 3)


def _connect(job: JobRecord, run_dir: Path):
    """A client of the dashboard where `job` runs, with its headers and TLS verification."""
    return connect(job.address, run_dir=run_dir, headers=job.headers, verify=job.verify)


def _job(run_dir: Path, address: str | None) -> JobRecord:
    """The job job.json records, at `address` when one is given."""
    job = JobRecord.read(Path(run_dir))
    if address:
        return job._replace(address=with_scheme(address))
    if REDACTED in job.address:
        raise RayJobError(f"{JOB_FILE} records {job.address}, its credentials redacted: pass --address with them")
    return job


def _complete(client, job: JobRecord, run_dir: Path, details, record: Record, shown: BinaryIO | None = None) -> int:
    """Once the job has ended, stream its log into train.log (`_Log`) and record its outcome in summary.json
    (`record`), unless they already record it (an attached launcher, an earlier `status`); the log goes to `shown`
    too, when given, ended or not. Returns the exit code, 0 while the job runs."""
    summary = read_summary(run_dir)
    ended = details.status.is_terminal() and summary.get("job_status") != str(details.status)
    if not ended and shown is None:
        return summary.get("exit_code", 0) if details.status.is_terminal() else 0
    tail = LineTail()
    with _Log(run_dir / LOG_FILE) if ended else contextlib.nullcontext() as log:
        for text in _log_pieces(client, job):
            data = text.encode("utf-8", "replace")
            if shown is not None:
                shown.write(data)
            if ended:
                log.write(data)
                tail.add(data)
    if not ended:
        return summary.get("exit_code", 0) if details.status.is_terminal() else 0
    return _finish(run_dir, job, details, tail, (), record)


def _log_pieces(client, job: JobRecord):
    """The job's log so far, piece by piece (`stream_job_logs`: never held whole)."""
    try:
        yield from client.stream_job_logs(job.submission_id)
    except Exception as exc:  # noqa: BLE001
        if unknown_job(exc):
            raise JobUnknown(f"the Ray cluster at {job.address} no longer knows job {job.submission_id}") from None
        raise RayJobError(f"cannot read the log of {job.submission_id} at {job.address}: {first_line(exc)}") from None
