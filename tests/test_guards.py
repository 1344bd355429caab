"""Issue 23, item 4: a guard on a parameter the caller gives is not an exit. A script that tests a variable for
emptiness before the trainer (`[ -z "$DATA" ] && { echo usage; exit 1; }`) is linted on the way where the variable is
set, with its value unknown; a script that exits before the trainer on every way is SH006, never silence. Each script
is written by the test and linted through the console script."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import sapo_lint_json

TRAINER = (
    "python3 -m verl.trainer.main_ppo data.train_files=$DATA trainer.totl_epochs=3 "
    "actor_rollout_ref.model.path=Qwen/Qwen3-8B actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 "
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2\n"
)

# Each guard form, after each way the script gives the variable no value.
GUARDS = {
    "and-block": '[ -z "$DATA" ] && { echo usage; exit 1; }',
    "if-z": 'if [ -z "$DATA" ]; then exit 1; fi',
    "colon-question": ': "${DATA:?set DATA}"',
    "echo-question": 'echo "${DATA:?msg}"',
    "not-file": 'if [ ! -f "$DATA" ]; then exit 1; fi',
    "test-n-or": 'test -n "$DATA" || exit 1',
    "double-bracket": "[[ -z $DATA ]] && exit",
    "compare-empty": 'if [[ "$DATA" == "" ]]; then echo "usage: DATA=... $0"; exit 1; fi',
    "n-or-block": '[ -n "$DATA" ] || { echo usage >&2; exit 1; }',
    "usage-function": 'usage() { echo "usage: DATA=... $0"; exit 1; }\n[ -z "${DATA}" ] && usage',
}
DEFAULTS = {"unset": "", "empty-default": "DATA=${DATA:-}\n", "empty": 'DATA=""\n'}


def write(path: Path, text: str) -> Path:
    path.write_text("#!/bin/bash\n" + text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def guarded(tmp_path_factory) -> dict[str, list[dict]]:
    """Each guard form after each way of leaving the variable without a value, in one script each, linted in one
    run: script name -> its findings."""
    root = tmp_path_factory.mktemp("guards")
    for guard, text in GUARDS.items():
        for default, before in DEFAULTS.items():
            write(root / f"{guard}.{default}.sh", before + text + "\n" + TRAINER)
    out = sapo_lint_json(str(root), cwd=root)
    found: dict[str, list[dict]] = {path.name: [] for path in root.glob("*.sh")}
    for d in out["diagnostics"]:
        found[Path(d["path"]).name].append(d)
    return found


@pytest.mark.parametrize("default", DEFAULTS)
@pytest.mark.parametrize("guard", GUARDS)
def test_the_way_past_a_guard_is_linted_with_the_parameter_free(guard, default, guarded):
    by_code = {d["code"]: d for d in guarded[f"{guard}.{default}.sh"]}
    assert "SL001" in by_code, guarded  # the override after the guard is checked
    assert "trainer.totl_epochs" in by_code["SL001"]["message"]
    assert by_code["SL001"]["line"] == 2 + DEFAULTS[default].count("\n") + GUARDS[guard].count("\n") + 1
    assert "SH006" not in by_code
    if guard != "not-file" or default == "unset":  # a file test is undecidable: the way past it keeps the default
        assert "$DATA" in by_code["SH004"]["message"]  # the caller gives it: its value is not known


def test_a_switch_with_a_guard_keeps_only_its_named_values(tmp_path):
    """A variable switched on over named values is no required parameter: unset, the script stops by design, and
    no variant with an unknown device is added."""
    script = write(
        tmp_path / "run.sh",
        'DEVICE=${DEVICE:-}\nif [ -z "$DEVICE" ]; then echo "set DEVICE"; exit 1; fi\n'
        "case $DEVICE in\n  npu) EPOCHS=1;;\n  gpu) EPOCHS=2;;\nesac\n"
        "python3 -m verl.trainer.main_ppo trainer.total_epochs=$EPOCHS trainer.device=$DEVICE trainer.totl_epochs=1\n",
    )
    out = sapo_lint_json(str(script), cwd=tmp_path)
    codes = [d["code"] for d in out["diagnostics"]]
    assert "SH001" not in codes and "SH006" not in codes, out
    assert codes.count("SL001") == 1  # the same finding in both variants, collapsed


def test_a_required_parameter_in_an_if_else_takes_the_way_that_sets_it(tmp_path):
    script = write(
        tmp_path / "run.sh",
        'if [ -n "$DATA" ]; then\n  ARGS=(data.train_files=$DATA)\nelse\n  echo "need DATA"; exit 1\nfi\n'
        'python3 -m verl.trainer.main_ppo "${ARGS[@]}" trainer.totl_epochs=3\n',
    )
    out = sapo_lint_json(str(script), cwd=tmp_path)
    assert "SL001" in [d["code"] for d in out["diagnostics"]], out


def test_a_script_that_exits_on_every_way_is_a_finding(tmp_path):
    script = write(tmp_path / "run.sh", 'echo "moved to run_new.sh"\nexit 1\n' + TRAINER)
    out = sapo_lint_json(str(script), cwd=tmp_path)
    found = [d for d in out["diagnostics"] if d["code"] == "SH006"]
    assert len(found) == 1 and found[0]["severity"] == "warning", out
    assert (found[0]["line"], "line 4" in found[0]["message"]) == (3, True)
    assert "SL001" not in [d["code"] for d in out["diagnostics"]]


def test_an_unsupported_value_that_exits_is_no_finding(tmp_path):
    """`*) exit 1` for a value the script does not support ends that variant only: the others are checked."""
    script = write(
        tmp_path / "run.sh",
        'case "${MODE:-a}" in\n  a) N=1;;\n  b) N=2;;\n  *) echo unsupported; exit 1;;\nesac\n'
        "python3 -m verl.trainer.main_ppo trainer.total_epochs=$N\n",
    )
    out = sapo_lint_json(str(script), cwd=tmp_path)
    assert "SH006" not in [d["code"] for d in out["diagnostics"]], out


def test_a_helper_script_that_exits_is_no_finding(tmp_path):
    script = write(tmp_path / "setup.sh", "pip install -e .\nexit 0\n")
    out = sapo_lint_json(str(script), cwd=tmp_path)
    assert out["diagnostics"] == []
