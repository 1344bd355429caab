"""Reading a run script, one class of construct at a time (issue 29, section D): the trainer started through a
variable or in a `for` loop is checked, a variable inside a word stays in its word, and a continuation that a
blank line or a comment breaks is said as it is.

Each test is a small script written here: what the reader says the trainer receives equals what bash passes
(`same_as_bash`, bash in its sandbox) where bash can run it, and `sapo-lint` reports what a user acts on.
"""

from __future__ import annotations

import pytest

from sapo_toolkit.linter.core.problems import BrokenContinuation
from sapo_toolkit.linter.sources.bash.loops import MAX_LOOP_ITERATIONS
from sapo_toolkit.linter.sources.bash.markers import readable
from sapo_toolkit.linter.sources.bash.script import evaluate
from sapo_toolkit.linter.sources.files import TextFile

from .test_bash_fidelity import CALL, HEAD, found, lint, same_as_bash
from .test_bash_property import BASH, recorder_dir  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")


def trainer_arguments(text: str) -> list[list[str]]:
    """The arguments of each trainer call the script's default variant makes, as written where not known."""
    evaluation = evaluate(TextFile("run.sh", text))
    _, ev = evaluation.runs[0]
    return [[readable(a, evaluation.marks) for a, _ in call.args] for call in ev.trainers]


# ------------------------------------------------------------------------------------- a variable inside a word
# tree-sitter-bash cut these words after an expansion at the next `$NAME` followed by `/`, `-`, `.`, ...: the
# `$` stayed behind as text, and the rest became a word of its own (another argument, or a command).
ARGUMENT_PARSING = "while [[ $# -gt 0 ]]; do\n    case $1 in\n        --b) B=$2; shift 2 ;;\n        *) shift ;;\n"
ARGUMENT_PARSING += "    esac\ndone\n"


@pytest.mark.parametrize(
    ("lines", "argument"),
    [
        ("A=/data\n" + ARGUMENT_PARSING + CALL + " data.train_files=$A/$B/train.parquet\n", "/data/$B/train.parquet"),
        (CALL + " data.train_files=$HOME/data/c-$D/t.parquet\n", "$HOME/data/c-$D/t.parquet"),
        ("X=\n" + CALL + " data.train_files=[$X/a/train.parquet]\n", "[/a/train.parquet]"),
        ("R=/r\nV=1\n" + CALL + " data.train_files=$R-$V.$V+$R/$V/$V/$V/x\n", "/r-1.1+/r/1/1/1/x"),
        ("R=/r\nV=1\nF=$R/$V-x\n" + CALL + " data.train_files=$F\n", "/r/1-x"),
    ],
)
def test_a_variable_after_an_expansion_stays_in_its_word(tmp_path, recorder_dir, lines, argument):  # noqa: F811
    text = HEAD + lines
    same_as_bash(text, recorder_dir)
    (arguments,) = trainer_arguments(text)
    assert arguments[-1] == f"data.train_files={argument}", arguments
    code, diagnostics = lint(tmp_path, text)
    assert not found(diagnostics, "SL009"), diagnostics


def test_single_quotes_in_a_double_quoted_default_are_kept(tmp_path, recorder_dir):  # noqa: F811
    # inside "...", `'` is a character: bash passes `['a?split=train']`, a Hydra list of one quoted string
    text = HEAD + "F=\"${F:-['a?split=train']}\"\n" + CALL + ' data.train_files="$F"\n'
    same_as_bash(text, recorder_dir)
    (arguments,) = trainer_arguments(text)
    assert arguments[-1] == "data.train_files=['a?split=train']", arguments
    code, diagnostics = lint(tmp_path, text)
    assert not found(diagnostics, "SL009"), diagnostics


# ------------------------------------------------------------------------ the interpreter through a variable
@pytest.mark.parametrize(
    "interpreter",
    ['"${CONDA_BIN}python"', "${CONDA_BIN}python3.10", "$PYTHON", '"$PYTHON" -u', "PYTHON=python3; $PYTHON"],
)
def test_the_interpreter_through_a_variable_runs_the_trainer(tmp_path, recorder_dir, interpreter):  # noqa: F811
    # a command word of unknown value whose literal end names Python, or that is wholly unknown before Python's
    # `-m MODULE`, starts the trainer: its bad value is found
    text = HEAD + interpreter + " -m verl.trainer.main_ppo actor_rollout_ref.model.path=$MODEL_PATH"
    text += " trainer.total_epochs=abc\n"
    same_as_bash(text, recorder_dir)
    code, diagnostics = lint(tmp_path, text)
    assert [line for line, _ in found(diagnostics, "SL004")] == [4], diagnostics
    assert code == 1


def test_a_command_named_like_no_interpreter_is_no_trainer_call():
    # `${TOOLS}mypython` names another program, and `$RUNNER` before no `-m` is nothing to go by
    text = HEAD + '"${TOOLS}mypython" -m verl.trainer.main_ppo trainer.nnodes=1\n$RUNNER check trainer.nnodes=1\n'
    assert trainer_arguments(text) == []


