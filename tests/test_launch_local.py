"""`sapo-launch` end to end on this machine, with a stand-in trainer (tests/fake_trainer.py) as the recipe's
entrypoint: exit codes propagate, SIGTERM reaches the trainer and the run is marked interrupted, the run directory
is complete, secrets never reach a file, and a recipe that does not lint never starts."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .helpers import REPO, launch, launcher, stand_in

SECRET = "s3cr3t-value-never-written"
RUN_FILES = {
    "recipe.resolved.yaml",
    "plan.json",
    "environment.json",
    "lint.json",
    "train.log",
    "metrics.jsonl",
    "summary.json",
}


def fake_recipe(tmp_path: Path, env: dict, overrides: str = "") -> Path:
    """The stand-in trainer's recipe, `fake.yaml`, with a secret in its environment (which no file may hold)."""
    return stand_in(tmp_path, {"WANDB_API_KEY": SECRET, **env}, overrides, name="fake")


def only_run_dir(tmp_path) -> Path:
    (run_dir,) = (tmp_path / "runs").iterdir()
    return run_dir


def assert_no_secret(run_dir: Path):
    for f in run_dir.iterdir():
        assert SECRET not in f.read_text(errors="replace"), f.name


@pytest.mark.parametrize("code", [0, 3])
def test_exit_code_propagates_and_the_run_directory_is_complete(tmp_path, code):
    proc = launch(tmp_path, fake_recipe(tmp_path, {"FAKE_EXIT_CODE": code}))
    assert proc.returncode == code, proc.stderr
    run_dir = only_run_dir(tmp_path)
    assert {f.name for f in run_dir.iterdir()} == RUN_FILES
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == ("succeeded" if code == 0 else "failed") and summary["exit_code"] == code
    assert summary["last_lines"][-1].startswith("step:3 - perf/throughput:103.0")
    assert "step:2 - perf/throughput:102.0" in proc.stdout  # teed to the terminal too
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2, 3]
    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan["env"]["WANDB_API_KEY"] == "<redacted>"
    assert plan["argv"][1:5] == ["-m", "tests.fake_trainer", "--config-name", "ppo_trainer"]
    assert "trainer.logger=[console,wandb,file]" in plan["argv"]
    environment = json.loads((run_dir / "environment.json").read_text())
    assert set(environment["versions"]) >= {"torch", "verl", "ray", "vllm"}
    assert environment["git"] is None  # the recipe lies outside any git repository
    assert_no_secret(run_dir)


