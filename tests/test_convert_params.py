"""`sapo-lint convert`: a value the script takes from where it runs becomes `???` (a parameter the recipe's user must
set: RF014 refuses the launch until the recipe or the launch's command line sets it); each switch variable is its
own axis with the script's default as the axis's default, variables that do not factor apart share one; `verl:` is
the snapshot the script's keys lint clean on."""

import json
import math
import subprocess

import pytest
import yaml

from sapo_toolkit.linter.api import load, read_options
from sapo_toolkit.linter.settings import Settings

from .helpers import REPO

SWITCHES = """#!/bin/bash
DEVICE=${DEVICE:-npu}
INFER_BACKEND=${INFER_BACKEND:-vllm}
SIZE=${SIZE:-0.6b}
case $DEVICE in
  npu) dev=npu; export HCCL_CONNECT_TIMEOUT=1800 ;;
  gpu) dev=cuda ;;
esac
case $INFER_BACKEND in
  vllm) be=vllm ;;
  sglang) be=sglang ;;
esac
case $SIZE in
  0.6b) model=Qwen/Qwen3-0.6B ;;
  1.7b) model=Qwen/Qwen3-1.7B ;;
esac
python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_files=/data/train.parquet \\
  actor_rollout_ref.model.path=$model actor_rollout_ref.rollout.name=$be trainer.device=$dev {extra} \\
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4
"""
# Only npu with vllm sets eager mode: DEVICE and INFER_BACKEND do not factor apart
INTERACTING = 'if [ "$DEVICE" = npu ] && [ "$INFER_BACKEND" = vllm ]; then eager=True; else eager=False; fi\n'


def switches(extra: str) -> str:
    return SWITCHES.replace("{extra}", extra)


