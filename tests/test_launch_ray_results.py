"""Nothing a Ray run produced is lost, and following it says what is so (issue 35, items 1-2 and 5-9): through the
installed console script against a real local Ray head (tests/ray_cluster.py), with the stand-in trainer
(tests/fake_trainer.py). Waits are on events (a line printed, a status Ray reports), never on wall time."""

import json
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sapo_toolkit.launcher.executors.ray_client import LogsDecoder

from .helpers import ON_RAY, REPO, launcher, sapo_launch
from .test_launch_local import fake_recipe, only_run_dir

pytestmark = pytest.mark.filterwarnings("ignore:ssl=None is deprecated:DeprecationWarning")


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def launch(tmp_path: Path, address: str, env: dict, *args, gates: str = "") -> subprocess.CompletedProcess:
    recipe = fake_recipe(tmp_path, env, overrides=ON_RAY)
    recipe.write_text(recipe.read_text() + gates)
    return sapo_launch(
        recipe, "--address", address, "--working-dir", REPO, "--shared-runs-dir", "--runs-dir", tmp_path / "runs", *args
    )


def wait_until(condition, what: str, seconds: float = 120) -> None:
    """A guard against a hang, not a race: `condition` is an event the cluster reports."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"never happened: {what}")
        time.sleep(0.2)


def job_status(address: str, run_dir: Path) -> str:
    from ray.job_submission import JobSubmissionClient

    return str(JobSubmissionClient(address).get_job_status(summary(run_dir)["submission_id"]))


# -- item 9: the log is streamed, never held whole; --tail N ----------------------------------------------------------


def test_the_logs_answer_is_decoded_piece_by_piece():
    import random

    rng = random.Random(35)
    alphabet = ["a", "\\", '"', "\n", "é", "😀", "\ud800", "x y", "\t", "\x00", "\\u"]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        body = json.dumps({"logs": text}).encode()
        decoder, pieces, at = LogsDecoder(), [], 0
        while at < len(body):
            size = rng.randint(1, 9)
            pieces.append(decoder.feed(body[at : at + size]))
            at += size
        assert "".join(pieces) + decoder.end() == text


def test_logs_tail_prints_the_last_lines_and_status_says_the_gates(tmp_path, ray_address):
    """Item 8 (gates) and 9 (--tail): a succeeded run whose gate failed is not reported as a plain success."""
    done = launch(tmp_path, ray_address, {"FAKE_STEPS": 4}, gates="gates:\n  - {metric: perf/throughput, min: 103}\n")
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(tmp_path)
    last = sapo_launch("logs", "--tail", "2", run_dir)
    assert last.returncode == 0, last.stderr
    assert last.stdout.splitlines() == [
        "step:3 - perf/throughput:103.0 - critic/rewards/mean:np.float64(0.30000000000000004)",
        "step:4 - perf/throughput:104.0 - critic/rewards/mean:np.float64(0.4)",
    ]
    status = sapo_launch("status", run_dir)
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines()[-1] == "gates failed: perf/throughput >= 103 (every, after 0)"
    assert sapo_launch("logs", "--tail", "2", "--follow", run_dir).returncode == 2


# -- item 5: report asks the cluster --------------------------------------------------------------------------------


def test_report_as_the_first_to_look_at_a_detached_run_asks_the_cluster(tmp_path, ray_address):
    detached = launch(tmp_path, ray_address, {"FAKE_STEPS": 3, "FAKE_FILE_LOGGER": 0}, "--detach")
    assert detached.returncode == 0, detached.stderr
    run_dir = only_run_dir(tmp_path)
    wait_until(lambda: job_status(ray_address, run_dir) == "SUCCEEDED", "the job succeeded")
    assert summary(run_dir)["status"] == "submitted" and not (run_dir / "train.log").exists()
    report = sapo_launch("report", run_dir)
    assert report.returncode == 0, report.stderr
    assert "last step 3" in report.stdout
    assert summary(run_dir)["status"] == "succeeded" and "step:3 " in (run_dir / "train.log").read_text()


# -- item 2: why a job never started ---------------------------------------------------------------------------------


@pytest.mark.slow  # Ray sets up the runtime env before it fails: 90 s on 2 cores
def test_a_runtime_env_that_cannot_be_set_up_says_why(tmp_path, ray_address):
    runtime_env = tmp_path / "runtime_env.yaml"
    runtime_env.write_text("pip:\n  packages: [no-such-package-sapo-35==9.9]\n  pip_install_options: [--no-index]\n")
    failed = launch(tmp_path, ray_address, {}, "--runtime-env", runtime_env)
    assert failed.returncode == 1, failed.stderr
    run_dir = only_run_dir(tmp_path)
    closing = failed.stderr.splitlines()[-1]
    assert closing.startswith("sapo-launch: failed (exit 1): ERROR: ") and "no-such-package-sapo-35" in closing
    log = (run_dir / "train.log").read_text()
    assert log.startswith("sapo-launch: Ray: runtime_env setup failed") and "no-such-package-sapo-35" in log
    recorded = summary(run_dir)
    assert recorded["reason"] in closing and recorded["last_lines"][-1].startswith("sapo-launch: Ray: ")
    again = sapo_launch("logs", "--follow", run_dir)  # following again adds nothing to the log
    assert again.returncode == 1 and (run_dir / "train.log").read_text() == log


# -- item 7: what the entrypoint asks, and a job left PENDING --------------------------------------------------------


def test_an_entrypoint_no_node_can_hold_is_refused_before_submitting(tmp_path, ray_address):
    refused = launch(tmp_path, ray_address, {}, "--entrypoint-num-cpus", "4")
    assert refused.returncode == 1, refused.stderr
    assert (
        "refused: no node of the cluster has what the entrypoint asks (4 CPU); the most a node has: 2 CPU"
        in refused.stderr
    )
    assert summary(only_run_dir(tmp_path))["status"] == "refused"


def test_ctrl_c_on_a_pending_job_says_it_is_pending_not_stopped(tmp_path, ray_address):
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(ray_address)
    holder = client.submit_job(entrypoint="sleep 600", entrypoint_num_cpus=2)
    try:
        wait_until(lambda: str(client.get_job_status(holder)) == "RUNNING", "the holder runs")
        recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
        child = subprocess.Popen(
            [
                *launcher(),
                recipe,
                "--address",
                ray_address,
                "--working-dir",
                REPO,
                "--shared-runs-dir",
                "--runs-dir",
                tmp_path / "runs",
            ]
            + ["--entrypoint-num-cpus", "1"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        said = []
        for line in child.stderr:
            said.append(line)
            if " PENDING: Job has not started yet" in line:
                child.send_signal(signal.SIGINT)
            elif "stopping raysubmit_" in line:
                child.send_signal(signal.SIGINT)
                break
        _, err = child.communicate(timeout=60)
        err = "".join(said) + err
        assert child.returncode == 130, err
        assert "is still PENDING, which Ray does not stop before it starts" in err
        assert "stopped (SIG" not in err
        run_dir = only_run_dir(tmp_path)
        assert summary(run_dir)["status"] == "submitted"
    finally:
        client.stop_job(holder)
    pending = summary(run_dir)["submission_id"]
    wait_until(lambda: client.get_job_status(pending).is_terminal(), "the job left PENDING ended")


# -- item 6: a dashboard that answers but never streams ---------------------------------------------------------------


class NoStreamDashboard:
    """Answers the Jobs API's version and job requests (the job RUNNING) and accepts the log stream's connection,
    but never answers its handshake; `streaming` is set once a stream was asked for."""

    def __init__(self):
        streaming = self.streaming = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                if self.path.endswith("/logs/tail"):
                    streaming.set()
                    time.sleep(3600)
                body = {"ray_version": "2.60.0", "version": "4"}
                if self.path.startswith("/api/jobs/"):
                    body = {"type": "SUBMISSION", "submission_id": "raysubmit_x", "status": "RUNNING"}
                    body["entrypoint"] = "x"
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.address = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def no_stream():
    dashboard = NoStreamDashboard()
    yield dashboard
    dashboard.close()


def ended_run_dir(tmp_path: Path, address: str) -> Path:
    """A run directory whose job ended and was recorded, its train.log kept."""
    run_dir = tmp_path / "ended"
    run_dir.mkdir()
    (run_dir / "job.json").write_text(json.dumps({"address": address, "submission_id": "raysubmit_x"}))
    (run_dir / "plan.json").write_text(json.dumps({"gates": [], "total_steps": None}))
    (run_dir / "summary.json").write_text(
        json.dumps({"status": "succeeded", "exit_code": 0, "job_status": "SUCCEEDED", "executor": "ray", "gates": {}})
    )
    (run_dir / "train.log").write_text("step:1 - perf/throughput:101.0\n")
    return run_dir


def test_a_log_stream_that_never_answers_ends_within_the_timeout(tmp_path, no_stream):
    run_dir = ended_run_dir(tmp_path, no_stream.address)
    follow = sapo_launch("logs", "--follow", run_dir, env={"SAPO_LAUNCH_RAY_TIMEOUT": "1"}, timeout=60)
    assert follow.returncode == 2, follow.stderr
    assert follow.stderr.splitlines()[-1] == (
        "sapo-launch: cannot stream the log of raysubmit_x: no answer to the log stream of raysubmit_x within 1 s "
        "(SAPO_LAUNCH_RAY_TIMEOUT)"
    )
    assert "succeeded" not in follow.stderr  # no stale end
    assert (run_dir / "train.log").read_text() == "step:1 - perf/throughput:101.0\n"


def test_ctrl_c_while_the_log_stream_does_not_answer_exits_130(tmp_path, no_stream):
    run_dir = ended_run_dir(tmp_path, no_stream.address)
    child = subprocess.Popen(
        [*launcher(), "logs", "--follow", run_dir], cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert no_stream.streaming.wait(timeout=60), child.communicate(timeout=5)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert "succeeded" not in err and "Traceback" not in err
    assert (run_dir / "train.log").read_text() == "step:1 - perf/throughput:101.0\n"


# -- items 1 and 8: a cluster restart --------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_cluster_restart_keeps_the_log_and_marks_a_job_it_forgot_lost(tmp_path):
    pytest.importorskip("ray.job_submission", reason="ray is not installed: pip install 'sapo-toolkit[ray]'")
    from . import ray_cluster

    head = ray_cluster.start()
    try:
        done = launch(tmp_path / "done", head.address, {"FAKE_STEPS": 3})
        assert done.returncode == 0, done.stderr
        finished = only_run_dir(tmp_path / "done")
        log = (finished / "train.log").read_bytes()
        assert b"step:3 " in log
        going = launch(tmp_path / "going", head.address, {"FAKE_STEPS": 500, "FAKE_SLEEP": 0.2}, "--detach")
        assert going.returncode == 0, going.stderr
        running = only_run_dir(tmp_path / "going")
        metrics = running / "metrics.jsonl"
        wait_until(lambda: metrics.exists() and '"step": 2' in metrics.read_text(), "the job reached step 2")
    finally:
        assert not ray_cluster.stop(head)
    head = ray_cluster.start()
    try:
        again = sapo_launch("logs", "--follow", finished, "--address", head.address)
        assert again.returncode == 0, again.stderr
        assert "step:3 " in again.stdout and again.stderr.splitlines()[-1].startswith("sapo-launch: succeeded;")
        assert (finished / "train.log").read_bytes() == log
        status = sapo_launch("status", running, "--address", head.address)
        assert status.returncode == 2, status.stderr
        assert " LOST: the Ray cluster at " in status.stdout and "no longer knows job raysubmit_" in status.stdout
        lost = summary(running)
        assert lost["status"] == "lost" and lost["last_step"] >= 2
        assert f"the last step seen: {lost['last_step']}" in lost["reason"]
    finally:
        assert not ray_cluster.stop(head)
