"""A run's lifecycle through the console script, with the stand-in trainer (tests/fake_trainer.py): the closing line
and the verdicts of a run that succeeded, failed, broke a gate or was stopped; no ETA once it ended; the stop notice
printed through the rich view on a terminal; unique run directories for launches in the same second; a rerun from a
relative run directory; a lost run judged by `report`. On the session's Ray head (`ray_address`): a detached job
judged by `status`, and the same files from `logs --follow`, twice; `rerun` of a Ray run on the same cluster, or here
with `--local`."""

import json
import os
import pty
import re
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sapo_toolkit.launcher.gates import EXIT_GATES_FAILED

from .helpers import ON_RAY, REPO, launcher, sapo_launch, stand_in

FLOOR = "perf/throughput >= 100 (every, after 0)"
RISING = "critic/rewards/mean rising (after 0)"
GATES = "gates:\n  - {metric: perf/throughput, min: 100}\n  - {metric: critic/rewards/mean, trend: rising}\n"
CONSOLE_ONLY = "  trainer.logger: [console]\n"


def lifecycle_recipe(folder: Path, env: dict, overrides: str = "", gates: str = GATES) -> Path:
    """The stand-in trainer's recipe, logging to the console only, with the floor and rising gates by default."""
    return stand_in(folder, env, CONSOLE_ONLY + overrides, gates)


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def run_dirs(runs: Path) -> set[Path]:
    return set(runs.iterdir()) if runs.exists() else set()


# -- on this machine -----------------------------------------------------------------------------------------------


FLOOR_ONLY = "gates:\n  - {metric: perf/throughput, min: 100}\n"


@pytest.mark.parametrize(
    "env,gates,code,closing,statuses",
    [
        ({}, FLOOR_ONLY, 0, "succeeded", {FLOOR: "passed"}),
        (
            {"FAKE_DIP_STEP": 2},
            GATES,
            EXIT_GATES_FAILED,
            f"gates failed: {FLOOR}, {RISING}",  # 3 readings are too few for a trend: not passed
            {FLOOR: "failed", RISING: "no data"},
        ),
        # The floor held for the steps the failed run reached: that is no pass.
        ({"FAKE_EXIT_CODE": 4}, GATES, 4, "failed (exit 4)", {FLOOR: "not judged", RISING: "not judged"}),
    ],
    ids=["succeeded", "gate-broken", "failed"],
)
def test_the_closing_line_and_verdicts_say_how_the_run_ended(tmp_path, env, gates, code, closing, statuses):
    recipe = lifecycle_recipe(tmp_path, env, overrides="  trainer.total_training_steps: 3\n", gates=gates)
    proc = sapo_launch(recipe, "--runs-dir", tmp_path / "runs", "--fail-on-gates")
    assert proc.returncode == code, proc.stderr
    (run_dir,) = run_dirs(tmp_path / "runs")
    assert proc.stderr.splitlines()[-1] == f"sapo-launch: {closing}; run directory {run_dir}"
    recorded = summary(run_dir)
    assert recorded["exit_code"] == code
    assert {name: verdict["status"] for name, verdict in recorded["gates"].items()} == statuses
    for name, status in statuses.items():
        assert f"sapo-launch: gate {status}: {name}: " in proc.stderr
    if code == 4:
        assert f"gate not judged: {FLOOR}: the run failed; on its readings so far: all 3 readings meet" in proc.stderr
    # The progress line at the end has no ETA: the run is over.
    last_progress = [line for line in proc.stderr.splitlines() if re.match(r"sapo-launch: step \d", line)][-1]
    assert last_progress.startswith("sapo-launch: step 3/3 (100%)") and "ETA" not in last_progress


def read_until(fd: int, needle: bytes, seen: bytearray, timeout_s: float = 60) -> None:
    """Read the terminal's output into `seen` until `needle` comes (or, for b"", until the other end closes)."""
    deadline = time.monotonic() + timeout_s
    while not needle or needle not in seen:
        assert time.monotonic() < deadline, f"{needle!r} never came: {bytes(seen[-2000:])!r}"
        if select.select([fd], [], [], 0.5)[0]:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the other end closed
                return
            if not data:
                return
            seen += data