def test_sigterm_reaches_the_trainer_and_the_run_is_interrupted(tmp_path):
    recipe = fake_recipe(tmp_path, {"FAKE_STEPS": 100, "FAKE_SLEEP": 0.2, "CUSTOM_PASSWD": "plain"})
    proc = subprocess.Popen(
        [*launcher(), str(recipe), "--runs-dir", str(tmp_path / "runs"), "--secret-env", "CUSTOM_PASSWD"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        logs = list((tmp_path / "runs").glob("*/train.log"))
        if logs and "step:2 " in logs[0].read_text():
            break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("the trainer never reached step 2")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    run_dir = only_run_dir(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["signals"] == ["SIGTERM"]
    with pytest.raises(ProcessLookupError):  # the trainer's group is gone
        os.killpg(summary["pid"], 0)
    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan["env"]["CUSTOM_PASSWD"] == "<redacted>"
    assert "plain" not in (run_dir / "recipe.resolved.yaml").read_text()
    assert_no_secret(run_dir)


@pytest.mark.parametrize(
    "override,code",
    [
        ("+actor_rollout_ref.rollout.sampling_temperature: 0.7", "SL003"),
        ("+actor_rollout_ref.actor.policy_loss.tau_pos: 1.2", "SP001"),
    ],
)
def test_a_recipe_that_does_not_lint_is_refused_before_anything_starts(tmp_path, override, code):
    recipe = fake_recipe(tmp_path, {"FAKE_EXIT_CODE": 0}, overrides=f"  {override}\n")
    proc = launch(tmp_path, recipe)
    assert proc.returncode == 1
    assert code in proc.stderr and "refused" in proc.stderr
    run_dir = only_run_dir(tmp_path)
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "refused"
    assert not (run_dir / "train.log").exists() and "argv:" not in proc.stdout  # no trainer ran
    assert code in {d["code"] for d in json.loads((run_dir / "lint.json").read_text())["diagnostics"]}


def test_dry_run_prints_the_plan_and_starts_nothing(tmp_path):
    proc = launch(
        tmp_path,
        REPO / "recipes" / "qwen3-30b-a3b-sapo.yaml",
        "--dry-run",
        "--format",
        "json",
        "--device",
        "npu",
        "--variant",
        "recompute=full",
    )
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["argv"][2:5] == ["verl.trainer.main_ppo", "--config-name", "ppo_trainer"]
    assert "model_engine=megatron" in plan["argv"]
    assert "trainer.device=npu" in plan["argv"] and plan["lint"]["summary"]["error"] == 0
    assert not (tmp_path / "runs").exists()
    text = launch(
        tmp_path,
        REPO / "recipes" / "qwen3-30b-a3b-sapo.yaml",
        "--dry-run",
        "--device",
        "gpu",
        "--variant",
        "recompute=selective",
    )
    assert text.returncode == 0 and "    actor_rollout_ref.actor.policy_loss.loss_mode=sapo" in text.stdout


def test_dry_run_of_a_refused_recipe_exits_1(tmp_path):
    recipe = fake_recipe(tmp_path, {}, overrides="  +actor_rollout_ref.actor.policy_loss.tau_pos: 1.2\n")
    proc = launch(tmp_path, recipe, "--dry-run")
    assert proc.returncode == 1 and "SP001" in proc.stdout and "refused" in proc.stdout


def test_a_run_script_is_pointed_at_convert(tmp_path):
    script = tmp_path / "run_x_megatron.sh"
    script.write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=1\n")
    proc = launch(tmp_path, script)
    assert proc.returncode == 2 and "sapo-lint convert" in proc.stderr and "Traceback" not in proc.stderr


def test_rerun_replays_the_recorded_plan(tmp_path):
    assert launch(tmp_path, fake_recipe(tmp_path, {"FAKE_EXIT_CODE": 4})).returncode == 4
    first = only_run_dir(tmp_path)
    env = {**os.environ, "WANDB_API_KEY": SECRET}
    proc = subprocess.run(
        [*launcher(), "rerun", str(first)], cwd=REPO, capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 4, proc.stderr
    (second,) = [d for d in (tmp_path / "runs").iterdir() if d != first]
    plan = json.loads((second / "plan.json").read_text())
    assert plan["rerun_of"] == str(first)
    recorded = json.loads((first / "plan.json").read_text())["argv"]
    # the same argv, but for the checkpoint directory: the rerun's own (tests/test_launch_checkpoints.py)
    assert plan["argv"] == [a.replace(first.name, second.name) for a in recorded] != recorded
    assert plan["env"]["VERL_FILE_LOGGER_PATH"] == str(second / "metrics.jsonl")
    assert_no_secret(second)
    proc = subprocess.run(
        [*launcher(), "rerun", str(first)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "WANDB_API_KEY"},
    )
    assert proc.returncode == 2 and "WANDB_API_KEY was redacted" in proc.stderr


def test_url_credentials_in_the_recipe_env_reach_no_file(tmp_path):
    """A variable under no secret name whose value is a URL with credentials (a password with a raw `/`, as
    generated tokens have) is redacted as a secret is, and recorded as one: `rerun` takes it from the environment."""
    endpoint = "https://me:t0k/en@mirror.example/simple"
    recipe = fake_recipe(tmp_path, {"HF_ENDPOINT": endpoint, "FAKE_STEPS": 1})
    dry = launch(tmp_path, recipe, "--dry-run")
    assert dry.returncode == 0 and "t0k" not in dry.stdout + dry.stderr, dry.stdout
    done = launch(tmp_path, recipe)
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(tmp_path)
    for f in run_dir.iterdir():
        assert "t0k" not in f.read_text(errors="replace"), f.name
    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan["env"]["HF_ENDPOINT"] == "<redacted>" and "HF_ENDPOINT" in plan["secret_env"]
    rerun = subprocess.run(
        [*launcher(), "rerun", "--dry-run", str(run_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "HF_ENDPOINT"},
    )
    assert rerun.returncode == 2 and "HF_ENDPOINT was redacted" in rerun.stderr, rerun.stderr
