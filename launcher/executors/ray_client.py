"""The Ray executor's client of a cluster's Jobs API (the dashboard's address, `http://HEAD:8265`): which addresses
it takes, how long a request may wait, the job client itself, the cluster's nodes, and errors in one line.

The address is the Jobs API's, `http://` added where it has none; what verl users give `ray.init` (`auto`, a
`ray://` address, the GCS or Ray Client server port) is refused (`jobs_address`), and Ray's clients are kept from
taking $RAY_ADDRESS over it. Every request waits at most $SAPO_LAUNCH_RAY_TIMEOUT seconds (30) for an answer
(`connect`), an upload excepted. The job's log is read as a stream, never whole: its streamed follow
(`tail_job_logs`, a websocket) has its handshake bounded by the same timeout and a heartbeat of that period, so a
dashboard that stops answering ends the stream within about twice the timeout, however quiet the job; what the
log holds so far (`stream_job_logs`, Ray's `GET /api/jobs/ID/logs` read as it arrives) has each read bounded.
A job the cluster does not know (a restart forgot it) raises `JobUnknown`. Credentials in
the address (`http://me:pw@head:8265`) are redacted wherever it is written or printed (`plan.redact_urls`).

Ray is imported only when a client is made (`connect`, `cluster_nodes`): without it, one line says what to install.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from ..plan import redact_urls
from . import RAY_ADDRESS_VARIABLES, ExecutorError
from .ray_probe import ProbeLine

TIMEOUT_ENV = "SAPO_LAUNCH_RAY_TIMEOUT"
DEFAULT_TIMEOUT_S = 30.0
# Ray's defaults for the ports that serve a cluster but not its Jobs API.
NOT_JOBS_PORTS = {6379: "the GCS port, ray.init's", 10001: "the Ray Client server port"}
STREAM_READ = 64 * 1024  # bytes of a streamed log read at a time


class RayJobError(ExecutorError):
    """A job cannot be submitted or followed; the message says why, in one line (the CLI exits 2), credentials in
    URLs redacted (an address's password, also where Ray's own message quotes the address)."""

    def __init__(self, message: str) -> None:
        super().__init__(redact_urls(message))


class JobUnknown(RayJobError):
    """The cluster answers but has no job of that submission id (HTTP 404): a restarted head forgets its jobs."""


def unknown_job(exc: BaseException) -> bool:
    """Whether Ray's error says the job does not exist (its client's `RuntimeError` or the websocket's handshake
    error carry the dashboard's HTTP 404)."""
    return getattr(exc, "status", None) == 404 or "status code 404" in str(exc)


def with_scheme(address: str | None) -> str | None:
    """An address as Ray reads it: `head:8265` is `http://head:8265`. Explicit here so that credentials in one
    without a scheme (`me:pw@head:8265`) read as a URL's and are redacted wherever the address is written."""
    return f"http://{address}" if address and "://" not in address else address


def not_jobs_api(address: str) -> str | None:
    """Why `address` cannot be a Jobs API (dashboard) URL, as far as the text tells; None when it can be. What verl
    users give `ray.init` is refused: `auto`, a Ray Client `ray://` address, the GCS or Ray Client server port."""
    text = address.strip()
    if text == "auto":
        return "`auto` finds a running cluster for ray.init"
    if text.lower().startswith("ray://"):
        return "ray:// is a Ray Client address"
    try:
        port = urlsplit(with_scheme(text)).port
    except ValueError as exc:
        return f"not a URL ({exc})"
    return f"port {port} is {NOT_JOBS_PORTS[port]}" if port in NOT_JOBS_PORTS else None


def jobs_address(address: str) -> str:
    """`address` as the Jobs API URL Ray's client is given (`http://` added where it has no scheme); raises
    `RayJobError` when it cannot be one (`not_jobs_api`)."""
    why = not_jobs_api(address)
    if why:
        raise RayJobError(
            f"{shown_address(address)} is not a Jobs API address ({why}): pass the dashboard's URL, http://HEAD:8265"
        )
    return with_scheme(address.strip())


def shown_address(address: str) -> str:
    """`address` as written, its credentials redacted also where it has no scheme (`me:pw@head:6379`)."""
    return redact_urls(address) if "://" in address else redact_urls(f"http://{address}").removeprefix("http://")


def request_timeout(environ=os.environ) -> float:
    """How long one request to the Jobs API may go unanswered: $SAPO_LAUNCH_RAY_TIMEOUT seconds, default 30."""
    text = environ.get(TIMEOUT_ENV)
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (0 < seconds < math.inf):
        raise RayJobError(f"{TIMEOUT_ENV}={text}: not a number of seconds above 0")
    return seconds


