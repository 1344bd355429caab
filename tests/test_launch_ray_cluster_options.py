"""Cluster options and warnings of `sapo-launch --address` (issue 35 item 14), through the console script against
the session's real Ray head: $RAY_API_SERVER_ADDRESS (what `ray start` tells users to export), --entrypoint-memory,
a warning before a run whose run directory the job may not reach (verl's file logger writes there), and a warning
when the job's python has no verl for a verl trainer (the version probe's finding)."""

import importlib.util
import json

import pytest

from .helpers import ON_RAY, REPO, sapo_launch, stand_in
from .test_launch_ray_options import error_line

SHARED = ("--working-dir", REPO, "--shared-runs-dir")
UNSHARED = "sapo-launch: warning: verl's file logger writes the run directory's metrics.jsonl from the job's node"


def only_run_dir(runs):
    (run_dir,) = runs.iterdir()
    return run_dir


def test_ray_api_server_address_is_the_default_address_before_ray_address(tmp_path, ray_address):
    recipe = stand_in(tmp_path, {}, overrides=ON_RAY, name="options")
    env = {"RAY_API_SERVER_ADDRESS": "head:8265", "RAY_ADDRESS": "auto"}
    dry = sapo_launch(recipe, *SHARED, "--dry-run", "--format", "json", env=env)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["ray"]["address"] == "http://head:8265"
    runs = tmp_path / "runs"
    proc = sapo_launch(recipe, *SHARED, "--runs-dir", runs, env={"RAY_API_SERVER_ADDRESS": ray_address})
    assert proc.returncode == 0, proc.stderr
    assert json.loads((only_run_dir(runs) / "job.json").read_text())["address"] == ray_address
    assert UNSHARED not in proc.stderr  # --shared-runs-dir says the job reaches the run directory


def test_entrypoint_memory_reaches_ray_and_is_checked_against_the_nodes(tmp_path, ray_address):
    """Sent as `submit_job(entrypoint_memory=...)` (Ray 2.60's job details do not show it back); more than any
    node has is refused before submitting, as CPUs and GPUs are."""
    recipe = stand_in(tmp_path, {}, overrides=ON_RAY, name="options")
    runs = tmp_path / "runs"
    proc = sapo_launch(recipe, "--address", ray_address, *SHARED, "--entrypoint-memory", 1_000_000, "--runs-dir", runs)
    assert proc.returncode == 0, proc.stderr
    job = json.loads((only_run_dir(runs) / "job.json").read_text())
    assert job["request"]["entrypoint_memory"] == 1_000_000
    huge = sapo_launch(
        recipe, "--address", ray_address, *SHARED, "--entrypoint-memory", 10**18, "--runs-dir", tmp_path / "huge"
    )
    assert huge.returncode == 1, huge.stderr
    assert "no node of the cluster has what the entrypoint asks (1e+18 memory)" in huge.stderr
    assert not (only_run_dir(tmp_path / "huge") / "job.json").exists()


def test_a_run_directory_the_job_may_not_reach_is_warned_about(tmp_path):
    recipe = stand_in(tmp_path, {}, overrides=ON_RAY, name="options")
    dry = sapo_launch(recipe, "--address", "head:8265", "--checkpoints", tmp_path / "ck", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "warning  verl's file logger writes the run directory's metrics.jsonl from the job's node" in dry.stdout
    assert "pass --shared-runs-dir (this warning then goes)" in dry.stdout
    shared = sapo_launch(recipe, "--address", "head:8265", "--shared-runs-dir", "--dry-run")
    assert shared.returncode == 0 and "warning  " not in shared.stdout, shared.stdout


@pytest.mark.skipif(importlib.util.find_spec("verl") is not None, reason="the head's python has verl")
def test_a_job_whose_python_has_no_verl_is_warned_about(tmp_path, ray_address):
    """The head runs this interpreter, without verl: the version probe says so, and a warning says why verl's
    trainer cannot start, in the log and on the terminal."""
    recipe = stand_in(tmp_path, {}, overrides=ON_RAY, name="options")
    recipe.write_text(recipe.read_text().replace("tests.fake_trainer", "verl.trainer.main_ppo"))
    runs = tmp_path / "runs"
    proc = sapo_launch(recipe, "--address", ray_address, *SHARED, "--runs-dir", runs)
    assert proc.returncode == 1, proc.stderr
    warning = "sapo-launch: warning: the job's python"
    assert warning in proc.stdout + proc.stderr
    line = next(line for line in (only_run_dir(runs) / "train.log").read_text().splitlines() if warning in line)
    assert "has no verl installed, so `python -m verl.trainer.main_ppo` cannot start" in line
    assert error_line(proc.stderr)