# --------------------------------------------------------------------------------- a trainer call in a loop
def test_a_for_loop_runs_the_trainer_once_per_item(tmp_path, recorder_dir):  # noqa: F811
    text = HEAD + "for epochs in 1 abc; do\n    " + CALL + " trainer.total_epochs=$epochs\ndone\n"
    same_as_bash(text, recorder_dir)
    assert [arguments[-1] for arguments in trainer_arguments(text)] == [
        "trainer.total_epochs=1",
        "trainer.total_epochs=abc",
    ]
    code, diagnostics = lint(tmp_path, text)
    ((line, message),) = found(diagnostics, "SL004")  # the second round's value
    assert line == 5 and "got 'abc'" in message, diagnostics
    assert not found(diagnostics, "SH001"), diagnostics


def test_a_c_style_for_loop_with_break_and_continue(recorder_dir):  # noqa: F811
    text = HEAD + "for ((i = 1; i <= 5; i++)); do\n    [ $i = 2 ] && continue\n    [ $i = 4 ] && break\n"
    text += "    for name in a b; do [ $name = b ] && continue 2; " + CALL + " trainer.total_epochs=$i; done\ndone\n"
    same_as_bash(text, recorder_dir)
    assert [arguments[-1] for arguments in trainer_arguments(text)] == [
        "trainer.total_epochs=1",
        "trainer.total_epochs=3",
    ]


def test_a_loop_over_the_script_arguments_runs_the_trainer_once(tmp_path):
    # how many arguments the script is given is not known: the trainer call is checked once, with the loop's
    # variable one of them (SH004)
    text = (
        HEAD + 'for name in "$@"; do\n    ' + CALL + " trainer.experiment_name=$name trainer.total_epochs=abc\ndone\n"
    )
    assert [arguments[-2] for arguments in trainer_arguments(text)] == ["trainer.experiment_name=$name"]
    code, diagnostics = lint(tmp_path, text)
    assert found(diagnostics, "SL004") and "`$name`" in found(diagnostics, "SH004")[0][1], diagnostics


def test_a_while_loop_runs_the_trainer_once(tmp_path, recorder_dir):  # noqa: F811
    # a retry loop: its body is evaluated once, and the rounds after it are said not to be followed
    text = HEAD + "while true; do\n    " + CALL + " trainer.total_epochs=abc && break\n    sleep 60\ndone\n"
    same_as_bash(text, recorder_dir)
    code, diagnostics = lint(tmp_path, text)
    assert [line for line, _ in found(diagnostics, "SL004")] == [5], diagnostics
    assert found(diagnostics, "SH001") == [
        (4, "loop `while true; do` is evaluated for one round only: how many times it runs is not followed")
    ]


def test_loops_are_evaluated_for_a_bounded_number_of_rounds():
    items = " ".join(str(i) for i in range(100))
    text = HEAD + f"for a in {items}; do\n    for b in {items}; do\n        " + CALL + " trainer.total_epochs=$a\n"
    text += "    done\ndone\n"
    evaluation = evaluate(TextFile("run.sh", text))
    ((_, ev),) = evaluation.runs
    assert len(ev.trainers) == MAX_LOOP_ITERATIONS - 1  # the outer loop's first round is one of them
    assert [u.message for u in ev.unevaluated] == [
        f"loop `for b in {items}; do` is evaluated for its first {MAX_LOOP_ITERATIONS - 1} rounds only: the script's "
        f"loops are evaluated for {MAX_LOOP_ITERATIONS} rounds in all",
        f"loop `for a in {items}; do` is evaluated for one round only: the script's loops are evaluated for "
        f"{MAX_LOOP_ITERATIONS} rounds in all",
    ]


# ------------------------------------------------------------------------------ a continuation that is cut
def broken_continuations(text: str) -> list[BrokenContinuation]:
    return [p for p in evaluate(TextFile("run.sh", text)).problems if isinstance(p, BrokenContinuation)]


