"""The Ray Jobs executor: submit a plan to a Ray cluster through its Jobs API (the dashboard's address,
`http://HEAD:8265`), follow the job's log into the run directory's train.log and the run sequence's sink
(`execution.py`: live view, gates), and record the outcome in summary.json whatever happens: the keys `local.py`
writes (`pid` is None: the driver runs on the cluster) plus `submission_id`, `address`, Ray's `job_status` and its
`message`. `job.json` holds the address and the submission id, so `logs`, `stop` and `status` find the job again
from the run directory. Credentials in the address (`http://me:pw@head:8265`) are redacted wherever it is written or
printed (`plan.redact_urls`); those commands then need `--address` again.

What runs is the plan's argv with the launching machine's interpreter replaced by `python` (the first on the
cluster's PATH, where Ray and verl are installed; `python=` names another), shell-quoted once: Ray runs an
entrypoint through the shell. The job gets the plan's Ray options (`Plan.ray`: the recipe's `ray:` block under the
command line's; `job_request` assembles what `submit_job` is sent, and job.json records it, secrets redacted): its
runtime_env (pip, uv, conda, py_modules, excludes, working_dir, env_vars), the user's metadata beside the launcher's
(recipe, recipe_hash, variant, lint summary, run_dir), a submission id, the entrypoint's CPUs, GPUs and resources.
The plan's environment goes over the runtime_env's env_vars, secrets included, and Ray shows a job's runtime_env
to whoever can reach its dashboard. The plan's cwd is not used: the job runs in the working directory shipped with
it, else in the cluster's own. The run directory should be on storage the cluster's nodes share: verl's file logger
opens the plan's VERL_FILE_LOGGER_PATH (metrics.jsonl in the run directory) on whichever node runs the trainer, and
fails where that directory does not exist.

The job first runs a version probe (`job_entrypoint`): one line of the versions it sees (doctor's packages, from
package metadata), which the client takes out of the log (`ProbeLine`: not the trainer's output) and records in
environment.json under `cluster`; then the trainer replaces the shell. The probe sees the entrypoint's node only.

The address is the Jobs API's, `http://` added where it has none; what verl users give `ray.init` (`auto`, a
`ray://` address, the GCS or Ray Client server port) is refused (`jobs_address`), and Ray's clients are kept from
taking $RAY_ADDRESS over it. Every request waits at most $SAPO_LAUNCH_RAY_TIMEOUT seconds (30) for an answer
(`connect`), an upload excepted; the log stream's handshake is bounded by aiohttp's own 5 minutes.

Before submitting, two checks refuse what could not run:
- resources: the cluster's alive nodes (Ray's state API, `GET /api/v0/nodes` on the same dashboard address,
  https://docs.ray.io/en/latest/ray-observability/reference/doc/ray.util.state.list_nodes.html) must hold
  trainer.nnodes groups of trainer.n_gpus_per_node `GPU` (`NPU` for an npu plan: the resource name Ray gives Ascend
  devices, ray/_private/accelerators/npu.py). verl 0.9.1 asks Ray for one STRICT_PACK placement group per node
  (verl/single_controller/ray/base.py, RayResourcePool.get_placement_groups) and waits for it forever, so a
  group must fit on one node; refused: exit 1, summary `refused`, nothing submitted.
- each local directory Ray would upload (the working directory, a py_modules directory): what it ships is
  decided by Ray's own rules (launcher/workdir.py: .gitignore and .rayignore files, `excludes`, Ray's default
  excludes), and no link in it may lead out of it; it is staged in a temporary directory (which Ray zips and
  uploads) and zipped here the way Ray zips it; that zip, like a local package file, must be at most 100 MiB
  (`UPLOAD_LIMIT`).

Exit codes follow local.py: SUCCEEDED 0; FAILED the driver's exit code (128 + N when signal N ended it), or 1
when Ray reports none (the runtime environment could not be set up); STOPPED 128 + N for the signal N that made
this launcher stop the job, else 130 (as for Ctrl-C). What prevents submitting or following at all (ray not
installed, no cluster at the address, a working directory over the limit or with a link out of it) raises
`RayJobError`: one line, exit 2.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import math
import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, NamedTuple
from urllib.parse import urlsplit

from sapo_toolkit.atomicio import write_atomically

from ..live import LineTail
from ..plan import REDACTED, Plan, redact_keys, redact_urls
from ..rundir import (
    LOG_FILE,
    PLAN_FILE,
    SUMMARY_FILE,
    exit_code_of,
    read_json,
    read_summary,
    record_outcome,
    write_json,
)
from ..versions import PACKAGES
from ..workdir import HOW_TO_EXCLUDE, UnsafeWorkingDir, shipped_files
from . import ExecutorError, Refused

JOB_FILE = "job.json"
DEFAULT_PYTHON = "python"
# JobSubmissionClient PUTs the zipped working directory to the dashboard as one request body, and the dashboard's
# aiohttp app accepts at most 100 MiB: client_max_size in python/ray/dashboard/http_server_head.py (a literal in
# Ray 2.41, DASHBOARD_CLIENT_MAX_SIZE from python/ray/_private/ray_constants.py in 2.60); a larger one fails with
# HTTP 413 "Maximum request body size 104857600 exceeded" (measured with Ray 2.60). The 512 MiB
# GCS_STORAGE_MAX_SIZE of python/ray/_private/runtime_env/packaging.py binds only `ray.init` uploads, and the
# docs' figure has disagreed with the code (https://github.com/ray-project/ray/issues/55877).
UPLOAD_LIMIT = 100 * 1024 * 1024
ACCEPTS = "Ray's Jobs API accepts"
PROBE_MARKER = "sapo-launch:cluster "  # starts the version probe's line in a job's log
PROBE_ENV = "SAPO_LAUNCH_VERSION_PROBE"  # the job's variable that holds the probe's script
ENVIRONMENT_FILE = "environment.json"  # written by rundir.create; the probe's line adds `cluster`
SIGNALS = (signal.SIGINT, signal.SIGTERM)
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")  # Ray's job statuses once it has ended
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


class ClusterTooSmall(RayJobError, Refused):
    """The cluster cannot hold the plan (the run sequence turns this into exit 1 and summary status `refused`)."""


class JobRecord(NamedTuple):
    """`job.json`: where the job was submitted and under which id."""

    address: str
    submission_id: str

    @classmethod
    def read(cls, run_dir: Path) -> JobRecord:
        try:
            data = json.loads((run_dir / JOB_FILE).read_text(encoding="utf-8"))
            return cls(data["address"], data["submission_id"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RayJobError(f"{run_dir} holds no Ray job ({JOB_FILE}: {exc})") from None


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
        with _given_address_only():
            return client_type(address, timeout_s, run_dir)
    except Exception as exc:  # noqa: BLE001 - connection, authentication and address errors all read the same
        raise RayJobError(f"cannot reach the Ray Jobs API at {address}: {_first_line(exc)}") from None


@functools.cache
def _client_type():
    """Ray's `JobSubmissionClient`, with a bound on each request: Ray sends them without one, so a dashboard that
    accepts a connection and never answers would hang every call. An upload (a request with a body, up to
    `UPLOAD_LIMIT`) is not bounded: it takes what the link needs (the request before it, whether the package
    exists, is). A timeout raises `TimeoutError`, which the callers' messages quote. The job's log, whole or
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
def _given_address_only():
    """Ray's clients take $RAY_API_SERVER_ADDRESS or $RAY_ADDRESS over the address they are given
    (ray/dashboard/utils.py, get_address_for_submission_client): a RAY_ADDRESS set for verl's `ray.init`
    (`host:6379`) would send the job elsewhere, or wait 41 s for a GCS. They are unset while a client is made."""
    saved = {name: os.environ.pop(name) for name in RAY_ADDRESS_VARIABLES if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def entrypoint(plan: Plan, python: str = DEFAULT_PYTHON) -> str:
    """The plan's argv as one shell command, with `python` for the launching machine's interpreter."""
    return shlex.join((python, *plan.argv[1:]))


def version_probe() -> str:
    """A Python script that prints one line, `PROBE_MARKER` and then JSON: the versions of `versions.PACKAGES` as
    the job's python sees them, read from package metadata as doctor reads them (by the name normalized as pip
    does; nothing is imported), with that python's version and its host. sapo-toolkit is not installed on a
    cluster: the script travels in the job's environment (`PROBE_ENV`), which keeps the entrypoint Ray prints
    short."""
    return (
        'import importlib.metadata as m,json,platform,re,socket;n=lambda s:re.sub("[-_.]+","-",(s or "").lower());'
        'd={};[d.setdefault(n(x.metadata.get("Name")),x.version) for x in m.distributions()];'
        f'print({json.dumps(PROBE_MARKER)}+json.dumps({{"python":platform.python_version(),'
        f'"host":socket.gethostname(),"versions":{{k:d.get(n(k)) for k in {json.dumps(list(PACKAGES))}}}}}),flush=True)'
    )


def job_entrypoint(plan: Plan, python: str = DEFAULT_PYTHON) -> str:
    """What the job runs: the version probe, its errors dropped (the trainer starts whatever it does), then the
    trainer in the shell's place, so that its exit code and signals are the job's."""
    return f'{shlex.quote(python)} -c "${PROBE_ENV}" 2>/dev/null; exec {entrypoint(plan, python)}'


class ProbeLine:
    """Takes the version probe's line out of a job's log, where it is not the trainer's output, and records what it
    says in `run_dir`'s environment.json under `cluster` (the launching machine's versions stay under
    `versions`). Fed the log as it streams: a last, unfinished line that may be the probe's is held until it
    ends."""

    __slots__ = ("held", "run_dir")

    def __init__(self, run_dir: Path | None):
        self.run_dir, self.held = run_dir, ""

    def feed(self, text: str, *, end: bool = False) -> str:
        lines = (self.held + text).splitlines(keepends=True)
        self.held = ""
        if lines and not end and not lines[-1].endswith("\n"):
            last = lines[-1]
            if PROBE_MARKER.startswith(last) or last.startswith(PROBE_MARKER):
                self.held = lines.pop()
        kept = []
        for line in lines:
            if line.startswith(PROBE_MARKER):
                self._record(line[len(PROBE_MARKER) :])
            else:
                kept.append(line)
        return "".join(kept)

    def _record(self, text: str) -> None:
        if self.run_dir is None:
            return
        try:
            cluster = json.loads(text)
        except ValueError:
            return
        environment = read_json(self.run_dir / ENVIRONMENT_FILE)
        if environment.get("cluster") != cluster:
            environment["cluster"] = cluster
            write_json(self.run_dir / ENVIRONMENT_FILE, environment)


def metadata(plan: Plan) -> dict[str, str]:
    """What `ray job list` shows beside the job; Ray takes only string values."""
    lint = plan.lint.to_json()["summary"]
    return {
        "recipe": plan.name,
        "recipe_hash": plan.recipe_hash,
        "variant": plan.variant or "",
        "lint": ", ".join(f"{n} {severity}(s)" for severity, n in lint.items()),
        "run_dir": plan.run_dir,
    }


def resource_shortfall(plan: Plan, nodes: Iterable[dict[str, float]]) -> str | None:
    """Why alive nodes with these total resources cannot hold the plan's nnodes groups of devices_per_node
    devices, one group per node as verl places them; None when they can (or the plan does not say)."""
    if not plan.nnodes or not plan.devices_per_node:
        return None
    nodes = list(nodes)
    kind, other = ("NPU", "GPU") if plan.device == "npu" else ("GPU", "NPU")
    per_node, needed = plan.devices_per_node, plan.nnodes
    counts = sorted((int(resources.get(kind, 0)) for resources in nodes), reverse=True)
    shape = f"{needed} node{'s' if needed != 1 else ''} x {per_node}"
    if sum(counts) < needed * per_node:
        others = sum(int(resources.get(other, 0)) for resources in nodes)
        hint = f" (it has {others} {other}: pass --device {other.lower()})" if others else ""
        return f"the cluster has {sum(counts)} {kind}, the recipe needs {needed * per_node} ({shape}){hint}"
    if sum(c // per_node for c in counts) < needed:
        return (
            f"the cluster has {sum(counts)} {kind} but not {per_node} on each of {needed} node(s) (per node: "
            f"{', '.join(map(str, counts))}); the recipe needs {shape}, each node's share on one node"
        )
    return None


def cluster_nodes(address: str, timeout_s: float) -> list[dict[str, float]]:
    """The total resources of each alive node of the cluster at `address`."""
    from ray.util.state import list_nodes

    try:
        with _given_address_only():
            nodes = list_nodes(
                address=address, filters=[("state", "=", "ALIVE")], limit=10_000, timeout=math.ceil(timeout_s)
            )
    except Exception as exc:  # noqa: BLE001 - the state API's errors are as varied as the client's
        raise RayJobError(f"cannot list the nodes of the Ray cluster at {address}: {_first_line(exc)}") from None
    return [dict(node.resources_total or {}) for node in nodes]


def job_request(
    plan: Plan, python: str = DEFAULT_PYTHON, *, working_dir: Path | None = None, excludes: Iterable[str] = ()
) -> dict:
    """The keyword arguments of Ray's `submit_job` for the plan, local directories not yet staged (`stage`): the
    version probe, then the trainer's command in its place (`job_entrypoint`); the runtime_env of `plan.ray` with
    `working_dir` over its own, `excludes` after its own and the plan's environment (the recipe's `env:` always
    wins) and the version probe's script over its env_vars; the launcher's metadata with the user's (which may not
    set the launcher's keys); the submission id and the entrypoint's resources where given. Raises `RayJobError`
    for user metadata under a launcher's key."""
    options = plan.ray
    runtime_env = dict(options.runtime_env)
    if working_dir is not None:
        runtime_env["working_dir"] = str(working_dir)
    excludes = [*runtime_env.get("excludes", ()), *excludes]
    if excludes:
        runtime_env["excludes"] = excludes
    runtime_env["env_vars"] = {
        **{k: str(v) for k, v in runtime_env.get("env_vars", {}).items()},
        **plan.env_dict(),
        PROBE_ENV: version_probe(),
    }
    ours = metadata(plan)
    taken = sorted(set(options.metadata) & set(ours))
    if taken:
        raise RayJobError(f"metadata {', '.join(taken)}: sapo-launch sets it itself ({', '.join(ours)})")
    request = {
        "entrypoint": job_entrypoint(plan, python),
        "runtime_env": runtime_env,
        "metadata": {**options.metadata, **ours},
    }
    given = {
        "submission_id": options.submission_id,
        "entrypoint_num_cpus": options.entrypoint_num_cpus,
        "entrypoint_num_gpus": options.entrypoint_num_gpus,
        "entrypoint_resources": options.entrypoint_resources or None,
    }
    return {**request, **{key: value for key, value in given.items() if value is not None}}


def shown_request(request: dict, secret_env: Iterable[str] = ()) -> dict:
    """`request` as the dry run and job.json show it: the values of secret-named keys redacted at any depth
    (`plan.redact_keys`: env_vars, conda variables, metadata), and credentials in every URL (a pip requirement
    `git+https://me:token@host/...`, a variable's value)."""
    return _redact_urls_in(redact_keys(request, secret_env))


def _redact_urls_in(value):
    if isinstance(value, str):
        return redact_urls(value)
    if isinstance(value, dict):
        return {key: _redact_urls_in(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_urls_in(item) for item in value]
    return value


def stage(runtime_env: dict, runs_dir: Path, scratch: Path) -> dict:
    """`runtime_env` with each local directory that Ray would zip and upload (`working_dir`, a `py_modules` entry)
    replaced by a staged copy of what it ships (`stage_working_dir`, with the runtime_env's `excludes`; the runs
    directory never ships), and each local package file (a .zip or .whl) checked against `UPLOAD_LIMIT`. Remote URIs
    pass as they are."""
    staged = dict(runtime_env)
    excludes = list(runtime_env.get("excludes", ()))

    def local(value: str, label: str, where: Path, in_zip: bool) -> str:
        if "://" in value:
            return value
        path = Path(value)
        if path.is_dir():
            stage_working_dir(path, [*_inside(runs_dir, path.resolve()), *excludes], where, label=label, parent=in_zip)
            return str(where)
        if not path.is_file():
            raise RayJobError(f"{label} {path} does not exist")
        if path.stat().st_size > UPLOAD_LIMIT:
            raise RayJobError(f"{label} {path} is {_mib(path.stat().st_size)}, over the {_mib(UPLOAD_LIMIT)} {ACCEPTS}")
        return value

    if "working_dir" in runtime_env:
        staged["working_dir"] = local(runtime_env["working_dir"], "working directory", scratch / "working_dir", False)
    if "py_modules" in runtime_env:
        staged["py_modules"] = [
            local(module, "py_modules entry", scratch / f"py_modules-{i}" / Path(os.path.abspath(module)).name, True)
            for i, module in enumerate(runtime_env["py_modules"])
        ]
    return staged


def stage_working_dir(
    root: Path, excludes: Iterable[str], stage: Path, *, label: str = "working directory", parent: bool = False
) -> None:
    """Link (or copy) into `stage` what Ray ships from the directory `root` (`workdir.shipped_files`: by Ray's own
    rules; refused when a link leads out of `root`), and refuse it when its zip (with `root`'s name as its top
    folder with `parent`, as Ray zips a py_modules directory) would exceed `UPLOAD_LIMIT`. The stage, not `root`,
    goes to Ray: Ray zips exactly these files (its rules applied again to them exclude nothing more), so the zip
    measured here is what is uploaded. (Giving Ray this zip would save zipping twice, but the job client of Ray
    2.41, the oldest that verl 0.9.1 accepts, uploads a zip file only through a connected driver, not over HTTP;
    2.60's does.)"""
    try:
        files = shipped_files(root, excludes, label=label)
    except UnsafeWorkingDir as exc:
        raise RayJobError(str(exc)) from None
    stage.mkdir(parents=True, exist_ok=True)
    for rel in files:
        (stage / rel).parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(root / rel, stage / rel)
        except OSError:  # another file system
            shutil.copy2(root / rel, stage / rel)
    with tempfile.TemporaryFile() as measured:
        # As Ray's packaging zips a directory (ray/_private/runtime_env/packaging.py, _zip_files).
        with zipfile.ZipFile(measured, "w", zipfile.ZIP_DEFLATED) as archive:
            for rel in files:
                archive.write(stage / rel, f"{stage.name}/{rel}" if parent else rel)
        size = measured.tell()
    if size > UPLOAD_LIMIT:
        by_top: dict[str, int] = {}
        for rel in files:
            top = rel.split("/", 1)[0]
            by_top[top] = by_top.get(top, 0) + (root / rel).stat().st_size
        largest = sorted(by_top.items(), key=lambda item: -item[1])[:3]
        raise RayJobError(
            f"{label} {root} zips to {_mib(size)}, over the {_mib(UPLOAD_LIMIT)} {ACCEPTS}; "
            f"largest entries (unzipped): {', '.join(f'{name} {_mib(n)}' for name, n in largest)}; "
            f"exclude them ({HOW_TO_EXCLUDE})"
        )


def _submit(
    client, plan: Plan, run_dir: Path, address: str, working_dir: Path | None, excludes: Iterable[str], python: str
) -> str:
    request = job_request(plan, python, working_dir=working_dir, excludes=excludes)
    shortfall = resource_shortfall(plan, cluster_nodes(address, client.timeout_s))
    if shortfall:
        raise ClusterTooSmall(shortfall)
    with tempfile.TemporaryDirectory(prefix="sapo-launch-") as scratch:
        runtime_env = stage(request["runtime_env"], run_dir.resolve().parent, Path(scratch))
        try:
            submission_id = client.submit_job(**{**request, "runtime_env": runtime_env})
        except Exception as exc:  # noqa: BLE001 - upload and HTTP errors from Ray, one line for the user
            raise RayJobError(f"the Ray cluster at {address} refused the job: {_first_line(exc)}") from None
    write_json(
        run_dir / JOB_FILE,
        {
            "address": redact_urls(address),
            "submission_id": submission_id,
            "entrypoint": entrypoint(plan, python),
            "excludes": request["runtime_env"].get("excludes", []),
            "working_dir": request["runtime_env"].get("working_dir"),
            "request": shown_request(request, read_json(run_dir / PLAN_FILE).get("secret_env", ())),
        },
    )
    return submission_id


def _inside(path: Path, root: Path) -> list[str]:
    """`path` as an exclude pattern, anchored at `root`, when it lies under `root` (the runs directory under the
    working directory)."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return []
    return [f"/{relative}"] if relative.parts else []


class RayJob(NamedTuple):
    """A submitted job, the client that follows it, and whether the launcher's first SIGINT/SIGTERM stops the job
    (as for the run that submitted it) or only stops following (`attach`)."""

    client: object
    record: JobRecord
    stop_on_signal: bool = True


class RayExecutor:
    """Submit the plan as a Ray job (module docstring). Following it, the first SIGINT or SIGTERM stops the job
    and keeps following until Ray reports it STOPPED; a second one stops waiting. The log feeds the run sequence's
    sink (live view and gates: metrics from the console lines, or from metrics.jsonl when the run directory is on
    storage the cluster shares)."""

    __slots__ = ("address", "excludes", "python", "working_dir")

    def __init__(
        self,
        address: str | None,
        *,
        working_dir: Path | None = None,
        excludes: Iterable[str] = (),
        python: str = DEFAULT_PYTHON,
    ):
        self.address, self.working_dir = with_scheme(address), working_dir
        self.excludes, self.python = tuple(excludes), python

    def summary_fields(self) -> dict:
        return {"submission_id": None, "address": self.address and redact_urls(self.address)}

    def start(self, plan: Plan, run_dir: Path) -> tuple[RayJob, dict]:
        client = connect(self.address, run_dir=run_dir)
        submission_id = _submit(client, plan, run_dir, self.address, self.working_dir, self.excludes, self.python)
        print(f"sapo-launch: submitted {submission_id} to {redact_urls(self.address)}", file=sys.stderr)
        return RayJob(client, JobRecord(self.address, submission_id)), {"submission_id": submission_id}

    def follow(self, handle: RayJob, run_dir: Path, live) -> int:
        return _attach(handle, run_dir, live)

    def stop(self, handle: RayJob, signum: int) -> None:
        handle.client.stop_job(handle.record.submission_id)

    def status(self, run_dir: Path) -> int:
        return status(run_dir, address=self.address)


def _attach(job: RayJob, run_dir: Path, live) -> int:
    """Follow the job's log (from its start) into train.log and `live` until it ends, then record the outcome.
    With `stop_on_signal` the first SIGINT/SIGTERM stops the job; otherwise, and on a second signal, a signal only
    stops following (exit 128 + N; the summary is left as it was unless the job has ended, and then the signals
    of a follower that did not stop it are not its outcome's)."""
    client, record = job.client, job.record
    tail = LineTail()
    with open(run_dir / LOG_FILE, "wb") as log:

        def tee(text: str) -> None:
            data = text.encode("utf-8", "replace")
            log.write(data)
            log.flush()
            live.output(data)
            tail.add(data)

        try:
            signals = asyncio.run(_follow(client, record.submission_id, tee, job.stop_on_signal, live.message))
            details = _details(client, record)
        except RayJobError as exc:
            _record_lost(run_dir, record, exc)
            raise
    if not details.status.is_terminal():
        live.message(
            f"stopped following {record.submission_id} ({details.status}); "
            f"`sapo-launch status {run_dir}` tells how it ends"
        )
        if not job.stop_on_signal:
            return 128 + signals[0]
    return _finish(run_dir, record, details, tail.lines(), signals if job.stop_on_signal else ())


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
        raise RayJobError(f"lost the Ray Jobs API while following {submission_id}: {_first_line(exc)}") from None


def _details(client, record: JobRecord):
    try:
        return client.get_job_info(record.submission_id)
    except Exception as exc:  # noqa: BLE001
        raise RayJobError(f"cannot read job {record.submission_id} at {record.address}: {_first_line(exc)}") from None


def _record_lost(run_dir: Path, record: JobRecord, exc: RayJobError) -> None:
    """The job was submitted but cannot be followed: it may still run, so the summary says `submitted`, unless it
    records the job's end already (following again an ended job)."""
    summary = read_summary(run_dir)
    if summary.get("job_status") in TERMINAL:
        return
    summary.update(
        status="submitted",
        exit_code=2,
        submission_id=record.submission_id,
        address=redact_urls(record.address),
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


def _finish(run_dir: Path, record: JobRecord, details, last_lines: list[str], signals: Iterable[int]) -> int:
    """Record the job's outcome in summary.json (`rundir.record_outcome`) and return its exit code. `signals`: those
    that made this launcher stop the job; without any, those summary.json records (the launcher that stopped it,
    when another records the end). A job that has not ended here was left running on a second signal: it counts
    as interrupted by the first."""
    summary = read_summary(run_dir)
    signals = list(signals) or [signal.Signals[name] for name in summary.get("signals", [])]
    status = str(details.status)
    code = exit_code(status, getattr(details, "driver_exit_code", None), signals)
    summary = record_outcome(
        run_dir,
        status={"SUCCEEDED": "succeeded", "FAILED": "failed"}.get(status, "interrupted"),
        exit_code=128 + signals[0] if code is None else code,
        job_status=status,
        message=_first_line(details.message),
        submission_id=record.submission_id,
        address=redact_urls(record.address),
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


def attach(run_dir: Path, *, address: str | None = None) -> RayJob:
    """The job a run directory submitted, to follow again (`sapo-launch logs --follow`, after `--detach` or a lost
    connection, through `execution.follow`): its log from the start into train.log until the job ends, the
    outcome in summary.json, the job's exit code (unlike `ray job logs`, which exits 0 for a failed job); Ctrl-C
    stops following, not the job (that is `stop`), exit 130. `address` overrides the one `job.json` records (a
    tunnel, a moved dashboard)."""
    record = _record(run_dir, address)
    return RayJob(connect(record.address, run_dir=run_dir), record, stop_on_signal=False)


def logs(run_dir: Path, *, address: str | None = None, terminal: BinaryIO | None = None) -> int:
    """Print what the job's log holds so far; exit 0 (and complete the run directory if the job has ended)."""
    record = _record(run_dir, address)
    client = connect(record.address, run_dir=run_dir)
    text = _logs(client, record)
    (terminal or sys.stdout.buffer).write(text.encode("utf-8", "replace"))
    _complete(client, record, run_dir, _details(client, record), text)
    return 0


def stop(run_dir: Path, *, address: str | None = None, timeout_s: float = 60) -> int:
    """Stop the job and wait (at most `timeout_s`) until Ray reports it ended; record the outcome. Exit 0 when
    the job has ended (now or before), 1 when it is still running after the wait."""
    record = _record(run_dir, address)
    client = connect(record.address, run_dir=run_dir)
    try:
        client.stop_job(record.submission_id)
    except Exception as exc:  # noqa: BLE001
        raise RayJobError(f"cannot stop job {record.submission_id} at {record.address}: {_first_line(exc)}") from None
    deadline = time.monotonic() + timeout_s
    while not _status(client, record.submission_id).is_terminal():
        if time.monotonic() > deadline:
            print(
                f"sapo-launch: {record.submission_id} is still running {timeout_s:.0f} s after the stop request",
                file=sys.stderr,
            )
            return 1
        time.sleep(0.5)
    details = _details(client, record)
    print(f"{record.submission_id} {details.status}", file=sys.stderr)
    _complete(client, record, run_dir, details)
    return 0


def status(run_dir: Path, *, address: str | None = None) -> int:
    """Print `<submission id> <STATUS> <Ray's message>`. While the job is PENDING or RUNNING, exit 0; once it
    has ended, the exit code of the mapping in the module docstring, and the run directory is completed
    (train.log, summary.json) if a detached run left it open."""
    record = _record(run_dir, address)
    client = connect(record.address, run_dir=run_dir)
    details = _details(client, record)
    print(f"{record.submission_id} {details.status} {_first_line(details.message)}".rstrip())
    return _complete(client, record, run_dir, details)


def _record(run_dir: Path, address: str | None) -> JobRecord:
    record = JobRecord.read(Path(run_dir))
    if address:
        return record._replace(address=with_scheme(address))
    if REDACTED in record.address:
        raise RayJobError(f"{JOB_FILE} records {record.address}, its credentials redacted: pass --address with them")
    return record


def _logs(client, record: JobRecord) -> str:
    try:
        return client.get_job_logs(record.submission_id)
    except Exception as exc:  # noqa: BLE001
        raise RayJobError(
            f"cannot read the log of {record.submission_id} at {record.address}: {_first_line(exc)}"
        ) from None


def _complete(client, record: JobRecord, run_dir: Path, details, text: str | None = None) -> int:
    """Once the job has ended, write its whole log (`text`, else read) to train.log and its outcome to
    summary.json, unless they already record it (an attached launcher, an earlier `status`); returns the exit
    code, 0 while the job runs."""
    if not details.status.is_terminal():
        return 0
    summary = read_summary(run_dir)
    if summary.get("job_status") == str(details.status):
        return summary["exit_code"]
    data = (_logs(client, record) if text is None else text).encode("utf-8", "replace")
    write_atomically(run_dir / LOG_FILE, data)
    tail = LineTail()
    tail.add(data)
    return _finish(run_dir, record, details, tail.lines(), ())


def _first_line(what: BaseException | str | None) -> str:
    """An error's (or Ray's message's) first line: Ray appends up to 20,000 characters of log to a FAILED job's
    message. Of a server-side traceback that Ray's client relays, the line before it and its last line."""
    lines = [line.strip() for line in str(what or "").splitlines() if line.strip()]
    if not lines:
        return type(what).__name__ if isinstance(what, BaseException) else ""
    traceback_start = "Traceback (most recent call last):"
    if len(lines) > 1 and lines[0].endswith(traceback_start):
        return f"{lines[0][: -len(traceback_start)]}{lines[-1]}"
    return lines[0]


def _mib(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MiB"
