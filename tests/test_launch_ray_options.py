"""What `sapo-launch RECIPE --address URL` gives Ray besides the plan (launcher/executors/ray_jobs.py, launcher/plan.py,
launcher/workdir.py): addresses, bounded requests, Ctrl-C. Through the console script where a user relies on it (exit
codes as a shell sees them), against the session's real Ray head (`ray_address`) or a local socket that accepts
connections and never answers."""

import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from sapo_toolkit.launcher.executors import ray_jobs

from .helpers import REPO
from .test_launch_local import fake_recipe, launcher, only_run_dir

ON_RAY = "  trainer.n_gpus_per_node: 0  # sapo-lint: noqa: TP014\n"  # the test head has no GPU


def sapo_launch(*args, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*launcher(), *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def error_line(stderr: str) -> str:
    """The launcher's error: its last line, one line, no traceback."""
    assert "Traceback" not in stderr, stderr
    last = stderr.splitlines()[-1]
    assert last.startswith("sapo-launch: "), stderr
    return last


# -- addresses -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "address,why",
    [
        ("auto", "`auto` finds a running cluster for ray.init"),
        ("ray://head:10001", "ray:// is a Ray Client address"),
        ("head:6379", "port 6379 is the GCS port, ray.init's"),
        ("http://head:10001", "port 10001 is the Ray Client server port"),
        ("head:8265", None),
        ("https://me:pw@head/ray", None),
    ],
)
def test_what_is_not_a_jobs_api_address(address, why):
    assert ray_jobs.not_jobs_api(address) == why


def test_an_address_without_a_scheme_gets_http():
    assert ray_jobs.jobs_address("127.0.0.1:8265") == "http://127.0.0.1:8265"


def test_an_address_for_ray_init_is_refused_with_a_hint(tmp_path):
    recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
    proc = sapo_launch(recipe, "--address", "me:pw@head:6379", "--runs-dir", tmp_path / "runs")
    assert proc.returncode == 2
    assert error_line(proc.stderr) == (
        "sapo-launch: Invalid value for '--address': me:<redacted>@head:6379 is not a Jobs API address (port 6379 is "
        "the GCS port, ray.init's): pass the dashboard's URL, http://HEAD:8265"
    )
    assert not (tmp_path / "runs").exists()


def test_a_ray_address_set_for_ray_init_leaves_the_launch_here(tmp_path):
    """verl users set RAY_ADDRESS for `ray.init`: the launch stays local (the trainer inherits it), and says so."""
    recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
    dry = sapo_launch(recipe, "--dry-run", env={"RAY_ADDRESS": "auto"})
    assert dry.returncode == 0, dry.stderr
    assert "note     RAY_ADDRESS=auto ignored: not a Jobs API address" in dry.stdout
    proc = sapo_launch(recipe, "--runs-dir", tmp_path / "runs", env={"RAY_ADDRESS": "127.0.0.1:6379"})
    assert proc.returncode == 0, proc.stderr
    assert "sapo-launch: RAY_ADDRESS=127.0.0.1:6379 ignored: not a Jobs API address" in proc.stderr
    assert not (only_run_dir(tmp_path) / "job.json").exists()


def test_a_bad_request_timeout_is_error_line():
    with pytest.raises(ray_jobs.RayJobError, match=r"^SAPO_LAUNCH_RAY_TIMEOUT=soon: not a number of seconds above 0$"):
        ray_jobs.request_timeout({"SAPO_LAUNCH_RAY_TIMEOUT": "soon"})
    assert ray_jobs.request_timeout({}) == 30


# -- a dashboard that accepts and never answers --------------------------------------------------------------------


class SilentDashboard:
    """A local socket that accepts connections and never answers; `accepted` is set once one came in."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"  # no scheme: http:// is added
        self.accepted = threading.Event()
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:  # closed
                return
            self.held.append(connection)
            self.accepted.set()

    def close(self):
        self.server.close()
        for connection in self.held:
            connection.close()


@pytest.fixture
def silent():
    dashboard = SilentDashboard()
    yield dashboard
    dashboard.close()


def silent_run_dir(tmp_path: Path, address: str) -> Path:
    run_dir = tmp_path / "submitted"
    run_dir.mkdir()
    (run_dir / "job.json").write_text(f'{{"address": "http://{address}", "submission_id": "raysubmit_x"}}')
    return run_dir


def commands(tmp_path: Path, address: str) -> dict[str, list[str]]:
    """Every command that calls the cluster, at `address`."""
    recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
    run_dir = silent_run_dir(tmp_path, address)
    return {
        "submit": [str(recipe), "--address", address, "--runs-dir", str(tmp_path / "runs")],
        "status": ["status", str(run_dir)],
        "logs": ["logs", str(run_dir)],
        "logs -f": ["logs", "--follow", str(run_dir)],
        "stop": ["stop", str(run_dir)],
    }


def start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [*launcher(), *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def test_a_dashboard_that_never_answers_is_one_line_within_the_timeout(tmp_path, silent):
    env = {**os.environ, "SAPO_LAUNCH_RAY_TIMEOUT": "1"}
    began = time.monotonic()
    children = {name: start(args, env) for name, args in commands(tmp_path, silent.address).items()}
    for name, child in children.items():
        _, err = child.communicate(timeout=30)
        assert child.returncode == 2, (name, err)
        assert error_line(err).endswith(
            f"cannot reach the Ray Jobs API at http://{silent.address}: no answer to GET /api/version within 1 s "
            "(SAPO_LAUNCH_RAY_TIMEOUT)"
        ), name
    assert time.monotonic() - began < 20  # five launchers started at once on a shared machine


@pytest.mark.parametrize("name", ["submit", "status", "logs", "logs -f", "stop"])
def test_ctrl_c_while_the_dashboard_does_not_answer_exits_130(tmp_path, silent, name):
    child = start(commands(tmp_path, silent.address)[name], dict(os.environ))
    assert silent.accepted.wait(timeout=60), child.communicate(timeout=5)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 130, err
    assert "Traceback" not in err and "cannot reach" not in err
