"""Where a run's checkpoints go (issue 35 item 3; launcher/plan.py `checkpoint_plan`): verl's default
trainer.default_local_dir is relative, and under a Ray working_dir it lands in Ray's per-job copy of it. Each run gets
a directory of its own on storage the user names (the recipe's `checkpoints:`, `--checkpoints`, or the run directory
where the trainer reaches it), recorded in plan.json, summary.json and the dry run; a relative one under a Ray
working_dir is refused. Through the console script, against the session's real Ray head where Ray is involved; the
stand-in trainer (tests/fake_trainer.py) saves and resumes as verl's resume_mode=auto does."""

import json
from pathlib import Path

from sapo_toolkit.launcher import rundir
from sapo_toolkit.launcher.plan import Checkpoints, LintReport, Plan, checkpoint_override

from .helpers import ON_RAY, REPO, sapo_launch, stand_in

RESUMED = "resumed from step"


def recipe_with(tmp_path: Path, top: str = "", overrides: str = "", env: dict | None = None) -> Path:
    """The stand-in trainer's recipe, saving checkpoints, with `top` (top-level YAML) after it."""
    recipe = stand_in(tmp_path, {"FAKE_SAVE": 1, **(env or {})}, overrides=overrides, name="ckpt")
    recipe.write_text(recipe.read_text() + top)
    return recipe


def run_dirs(runs: Path) -> list[Path]:
    return sorted(runs.iterdir(), key=lambda p: p.stat().st_mtime_ns)


def test_a_local_run_saves_in_its_run_directory_and_a_rerun_in_its_own(tmp_path):
    runs = tmp_path / "runs"
    proc = sapo_launch(recipe_with(tmp_path), "--runs-dir", runs)
    assert proc.returncode == 0, proc.stderr
    (first,) = run_dirs(runs)
    own = first / "checkpoints"
    assert f"checkpoint dir {own}" in proc.stdout and RESUMED not in proc.stdout
    assert (own / "latest_checkpointed_iteration.txt").read_text() == "3"
    plan = json.loads((first / "plan.json").read_text())
    assert plan["checkpoints"] == {"dir": str(own), "source": "run_dir", "root": None}
    assert checkpoint_override(str(own)) in plan["argv"]
    assert json.loads((first / "summary.json").read_text())["checkpoint_dir"] == str(own)

    again = sapo_launch("rerun", first, "--runs-dir", runs)
    assert again.returncode == 0, again.stderr
    second = next(d for d in run_dirs(runs) if d != first)
    assert f"checkpoint dir {second / 'checkpoints'}" in again.stdout and RESUMED not in again.stdout
    assert json.loads((second / "plan.json").read_text())["checkpoints"]["dir"] == str(second / "checkpoints")


