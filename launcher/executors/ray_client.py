"""The Ray executor's client of a cluster's Jobs API (the dashboard's address, `http://HEAD:8265`): which addresses
it takes, how long a request may wait, the job client itself, the cluster's nodes, and errors in one line.

The address is the Jobs API's, `http://` added where it has none; what verl users give `ray.init` (`auto`, a
`ray://` address, the GCS or Ray Client server port) is refused (`jobs_address`), and Ray's clients are kept from
taking $RAY_ADDRESS over it. Every request waits at most $SAPO_LAUNCH_RAY_TIMEOUT seconds (30) for an answer
(`connect`), an upload excepted; the log stream's handshake is bounded by aiohttp's own 5 minutes. Credentials in
the address (`http://me:pw@head:8265`) are redacted wherever it is written or printed (`plan.redact_urls`).

Ray is imported only when a client is made (`connect`, `cluster_nodes`): without it, one line says what to install.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from pathlib import Path
from urllib.parse import urlsplit

from ..plan import redact_urls
from . import ExecutorError
from .ray_probe import ProbeLine

TIMEOUT_ENV = "SAPO_LAUNCH_RAY_TIMEOUT"
DEFAULT_TIMEOUT_S = 30.0
# Ray's defaults for the ports that serve a cluster but not its Jobs API.
NOT_JOBS_PORTS = {6379: "the GCS port, ray.init's", 10001: "the Ray Client server port"}
RAY_ADDRESS_VARIABLES = ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS")


class RayJobError(ExecutorError):
    """A job cannot be submitted or followed; the message says why, in one line (the CLI exits 2), credentials in
    URLs redacted (an address's password, also where Ray's own message quotes the address)."""

    def __init__(self, message: str) -> None:
        super().__init__(redact_urls(message))


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

    class Client(JobSubmissionClient):
        def __init__(self, address: str, timeout_s: float, run_dir: Path | None):
            self.timeout_s, self.run_dir = timeout_s, run_dir
            super().__init__(address)

        def get_job_logs(self, job_id: str) -> str:
            return ProbeLine(self.run_dir).feed(super().get_job_logs(job_id), end=True)

        async def tail_job_logs(self, job_id: str):
            probe = ProbeLine(self.run_dir)
            async for chunk in super().tail_job_logs(job_id):
                text = probe.feed(chunk)
                if text:
                    yield text
            rest = probe.feed("", end=True)
            if rest:
                yield rest

        def _do_request(self, method, endpoint, **kwargs):
            if kwargs.get("data") is None:
                kwargs.setdefault("timeout", self.timeout_s)
            try:
                return super()._do_request(method, endpoint, **kwargs)
            except requests.exceptions.Timeout:
                raise TimeoutError(
                    f"no answer to {method} {endpoint} within {self.timeout_s:g} s ({TIMEOUT_ENV})"
                ) from None

    return Client


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
