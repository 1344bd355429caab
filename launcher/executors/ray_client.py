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

A dashboard behind authentication or TLS takes what `ray job submit` takes: `--headers` (a JSON object; else
$RAY_JOB_HEADERS, as Ray's CLI reads it: `parse_headers`) sent with every request, the nodes' listing and the
log's websocket included, and `--verify` (true, false, or a CA bundle file or directory: `parse_verify`). What is
recorded of the headers shows every value redacted but those of `PLAIN_HEADERS` (`shown_headers`); a later
command takes the values from its own --headers or $RAY_JOB_HEADERS (`recorded_connection`).

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

from ..plan import REDACTED, redact_urls
from . import RAY_ADDRESS_VARIABLES, ExecutorError
from .ray_probe import ProbeLine

TIMEOUT_ENV = "SAPO_LAUNCH_RAY_TIMEOUT"
DEFAULT_TIMEOUT_S = 30.0
# What `ray job submit` reads when --headers is not given (ray/dashboard/modules/job/cli.py, _handle_headers).
HEADERS_ENV = "RAY_JOB_HEADERS"
# Headers whose values job.json and the dry run show: none of them carries a credential. Every other header's value
# is redacted (Authorization, Cookie, X-API-Key, a proxy's own token header, whatever it is named).
PLAIN_HEADERS = frozenset(
    {"accept", "accept-encoding", "accept-language", "cache-control", "content-type", "user-agent", "x-request-id"}
)
HEADERS_EXAMPLE = '\'{"Authorization": "Bearer TOKEN"}\''
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


def parse_headers(text: str) -> dict[str, str]:
    """--headers (or $RAY_JOB_HEADERS) as `ray job submit` takes it: a JSON object of header names and values,
    each value a string (Ray passes whatever JSON holds; its HTTP library sends only text). `ValueError` says what
    is wrong, in one line that never quotes the text (it holds credentials)."""
    try:
        headers = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"not JSON ({exc.msg}, character {exc.pos}); expected an object such as {HEADERS_EXAMPLE}"
        ) from None
    except (ValueError, RecursionError):
        raise ValueError(f"not JSON; expected an object such as {HEADERS_EXAMPLE}") from None
    if not isinstance(headers, dict):
        raise ValueError(f"a JSON {_json_kind(headers)}, not an object such as {HEADERS_EXAMPLE}")
    for name, value in headers.items():
        if not name or any(c in name for c in ":\r\n\0 \t"):
            raise ValueError(f"{name!r} is not a header name")
        if not isinstance(value, str):
            raise ValueError(f"the value of header {name} is a JSON {_json_kind(value)}, not a string")
        if any(c in value for c in "\r\n\0"):
            raise ValueError(f"the value of header {name} holds a line break")
    return headers


def _json_kind(value) -> str:
    kinds = {list: "array", str: "string", bool: "boolean", type(None): "null", dict: "object"}
    return kinds.get(type(value), "number")


def parse_verify(text: str) -> bool | str:
    """--verify as `ray job submit` takes it: true or 1, false or 0 (in any case), else the path of a CA bundle file
    or of a directory of certificates; a path comes back absolute (it is recorded for later commands). `ValueError`
    for a path that does not exist."""
    if text.lower() == "true" or text == "1":
        return True
    if text.lower() == "false" or text == "0":
        return False
    path = Path(text).expanduser()
    if not path.exists():
        raise ValueError(f"{text}: neither true, false nor a CA bundle (a file or directory of certificates)")
    return str(path.resolve())


def shown_headers(headers: dict[str, str] | None) -> dict[str, str]:
    """`headers` as job.json and the dry run show them: every value redacted but those of `PLAIN_HEADERS`."""
    return {name: value if name.lower() in PLAIN_HEADERS else REDACTED for name, value in (headers or {}).items()}


def recorded_connection(
    recorded: tuple[dict[str, str] | None, bool | str],
    given: tuple[dict[str, str] | None, bool | str | None],
    where: str,
) -> tuple[dict[str, str] | None, bool | str]:
    """The headers and TLS verification a later command sends the dashboard of a recorded run: its own (`given`:
    --headers or $RAY_JOB_HEADERS replace the recorded headers whole; --verify the recorded verification; None where
    not given), else the `recorded` ones (job.json's). Recorded headers whose values were redacted cannot be sent:
    without headers of its own, the command stops with a one-line hint (`RayJobError`) naming them and `where`."""
    headers, verify = given
    if headers is None:
        headers = recorded[0] or None
        hidden = [name for name, value in (headers or {}).items() if value == REDACTED]
        if hidden:
            raise RayJobError(missing_headers(hidden, where))
    return headers, recorded[1] if verify is None else verify


