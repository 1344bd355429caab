"""Issue 20, items 1 and 6: the naming rules only where verl applies them, and severities that say whether the run
breaks. Every script here is written by the test; each is linted through the console script, as a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

# verl's own CI launch scripts live in tests/special_e2e/, its recipes' launchers in verl/experimental/**/shell/:
# neither is under examples/, where verl's check_example_naming runs.
TRAINER = (
    "#!/usr/bin/env bash\nset -xeuo pipefail\n"
    "MODEL_PATH=${MODEL_PATH:-$HOME/models/Qwen2.5-0.5B}\n"
    "python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.n_gpus_per_node=8 "
    'actor_rollout_ref.model.path="$MODEL_PATH" "$@"\n'
)


def sapo_lint(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which("sapo-lint")
    cmd = [exe] if exe else [sys.executable, "-m", "sapo_toolkit.linter"]
    return subprocess.run(
        [*cmd, "--format", "json", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1", "SAPO_LINT_CACHE_DIR": str(cwd / ".cache"), **(env or {})},
    )


def findings(proc: subprocess.CompletedProcess) -> list[dict]:
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)["diagnostics"]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def naming(proc: subprocess.CompletedProcess) -> list[tuple[str, str]]:
    return sorted((d["path"], d["code"]) for d in findings(proc) if d["code"].startswith("NM"))


# --- item 1: naming rules only under a naming root ------------------------------------------------------------------


def test_a_run_script_outside_examples_gets_no_naming_finding_and_the_same_script_under_examples_does(tmp_path):
    # verl's CI helper name and a recipe launcher's name, both outside examples/: no NM; the same text under
    # examples/ is an example and gets verl's verdicts.
    write(tmp_path / "tests/special_e2e/run_ppo_trainer_megatron.sh", TRAINER)
    write(tmp_path / "verl/experimental/one_step_off_policy/shell/grpo_3b_gsm8k_fsdp2_2_6.sh", TRAINER)
    write(tmp_path / "examples/grpo_trainer/grpo_3b_gsm8k.sh", TRAINER)
    write(tmp_path / "examples/grpo_trainer/run_qwen3_8b_vllm_fsdp.sh", TRAINER)
    proc = sapo_lint("--no-shellcheck", ".", cwd=tmp_path)
    assert naming(proc) == [
        ("examples/grpo_trainer/grpo_3b_gsm8k.sh", "NM003"),
        ("examples/grpo_trainer/run_qwen3_8b_vllm_fsdp.sh", "NM001"),
    ]


def test_the_closest_examples_directory_decides_verl_ignores(tmp_path):
    # A vendored verl checkout: its examples/profile is ignored as verl ignores it, relative to the closest examples/
    # (third_party/verl), not to the linted repository's root; examples/ nested in another tree counts too.
    write(tmp_path / "third_party/verl/examples/profile/profile_qwen.sh", TRAINER)
    write(tmp_path / "third_party/verl/examples/grpo_trainer/profile_qwen.sh", TRAINER)
    write(tmp_path / "docs/examples/profile_qwen.sh", TRAINER)
    write(tmp_path / "tools/profile/profile_qwen.sh", TRAINER)  # under no examples/: no example
    proc = sapo_lint("--no-shellcheck", ".", cwd=tmp_path)
    assert naming(proc) == [
        ("docs/examples/profile_qwen.sh", "NM003"),
        ("third_party/verl/examples/grpo_trainer/profile_qwen.sh", "NM003"),
    ]


def test_naming_roots_in_pyproject_replace_the_default_and_are_relative_to_it(tmp_path):
    project = tmp_path / "repo"
    write(project / "pyproject.toml", '[tool.sapo-lint]\nnaming-roots = ["launch/jobs"]\n')
    write(project / "launch/jobs/qwen/train.sh", TRAINER)
    write(project / "launch/tools/train.sh", TRAINER)
    write(project / "examples/train.sh", TRAINER)  # not a root any more
    proc = sapo_lint("--no-shellcheck", "repo", cwd=tmp_path)
    assert naming(proc) == [("repo/launch/jobs/qwen/train.sh", "NM003")]
    # with its own ignores, relative to the pyproject.toml too
    write(
        project / "pyproject.toml",
        '[tool.sapo-lint]\nnaming-roots = ["launch/jobs"]\nnaming-ignore-dirs = ["launch/*/qwen"]\n',
    )
    assert naming(sapo_lint("--no-shellcheck", "repo", cwd=tmp_path)) == []
    # an empty list names nothing
    write(project / "pyproject.toml", "[tool.sapo-lint]\nnaming-roots = []\n")
    assert naming(sapo_lint("--no-shellcheck", "repo", cwd=tmp_path)) == []


def test_naming_roots_must_be_a_list_of_paths(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.sapo-lint]\nnaming-roots = "examples"\n')
    write(tmp_path / "examples/train.sh", TRAINER)
    proc = sapo_lint("--no-shellcheck", ".", cwd=tmp_path)
    assert proc.returncode == 2 and "naming-roots must be a list of strings" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_recipe_is_not_a_run_script_and_is_never_named(tmp_path):
    recipe = (
        "recipe: sapo-recipe/v1\nname: x\nverl: 0.10.0.dev\nentrypoint: verl.trainer.main_ppo\n"
        "model: {path: Qwen/Qwen3-8B}\nhardware: {accelerator: nvidia-h100}\noverrides:\n  trainer.nnodes: 1\n"
    )
    write(tmp_path / "examples/qwen3_8b_vllm.yaml", recipe)
    assert naming(sapo_lint("--no-shellcheck", ".", cwd=tmp_path)) == []