def connect(address: str | None, *, run_dir: Path | None = None):
    """A Jobs API client for the dashboard at `address` (`_client_type`; it checks the connection and Ray's
    version), each request bounded by `request_timeout()`. The job's log it reads holds no version probe line
    (`ProbeLine`); with `run_dir`, what the line says goes into that run directory's environment.json."""
    if not address:
        raise RayJobError("no Ray cluster address: pass --address http://HEAD:8265 or set RAY_ADDRESS")
    address = jobs_address(address)
    timeout_s = request_timeout()
    try:
        client_type = _client_type()
    except ImportError:
        from sapo_toolkit.linter.core.extras import install_command

        raise RayJobError(f"running on a Ray cluster needs Ray's job client: {install_command('ray')}") from None
    try:
        with given_address_only():
            return client_type(address, timeout_s, run_dir)
    except Exception as exc:  # noqa: BLE001 - connection, authentication and address errors all read the same
        raise RayJobError(f"cannot reach the Ray Jobs API at {address}: {first_line(exc)}") from None


@functools.cache
def _client_type():
    """Ray's `JobSubmissionClient`, with a bound on each request: Ray sends them without one, so a dashboard that
    accepts a connection and never answers would hang every call. An upload (a request with a body, up to
    `ray_submit.UPLOAD_LIMIT`) is not bounded: it takes what the link needs (the request before it, whether the
    package exists, is). A timeout raises `TimeoutError`, which the callers' messages quote. The job's log, whole or
    streamed, comes without the version probe's line (`ProbeLine`)."""
    import requests
    from ray.job_submission import JobSubmissionClient

    quiet_ray_logging()

    class Client(JobSubmissionClient):
        def __init__(self, address: str, timeout_s: float, run_dir: Path | None):
            self.timeout_s, self.run_dir = timeout_s, run_dir
            super().__init__(address)

        def stream_job_logs(self, job_id: str) -> Iterator[str]:
            """What the job's log holds so far, in pieces as they arrive: Ray answers `{"logs": "..."}` (JSON, ASCII
            only: `json.dumps` escapes the rest), decoded here as it streams (`LogsDecoder`)."""
            probe, decoder = ProbeLine(self.run_dir), LogsDecoder()
            response = self._do_request("GET", f"/api/jobs/{job_id}/logs", stream=True)
            with response:
                if response.status_code != 200:
                    self._raise_error(response)
                for data in response.iter_content(STREAM_READ):
                    text = probe.feed(decoder.feed(data))
                    if text:
                        yield text
            rest = probe.feed(decoder.end(), end=True)
            if rest:
                yield rest

        async def tail_job_logs(self, job_id: str):
            """Ray's own streamed follow (`JobSubmissionClient.tail_job_logs`), bounded: the handshake within the
            timeout, then a heartbeat every `timeout_s` that drops a connection whose other end stopped answering."""
            import aiohttp

            probe = ProbeLine(self.run_dir)
            async with aiohttp.ClientSession(cookies=self._cookies, headers=self._headers) as session:
                try:
                    ws = await asyncio.wait_for(
                        session.ws_connect(
                            f"{self._address}/api/jobs/{job_id}/logs/tail",
                            ssl=self._ssl_context,
                            heartbeat=self.timeout_s,
                        ),
                        self.timeout_s,
                    )
                except asyncio.TimeoutError:
                    raise TimeoutError(
                        f"no answer to the log stream of {job_id} within {self.timeout_s:g} s ({TIMEOUT_ENV})"
                    ) from None
                async with ws:
                    async for message in ws:
                        if message.type != aiohttp.WSMsgType.TEXT:
                            break
                        text = probe.feed(message.data)
                        if text:
                            yield text
                    if ws.close_code not in (None, aiohttp.WSCloseCode.OK):
                        raise ConnectionError(f"the log stream of {job_id} closed ({ws.close_code})")
            rest = probe.feed("", end=True)
            if rest:
                yield rest

        def _do_request(self, method, endpoint, **kwargs):
            if kwargs.get("data") is None:  # a stream's every read is bounded so too
                kwargs.setdefault("timeout", self.timeout_s)
            try:
                return super()._do_request(method, endpoint, **kwargs)
            except requests.exceptions.Timeout:
                raise TimeoutError(
                    f"no answer to {method} {endpoint} within {self.timeout_s:g} s ({TIMEOUT_ENV})"
                ) from None

    return Client


def quiet_ray_logging() -> None:
    """Keep Ray's INFO lines (`Uploading package gcs://...`, `Ignoring upload to cluster for these files`) off the
    user's terminal: the launcher says what it sends itself. Ray's `ray` logger has its own stderr handler, to which
    its modules' loggers (some set to INFO) propagate: the handler itself is raised to WARNING."""
    import logging

    ray_logger = logging.getLogger("ray")
    ray_logger.setLevel(logging.WARNING)
    for handler in ray_logger.handlers:
        handler.setLevel(logging.WARNING)