def test_the_recipe_s_own_directory_is_kept_and_a_rerun_resumes_from_it(tmp_path):
    """A trainer.default_local_dir the recipe sets is the user's choice for every run: kept as written, recorded,
    and a rerun of a crashed run resumes there, as verl's resume_mode=auto does."""
    fixed = tmp_path / "fixed"
    recipe = recipe_with(
        tmp_path, "checkpoints: ignored\n", overrides=f"  trainer.default_local_dir: {fixed}\n", env={"FAKE_STEPS": 2}
    )
    runs = tmp_path / "runs"
    dry = sapo_launch(recipe, "--runs-dir", runs, "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert f"ckpt     {fixed} (the recipe's trainer.default_local_dir)" in dry.stdout
    assert "note     `checkpoints: ignored` unused: the recipe sets trainer.default_local_dir itself" in dry.stdout
    proc = sapo_launch(recipe, "--runs-dir", runs)
    assert proc.returncode == 0, proc.stderr
    (first,) = run_dirs(runs)
    assert json.loads((first / "plan.json").read_text())["checkpoints"]["source"] == "recipe"
    again = sapo_launch("rerun", first, "--runs-dir", runs)
    assert again.returncode == 0, again.stderr
    assert f"checkpoint dir {fixed}" in again.stdout and f"{RESUMED} 2" in again.stdout


def test_checkpoints_setting_names_each_run_s_directory(tmp_path):
    """`checkpoints: DIR` (a leading ~ is the user's home) -> DIR/<run directory's name>; --checkpoints wins."""
    recipe = recipe_with(tmp_path, "checkpoints: ~/sapo-ckpt\n")
    dry = sapo_launch(recipe, "--runs-dir", tmp_path / "runs", "--dry-run", "--format", "json")
    assert dry.returncode == 0, dry.stderr
    shown = json.loads(dry.stdout)
    name = Path(shown["run_dir"]).name
    home = str(Path.home())
    assert shown["checkpoints"] == {
        "dir": f"{home}/sapo-ckpt/{name}",
        "source": "checkpoints",
        "root": f"{home}/sapo-ckpt",
    }
    assert checkpoint_override(f"{home}/sapo-ckpt/{name}") in shown["argv"]
    given = sapo_launch(recipe, "--runs-dir", tmp_path / "runs", "--dry-run", "--checkpoints", tmp_path / "elsewhere")
    assert f"ckpt     {tmp_path / 'elsewhere'}/ckpt-" in given.stdout, given.stdout


def test_a_run_directory_made_with_a_suffix_takes_its_checkpoint_directory_along(tmp_path):
    """Launches in the same second get `<run dir>-2`: the checkpoint directory named after it follows, argv too."""
    made = tmp_path / "runs" / "ckpt-20260101T000000Z"
    made.mkdir(parents=True)
    checkpoints = Checkpoints(None, "checkpoints", str(tmp_path / "ck")).for_run_dir(str(made))
    plan = Plan(
        str(tmp_path / "r.yaml"), "ckpt", None, None,
        ("python", "-m", "x", "--config-name", "ppo_trainer", checkpoint_override(checkpoints.dir)),
        (), str(tmp_path), str(made), LintReport(()), {}, "0" * 64, (), checkpoints=checkpoints,
    )  # fmt: skip
    created = rundir.create(plan, {})
    assert created.name == "ckpt-20260101T000000Z-2"
    assert plan.checkpoints.dir == str(tmp_path / "ck" / created.name)
    assert plan.argv[-1] == checkpoint_override(str(tmp_path / "ck" / created.name))


def test_a_relative_checkpoint_directory_under_a_ray_working_dir_is_refused(tmp_path):
    """verl's default, or a relative one of the recipe's: one line with the hint, exit 1, no run directory made,
    nothing sent (the address is never asked)."""
    runs = tmp_path / "runs"
    ray = ("--address", "127.0.0.1:9", "--working-dir", REPO, "--runs-dir", runs)
    default = sapo_launch(recipe_with(tmp_path / "a", overrides=ON_RAY), *ray)
    assert default.returncode == 1, default.stderr
    assert default.stderr.splitlines() == [
        "sapo-launch: refused: verl's default trainer.default_local_dir "
        "(checkpoints/${trainer.project_name}/${trainer.experiment_name}) is relative: checkpoints would land in "
        "Ray's per-job copy of the working directory, lost to every other run; set `checkpoints: DIR` in the recipe "
        "(or --checkpoints DIR) to a directory the cluster's nodes share, or pass --shared-runs-dir when the runs "
        "directory is on such storage"
    ]
    relative = recipe_with(tmp_path / "b", overrides=ON_RAY + "  trainer.default_local_dir: ckpt/x\n")
    proc = sapo_launch(relative, *ray)
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "trainer.default_local_dir=ckpt/x is relative" in proc.stderr and "make it absolute" in proc.stderr
    dry = sapo_launch(relative, *ray, "--dry-run")
    assert dry.returncode == 1 and "refused  trainer.default_local_dir=ckpt/x is relative" in dry.stdout
    assert not runs.exists()


def test_a_ray_run_saves_where_checkpoints_names_and_a_rerun_in_its_own(tmp_path, ray_address):
    """On the real head with the repository as working_dir: the job's checkpoints land under `checkpoints:`, not in
    Ray's copy of the working directory; the rerun (same cluster, same working directory) starts from scratch in
    its own directory."""
    shared = tmp_path / "shared"
    recipe = recipe_with(tmp_path, f"checkpoints: {shared}\n", overrides=ON_RAY)
    runs = tmp_path / "runs"
    proc = sapo_launch(recipe, "--address", ray_address, "--working-dir", REPO, "--runs-dir", runs)
    assert proc.returncode == 0, proc.stderr
    (first,) = run_dirs(runs)
    own = shared / first.name
    assert (own / "latest_checkpointed_iteration.txt").read_text() == "3"
    assert f"checkpoint dir {own}" in (first / "train.log").read_text()
    assert json.loads((first / "summary.json").read_text())["checkpoint_dir"] == str(own)
    assert f"trainer.default_local_dir={own}" in json.loads((first / "job.json").read_text())["entrypoint"]

    again = sapo_launch("rerun", first, "--runs-dir", runs)
    assert again.returncode == 0, again.stderr
    second = next(d for d in run_dirs(runs) if d != first)
    log = (second / "train.log").read_text()
    assert f"checkpoint dir {shared / second.name}" in log and RESUMED not in log
    assert (shared / second.name / "latest_checkpointed_iteration.txt").read_text() == "3"
