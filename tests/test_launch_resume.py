"""A run resumed as one curve, reruns that change something, and restarts after a cluster failure (issue 35 items
11 and 12): through the installed console script, against the session's real local Ray head (tests/ray_cluster.py)
where Ray is involved, with the stand-in trainer (tests/fake_trainer.py), which saves checkpoints as verl does,
resumes as verl's trainer.resume_mode says and crashes at FAKE_CRASH_STEP. Waits are on events, never wall time."""

import json
import signal
import subprocess
from pathlib import Path

import pytest

from sapo_toolkit.launcher.lineage import Resume, read_curve
from sapo_toolkit.launcher.restarts import cluster_reason

from .helpers import ON_RAY, REPO, launcher, sapo_launch, stand_in
from .test_launch_ray_results import wait_until

pytestmark = pytest.mark.filterwarnings("ignore:ssl=None is deprecated:DeprecationWarning")

# A healthy curve: throughput 100 + step, reward 0.1 x step. The trend needs 8 readings: a run resumed after step 5
# of 10 has 5 of its own, so only its whole curve passes.
GATES = "gates:\n  - metric: perf/throughput\n    min: 90\n  - metric: critic/rewards/mean\n    trend: rising\n"


def recipe(folder: Path, env: dict, ray: bool = False) -> Path:
    return stand_in(folder, {"FAKE_SAVE": 1, **env}, overrides=ON_RAY if ray else "", gates=GATES, name="curve")


def on_ray(address: str) -> tuple:
    return ("--address", address, "--working-dir", REPO, "--shared-runs-dir")


def read(run_dir: Path, name: str) -> dict:
    return json.loads((run_dir / name).read_text())


def run_dirs(tmp_path: Path) -> list[Path]:
    """The run directories, in the order they were made (their names: the UTC second, then `-N`, `-attempt-N`)."""
    return sorted((tmp_path / "runs").iterdir())


