"""What the Ray executor sends a cluster's Jobs API for a plan, and the checks before it does (`submit`).

What runs is the plan's argv with the launching machine's interpreter replaced by `python` (the first on the
cluster's PATH, where Ray and verl are installed; `python=` names another), shell-quoted once: Ray runs an
entrypoint through the shell. The job first runs the version probe (`ray_probe.py`), then the trainer replaces the
shell, so that its exit code and signals are the job's. The job gets the plan's Ray options (`Plan.ray`: the
recipe's `ray:` block under the command line's; `job_request` assembles what `submit_job` is sent, and job.json
records it, secrets redacted): its runtime_env (pip, uv, conda, py_modules, excludes, working_dir, env_vars), the
user's metadata beside the launcher's (recipe, recipe_hash, variant, lint summary, run_dir), a submission id, the
entrypoint's CPUs, GPUs and resources. The plan's environment goes over the runtime_env's env_vars, secrets
included, and Ray shows a job's runtime_env to whoever can reach its dashboard. The plan's cwd is not used: the job
runs in the working directory shipped with it, else in the cluster's own.

Before submitting, two checks refuse what could not run:
- resources: the cluster's alive nodes (`ray_client.cluster_nodes`,
  https://docs.ray.io/en/latest/ray-observability/reference/doc/ray.util.state.list_nodes.html) must hold
  trainer.nnodes groups of trainer.n_gpus_per_node `GPU` (`NPU` for an npu plan: the resource name Ray gives Ascend
  devices, ray/_private/accelerators/npu.py). verl 0.9.1 asks Ray for one STRICT_PACK placement group per node
  (verl/single_controller/ray/base.py, RayResourcePool.get_placement_groups) and waits for it forever, so a
  group must fit on one node; and one node must hold what the entrypoint asks (`--entrypoint-num-cpus`, `-gpus`,
  `--entrypoint-resources`: Ray keeps a job PENDING forever otherwise, and stops no job before it starts)
  (`entrypoint_shortfall`); refused (`ClusterTooSmall`): exit 1, summary `refused`, nothing submitted.
- each local directory Ray would upload (the working directory, a py_modules directory): what it ships is
  decided by Ray's own rules (launcher/workdir.py: .gitignore and .rayignore files, `excludes`, Ray's default
  excludes), and no link in it may lead out of it; it is staged in a temporary directory (which Ray zips and
  uploads) and zipped here the way Ray zips it; that zip, like a local package file, must be at most 100 MiB
  (`UPLOAD_LIMIT`).

Once submitted, `job.json` records the address (credentials redacted), the submission id, the entrypoint, the
working directory, the excludes and the request as sent (secrets redacted): `JobRecord` finds the job again, and
`rerun` sends the same again. With --headers or --verify (a dashboard behind authentication or TLS), it records
them too: the headers' names, their values redacted but for `ray_client.PLAIN_HEADERS`, and the verification
(true, false or the CA bundle's absolute path). Every request of the submission carries them: the client's own and
the nodes' listing.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from sapo_toolkit.linter.core.device import default_kind, device_kind, device_kinds
from sapo_toolkit.linter.core.words import counted

from ..plan import Plan, redact_keys, redact_urls
from ..rundir import write_json
from ..workdir import HOW_TO_EXCLUDE, UnsafeWorkingDir, shipped_files
from . import RECORD_FILES, Refused
from .ray_client import RayJobError, cluster_nodes, first_line, shown_headers
from .ray_probe import PROBE_ENV, version_probe

JOB_FILE = RECORD_FILES["ray"]  # job.json
DEFAULT_PYTHON = "python"
# JobSubmissionClient PUTs the zipped working directory to the dashboard as one request body, and the dashboard's
# aiohttp app accepts at most 100 MiB: client_max_size in python/ray/dashboard/http_server_head.py (a literal in
# Ray 2.41, DASHBOARD_CLIENT_MAX_SIZE from python/ray/_private/ray_constants.py in 2.60); a larger one fails with
# HTTP 413 "Maximum request body size 104857600 exceeded" (measured with Ray 2.60). The 512 MiB
# GCS_STORAGE_MAX_SIZE of python/ray/_private/runtime_env/packaging.py binds only `ray.init` uploads, and the
# docs' figure has disagreed with the code (https://github.com/ray-project/ray/issues/55877).
UPLOAD_LIMIT = 100 * 1024 * 1024
ACCEPTS = "Ray's Jobs API accepts"


class ClusterTooSmall(RayJobError, Refused):
    """The cluster cannot hold the plan (the run lifecycle turns this into exit 1 and summary status `refused`)."""


class JobRecord(NamedTuple):
    """`job.json`: where the job was submitted and under which id, and the headers and TLS verification its dashboard
    is asked with (as read: header values redacted; a command's own go over them, `ray_client.recorded_connection`)."""

    address: str
    submission_id: str
    headers: dict[str, str] | None = None
    verify: bool | str = True

    @classmethod
    def read(cls, run_dir: Path) -> JobRecord:
        try:
            data = json.loads((run_dir / JOB_FILE).read_text(encoding="utf-8"))
            headers, verify = data.get("headers"), data.get("verify", True)
            return cls(
                data["address"],
                data["submission_id"],
                dict(headers) if isinstance(headers, dict) else None,
                verify if isinstance(verify, (bool, str)) else True,
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RayJobError(f"{run_dir} holds no Ray job ({JOB_FILE}: {exc})") from None


def entrypoint(plan: Plan, python: str = DEFAULT_PYTHON) -> str:
    """The plan's argv as one shell command, with `python` for the launching machine's interpreter."""
    return shlex.join((python, *plan.argv[1:]))


def job_entrypoint(plan: Plan, python: str = DEFAULT_PYTHON) -> str:
    """What the job runs: the version probe, its errors dropped (the trainer starts whatever it does), then the
    trainer in the shell's place, so that its exit code and signals are the job's."""
    return f'{shlex.quote(python)} -c "${PROBE_ENV}" 2>/dev/null; exec {entrypoint(plan, python)}'


def metadata(plan: Plan) -> dict[str, str]:
    """What `ray job list` shows beside the job; Ray takes only string values."""
    lint = plan.lint.to_json()["summary"]
    return {
        "recipe": plan.name,
        "recipe_hash": plan.recipe_hash,
        "variant": plan.variant or "",
        "lint": ", ".join(counted(n, severity) for severity, n in lint.items()),
        "run_dir": plan.run_dir,
    }


def resource_shortfall(plan: Plan, nodes: Iterable[dict[str, float]]) -> str | None:
    """Why alive nodes with these total resources cannot hold the plan's nnodes groups of devices_per_node
    devices, one group per node as verl places them; None when they can (or the plan does not say)."""
    if not plan.nnodes or not plan.devices_per_node:
        return None
    nodes = list(nodes)
    device = device_kinds().get(plan.device or "") or default_kind()  # none detected: GPU, as before
    kind = device.ray_resource
    other_kind = device_kind(device.other) if device.other else None  # the kind the hint suggests instead
    other = other_kind.ray_resource if other_kind else None
    per_node, needed = plan.devices_per_node, plan.nnodes
    counts = sorted((int(resources.get(kind, 0)) for resources in nodes), reverse=True)
    shape = f"{needed} node{'s' if needed != 1 else ''} x {per_node}"
    if sum(counts) < needed * per_node:
        others = sum(int(resources.get(other, 0)) for resources in nodes) if other_kind else 0
        hint = f" (it has {others} {other}: pass --device {other_kind.name})" if other_kind and others else ""
        if not sum(counts) and not others:
            hint = (
                f" (a cluster without {kind} runs only a trainer that needs none: trainer.n_gpus_per_node: 0, "
                "with `# sapo-lint: noqa: TP014`)"
            )
        return f"the cluster has {sum(counts)} {kind}, the recipe needs {needed * per_node} ({shape}){hint}"
    if sum(c // per_node for c in counts) < needed:
        return (
            f"the cluster has {sum(counts)} {kind} but not {per_node} on each of {needed} node(s) (per node: "
            f"{', '.join(map(str, counts))}); the recipe needs {shape}, each node's share on one node"
        )
    return None


def entrypoint_shortfall(plan: Plan, nodes: Iterable[dict[str, float]]) -> str | None:
    """Why no alive node with these total resources can run the job's entrypoint with what it asks (CPUs, GPUs,
    other resources: Ray places the entrypoint on one node); None when one can (or it asks nothing)."""
    options = plan.ray
    asked = {
        "CPU": options.entrypoint_num_cpus or 0,
        "GPU": options.entrypoint_num_gpus or 0,
        "memory": options.entrypoint_memory or 0,
        **{str(name): amount for name, amount in (options.entrypoint_resources or {}).items()},
    }
    asked = {name: amount for name, amount in asked.items() if isinstance(amount, (int, float)) and amount > 0}
    nodes = list(nodes)
    if not asked or any(all(node.get(name, 0) >= amount for name, amount in asked.items()) for node in nodes):
        return None
    wanted = ", ".join(f"{amount:g} {name}" for name, amount in asked.items())
    largest = ", ".join(f"{max((node.get(name, 0) for node in nodes), default=0):g} {name}" for name in asked)
    return f"no node of the cluster has what the entrypoint asks ({wanted}); the most a node has: {largest}"


def job_request(
    plan: Plan, python: str = DEFAULT_PYTHON, *, working_dir: Path | None = None, excludes: Iterable[str] = ()
) -> dict:
    """The keyword arguments of Ray's `submit_job` for the plan, local directories not yet staged (`stage`): the
    version probe, then the trainer's command in its place (`job_entrypoint`); the runtime_env of `plan.ray` with
    `working_dir` over its own, `excludes` after its own (each pattern once) and the plan's environment (the
    recipe's `env:` always wins) and the version probe's script over its env_vars; the launcher's metadata with the
    user's (which may not set the launcher's keys); the submission id and the entrypoint's resources where given.
    Raises `RayJobError` for user metadata under a launcher's key."""
    options = plan.ray
    runtime_env = dict(options.runtime_env)
    if working_dir is not None:
        runtime_env["working_dir"] = str(working_dir)
    # Once each, in order: a rerun's recorded excludes are its runtime_env's and the executor's again.
    excludes = list(dict.fromkeys([*runtime_env.get("excludes", ()), *excludes]))
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
        "entrypoint_memory": options.entrypoint_memory,
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


def submit(
    client,
    plan: Plan,
    run_dir: Path,
    address: str,
    *,
    working_dir: Path | None = None,
    excludes: Iterable[str] = (),
    python: str = DEFAULT_PYTHON,
    secret_env: Iterable[str] = (),
) -> str:
    """Check the plan against the cluster at `address` (module docstring), submit it through `client`, record
    job.json (its request with the values of secret names and of `secret_env` redacted); returns the submission
    id."""
    request = job_request(plan, python, working_dir=working_dir, excludes=excludes)
    headers, verify = getattr(client, "headers", None), getattr(client, "verify", True)
    nodes = cluster_nodes(address, client.timeout_s, headers, verify)
    shortfall = resource_shortfall(plan, nodes) or entrypoint_shortfall(plan, nodes)
    if shortfall:
        raise ClusterTooSmall(shortfall)
    with tempfile.TemporaryDirectory(prefix="sapo-launch-") as scratch:
        runtime_env = stage(request["runtime_env"], run_dir.resolve().parent, Path(scratch))
        try:
            submission_id = client.submit_job(**{**request, "runtime_env": runtime_env})
        except Exception as exc:  # noqa: BLE001 - upload and HTTP errors from Ray, one line for the user
            raise RayJobError(f"the Ray cluster at {address} refused the job: {first_line(exc)}") from None
    write_json(
        run_dir / JOB_FILE,
        {
            "address": redact_urls(address),
            "submission_id": submission_id,
            "entrypoint": entrypoint(plan, python),
            "excludes": request["runtime_env"].get("excludes", []),
            "working_dir": request["runtime_env"].get("working_dir"),
            "request": shown_request(request, secret_env),
            **({"headers": shown_headers(headers)} if headers else {}),
            **({"verify": verify} if verify is not True else {}),
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


def _mib(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MiB"
