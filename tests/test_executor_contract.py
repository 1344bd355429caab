"""The contract every executor keeps (launcher/executors/base.py), checked against each one through the registry:
the fake executor (tests/fake_executor.py, registered as a plugin would be), the local one (the stand-in trainer,
tests/fake_trainer.py, as its child process), and Ray's on the session's head (`ray_address`, slow).

A run is started -> its status is `running` -> it is followed to its end, also from another process -> summary.json
is written once per change of state (running, then how it ended) -> its log is kept (`logs`) -> a running one is
stopped (`stop`) -> a finished one is attached to again and gives the same exit code, writing nothing. Then the
registry itself: names recorded in summary.json, run directories from before names were recorded, no Ray for a
local run."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sapo_toolkit.launcher import execution, executors
from sapo_toolkit.launcher.plan import RayOptions

from . import fake_executor
from .helpers import REPO
from .test_launch_ray import make_plan

pytestmark = pytest.mark.filterwarnings("ignore:ssl=None is deprecated:DeprecationWarning")


@pytest.fixture(autouse=True)
def fake_registered(monkeypatch):
    """The fake executor, registered as any executor is (`executors.register`), for this test only."""
    monkeypatch.setattr(executors, "EXECUTORS", dict(executors.EXECUTORS))
    executors.register(fake_executor.NAME, fake_executor.TARGET)


@pytest.fixture(params=["fake", "local", pytest.param("ray", marks=pytest.mark.slow)])
def name(request) -> str:
    return request.param


@pytest.fixture
def options(request, name) -> executors.Options:
    return executors.Options(request.getfixturevalue("ray_address") if name == "ray" else None)


def planned(folder: Path, name: str, env: dict):
    """The stand-in's plan and run directory; a Ray job gets the repository as its working directory (as
    `--working-dir` gives it), where it imports the stand-in from."""
    launch, run_dir = make_plan(folder, env)
    if name == "ray":
        launch.ray = RayOptions({"working_dir": str(REPO)})
    return launch, run_dir


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def kept_files(run_dir: Path) -> dict[str, str]:
    return {name: (run_dir / name).read_text() for name in ("train.log", "summary.json", "metrics.jsonl")}


@pytest.fixture
def summary_writes(monkeypatch) -> list[str]:
    """The status of each summary.json this process writes (every write is atomic: one `os.replace`)."""
    writes: list[str] = []
    replace = os.replace

    def counted(source, target, *args, **kwargs):
        replace(source, target, *args, **kwargs)
        if os.path.basename(target) == "summary.json":
            writes.append(json.loads(Path(target).read_text())["status"])

    monkeypatch.setattr(os, "replace", counted)
    return writes


def test_a_run_is_recorded_once_per_change_of_state_its_log_kept_and_attached_again(
    tmp_path, name, options, summary_writes
):
    launch, run_dir = planned(tmp_path, name, {"FAKE_STEPS": 3, "FAKE_SLEEP": 0.1, "FAKE_EXIT_CODE": 3})
    assert execution.run(executors.create(name, options), launch, run_dir, terminal=io.BytesIO()) == 3
    recorded = summary(run_dir)
    assert (recorded["status"], recorded["exit_code"], recorded["executor"]) == ("failed", 3, name)
    assert summary_writes == ["running", "failed"]
    assert executors.executor_for(run_dir) == name
    executor = executors.for_run(run_dir, options)
    shown = io.BytesIO()
    assert execution.logs(executor, run_dir, terminal=shown) == 0
    assert shown.getvalue().decode().count("step:3 - perf/throughput:103.0") == 1
    assert "step:3 - perf/throughput:103.0" in (run_dir / "train.log").read_text()
    before = kept_files(run_dir)
    again = io.BytesIO()
    assert execution.follow_again(executor, run_dir, terminal=again) == 3
    assert "step:3 - perf/throughput:103.0" in again.getvalue().decode()
    assert kept_files(run_dir) == before and summary_writes == ["running", "failed"]


def in_child(name: str, options: executors.Options, launch, run_dir: Path, folder: Path) -> subprocess.Popen:
    """`execution.run` of the executor `name` in a process of its own (the launcher that runs it; the fake
    executor registered there too), attached; its exit code is the run's."""
    source = (
        "import pickle, sys; from sapo_toolkit.launcher import execution, executors; "
        f"executors.register({fake_executor.NAME!r}, {fake_executor.TARGET!r}); "
        "name, options, launch, run_dir = pickle.loads(bytes.fromhex(sys.argv[1])); "
        "sys.exit(execution.run(executors.create(name, options), launch, run_dir))"
    )
    with open(folder / "child.err", "w") as err:
        return subprocess.Popen(
            [sys.executable, "-c", source, pickle.dumps((name, options, launch, run_dir)).hex()],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


def wait_for_step(child: subprocess.Popen, run_dir: Path, step: int, folder: Path) -> None:
    deadline = time.monotonic() + 120
    log = run_dir / "train.log"
    while f"step:{step} " not in (log.read_text() if log.exists() else ""):
        if time.monotonic() > deadline or child.poll() is not None:
            child.kill()
            pytest.fail(f"the run never reached step {step}: {(folder / 'child.err').read_text()}")
        time.sleep(0.1)


def test_a_running_run_is_running_and_followed_to_its_end_from_another_process(tmp_path, name, options, capsys):
    launch, run_dir = planned(tmp_path, name, {"FAKE_STEPS": 10, "FAKE_SLEEP": 0.3, "FAKE_EXIT_CODE": 3})
    child = in_child(name, options, launch, run_dir, tmp_path)
    try:
        wait_for_step(child, run_dir, 1, tmp_path)
        executor = executors.for_run(run_dir, options)
        capsys.readouterr()
        assert execution.status(executor, run_dir) == 0
        assert "running" in capsys.readouterr().out.lower() and summary(run_dir)["status"] == "running"
        followed = io.BytesIO()
        assert execution.follow_again(executor, run_dir, terminal=followed) == 3
        assert child.wait(timeout=120) == 3
    finally:
        child.kill()
    assert "step:10 - perf/throughput:110.0" in followed.getvalue().decode()
    recorded = summary(run_dir)
    assert (recorded["status"], recorded["exit_code"], recorded["executor"]) == ("failed", 3, name)
    assert "sapo-launch: failed (exit 3)" in capsys.readouterr().err


def test_stop_ends_a_running_run_and_then_has_nothing_to_do(tmp_path, name, options):
    launch, run_dir = planned(tmp_path, name, {"FAKE_STEPS": 600, "FAKE_SLEEP": 0.1})
    child = in_child(name, options, launch, run_dir, tmp_path)
    try:
        wait_for_step(child, run_dir, 2, tmp_path)
        executor = executors.for_run(run_dir, options)
        assert execution.stop(executor, run_dir) == 0
        code = child.wait(timeout=120)
    finally:
        child.kill()
    recorded = summary(run_dir)
    assert recorded["status"] == "interrupted" and recorded["exit_code"] == code
    assert code == (143 if name == "local" else 130)  # SIGTERM to the local launcher; a stopped job is 130
    assert execution.status(executor, run_dir) == code
    assert execution.stop(executor, run_dir) == 0


# -- the registry ----------------------------------------------------------------------------------------------------


def test_a_run_directory_from_before_names_were_recorded_is_told_from_its_files(tmp_path):
    assert executors.executor_for(tmp_path) == "ray"  # no summary.json: taken for a Ray job's, as it always was
    (tmp_path / "summary.json").write_text('{"status": "succeeded", "exit_code": 0}')
    assert executors.executor_for(tmp_path) == "local"
    (tmp_path / "job.json").write_text("{}")
    assert executors.executor_for(tmp_path) == "ray"
    (tmp_path / "job.json").unlink()
    (tmp_path / "summary.json").write_text('{"status": "succeeded", "executor": "fake"}')
    assert executors.executor_for(tmp_path) == "fake"


def test_an_executor_no_one_registered_is_one_line(tmp_path):
    (tmp_path / "summary.json").write_text('{"status": "running", "executor": "slurm"}')
    with pytest.raises(
        executors.ExecutorError, match=r"^no executor is named 'slurm' \(there are: fake, local, ray\)$"
    ):
        executors.for_run(tmp_path)


def test_the_fake_executor_describes_what_the_dry_run_shows(tmp_path):
    launch, _ = planned(tmp_path, "fake", {"FAKE_STEPS": 4})
    assert executors.create("fake").describe(launch) == ({"steps": 4}, ("fake     4 steps",))
    assert executors.create("local").describe(launch) is None


def test_help_and_a_local_dry_run_import_no_ray(tmp_path):
    """The registry imports an executor's modules when it is used: Ray's (and Ray) never for a run here."""
    recipe = make_plan(tmp_path, {})[0].recipe_path
    source = (
        "import sys; from click.testing import CliRunner; from sapo_toolkit.launcher.cli import cli; "
        "assert CliRunner().invoke(cli, ['--help']).exit_code == 0; "
        f"assert CliRunner().invoke(cli, [{str(recipe)!r}, '--dry-run']).exit_code == 0; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'ray' or '.executors.ray' in m))"
    )
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([sys.executable, "-c", source], cwd=REPO, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