def missing_headers(names: list[str], where: str) -> str:
    """The hint for recorded headers whose values are not recorded."""
    shown = ", ".join(names)
    given = json.dumps(dict.fromkeys(names, "..."))
    return (
        f"{where} records the dashboard's header{'s' if len(names) > 1 else ''} {shown} without "
        f"{'their values' if len(names) > 1 else 'its value'}: pass --headers '{given}' or set {HEADERS_ENV}"
    )


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


def connect(
    address: str | None,
    *,
    run_dir: Path | None = None,
    headers: dict[str, str] | None = None,
    verify: bool | str = True,
):
    """A Jobs API client for the dashboard at `address` (`_client_type`; it checks the connection and Ray's
    version), each request bounded by `request_timeout()`, each sent with `headers` and TLS verified as `verify`
    says (as Ray's `JobSubmissionClient(headers=..., verify=...)`). The job's log it reads holds no version probe line
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
    quiet_unverified(verify)
    try:
        with given_address_only():
            return client_type(address, timeout_s, run_dir, headers, verify)
    except Exception as exc:  # noqa: BLE001 - connection, authentication and address errors all read the same
        raise RayJobError(
            f"cannot reach the Ray Jobs API at {address}: {first_line(exc)}{connection_hint(exc, headers)}"
        ) from None


_UNVERIFIED = re.compile(r"certificate verify failed: ([^()'\"]*[^()'\" ])", re.IGNORECASE)


def connection_hint(exc: BaseException, headers: dict[str, str] | None) -> str:
    """What to pass when the dashboard's certificate could not be verified (the reason is in the exception's chain:
    Ray words a failed connection as `Failed to connect to Ray at address`) or it refused the request for want of
    credentials (HTTP 401 or 403, which Ray 2.60 words as its own token authentication's); "" otherwise."""
    chain, cause = [], exc
    while cause is not None and cause not in chain:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    for cause in chain:
        unverified = _UNVERIFIED.search(str(cause))
        if unverified or "CERTIFICATE_VERIFY_FAILED" in str(cause):
            why = unverified[1] if unverified else "certificate verify failed"
            return (
                f" (TLS: {why}; pass --verify CA_FILE, the certificate authority that signed the dashboard's "
                "certificate, or --verify false)"
            )
    text = str(exc)
    status = getattr(exc, "status", None) or getattr(getattr(exc, "response", None), "status_code", None)
    refused = status in (401, 403) or re.search(r"\b(401|403)\b|Authentication (required|failed)", text)
    if not refused:
        return ""
    if headers:
        return f" (the dashboard refused the headers given: {', '.join(headers)})"
    return f" (the dashboard asks for credentials: pass --headers {HEADERS_EXAMPLE} or set {HEADERS_ENV})"


def quiet_unverified(verify: bool | str) -> None:
    """With --verify false, urllib3 warns of every unverified request on stderr: the user asked for it once."""
    if verify is False:
        import warnings

        from urllib3.exceptions import InsecureRequestWarning  # requests brings urllib3

        warnings.filterwarnings("ignore", category=InsecureRequestWarning)


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
        def __init__(
            self, address: str, timeout_s: float, run_dir: Path | None, headers: dict | None, verify: bool | str
        ):
            self.timeout_s, self.run_dir = timeout_s, run_dir
            self.headers, self.verify = dict(headers) if headers else None, verify  # as given (Ray's may add more)
            super().__init__(address, headers=dict(headers) if headers else None, verify=verify)

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


def cluster_nodes(
    address: str, timeout_s: float, headers: dict[str, str] | None = None, verify: bool | str = True
) -> list[dict[str, float]]:
    """The total resources of each alive node of the cluster at `address` (Ray's state API, `GET /api/v0/nodes` on
    the same dashboard address, as `ray.util.state.list_nodes` asks it), sent with `headers` and TLS verified as
    `verify` says (`list_nodes` takes neither)."""
    from ray.dashboard.modules.dashboard_sdk import SubmissionClient
    from ray.util.state.api import StateApiClient
    from ray.util.state.common import ListApiOptions, StateResource

    class Nodes(StateApiClient):
        def __init__(self):  # StateApiClient's own takes no `verify`: its base's does
            SubmissionClient.__init__(self, address=address, headers=dict(headers or {}), verify=verify)

    quiet_ray_logging()
    quiet_unverified(verify)
    options = ListApiOptions(limit=10_000, timeout=math.ceil(timeout_s), filters=[("state", "=", "ALIVE")])
    try:
        with given_address_only():
            nodes = Nodes().list(StateResource.NODES, options=options, raise_on_missing_output=True)
    except Exception as exc:  # noqa: BLE001 - the state API's errors are as varied as the client's
        raise RayJobError(
            f"cannot list the nodes of the Ray cluster at {address}: {first_line(exc)}{connection_hint(exc, headers)}"
        ) from None
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
