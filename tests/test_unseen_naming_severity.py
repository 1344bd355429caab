"""Issue 20, items 1 and 6: the naming rules only where verl applies them, and severities that say whether the run
breaks. Every script here is written by the test; each is linted through the console script, as a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import VERL_NAMING_HOOK

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


def enforcing_repository(root: Path) -> Path:
    """`root` made a git repository that runs verl's naming check, as verl 0.8.0 and later do."""
    (root / ".git").mkdir(parents=True)
    write(root / ".pre-commit-config.yaml", VERL_NAMING_HOOK)
    return root


# --- item 1: naming rules only under a naming root ------------------------------------------------------------------


def test_a_run_script_outside_examples_gets_no_naming_finding_and_the_same_script_under_examples_does(tmp_path):
    # verl's CI helper name and a recipe launcher's name, both outside examples/: no NM; the same text under
    # examples/ is an example and gets verl's verdicts.
    enforcing_repository(tmp_path)
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
    # A vendored verl checkout named by `naming-roots`: its examples/profile is ignored as verl ignores it, relative
    # to the closest examples/ (third_party/verl), not to the linted repository's root; examples/ nested in another
    # tree counts too when listed.
    write(
        tmp_path / "pyproject.toml", '[tool.sapo-lint]\nnaming-roots = ["third_party/verl/examples", "docs/examples"]\n'
    )
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
    enforcing_repository(tmp_path)
    write(tmp_path / "examples/qwen3_8b_vllm.yaml", recipe)
    assert naming(sapo_lint("--no-shellcheck", ".", cwd=tmp_path)) == []


# --- item 6: a finding's severity says whether the run breaks -------------------------------------------------------


def shellcheck_severities(proc: subprocess.CompletedProcess) -> dict[str, set[str]]:
    """shellcheck's findings (SH + four digits) by code, with the severities they are reported with."""
    found: dict[str, set[str]] = {}
    for d in findings(proc):
        if len(d["code"]) == 6 and d["code"][2:].isdigit():
            found.setdefault(d["code"], set()).add(d["severity"])
    return found


def test_shellcheck_errors_that_do_not_break_a_run_script_are_warnings(tmp_path):
    # Started as `bash run.sh`: a blank line above the shebang (SC1128) changes nothing, and an unquoted `$@`
    # (SC2068) passes no arguments differently unless one holds a space. Neither stops the run.
    write(
        tmp_path / "run.sh", "\n#!/bin/bash\nset -xeuo pipefail\npython3 -m verl.trainer.main_ppo trainer.nnodes=1 $@\n"
    )
    proc = sapo_lint("--select", "SH", "run.sh", cwd=tmp_path)
    assert shellcheck_severities(proc) == {"SH1128": {"warning"}, "SH2068": {"warning"}}
    assert proc.returncode == 0
    # by default SC1128 is not shown at all (like SC2148, no shebang); SC2068 is, as a warning
    assert shellcheck_severities(sapo_lint("run.sh", cwd=tmp_path)) == {"SH2068": {"warning"}}


@pytest.mark.parametrize(
    "text, code",
    [
        # CRLF: each `\` escapes the carriage return, every override line runs as a command
        ("#!/bin/bash\r\npython3 -m verl.trainer.main_ppo \\\r\n  trainer.nnodes=1\r\n", "SH1017"),
        # a space after the `\`: the command ends there
        ("#!/bin/bash\npython3 -m verl.trainer.main_ppo \\ \n  trainer.nnodes=1\n", "SH1101"),
        # `NNODES = 2` runs a command named NNODES and leaves the variable unset
        ('#!/bin/bash\nNNODES = 2\npython3 -m verl.trainer.main_ppo trainer.nnodes="$NNODES"\n', "SH2283"),
    ],
)
def test_shellcheck_findings_that_break_the_run_are_errors(tmp_path, text, code):
    (tmp_path / "run.sh").write_bytes(text.encode())
    proc = sapo_lint("run.sh", cwd=tmp_path)
    assert shellcheck_severities(proc)[code] == {"error"} and proc.returncode == 1


UNSET = """#!/usr/bin/env bash
{setup}
project=verl
python3 -m verl.trainer.main_ppo \\
    trainer.project_name="$project" \\
    trainer.experiment_name="$exp_nam" \\
    trainer.nnodes=1
"""


@pytest.mark.parametrize(
    "setup, severity",
    [
        ("set -xeuo pipefail", "error"),  # bash stops at `$exp_nam`: exp_nam: unbound variable
        ("set -o errexit -o nounset", "error"),
        ("set -eu\nset +u", "warning"),  # nounset switched off again: the value is empty
        ("set -xe", "warning"),  # no nounset: the experiment name is empty, the run goes on
        ("set -euo pipefail\nsource ./env.sh", "warning"),  # env.sh may assign it
        ('if [ -n "${DEBUG:-}" ]; then set -u; fi', "warning"),  # not known to run
    ],
)
def test_an_unassigned_variable_in_the_trainer_command_under_set_u_is_an_error(tmp_path, setup, severity):
    write(tmp_path / "run.sh", UNSET.format(setup=setup))
    found = shellcheck_severities(sapo_lint("--select", "SH", "run.sh", cwd=tmp_path))
    assert found["SH2154"] == {severity}