@contextlib.contextmanager
def given_address_only():
    """Ray's clients take $RAY_API_SERVER_ADDRESS or $RAY_ADDRESS over the address they are given
    (ray/dashboard/utils.py, get_address_for_submission_client): a RAY_ADDRESS set for verl's `ray.init`
    (`host:6379`) would send the job elsewhere, or wait 41 s for a GCS. They are unset while a client is made."""
    saved = {name: os.environ.pop(name) for name in RAY_ADDRESS_VARIABLES if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def cluster_nodes(address: str, timeout_s: float) -> list[dict[str, float]]:
    """The total resources of each alive node of the cluster at `address` (Ray's state API, `GET /api/v0/nodes` on
    the same dashboard address)."""
    from ray.util.state import list_nodes

    quiet_ray_logging()
    try:
        with given_address_only():
            nodes = list_nodes(
                address=address, filters=[("state", "=", "ALIVE")], limit=10_000, timeout=math.ceil(timeout_s)
            )
    except Exception as exc:  # noqa: BLE001 - the state API's errors are as varied as the client's
        raise RayJobError(f"cannot list the nodes of the Ray cluster at {address}: {first_line(exc)}") from None
    return [dict(node.resources_total or {}) for node in nodes]


def first_line(what: BaseException | str | None) -> str:
    """An error's (or Ray's message's) first line: Ray appends up to 20,000 characters of log to a FAILED job's
    message. Of a server-side traceback that Ray's client relays, the line before it and its last line."""
    lines = [line.strip() for line in str(what or "").splitlines() if line.strip()]
    if not lines:
        return type(what).__name__ if isinstance(what, BaseException) else ""
    traceback_start = "Traceback (most recent call last):"
    if len(lines) > 1 and lines[0].endswith(traceback_start):
        return f"{lines[0][: -len(traceback_start)]}{lines[-1]}"
    return lines[0]


_LOGS_OPENING = re.compile(r'"logs"\s*:\s*"')
_CLOSING_QUOTE = re.compile(r'(?<!\\)(?:\\\\)*"')  # a quote after an even run of backslashes: not escaped
_LONGEST_ESCAPE = 12  # a surrogate pair: \\ud83d\\ude00


class LogsDecoder:
    """The text of the `logs` string in Ray's `{"logs": "..."}` answer, decoded piece by piece as bytes arrive:
    memory stays one read's worth, whatever the log's size. Text after the string's closing quote is ignored."""

    __slots__ = ("done", "held", "started")

    def __init__(self) -> None:
        self.held, self.started, self.done = "", False, False

    def feed(self, data: bytes) -> str:
        if self.done:
            return ""
        text = self.held + data.decode("ascii", "replace")
        if not self.started:
            opening = _LOGS_OPENING.search(text)
            if opening is None:
                self.held = text[-64:]
                return ""
            self.started, text = True, text[opening.end() :]
        closing = _CLOSING_QUOTE.search(text)
        if closing is not None:
            self.done, self.held = True, ""
            return _decoded(text[: closing.end() - 1])
        cut = _cut(text)
        self.held = text[cut:]
        return _decoded(text[:cut])

    def end(self) -> str:
        """What is held when the answer ends without its closing quote (a cut connection): as far as it decodes."""
        held, self.held = self.held, ""
        return "" if self.done else _decoded(held[: _cut(held)])


def _cut(text: str) -> int:
    """Where JSON string text can be cut so that both sides decode: before an escape that may not be complete yet
    (a lone backslash, `\\u` and fewer than 4 digits, a high surrogate whose pair may follow)."""
    for start in range(max(0, len(text) - _LONGEST_ESCAPE + 1), len(text)):
        if text[start] != "\\" or not _escape_starts_at(text, start):
            continue
        rest = text[start:]
        surrogate = len(rest) >= 6 and rest[2] in "dD" and rest[3] in "89abAB"
        if len(rest) < 2 or (rest[1] == "u" and (len(rest) < 6 or (surrogate and len(rest) < _LONGEST_ESCAPE))):
            return start
    return len(text)


def _escape_starts_at(text: str, index: int) -> bool:
    """Whether the backslash at `index` begins an escape: an even run of backslashes stands before it."""
    run = 0
    while index - run > 0 and text[index - run - 1] == "\\":
        run += 1
    return run % 2 == 0


def _decoded(body: str) -> str:
    return json.loads(f'"{body}"') if body else ""
