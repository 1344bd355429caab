"""Reading a run script, one class of construct at a time (issue 29, section D): the trainer started through a
variable or in a `for` loop is checked, a variable inside a word stays in its word, and a continuation that a
blank line or a comment breaks is said as it is.

Each test is a small script written here: what the reader says the trainer receives equals what bash passes
(`same_as_bash`, bash in its sandbox) where bash can run it, and `sapo-lint` reports what a user acts on.
"""

from __future__ import annotations

import pytest

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