def test_an_unassigned_variable_expanded_before_the_trainer_under_set_u_is_an_error(tmp_path):
    text = (
        "#!/usr/bin/env bash\nset -eu\n"
        'echo "model: $modle_path"\n'  # a top-level command before the trainer: always runs, stops the script
        'if [ -n "${X:-}" ]; then echo "$branch_typo"; fi\n'  # only when X is set
        "python3 -m verl.trainer.main_ppo trainer.nnodes=1\n"
        'echo "$after_typo"\n'  # after training
    )
    write(tmp_path / "run.sh", text)
    by_line = {d["line"]: d["severity"] for d in findings(sapo_lint("run.sh", cwd=tmp_path)) if d["code"] == "SH2154"}
    assert by_line == {3: "error", 4: "warning", 6: "warning"}


def sl004(proc: subprocess.CompletedProcess) -> dict[str, str]:
    """SL004's findings as key -> severity (the key is the first `...` of the message)."""
    return {d["message"].split("`")[1]: d["severity"] for d in findings(proc) if d["code"] == "SL004"}


def test_a_value_that_cannot_be_the_type_verl_reads_an_undeclared_key_as_is_an_error(tmp_path):
    # No dataclass declares `trainer.*` or `data.*` keys; verl reads them as their defaults' types.
    write(
        tmp_path / "run.sh",
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.total_epochs=abc trainer.test_freq=many "
        "trainer.val_before_train=no data.max_prompt_length=512.5 actor_rollout_ref.nccl_timeout=long\n",
    )
    assert sl004(sapo_lint("--no-shellcheck", "--verl-version", "0.10.0.dev", "run.sh", cwd=tmp_path)) == {
        "trainer.total_epochs": "error",  # ray_trainer.py: range(current_epoch, total_epochs)
        "trainer.test_freq": "error",  # test_freq > 0
        "trainer.val_before_train": "error",  # a non-empty string: always true
        "data.max_prompt_length": "warning",  # a float where the default is an integer: maybe fine
        "actor_rollout_ref.nccl_timeout": "warning",  # no verl code reads a key of that name
    }


def test_the_sft_trainer_reads_after_each_epoch_for_its_frequencies(tmp_path):
    write(
        tmp_path / "run.sh",
        "#!/bin/bash\ntorchrun --nproc_per_node=1 -m verl.trainer.sft_trainer trainer.test_freq=after_each_epoch "
        "trainer.save_freq=sometimes data.enable_thinking_default=true\n",
    )
    assert sl004(sapo_lint("--no-shellcheck", "--verl-version", "0.10.0.dev", "run.sh", cwd=tmp_path)) == {
        "trainer.save_freq": "error",  # only "after_each_epoch" is read besides an integer
        "data.enable_thinking_default": "warning",  # default the string "none", read as a bool
    }


def rf015(proc: subprocess.CompletedProcess) -> list[tuple[int, str]]:
    return [(d["line"], d["severity"]) for d in findings(proc) if d["code"] in ("RF015", "SH001")]


def test_an_entry_module_the_verl_version_does_not_have_is_an_error(tmp_path):
    write(tmp_path / "run.sh", "#!/bin/bash\n\npython3 -m verl.trainer.main_ppo_sync trainer.nnodes=1\n")
    write(tmp_path / "cn.sh", "#!/bin/bash\npython3 -m verl.trainer.main_ppo_sync --config-name ppo_trainer\n")
    for script, line in (("run.sh", 3), ("cn.sh", 2)):
        proc = sapo_lint("--no-shellcheck", "--verl-version", "0.10.0.dev", script, cwd=tmp_path)
        assert rf015(proc) == [(line, "error")]  # not also SH001's "assumed ppo_trainer"
        assert "No module named verl.trainer.main_ppo_sync" in proc.stdout and "`verl.trainer.main_ppo`?" in proc.stdout
    # verl 0.8.0 had it
    assert rf015(sapo_lint("--no-shellcheck", "--verl-version", "0.8.0", "run.sh", cwd=tmp_path)) == []


def test_a_recipe_entrypoint_is_checked_under_verl_only(tmp_path):
    head = "recipe: sapo-recipe/v1\nname: x\nverl: 0.10.0.dev\nmodel: {path: Qwen/Qwen3-8B}\n"
    write(tmp_path / "gone.yaml", head + "entrypoint: verl.trainer.main_ppo_sync\noverrides: {trainer.nnodes: 1}\n")
    write(tmp_path / "team.yaml", head + "entrypoint: myteam.train\noverrides: {trainer.nnodes: 1}\n")
    proc = sapo_lint("--no-shellcheck", ".", cwd=tmp_path)
    assert [(d["path"], d["severity"]) for d in findings(proc) if d["code"] == "RF015"] == [("gone.yaml", "error")]


def test_a_string_for_a_flag_is_an_error_only_where_it_spells_off(tmp_path):
    """`trainer.val_before_train=no` is true to Python: certainly a mistake. `recurrent.enable=memory` against a
    `false` default may be a mode the repository's code also reads by name
    (`getattr(config.recurrent, config.recurrent.enable)`): a warning."""
    write(
        tmp_path / "run.sh",
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.val_before_train=Off trainer.balance_batch=fast\n",
    )
    assert sl004(sapo_lint("--no-shellcheck", "--verl-version", "0.10.0.dev", "run.sh", cwd=tmp_path)) == {
        "trainer.val_before_train": "error",
        "trainer.balance_batch": "warning",
    }