def test_the_stop_notice_is_printed_through_the_live_view_on_a_terminal(tmp_path):
    """On a terminal, a line written past the rich view would be drawn over by the next refresh: the notice goes
    through the view (above the bar) on the terminal, the closing line to stderr once the view is closed."""
    recipe = lifecycle_recipe(
        tmp_path, {"FAKE_STEPS": 300, "FAKE_SLEEP": 0.1}, overrides="  trainer.total_training_steps: 300\n"
    )
    primary, secondary = pty.openpty()
    child = subprocess.Popen(
        [*launcher(), str(recipe), "--runs-dir", str(tmp_path / "runs")],
        cwd=REPO,
        stdout=secondary,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    os.close(secondary)
    shown = bytearray()
    try:
        read_until(primary, b"step:3 ", shown)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        read_until(primary, b"", shown)
    finally:
        child.kill()
        os.close(primary)
    assert child.returncode == 128 + signal.SIGINT, err
    assert "sapo-launch: SIGINT: stopping the trainer (SIGINT to its process group" in shown.decode(errors="replace")
    assert "stopping the trainer" not in err
    (run_dir,) = run_dirs(tmp_path / "runs")
    assert err.splitlines()[-1] == f"sapo-launch: stopped (SIGINT); run directory {run_dir}"
    assert summary(run_dir)["status"] == "interrupted"


def test_launches_of_one_recipe_in_the_same_second_each_get_a_directory(tmp_path):
    """The directories their names would take, for the next two minutes, exist already: every launch, started
    together with the others, makes the next free `-N` (mkdir fails on an existing one) and runs in it."""
    runs = tmp_path / "runs"
    start = int(time.time())
    taken = {runs / time.strftime("stand-in-%Y%m%dT%H%M%SZ", time.gmtime(start + s)) for s in range(120)}
    for directory in taken:
        directory.mkdir(parents=True)
    recipe = lifecycle_recipe(tmp_path, {}, gates="")
    launches = [
        subprocess.Popen(
            [*launcher(), str(recipe), "--runs-dir", str(runs)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    errors = [launch.communicate(timeout=120)[1] for launch in launches]
    assert [launch.returncode for launch in launches] == [0, 0, 0], errors
    made = run_dirs(runs) - taken
    assert len(made) == 3 and all(re.fullmatch(r"stand-in-\d{8}T\d{6}Z-\d", d.name) for d in made), made
    for run_dir in made:
        assert json.loads((run_dir / "plan.json").read_text())["run_dir"] == str(run_dir)
        assert summary(run_dir)["status"] == "succeeded"
        # Each trainer's file logger wrote into its own directory.
        assert [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3]
    assert not any(any(d.iterdir()) for d in taken)


def test_rerun_of_a_relative_run_directory(tmp_path):
    recipe = lifecycle_recipe(tmp_path, {}, gates="")
    assert sapo_launch(recipe, "--runs-dir", tmp_path / "runs").returncode == 0
    (first,) = run_dirs(tmp_path / "runs")
    proc = sapo_launch("rerun", Path("runs") / first.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (second,) = run_dirs(tmp_path / "runs") - {first}
    assert f"in {second}, on this machine (where runs/{first.name} ran)" in proc.stderr
    plan = json.loads((second / "plan.json").read_text())
    assert plan["env"]["VERL_FILE_LOGGER_PATH"] == str(second / "metrics.jsonl")
    assert plan["rerun_of"] == str(first)
    records = [json.loads(line) for line in (second / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3] and not any("source" in r for r in records)  # the file logger's


def test_report_judges_a_run_whose_launcher_was_lost(tmp_path):
    recipe = lifecycle_recipe(tmp_path, {"FAKE_STEPS": 300, "FAKE_SLEEP": 0.1, "FAKE_FILE_LOGGER": 0}, gates=FLOOR_ONLY)
    child = subprocess.Popen(
        [*launcher(), str(recipe), "--runs-dir", str(tmp_path / "runs")],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    for line in child.stdout:
        if line.startswith(b"step:2 "):
            break
    child.kill()  # no chance to record anything
    child.wait(timeout=30)
    child.stdout.close()
    (run_dir,) = run_dirs(tmp_path / "runs")
    assert summary(run_dir)["status"] == "running" and "gates" not in summary(run_dir)
    proc = sapo_launch("report", run_dir, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    recorded = summary(run_dir)
    assert recorded["status"] == "lost" and recorded["gates"][FLOOR]["status"] == "not judged"
    assert json.loads(proc.stdout)["gates"][FLOOR]["status"] == "not judged"
    steps = [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps[:2] == [1, 2]  # from the console lines train.log kept: the stand-in wrote no JSONL


def test_logs_follow_a_local_run_from_another_terminal_and_record_it_lost_when_its_launcher_dies(tmp_path):
    """`logs --follow` of a run here reads its train.log as it grows; when the launcher is killed (nothing recorded),
    the follower records the run `lost`, judged on its log (one write), and says so; `logs` prints the log."""
    recipe = lifecycle_recipe(tmp_path, {"FAKE_STEPS": 300, "FAKE_SLEEP": 0.1}, gates=FLOOR_ONLY)
    owner = subprocess.Popen(
        [*launcher(), str(recipe), "--runs-dir", str(tmp_path / "runs")],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not run_dirs(tmp_path / "runs") or "step:2 " not in _log(next(iter(run_dirs(tmp_path / "runs")))):
            assert time.monotonic() < deadline and owner.poll() is None, "the run never reached step 2"
            time.sleep(0.1)
        (run_dir,) = run_dirs(tmp_path / "runs")
        follower = subprocess.Popen(
            [*launcher(), "logs", "--follow", str(run_dir)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for line in follower.stdout:
            if line.startswith("step:3 "):
                break
        owner.kill()  # no chance to record anything
        owner.wait(timeout=30)
        out, err = follower.communicate(timeout=60)
    finally:
        owner.kill()
    assert follower.returncode == 2, err
    closing = err.splitlines()[-1]
    assert closing.startswith("sapo-launch: lost: the launcher (pid ") and closing.endswith(
        f"ended without recording the outcome; the trainer's process group ends with it; run directory {run_dir}"
    )
    recorded = summary(run_dir)
    assert recorded["status"] == "lost" and recorded["executor"] == "local"
    assert recorded["gates"][FLOOR]["status"] == "not judged"
    printed = sapo_launch("logs", run_dir)
    assert printed.returncode == 0 and printed.stdout == _log(run_dir) and "step:3 " in printed.stdout


def _log(run_dir: Path) -> str:
    return (run_dir / "train.log").read_text() if (run_dir / "train.log").exists() else ""


# -- on a Ray cluster ----------------------------------------------------------------------------------------------


def wait_for_end(address: str, run_dir: Path) -> str:
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(address)
    submission_id = json.loads((run_dir / "job.json").read_text())["submission_id"]
    deadline = time.monotonic() + 120
    while not client.get_job_status(submission_id).is_terminal():
        assert time.monotonic() < deadline, "the job did not end"
        time.sleep(0.2)
    return submission_id


def files(run_dir: Path) -> dict[str, str]:
    return {name: (run_dir / name).read_text() for name in ("train.log", "metrics.jsonl", "summary.json")}


def test_a_detached_job_is_judged_by_status_and_logs_follow_gives_the_same_files(tmp_path, ray_address):
    """A console-only trainer (no file logger: metrics only in the job's log) breaks the floor on a detached run
    with --fail-on-gates; `status` after its end records metrics.jsonl, the verdicts and the gate's exit code;
    `logs --follow`, twice, writes the same files."""
    recipe = lifecycle_recipe(tmp_path, {"FAKE_DIP_STEP": 2, "FAKE_FILE_LOGGER": 0}, overrides=ON_RAY)
    common = ("--runs-dir", tmp_path / "runs", "--address", ray_address, "--working-dir", REPO, "--shared-runs-dir")
    proc = sapo_launch(recipe, *common, "--detach", "--fail-on-gates")
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = run_dirs(tmp_path / "runs")
    wait_for_end(ray_address, run_dir)
    status = sapo_launch("status", run_dir)
    assert status.returncode == EXIT_GATES_FAILED, status.stderr
    recorded = summary(run_dir)
    assert recorded["status"] == "succeeded" and recorded["exit_code"] == EXIT_GATES_FAILED
    assert recorded["gates"][FLOOR]["violating_steps"] == [2]
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["source"]) for r in records] == [(1, "console"), (2, "console"), (3, "console")]
    judged = files(run_dir)
    for _ in range(2):
        follow = sapo_launch("logs", "--follow", run_dir)
        assert follow.returncode == EXIT_GATES_FAILED, follow.stderr
        assert (
            follow.stderr.splitlines()[-1] == f"sapo-launch: gates failed: {FLOOR}, {RISING}; run directory {run_dir}"
        )
        assert files(run_dir) == judged


def test_rerun_of_a_ray_run_submits_to_the_same_cluster(tmp_path, ray_address):
    recipe = lifecycle_recipe(tmp_path, {"FAKE_EXIT_CODE": 4}, overrides=ON_RAY, gates="")
    runs = tmp_path / "runs"
    runtime_env = tmp_path / "runtime_env.yaml"
    runtime_env.write_text("env_vars: {EXTRA_SETTING: '1'}\n")
    ray_options = ("--runtime-env", runtime_env, "--metadata", "team=rl", "--entrypoint-num-cpus", "0.5")
    proc = sapo_launch(
        recipe, "--runs-dir", runs, "--address", ray_address, "--working-dir", REPO, "--shared-runs-dir", *ray_options
    )
    assert proc.returncode == 4, proc.stderr
    (first,) = run_dirs(runs)
    job = json.loads((first / "job.json").read_text())
    again = sapo_launch("rerun", Path("runs") / first.name, cwd=tmp_path)  # a relative run directory
    assert again.returncode == 4, again.stderr
    (second,) = run_dirs(runs) - {first}
    assert f"in {second}, on the Ray cluster at {ray_address} (where runs/{first.name} ran)" in again.stderr
    rerun_job = json.loads((second / "job.json").read_text())
    assert rerun_job["address"] == job["address"] and rerun_job["submission_id"] != job["submission_id"]
    # the same entrypoint, but for the checkpoint directory: the rerun's own (tests/test_launch_checkpoints.py)
    assert rerun_job["entrypoint"] == job["entrypoint"].replace(first.name, second.name) != job["entrypoint"]
    assert rerun_job["working_dir"] == str(REPO)
    for request in job["request"], rerun_job["request"]:  # the Ray options go with it
        assert request["metadata"]["team"] == "rl" and request["entrypoint_num_cpus"] == 0.5
        assert request["runtime_env"]["env_vars"]["EXTRA_SETTING"] == "1"
    assert summary(second)["job_status"] == "FAILED"
    here = sapo_launch("rerun", first, "--local")
    assert here.returncode == 4 and "on this machine (--local)" in here.stderr, here.stderr
    (third,) = run_dirs(runs) - {first, second}
    assert not (third / "job.json").exists() and summary(third)["pid"] is not None