@pytest.mark.parametrize(
    ("after_call", "cause", "line", "said"),
    [
        # `\  # ...`: the `\` escapes a blank and the comment ends the command; no line lies between
        (
            " \\  # the model\n    trainer.total_epochs=1 \\\n    trainer.nnodes=1\n",
            "a comment",
            5,
            "ended at line 4, where a comment after its trailing `\\` ended it (the `\\` escapes the blank after it, "
            "not the line break)",
        ),
        # a comment that itself ends in `\` continues nothing
        (
            " \\  # the model \\\n    trainer.total_epochs=1\n",
            "a comment",
            5,
            "ended at line 4, where a comment after its trailing `\\` ended it",
        ),
        # `\ `: the `\` escapes the blank, and the line break ends the command
        (
            " \\ \n    trainer.total_epochs=1\n",
            "a blank",
            5,
            "ended at line 4, where a blank after its trailing `\\` ended it (the `\\` escapes the blank, not the "
            "line break)",
        ),
        (" \\\t\n    trainer.total_epochs=1\n", "a blank", 5, "where a blank after its trailing `\\` ended it"),
        ("\n    trainer.total_epochs=1\n", "no backslash", 5, "ended at line 4, which does not end in `\\`"),
        (
            " \\\n\n    trainer.total_epochs=1\n",
            "a blank line",
            6,
            "ended at line 4, where a blank line after its trailing `\\` ended it",
        ),
        # a comment line after a `\` ends the command, also where the comment ends in `\`
        (
            " \\\n    # epochs \\\n    trainer.total_epochs=1\n",
            "a comment line",
            6,
            "ended at line 4, where a comment line after its trailing `\\` ended it",
        ),
        ("; trainer.total_epochs=1\n", "`;`", 4, "ended at `;` on line 4"),
    ],
)
def test_what_ended_the_trainer_command_is_said(tmp_path, after_call, cause, line, said):
    text = HEAD + CALL + after_call
    (broken,) = broken_continuations(text)
    assert (broken.location.line, broken.ended_at, broken.cause) == (line, 4, cause), broken
    assert not broken.trainer_never_runs and broken.command == "trainer.total_epochs=1", broken
    code, diagnostics = lint(tmp_path, text)
    ((at, message),) = found(diagnostics, "SH005")
    assert at == line and said in message and "from line" in message, message


DOUBLE_DASH = "-- " + CALL + " trainer.total_epochs=abc\n"


@pytest.mark.parametrize(
    ("launcher", "cause", "said"),
    [
        ("ray job submit --address=http://127.0.0.1:8265 \\\n\n", "a blank line", "where a blank line after"),
        ("ray job submit --address=http://127.0.0.1:8265 \\\n  # the trainer\n", "a comment line", "comment line"),
        ("ray job submit --address=http://127.0.0.1:8265 \\  # the trainer\n", "a comment", "where a comment after"),
        ("ray job submit --address=http://127.0.0.1:8265 \\ \n", "a blank", "where a blank after"),
    ],
)
def test_a_trainer_call_cut_off_before_double_dash_never_runs(tmp_path, launcher, cause, said):
    # a break ends `ray job submit ... \`: bash runs `--` as a command, and the trainer never starts
    text = HEAD + launcher + DOUBLE_DASH
    (broken,) = broken_continuations(text)
    line = text.count("\n")
    assert (broken.location.line, broken.ended_at, broken.cause) == (line, 4, cause), broken
    assert broken.trainer_never_runs and broken.command == "--", broken
    code, diagnostics = lint(tmp_path, text)
    ((at, message),) = found(diagnostics, "SH005")
    assert at == line and message.startswith("`--` starts a command of its own: the command before it ended at "), (
        message
    )
    assert said in message and "the trainer call it holds never runs" in message, message
    assert not [m for _, m in found(diagnostics, "SH001") if "`--`" in m], diagnostics  # SH005 says it, once
    assert [at for at, _ in found(diagnostics, "SL004")] == [line], diagnostics  # checked as if it ran


def test_a_double_dash_command_after_no_cut_continuation_is_said_without_a_cause(tmp_path):
    # the line before `--` has no `\` at all: which command `--` belongs to is not known, only that it never runs
    text = HEAD + DOUBLE_DASH
    (broken,) = broken_continuations(text)
    assert (broken.location.line, broken.ended_at, broken.cause, broken.trainer_never_runs) == (4, None, "", True)
    code, diagnostics = lint(tmp_path, text)
    ((at, message),) = found(diagnostics, "SH005")
    assert at == 4 and message.startswith("`--` is run as a command (`command not found`)"), message
    assert "the trainer call it holds never runs" in message and "line 3" not in message, message


def test_an_option_command_without_a_trainer_call_is_no_broken_continuation():
    # `--verbose` on a line of its own holds no trainer call: shellcheck's to judge, not SH005's
    text = HEAD + "ray job submit --address=http://127.0.0.1:8265 \\\n\n--verbose\n" + CALL + "\n"
    assert broken_continuations(text) == []


# ------------------------------------------------------------------------------------- the script's own arguments
@pytest.mark.parametrize("passed", ['"$@"', '"${@:1}"', '"${@:2}"', "${@:2:3}", '"${*:1}"'])
def test_a_slice_of_the_script_arguments_is_a_passthrough(tmp_path, passed):
    # `"${@:1}"` is `"$@"`, `"${@:2}"` all but the first argument: overrides given at run time, one SH003 note,
    # not an override key that cannot be evaluated (SH001) nor a value the run computes (SH004)
    text = HEAD + "MODE=${1:-grpo}\n" + CALL + f" algorithm.adv_estimator=$MODE {passed}\n"
    code, diagnostics = lint(tmp_path, text)
    assert {d["code"] for d in diagnostics if d["code"].startswith("SH")} == {"SH003"}, diagnostics


def test_a_slice_from_the_script_name_is_no_passthrough(tmp_path):
    # `${@:0}` starts with $0, the script's own path: not an override, and not the script's arguments
    text = HEAD + CALL + ' "${@:0}"\n'
    code, diagnostics = lint(tmp_path, text)
    assert not found(diagnostics, "SH003"), diagnostics