def steps(run_dir: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


# -- item 11: resume ---------------------------------------------------------------------------------------------------


def test_a_crashed_run_resumed_here_passes_its_gates_over_the_whole_curve(tmp_path):
    """The default suite's resume: on this machine, the gates a crash split (five readings each side) passed."""
    crashed = sapo_launch(recipe(tmp_path, {"FAKE_STEPS": 10, "FAKE_CRASH_STEP": 5}), "--runs-dir", tmp_path / "runs")
    assert crashed.returncode == 1, crashed.stderr
    (parent,) = run_dirs(tmp_path)
    resumed = sapo_launch("resume", parent, "--fail-on-gates")
    assert resumed.returncode == 0, resumed.stderr
    child = run_dirs(tmp_path)[1]
    assert "resumed from step 5" in (child / "train.log").read_text() and steps(child) == [6, 7, 8, 9, 10]
    assert all(v["passed"] and v["n"] == 10 for v in read(child, "summary.json")["gates"].values())
    assert read(child, "plan.json")["resume"]["of"] == str(parent)
    assert read(parent, "summary.json")["resumed_by"] == [str(child)]


@pytest.mark.slow
def test_a_crashed_ray_run_resumed_is_judged_and_reported_as_one_curve(tmp_path, ray_address):
    runs = ("--runs-dir", tmp_path / "runs")
    env = {"FAKE_STEPS": 10, "FAKE_CRASH_STEP": 5}
    crashed = sapo_launch(recipe(tmp_path, env, ray=True), *on_ray(ray_address), *runs, "--fail-on-gates")
    assert crashed.returncode == 1, crashed.stderr
    (parent,) = run_dirs(tmp_path)
    assert read(parent, "summary.json")["status"] == "failed"

    resumed = sapo_launch("resume", parent, "--fail-on-gates")
    assert resumed.returncode == 0, resumed.stderr
    child = run_dirs(tmp_path)[1]
    assert f"resumes  {parent} from step 5 (trainer.resume_mode=resume_path)" in resumed.stderr
    assert resumed.stderr.splitlines()[-1] == f"sapo-launch: succeeded; run directory {child}"
    log = (child / "train.log").read_text()
    checkpoints = parent / "checkpoints"
    assert "resumed from step 5" in log and f"checkpoint dir {checkpoints}" in log
    assert f"trainer.resume_from_path={checkpoints}/global_step_5" in read(child, "job.json")["entrypoint"]
    # Its own metrics are steps 6-10 (five readings: too few for the trend); its gates are over all ten.
    assert steps(child) == [6, 7, 8, 9, 10]
    gates = read(child, "summary.json")["gates"]
    assert {name: verdict["passed"] for name, verdict in gates.items()} == {
        "perf/throughput >= 90 (every, after 0)": True,
        "critic/rewards/mean rising (after 0)": True,
    }
    assert gates["perf/throughput >= 90 (every, after 0)"]["n"] == 10

    # Linked both ways.
    assert read(child, "plan.json")["resume"] == {
        "of": str(parent),
        "checkpoint_dir": str(checkpoints),
        "step": 5,
        "mode": "resume_path",
        "attempt": None,
        "reason": None,
    }
    assert "rerun_of" not in read(child, "plan.json")
    assert read(parent, "summary.json")["resumed_by"] == [str(child)]

    status = sapo_launch("status", child)
    assert status.returncode == 0, status.stderr
    assert f"resumes {parent} from step 5\n" in status.stdout
    assert f"curve: steps 1-10 over 2 runs ({parent.name} 1-5, {child.name} 6-10)\n" in status.stdout
    assert f"resumed by {child}" in sapo_launch("status", parent).stdout

    report = sapo_launch("report", child, "--format", "json", "--fail-on-gates")
    assert report.returncode == 0, report.stderr
    shown = json.loads(report.stdout)
    assert shown["steps"] == 10 and all(v["passed"] for v in shown["gates"].values())
    assert shown["gates"]["critic/rewards/mean rising (after 0)"]["n"] == 10
    assert "| last step | 10 |" in (child / "report.md").read_text()


def test_a_curve_keeps_each_run_s_steps_up_to_the_resume_and_the_later_value_of_a_step_both_logged(tmp_path):
    """Run A logged steps 1-7 and saved step 5; B resumed from 5: it validated at 5, then trained 6-8. The curve
    is A's 1-5 (its 6 and 7 are of a branch B replaced), B's validation merged into step 5, then B's 6-8."""
    parent, child = tmp_path / "a", tmp_path / "b"
    for run_dir, records in (
        (parent, [(s, {"perf/throughput": 100.0 + s}) for s in range(1, 8)]),
        (child, [(5, {"val/score": 0.5}), *((s, {"perf/throughput": 200.0 + s}) for s in (6, 7, 8))]),
    ):
        run_dir.mkdir()
        lines = [json.dumps({"step": step, "data": data}) for step, data in records]
        (run_dir / "metrics.jsonl").write_text("".join(line + "\n" for line in lines))
        (run_dir / "plan.json").write_text("{}")
    resume = Resume(str(parent), str(parent / "checkpoints"), 5, "resume_path")
    (child / "plan.json").write_text(json.dumps({"resume": resume._asdict()}))
    curve = read_curve(child)
    assert curve.table.series("perf/throughput") == [(1, 101), (2, 102), (3, 103), (4, 104), (5, 105)] + [
        (6, 206),
        (7, 207),
        (8, 208),
    ]
    assert curve.table.at(5) == {"perf/throughput": 105.0, "val/score": 0.5}
    assert [(p.run_dir, p.first, p.last) for p in curve.parts] == [(parent, 1, 5), (child, 5, 8)]


def test_what_cannot_be_resumed_is_one_line_and_exit_2(tmp_path):
    unsaved = stand_in(tmp_path / "unsaved", {"FAKE_STEPS": 2, "FAKE_CRASH_STEP": 1}, name="unsaved")
    crashed = sapo_launch(unsaved, "--runs-dir", tmp_path / "runs")
    assert crashed.returncode == 1, crashed.stderr
    (run_dir,) = run_dirs(tmp_path)
    for args, said in (
        ((), "holds no checkpoint (no latest_checkpointed_iteration.txt: verl saves one every trainer.save_freq"),
        (("trainer.resume_mode=disable",), "trainer.resume_mode: a resume sets verl's resume mode itself"),
        (("trainer.default_local_dir=/elsewhere",), "trainer.default_local_dir is not an override of a rerun"),
        (("trainer.total_epochs=[1",), "not a Hydra override: `trainer.total_epochs=[1`: "),
    ):
        proc = sapo_launch("resume", run_dir, *args)
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.splitlines()) == 1 and said in proc.stderr, proc.stderr
    assert len(run_dirs(tmp_path)) == 1  # nothing was made


