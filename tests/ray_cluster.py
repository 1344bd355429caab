"""A real single-node Ray head for the Ray Jobs executor's tests: loopback only, free ports, its own temp dir, no
GPU. It is torn down by process id, never with `ray stop`, which ends every Ray process of this user on the
machine (another checkout's cluster included)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple


class RayHead(NamedTuple):
    address: str  # the dashboard's Jobs API, http://127.0.0.1:PORT
    process: subprocess.Popen  # `ray start --head --block`: the cluster's processes descend from it
    temp_dir: str
    log: Path


def free_port() -> int:
    # Ports from the kernel's ephemeral range never collide with Ray's worker ports (10002-19999).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(timeout_s: float = 120) -> RayHead:
    """Start the head and wait until it has run a job: the Jobs API answers before the head's dashboard agent,
    which runs the jobs, has registered (Ray 2.41 answers a submission then with HTTP 500)."""
    from ray.job_submission import JobSubmissionClient

    # Short: Ray's unix socket paths live under it (at most 107 bytes).
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    ray = Path(sys.executable).with_name("ray")
    dashboard = free_port()
    command = [
        str(ray) if ray.exists() else shutil.which("ray") or "ray",
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        f"--port={free_port()}",
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={dashboard}",
        f"--ray-client-server-port={free_port()}",
        f"--dashboard-agent-listen-port={free_port()}",
        "--num-cpus=2",
        "--num-gpus=0",
        "--object-store-memory=100000000",
        "--include-dashboard=true",
        f"--temp-dir={temp_dir}",
        "--disable-usage-stats",
    ]
    env = {
        **os.environ,
        # A token in ~/.ray (left by any Ray session on this machine) would switch on token auth otherwise.
        "RAY_AUTH_MODE": "disabled",
        # On SIGTERM, stop at once instead of draining the node for Ray Serve first.
        "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
        # The jobs' `python` is this interpreter, with this checkout installed.
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
    }
    env.pop("RAY_ADDRESS", None)
    log = Path(temp_dir + ".log")
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True
        )
    head = RayHead(f"http://127.0.0.1:{dashboard}", process, temp_dir, log)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client = JobSubmissionClient(head.address)
            submission_id = client.submit_job(entrypoint="true")
            while not client.get_job_status(submission_id).is_terminal():
                time.sleep(0.1)
            if str(client.get_job_status(submission_id)) == "SUCCEEDED":
                return head
            problem = client.get_job_info(submission_id).message
        except Exception as exc:  # noqa: BLE001 - not up yet
            problem = str(exc)
        if process.poll() is not None or time.monotonic() > deadline:
            stop(head)
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the Ray head did not come up ({problem}); ray start said:\n{tail}")
        time.sleep(0.25)


def stop(head: RayHead, grace_s: float = 10) -> list[int]:
    """End the head's processes: SIGTERM to `ray start`, which stops what it started; then whatever is left of
    its descendants (job drivers, workers) and of what names its temp dir, politely then by force. Returns the
    processes still alive afterwards (none, unless the kernel refused)."""
    seen = _cluster_pids(head)
    head.process.terminate()
    try:
        head.process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    for signum in (signal.SIGTERM, signal.SIGKILL):
        _signal(_alive(seen | _cluster_pids(head)), signum)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and _alive(seen | _cluster_pids(head)):
            time.sleep(0.1)
    head.process.wait()
    shutil.rmtree(head.temp_dir, ignore_errors=True)
    head.log.unlink(missing_ok=True)
    return sorted(_alive(seen | _cluster_pids(head)))


def _cluster_pids(head: RayHead) -> set[int]:
    parents, mentions = {}, set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid] = int(stat.rsplit(")", 1)[1].split()[1])
        if head.temp_dir.encode() in cmdline:
            mentions.add(pid)
    found = {head.process.pid} | mentions
    while True:
        more = {pid for pid, parent in parents.items() if parent in found} - found
        if not more:
            return found
        found |= more


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _signal(pids: set[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass
