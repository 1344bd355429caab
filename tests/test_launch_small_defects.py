"""Small defects of `sapo-launch` (issue 35 item 15), through the console script, against the session's real Ray head
where Ray is involved: excludes once per rerun generation, what `rerun --local` does without, usage errors before the
run directory exists, `report -o` into a new directory, Ray's INFO lines off the terminal, the way out on a
CPU-only cluster."""

import json
from pathlib import Path

from .helpers import ON_RAY, REPO, sapo_launch, stand_in


def newest(runs: Path, seen: set[Path]) -> Path:
    (new,) = set(runs.iterdir()) - seen
    seen.add(new)
    return new


def test_rerun_generations_keep_each_exclude_once_and_rerun_local_says_what_it_drops(tmp_path, ray_address):
    runtime_env = tmp_path / "runtime_env.yaml"
    runtime_env.write_text('excludes: ["*.tmp"]\nenv_vars: {EXTRA_SETTING: "1"}\n')
    recipe = stand_in(tmp_path, {}, overrides=ON_RAY, name="defects")
    runs, seen = tmp_path / "runs", set()
    ray = ("--address", ray_address, "--working-dir", REPO, "--shared-runs-dir", "--runtime-env", runtime_env)
    proc = sapo_launch(recipe, *ray, "--runs-dir", runs)
    assert proc.returncode == 0, proc.stderr
    assert " INFO " not in proc.stderr, proc.stderr  # Ray's packaging and upload lines
    generation = newest(runs, seen)
    for _ in range(2):  # a rerun, then a rerun of the rerun
        again = sapo_launch("rerun", generation)
        assert again.returncode == 0, again.stderr
        assert " INFO " not in again.stderr, again.stderr
        generation = newest(runs, seen)
        job = json.loads((generation / "job.json").read_text())
        assert job["excludes"] == ["*.tmp"] and job["request"]["runtime_env"]["excludes"] == ["*.tmp"]
    here = sapo_launch("rerun", generation, "--local", "--dry-run")
    assert here.returncode == 0, here.stderr
    assert (
        "sapo-launch: not applied on this machine: the Ray runtime_env's env_vars (EXTRA_SETTING), excludes, "
        "working_dir"
    ) in here.stderr.splitlines()


def test_metadata_under_a_launcher_key_is_refused_before_the_run_directory_is_made(tmp_path):
    """Found before anything is written (it used to leave a run directory `failed`); no cluster is asked."""
    recipe = stand_in(tmp_path, {}, overrides=ON_RAY, name="defects")
    runs = tmp_path / "runs"
    proc = sapo_launch(
        recipe, "--address", "127.0.0.1:9", "--shared-runs-dir", "--metadata", "recipe=mine", "--runs-dir", runs
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "metadata recipe: sapo-launch sets it itself" in proc.stderr
    assert not runs.exists()


def test_report_into_a_directory_that_does_not_exist_yet(tmp_path):
    recipe = stand_in(tmp_path, {}, name="defects")
    assert sapo_launch(recipe, "--runs-dir", tmp_path / "runs").returncode == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    output = tmp_path / "reports" / "week-1" / "run.md"
    proc = sapo_launch("report", run_dir, "-o", output)
    assert proc.returncode == 0, proc.stderr
    assert output.is_file() and f"report: {output}" in proc.stdout


def test_a_cpu_only_cluster_refuses_a_device_run_with_the_way_out(tmp_path, ray_address):
    recipe = stand_in(tmp_path, {}, overrides="  trainer.n_gpus_per_node: 2\n", name="defects")
    proc = sapo_launch(recipe, "--address", ray_address, "--shared-runs-dir", "--runs-dir", tmp_path / "runs")
    assert proc.returncode == 1, proc.stderr
    assert (
        "refused: the cluster has 0 GPU, the recipe needs 2 (1 node x 2) (a cluster without GPU runs only a trainer "
        "that needs none: trainer.n_gpus_per_node: 0, with `# sapo-lint: noqa: TP014`)"
    ) in proc.stderr