def test_a_run_that_has_not_ended_is_not_resumed(tmp_path):
    going = subprocess.Popen(
        [*launcher(), recipe(tmp_path, {"FAKE_STEPS": 500, "FAKE_SLEEP": 0.2}), "--runs-dir", tmp_path / "runs"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        log = tmp_path / "runs"
        wait_until(lambda: any("step:1 " in f.read_text() for f in log.glob("*/train.log")), "the run reached step 1")
        (run_dir,) = run_dirs(tmp_path)
        proc = sapo_launch("resume", run_dir)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr == (
            f"sapo-launch: {run_dir} has not ended (running): resume it once it has, or `sapo-launch stop {run_dir}`\n"
        )
    finally:
        going.send_signal(signal.SIGTERM)
        assert going.wait(timeout=60) == 128 + signal.SIGTERM


# -- rerun: overrides, --dry-run, --detach -----------------------------------------------------------------------------


def test_rerun_takes_overrides_and_dry_run_here(tmp_path):
    first = sapo_launch(recipe(tmp_path, {"FAKE_STEPS": 2}), "--runs-dir", tmp_path / "runs")
    assert first.returncode == 0, first.stderr
    (run_dir,) = run_dirs(tmp_path)
    change = ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", "trainer.val_before_train=false")
    dry = sapo_launch("rerun", run_dir, *change, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    (argv,) = [line for line in dry.stderr.splitlines() if line.startswith("argv ")]
    assert "ppo_micro_batch_size_per_gpu=4" in argv and "ppo_micro_batch_size_per_gpu=2" not in argv
    assert argv.endswith(" trainer.val_before_train=false")
    assert len(run_dirs(tmp_path)) == 1
    refused = sapo_launch("rerun", run_dir, "trainer.bogus_key=1", *change)  # through the lint gate, as a launch
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.splitlines()[-2:] == [
        "--override:1:1: SL001 unknown key `trainer.bogus_key`: not in verl 0.9.1 `ppo_trainer` (model_engine=dp), so "
        "Hydra refuses it at compose.",
        "sapo-launch: refused: the overrides have lint errors",
    ]
    detached = sapo_launch("rerun", run_dir, "--detach")
    assert detached.returncode == 2 and "--detach needs a Ray cluster" in detached.stderr, detached.stderr
    again = sapo_launch("rerun", run_dir, *change)
    assert again.returncode == 0, again.stderr
    rerun = run_dirs(tmp_path)[1]
    assert read(rerun, "plan.json")["overrides"] == list(change)
    assert read(rerun, "plan.json")["rerun_of"] == str(run_dir)
    assert '"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"' in (rerun / "train.log").read_text()


@pytest.mark.slow
def test_rerun_detached_on_ray_with_an_override(tmp_path, ray_address):
    first = sapo_launch(
        recipe(tmp_path, {"FAKE_STEPS": 2}, ray=True), *on_ray(ray_address), "--runs-dir", tmp_path / "runs"
    )
    assert first.returncode == 0, first.stderr
    (run_dir,) = run_dirs(tmp_path)
    rerun = sapo_launch("rerun", run_dir, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", "--detach")
    assert rerun.returncode == 0, rerun.stderr
    new = run_dirs(tmp_path)[1]
    assert read(new, "summary.json")["status"] == "submitted"
    followed = sapo_launch("logs", "--follow", new)
    assert followed.returncode == 0, followed.stderr
    assert "ppo_micro_batch_size_per_gpu=4" in read(new, "job.json")["entrypoint"]
    assert read(new, "summary.json")["status"] == "succeeded"


# -- item 12: --max-restarts -------------------------------------------------------------------------------------------


def test_a_trainer_killed_here_by_a_signal_nobody_sent_is_restarted_and_an_error_is_not(tmp_path):
    killed = {"FAKE_STEPS": 10, "FAKE_CRASH_STEP": 4, "FAKE_CRASH_SIGNAL": "KILL"}
    proc = sapo_launch(recipe(tmp_path / "a", killed), "--runs-dir", tmp_path / "a" / "runs", "--max-restarts", "2")
    assert proc.returncode == 0, proc.stderr
    first, second = run_dirs(tmp_path / "a")
    assert [a["status"] for a in read(first, "summary.json")["attempts"]] == ["failed", "succeeded"]
    assert read(second, "plan.json")["resume"]["step"] == 4 and steps(second) == [5, 6, 7, 8, 9, 10]
    error = {"FAKE_STEPS": 10, "FAKE_CRASH_STEP": 4}
    proc = sapo_launch(recipe(tmp_path / "b", error), "--runs-dir", tmp_path / "b" / "runs", "--max-restarts", "2")
    assert proc.returncode == 1 and "restart" not in proc.stderr, proc.stderr
    assert len(run_dirs(tmp_path / "b")) == 1


@pytest.mark.slow
def test_a_ray_job_killed_by_a_signal_nobody_sent_is_restarted_once_from_its_checkpoint(tmp_path, ray_address):
    """The driver ends by SIGKILL, as the out-of-memory killer ends it: one restart, resumed from step 3, the
    attempts recorded, the curve whole; the exit code is the last attempt's."""
    env = {"FAKE_STEPS": 10, "FAKE_CRASH_STEP": 3, "FAKE_CRASH_SIGNAL": "KILL"}
    runs = ("--runs-dir", tmp_path / "runs")
    proc = sapo_launch(recipe(tmp_path, env, ray=True), *on_ray(ray_address), *runs, "--max-restarts", "1")
    assert proc.returncode == 0, proc.stderr
    first, second = run_dirs(tmp_path)
    assert second.name == f"{first.name}-attempt-2"
    reason = "the trainer was killed by SIGKILL, which the launcher did not send"
    assert f"sapo-launch: restart 1 of 1: {reason}; resuming {first} from step 3 in {second}" in proc.stderr
    attempts = read(first, "summary.json")["attempts"]
    assert [(a["attempt"], a["run_dir"], a["status"], a["exit_code"], a.get("reason")) for a in attempts] == [
        (1, str(first), "failed", 137, None),
        (2, str(second), "succeeded", 0, reason),
    ]
    assert all(a["started"] and a["ended"] for a in attempts)
    resume = read(second, "plan.json")["resume"]
    assert (resume["of"], resume["step"], resume["attempt"], resume["reason"]) == (str(first), 3, 2, reason)
    assert read(first, "summary.json")["resumed_by"] == [str(second)]
    assert read(second, "summary.json")["gates"]["critic/rewards/mean rising (after 0)"]["passed"]


def test_a_trainer_error_is_never_restarted(tmp_path, ray_address):
    env = {"FAKE_STEPS": 10, "FAKE_CRASH_STEP": 3}
    runs = ("--runs-dir", tmp_path / "runs")
    proc = sapo_launch(recipe(tmp_path, env, ray=True), *on_ray(ray_address), *runs, "--max-restarts", "1")
    assert proc.returncode == 1, proc.stderr
    (only,) = run_dirs(tmp_path)
    assert "restart" not in proc.stderr
    assert [a["attempt"] for a in read(only, "summary.json")["attempts"]] == [1]
    detached = sapo_launch(recipe(tmp_path, env, ray=True), *on_ray(ray_address), *runs, "--max-restarts=1", "--detach")
    assert detached.returncode == 2 and "not with --detach" in detached.stderr, detached.stderr


@pytest.mark.parametrize(
    ("summary", "restarted"),
    [
        ({"status": "lost", "reason": "the Ray cluster at X no longer knows job J (restarted?)"}, True),
        ({"status": "failed", "job_status": "FAILED", "exit_code": 1, "reason": "ERROR: No matching dist"}, True),
        ({"status": "failed", "job_status": "FAILED", "exit_code": 1, "reason": "Job supervisor actor died"}, True),
        ({"status": "failed", "exit_code": 137, "signals": []}, True),
        ({"status": "failed", "exit_code": 1}, False),
        (
            {
                "status": "failed",
                "job_status": "FAILED",
                "exit_code": 1,
                "reason": "x",
                "message": "Job entrypoint command failed with exit code 1, last available logs",
            },
            False,
        ),  # fmt: skip
        ({"status": "failed", "exit_code": 139, "signals": []}, False),
        ({"status": "failed", "exit_code": 143, "signals": []}, False),
        ({"status": "interrupted", "exit_code": 137, "signals": ["SIGTERM"]}, False),
        ({"status": "interrupted", "job_status": "STOPPED", "exit_code": 130}, False),
        ({"status": "succeeded", "exit_code": 8}, False),
        ({"status": "refused", "exit_code": 1}, False),
    ],
)
def test_only_a_cluster_reason_restarts(summary, restarted):
    assert (cluster_reason(summary) is not None) == restarted