def convert(tmp_path, script: str, *args: str) -> tuple[subprocess.CompletedProcess, dict, str]:
    path = tmp_path / "run_example.sh"
    path.write_text(script)
    out = tmp_path / "recipe.yaml"
    proc = subprocess.run(
        ["sapo-lint", "convert", str(path), "-o", str(out), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    return proc, yaml.safe_load(text), text


def dry_run(recipe_path, *args):
    return subprocess.run(
        ["sapo-launch", str(recipe_path), "--dry-run", "--format", "json", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_values_from_the_environment_are_parameters_the_launch_refuses_until_set(tmp_path):
    script = switches("data.val_files=$DATA_DIR/test.parquet trainer.experiment_name=run-$(date +%s)")
    _, recipe, text = convert(tmp_path, script)
    assert recipe["overrides"]["data.val_files"] == "???" and recipe["overrides"]["trainer.experiment_name"] == "???"
    assert "SAPO_LINT" not in text and "oc.env" not in text
    assert "# note: data.val_files: `???`, to be set before a launch: the script's value uses $DATA_DIR" in text
    assert "# note: trainer.experiment_name: `???`, to be set before a launch: the script's value uses $(date" in text

    refused = dry_run(tmp_path / "recipe.yaml")
    assert refused.returncode == 1
    messages = [d["message"] for d in json.loads(refused.stdout)["lint"]["diagnostics"] if d["code"] == "RF014"]
    assert sorted(messages) == [
        "`data.val_files` is `???`: it must be set before a launch; set it in the recipe, or on the command line: "
        "`sapo-launch RECIPE data.val_files=VALUE`",
        "`trainer.experiment_name` is `???`: it must be set before a launch; set it in the recipe, or on the "
        "command line: `sapo-launch RECIPE trainer.experiment_name=VALUE`",
    ]
    filled = dry_run(tmp_path / "recipe.yaml", "data.val_files=/data/test.parquet", "trainer.experiment_name=e1")
    assert filled.returncode == 0, filled.stdout
    argv = json.loads(filled.stdout)["argv"]
    assert "data.val_files=/data/test.parquet" in argv and not any("???" in arg for arg in argv)


def test_an_environment_variable_left_to_be_set_refuses_too(tmp_path):
    path = tmp_path / "r.yaml"
    _, recipe, _ = convert(tmp_path, switches(""))
    path.write_text(yaml.safe_dump({**recipe, "env": {"HF_TOKEN_PATH": "???"}}))
    proc = dry_run(path)
    assert proc.returncode == 1
    (message,) = [d["message"] for d in json.loads(proc.stdout)["lint"]["diagnostics"] if d["code"] == "RF014"]
    assert message == "`$HF_TOKEN_PATH` is `???`: set it in the recipe's `env:`"


def test_each_switch_variable_is_an_axis_with_the_scripts_default(tmp_path):
    _, recipe, _ = convert(tmp_path, switches(""))
    assert {axis: sorted(values) for axis, values in recipe["variants"].items()} == {
        "device": ["gpu", "npu"],
        "infer_backend": ["sglang", "vllm"],
        "size": ["0.6b", "1.7b"],
    }
    assert recipe["variant_defaults"] == {"device": "npu", "infer_backend": "vllm", "size": "0.6b"}
    assert recipe["variants"]["device"]["npu"]["env"] == {"HCCL_CONNECT_TIMEOUT": "1800"}
    proc = dry_run(tmp_path / "recipe.yaml", "--device", "gpu")  # no other flag: the defaults choose
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["variant"] == "DEVICE=gpu,INFER_BACKEND=vllm,SIZE=0.6b"


def test_variables_that_do_not_factor_apart_share_an_axis_and_every_variant_is_kept(tmp_path):
    script = switches("actor_rollout_ref.rollout.enforce_eager=$eager").replace("python3", INTERACTING + "python3")
    _, recipe, text = convert(tmp_path, script)
    assert sorted(recipe["variants"]) == ["device_infer_backend", "size"]
    assert sorted(recipe["variants"]["device_infer_backend"]) == ["gpu-sglang", "gpu-vllm", "npu-sglang", "npu-vllm"]
    assert recipe["variant_defaults"] == {"device_infer_backend": "npu-vllm", "size": "0.6b"}
    assert "DEVICE, INFER_BACKEND do not factor apart" in text

    options = read_options(Settings())
    script_commands = load(tmp_path / "run_example.sh", options).commands
    recipe_commands = load(tmp_path / "recipe.yaml", options).commands
    assert len(recipe_commands) == len(script_commands) == 8
    assert {_overrides(c) for c in recipe_commands} == {_overrides(c) for c in script_commands}


def _overrides(command) -> frozenset:
    return frozenset((lo.parsed.key, json.dumps(lo.parsed.value)) for lo in command.overrides)


@pytest.mark.parametrize(
    "extra, version",
    [
        ("actor_rollout_ref.rollout.skip.dump_dir=/tmp/skip", "0.8.0"),  # a key verl 0.9.1 dropped
        ("actor_rollout_ref.actor.router_replay.record_file=/tmp/r", "0.10.0.dev"),  # back on verl main
        ("", read_options(Settings()).default_verl),  # clean everywhere: what sapo-lint checks against
    ],
)
def test_verl_is_the_snapshot_the_scripts_keys_lint_clean_on(tmp_path, extra, version):
    _, recipe, _ = convert(tmp_path, switches(extra))
    assert recipe["verl"] == version
    proc = subprocess.run(
        ["sapo-lint", str(tmp_path / "recipe.yaml")], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stdout
    _, named, _ = convert(tmp_path, switches(extra), "--verl-version", "0.9.1")
    assert named["verl"] == "0.9.1"


def test_a_nan_value_in_a_variant_is_one_value_like_any_other(tmp_path):
    """NaN is not equal to itself: a variant's `x=nan` (written twice, a key set again) failed every grouping of
    the switch variables, so convert stopped with an internal error. Found by the property test of convert."""
    script = (
        "DEVICE=${DEVICE:-gpu}\n"
        'if [ "$DEVICE" = npu ]; then EXTRA=(trainer.project_name=a); else EXTRA=(trainer.project_name=nan); fi\n'
        'python3 -m verl.trainer.main_ppo trainer.project_name=nan "${EXTRA[@]}"\n'
    )
    _, recipe, _ = convert(tmp_path, script)
    assert recipe["variants"]["device"]["npu"]["overrides"] == {"trainer.project_name": "a"}
    assert math.isnan(recipe["variants"]["device"]["gpu"]["overrides"]["trainer.project_name"])  # YAML's .nan


MICRO_BATCHES = (
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 "
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4"
)
LOOPS = """#!/bin/bash
for MODEL_SIZE in 0.6B 1.7B; do
  for lr in 1e-6 1e-6 2e-6; do
    for seed in 1 2; do  # never reaches the trainer
      python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_files=/data/train.parquet \\
        actor_rollout_ref.model.path=Qwen/Qwen3-$MODEL_SIZE actor_rollout_ref.actor.optim.lr=$lr $MICRO_BATCHES
    done
  done
done
"""


def test_loop_rounds_are_variants_named_by_their_variable_and_identical_ones_are_one(tmp_path):
    """A loop's rounds were commands that no label told apart: convert stopped with an internal error. Each loop
    variable is now an axis named after it; a variable that changes nothing (seed) is none, a repeated value one."""
    _, recipe, text = convert(tmp_path, LOOPS.replace("$MICRO_BATCHES", MICRO_BATCHES))
    assert {axis: sorted(values) for axis, values in recipe["variants"].items()} == {
        "model_size": ["0.6B", "1.7B"],
        "lr": ["1e-6", "2e-6"],
    }
    assert "variant_defaults" not in recipe  # a loop runs every round: a launch names the one it runs
    assert "--variant model_size=VALUE" in text and "--variant lr=VALUE" in text
    proc = dry_run(tmp_path / "recipe.yaml", "--variant", "model_size=1.7B", "--variant", "lr=2e-6")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    argv = json.loads(proc.stdout)["argv"]
    assert "actor_rollout_ref.model.path=Qwen/Qwen3-1.7B" in argv and "actor_rollout_ref.actor.optim.lr=2e-06" in argv


UV = """#!/bin/bash
DEVICE=${DEVICE:-gpu}
LAUNCH=(python3)
if [ "${USE_UV:-1}" != 0 ] && [ "$DEVICE" = gpu ]; then
  LAUNCH=(uv run --frozen --extra gpu python3)
fi
case $DEVICE in
  npu) dev=npu ;;
  gpu) dev=cuda ;;
esac
PYTHONUNBUFFERED=1 "${LAUNCH[@]}" -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \\
  data.train_files=/data/train.parquet actor_rollout_ref.model.path=Qwen/Qwen3-0.6B trainer.device=$dev \\
  {MICRO_BATCHES}
"""


def test_a_launcher_prefix_is_named_where_it_is_dropped_and_its_switch_is_no_axis(tmp_path):
    """`uv run ... python3` was dropped without a word (the driver then ran under sapo-launch's Python, the workers
    under uv's), and USE_UV, which changes nothing else, was an axis of identical variants."""
    proc, recipe, text = convert(tmp_path, UV.replace("{MICRO_BATCHES}", MICRO_BATCHES))
    assert sorted(recipe["variants"]) == ["device"] and recipe["variant_defaults"] == {"device": "gpu"}
    assert recipe["env"] == {"PYTHONUNBUFFERED": "1"}
    (warning,) = [line for line in proc.stderr.splitlines() if line.startswith("warning: ")]
    assert "`uv run --frozen --extra gpu python3 -m verl.trainer.main_ppo` (in USE_UV=1,DEVICE=gpu)" in warning
    assert "`uv run --frozen --extra gpu sapo-launch RECIPE`" in warning
    assert f"# note: {warning.removeprefix('warning: ')}" in text
    lint = subprocess.run(
        ["sapo-lint", str(tmp_path / "recipe.yaml")], capture_output=True, text=True, timeout=120, check=False
    )
    assert lint.returncode == 0, lint.stdout
    assert dry_run(tmp_path / "recipe.yaml").returncode == 0


def test_a_plain_python_is_no_launcher(tmp_path):
    for interpreter in ("python", "python3", "python3.11"):
        proc, _, text = convert(tmp_path, switches("").replace("python3 -m", f"{interpreter} -m"))
        assert "warning" not in proc.stderr and "starts the trainer" not in text
