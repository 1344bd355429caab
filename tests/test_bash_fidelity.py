"""The bash evaluator follows bash, one class of construct at a time (issue 20, item 5).

Each test is a run script written here that shows one class: what the reader says the trainer receives equals what
bash passes (`argv_divergences`, bash in its sandbox), and `sapo-lint` reports what a user acts on and nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .test_bash_property import BASH, argv_divergences, recorder_dir  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")


def lint(tmp_path, text: str, name: str = "run_qwen3_8b_fsdp.sh") -> tuple[int, list[dict]]:
    """`sapo-lint` on the script, as a shell runs it: (exit code, findings)."""
    (tmp_path / name).write_text(text)
    env = {**os.environ, "SAPO_LINT_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "sapo_toolkit.linter", "--format", "json", "--no-shellcheck", "--verl-version", "0.9.1"]
        + [name],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["diagnostics"]


def found(diagnostics: list[dict], code: str) -> list[tuple[int, str]]:
    return [(d["line"], d["message"]) for d in diagnostics if d["code"] == code]


def same_as_bash(text: str, recorder: str) -> None:
    compared, differences = argv_divergences(text, recorder)
    assert compared and not differences, differences


HEAD = "#!/usr/bin/env bash\nset -euo pipefail\nMODEL_PATH=Qwen/Qwen3-8B\n"
CALL = "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=$MODEL_PATH"


def test_quoted_array_in_an_assignment_joins_its_elements(tmp_path, recorder_dir):  # noqa: F811
    # `"${A[@]}"` in an assignment is the elements joined by spaces: the two overrides reach verl as two words;
    # read glued ("trainer.total_epochs=2trainer.save_freq=5") they were a value with a `=` in it (SL009).
    text = HEAD + 'EXTRA=(trainer.total_epochs=2 trainer.save_freq=5)\nEXTRA_ARGS="${EXTRA[@]}"\n'
    text += CALL + " $EXTRA_ARGS\n"
    same_as_bash(text, recorder_dir)
    code, diagnostics = lint(tmp_path, text)
    assert not found(diagnostics, "SL009"), diagnostics


def test_a_default_bash_accepts_is_no_syntax_error(tmp_path, recorder_dir):  # noqa: F811
    # tree-sitter-bash cannot read `['npu','cpu']` inside `${...:-...}`; bash can (`bash -n` passes), and the
    # value is a Hydra list.
    text = HEAD + "CONTENTS=${CONTENTS:-['model','optimizer']}\n"
    text += CALL + " actor_rollout_ref.actor.checkpoint.save_contents=$CONTENTS\n"
    assert subprocess.run([BASH, "-n"], input=text.encode(), capture_output=True, check=False).returncode == 0
    same_as_bash(text, recorder_dir)
    code, diagnostics = lint(tmp_path, text)
    assert not found(diagnostics, "SH002"), diagnostics


@pytest.mark.parametrize(
    ("middle", "where"),
    [
        ('if [ "$MODEL_PATH" = x ]; then\n    echo ok )\nfi\n', (5, 13)),  # in a branch
        ("notify() {\n    echo done; then\n}\n", (5, 16)),  # in a function
        ("case $MODEL_PATH in\n  x) echo a ;;\n  y) echo b ;; ;;\nesac\n", (6, 16)),  # in a case item
    ],
)
def test_a_syntax_error_leaves_the_rest_checked(tmp_path, middle, where):
    # bash stops at the error (SH002 there); the trainer call after it is still read, and its bad value found
    text = HEAD + middle + CALL + " trainer.total_epochs=abc\n"
    assert subprocess.run([BASH, "-n"], input=text.encode(), capture_output=True, check=False).returncode != 0
    code, diagnostics = lint(tmp_path, text)
    assert [(d["line"], d["column"]) for d in diagnostics if d["code"] == "SH002"] == [where], diagnostics
    assert [line for line, _ in found(diagnostics, "SL004")] == [len(text.splitlines())], diagnostics
    assert code == 1


def test_a_line_continuation_inside_a_word_joins_it(tmp_path, recorder_dir):  # noqa: F811
    # `"..."\` then `"..."` on the next line is one word: PATCHES is set, not an input from the environment (and
    # the second line is no command of its own).
    # Every finding after it keeps its line.
    text = HEAD + 'ROLLOUT_NAME="vl"\\\n"lm"\n' + CALL + " actor_rollout_ref.rollout.name=$ROLLOUT_NAME \\\n"
    text += "    trainer.total_epochs=abc\n"
    same_as_bash(text, recorder_dir)
    code, diagnostics = lint(tmp_path, text)
    assert not found(diagnostics, "SH004") and not found(diagnostics, "SL005"), diagnostics
    assert [line for line, _ in found(diagnostics, "SL004")] == [7], diagnostics


def test_word_splitting_follows_ifs(tmp_path, recorder_dir):  # noqa: F811
    # `IFS=, read` and an array split on IFS=, give the values; the sizes reach the trainer as numbers.
    text = HEAD + 'PARALLEL="2,4"\nIFS=, read -r TP PP <<< "$PARALLEL"\nOLD_IFS=$IFS\nIFS=,\nSIZES=($PARALLEL)\n'
    text += "IFS=$OLD_IFS\n" + CALL + " actor_rollout_ref.actor.megatron.tensor_model_parallel_size=$TP"
    text += " actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=${SIZES[1]} trainer.total_epochs=$PP\n"
    same_as_bash(text, recorder_dir)
    code, diagnostics = lint(tmp_path, text, "run_qwen3_8b_megatron.sh")
    assert not found(diagnostics, "SH004") and not found(diagnostics, "SH001"), diagnostics


def test_arithmetic_assignments_take_effect(tmp_path, recorder_dir):  # noqa: F811
    # `(( ))`, `let` and `++` assign: the GPU count is 16 when the trainer starts, and 16 % 3 breaks a divisibility
    # that verl checks (BS rules need the value).
    text = HEAD + "NODES=2\n(( GPUS = NODES * 4 ))\nlet GPUS=GPUS*2\nSTEP=0\n: $((STEP++))\n"
    text += CALL + " trainer.n_gpus_per_node=$GPUS trainer.nnodes=1 trainer.total_training_steps=$STEP\n"
    same_as_bash(text, recorder_dir)
    code, diagnostics = lint(tmp_path, text)
    assert not found(diagnostics, "SH001") and not found(diagnostics, "SH004"), diagnostics


def test_array_indices_are_computed_negative_and_sparse(tmp_path, recorder_dir):  # noqa: F811
    text = HEAD + "TPS=(1 2 4 8)\ni=1\nTPS[7]=16\n"
    text += CALL + " actor_rollout_ref.rollout.tensor_model_parallel_size=${TPS[i+1]} trainer.total_epochs=${TPS[-1]}"
    text += ' trainer.project_name="${#TPS[@]}:${!TPS[*]}"\n'
    same_as_bash(text, recorder_dir)
    code, diagnostics = lint(tmp_path, text)
    assert not found(diagnostics, "SH001"), diagnostics


def test_builtins_that_assign(tmp_path, recorder_dir):  # noqa: F811
    # `printf -v`, `read` and `mapfile` from a here-string set variables: they are no inputs from the environment.
    text = HEAD + "printf -v EXP '%s-tp%02d' qwen3 2\nread -r FIRST REST <<< 'a b c'\nmapfile -t LINES <<< \"x\"\n"
    text += CALL + ' trainer.experiment_name="$EXP" trainer.project_name="$FIRST-$REST-${LINES[0]}"\n'
    same_as_bash(text, recorder_dir)
    code, diagnostics = lint(tmp_path, text)
    assert not found(diagnostics, "SH004"), diagnostics


def test_parameter_operators(tmp_path, recorder_dir):  # noqa: F811
    # case changes, pattern removal and substitution, substrings: the experiment name is known.
    text = HEAD + "MODEL_ID=Qwen/Qwen3-8B\nNAME=${MODEL_ID##*/}\n"
    text += CALL + ' trainer.experiment_name="${NAME,,}_${NAME//./_}_${NAME:0:5}_${MODEL_ID%/*}"\n'
    same_as_bash(text, recorder_dir)
    code, diagnostics = lint(tmp_path, text)
    assert not found(diagnostics, "SH004"), diagnostics


def test_a_function_call_passes_its_arguments(tmp_path, recorder_dir):  # noqa: F811
    # inside `launch`, `$1` and `"$@"` are the call's arguments: nnodes is 1, and the bad value passed on is found
    # at the call that writes it.
    text = HEAD + "launch() {\n    local nodes=$1\n    shift\n    " + CALL + ' trainer.nnodes="$nodes" "$@"\n}\n'
    text += "launch 1 trainer.total_epochs=abc\n"
    same_as_bash(text, recorder_dir)
    code, diagnostics = lint(tmp_path, text)
    assert [line for line, _ in found(diagnostics, "SL004")] == [9], diagnostics
    assert not found(diagnostics, "SH003") and not found(diagnostics, "SH004"), diagnostics


def test_variables_bash_sets_are_set_but_unknown(tmp_path, recorder_dir):  # noqa: F811
    # `$HOSTNAME` is set by bash itself (so `${HOSTNAME:+...}` is not empty); `${#HOME}` is not 0 but unknown: both
    # are values the trainer takes from the machine it runs on (SH004), not an empty name and a 0.
    text = HEAD + CALL + ' trainer.experiment_name="run-${HOSTNAME:+on-host}" trainer.project_name=${#HOME}\n'
    same_as_bash(text, recorder_dir)
    code, diagnostics = lint(tmp_path, text)
    (message,) = [message for _, message in found(diagnostics, "SH004")]
    assert "${HOSTNAME:+on-host}" in message and "${#HOME}" in message, message


@pytest.mark.parametrize(
    "launcher",
    [
        "python3 -X faulthandler -W ignore -u",
        "torchrun --nnodes 1 --nproc_per_node 8 --standalone",
        "torchrun --nnodes=1",
    ],
)
def test_interpreter_options_with_values_before_the_module(tmp_path, recorder_dir, launcher):  # noqa: F811
    # `-X faulthandler` is one option with its value: the call is still verl's trainer, and it is checked
    text = (
        HEAD
        + launcher
        + " -m verl.trainer.main_ppo actor_rollout_ref.model.path=$MODEL_PATH trainer.total_epochs=abc\n"
    )
    same_as_bash(text, recorder_dir)
    code, diagnostics = lint(tmp_path, text)
    assert [line for line, _ in found(diagnostics, "SL004")] == [4], diagnostics
