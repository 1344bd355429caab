"""A recipe runs with no flags: each variant axis may name its default (`variant_defaults:`), which the command
line and device detection override; the linter still lints every variant; the shipped recipes declare theirs and
their gates can pass; `~` and `$HOME` in path values are expanded at plan time, as bash would."""

import json
import os
import subprocess
from datetime import datetime, timezone

import pytest
import yaml

from sapo_toolkit.launcher.plan import Facts, PlanError, plan
from sapo_toolkit.linter.settings import Settings

from .helpers import REPO, launch, launcher, recipe
from .test_launch_local import only_run_dir

RECIPES = sorted((REPO / "recipes").glob("*.yaml"))
FACTS = Facts(None, "/usr/bin/python3", "/work", 16, datetime(2026, 12, 1, tzinfo=timezone.utc), "runs")

AXES = """overrides:
  actor_rollout_ref.actor.policy_loss.loss_mode: sapo
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 2
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 4
variants:
  device:
    npu: {overrides: {trainer.device: npu}}
    gpu: {overrides: {trainer.device: cuda}}
  recompute:
    full: {env: {RECOMPUTE: full}}
    default: {env: {RECOMPUTE: default}}
    none: {}
"""


def dry_run(path, *args, env=None):
    proc = subprocess.run(
        [*launcher(), str(path), "--dry-run", "--format", "json", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    return proc, (json.loads(proc.stdout) if proc.returncode in (0, 1) and proc.stdout.startswith("{") else None)


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_every_shipped_recipe_launches_with_no_flags(path):
    proc, shown = dry_run(path)
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load(path.read_text())
    for axis, value in data["variant_defaults"].items():
        if axis != "device":  # a device this machine has wins over the recipe's default
            assert f"{axis.upper()}={value}" in shown["variant"].split(",")
    assert set(data["variant_defaults"]) == set(data["variants"]), "every axis has a default"


def test_a_variant_named_default_is_a_variant_and_a_default_is_overridden(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(recipe(AXES + "variant_defaults: {recompute: default}\n"))
    _, shown = dry_run(path, "--device", "gpu")
    assert shown["variant"] == "DEVICE=gpu,RECOMPUTE=default" and shown["env"]["RECOMPUTE"] == "default"
    assert "RECOMPUTE=default: the recipe's default (`variant_defaults:`)" in shown["notes"]
    _, shown = dry_run(path, "--device", "gpu", "--variant", "recompute=full")
    assert shown["variant"] == "DEVICE=gpu,RECOMPUTE=full" and shown["env"]["RECOMPUTE"] == "full"
    assert not any("variant_defaults" in note for note in shown["notes"])


def test_a_detected_device_wins_over_the_default_which_applies_when_none_is(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(recipe(AXES + "variant_defaults: {device: npu, recompute: none}\n"))
    assert plan(path, settings=Settings(), facts=FACTS, device=None).variant == "DEVICE=npu,RECOMPUTE=none"
    assert plan(path, settings=Settings(), facts=FACTS, device="gpu").variant == "DEVICE=gpu,RECOMPUTE=none"


def test_an_axis_without_a_default_still_needs_a_choice(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(recipe(AXES + "variant_defaults: {device: npu}\n"))
    with pytest.raises(PlanError, match=r"choose a variant: --variant recompute=default\|full\|none \(or name"):
        plan(path, settings=Settings(), facts=FACTS, device=None)
    proc, _ = dry_run(path, "--device", "gpu")
    assert proc.returncode == 2 and "--variant recompute=default|full|none" in proc.stderr


@pytest.mark.parametrize(
    "defaults, message",
    [
        ("{recompute: selective}", "variant_defaults.recompute: `selective` is not a variant of recompute (one of"),
        ("{backend: vllm}", "variant_defaults.backend: the recipe has no variant axis `backend` (its axes: device, r"),
    ],
)
def test_a_default_the_recipe_does_not_have_is_a_lint_error(tmp_path, defaults, message):
    path = tmp_path / "r.yaml"
    path.write_text(recipe(AXES + f"variant_defaults: {defaults}\n"))
    proc = subprocess.run(
        ["sapo-lint", str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 1 and f"RF001 {message}" in proc.stdout, proc.stdout


def test_every_variant_is_still_linted(tmp_path):
    path = tmp_path / "r.yaml"
    broken = AXES.replace("none: {}", "none: {overrides: {trainer.nnodes: two}}")
    path.write_text(recipe(broken + "variant_defaults: {device: gpu, recompute: full}\n"))
    proc = subprocess.run(
        ["sapo-lint", "--format", "json", str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    found = [d for d in json.loads(proc.stdout)["diagnostics"] if d["code"] == "SL004"]
    assert proc.returncode == 1 and [d["variant"] for d in found] == ["RECOMPUTE=none"]


def test_the_smoke_recipes_gates_pass_on_a_run_of_its_length(tmp_path):
    """The stand-in trainer logs throughput 100 + step and reward 0.1 x step, for as many steps as the recipe runs."""
    smoke = (REPO / "recipes" / "smoke-qwen3-0.6b-sapo.yaml").read_text()
    steps = yaml.safe_load(smoke)["overrides"]["trainer.total_training_steps"]
    path = tmp_path / "smoke.yaml"
    path.write_text(f"{smoke}entrypoint: tests.fake_trainer\nenv: {{FAKE_STEPS: '{steps}'}}\n")
    proc = launch(tmp_path, path, "--fail-on-gates")
    assert proc.returncode == 0, proc.stderr
    gates = json.loads((only_run_dir(tmp_path) / "summary.json").read_text())["gates"]
    assert gates and all(v["passed"] for v in gates.values()), gates


def test_home_in_path_values_is_expanded_at_plan_time_as_bash_would(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(
        recipe(
            "model: {path: Qwen/Qwen3-0.6B}\noverrides:\n"
            "  data.train_files: ~/data/train.parquet\n"
            "  data.val_files: [$HOME/a.parquet, '${HOME}/b.parquet', ~other/c.parquet]\n"
            "  trainer.default_local_dir: '~'\n"
            "  trainer.experiment_name: ~/not-a-path-key\n"
            "  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 2\n"
            "  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 4\n"
            "env: {HF_HOME: ~/hf, TAG: ~x}\n"
        )
    )
    home = str(tmp_path / "home dir")
    proc, shown = dry_run(path, "--device", "gpu", env={**os.environ, "HOME": home})
    assert proc.returncode == 0, proc.stderr
    argv = shown["argv"]
    assert f"data.train_files='{home}/data/train.parquet'" in argv
    assert f"data.val_files=['{home}/a.parquet','{home}/b.parquet','~other/c.parquet']" in argv
    assert f"trainer.default_local_dir='{home}'" in argv
    assert "trainer.experiment_name='~/not-a-path-key'" in argv  # not a path key: as written
    assert shown["env"]["HF_HOME"] == f"{home}/hf" and shown["env"]["TAG"] == "~x"
    assert (
        f"expanded a leading ~ or $HOME to {home} in data.train_files, data.val_files, trainer.default_local_dir, "
        "$HF_HOME, as bash would" in shown["notes"]
    )
    assert (
        "left a leading ~ or $HOME as written in trainer.experiment_name: not path keys (their last part is not "
        "path, dir, file or files), so verl gets the text" in shown["notes"]
    )
