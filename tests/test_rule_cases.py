"""The per-rule cases of tests/rule_cases/ (sqlfluff's std_rule_cases): each file as written, its findings, and the
file after `sapo-lint FILE --fix` and `--fix --unsafe-fixes`, through the console script. And every rule that
offers fixes says so (`@rule(..., fix=...)`, what `sapo-lint rules` marks), and no other does."""

import inspect
import json
import re
from pathlib import Path

import pytest
import yaml

from .test_cli import sapo_lint

CASES = [
    case
    for path in sorted((Path(__file__).parent / "rule_cases").glob("*.yaml"))
    for case in yaml.safe_load(path.read_text())
]


def _written(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))  # as given: a case's CRLF stays CRLF


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_rule_case(case, tmp_path):
    path = tmp_path / case["file"]
    select = ["--select", ",".join(case["select"])]
    _written(path, case["input"])
    proc = sapo_lint(path.name, *select, "--format", "json", cwd=tmp_path)
    found = sorted(f"{d['code']}:{d['line']}" for d in json.loads(proc.stdout)["diagnostics"])
    assert found == sorted(case["findings"]), proc.stdout
    for options, expected in (((), case["fixed"]), (("--unsafe-fixes",), case.get("unsafe_fixed", case["fixed"]))):
        _written(path, case["input"])
        proc = sapo_lint(path.name, *select, "--fix", *options, cwd=tmp_path)
        assert proc.returncode in (0, 1), proc.stderr
        assert path.read_bytes().decode("utf-8") == (case["input"] if expected is None else expected), options


FIX_HELPERS = re.compile(r"\b(rename_key|set_value|add_override|remove_override)\(")


def test_rules_that_fix_declare_it():
    from sapo_toolkit.linter.rules import all_rules

    for rule in all_rules().values():
        if rule.check is None:
            continue
        fixes = bool(FIX_HELPERS.search(inspect.getsource(inspect.getmodule(rule.check))))
        assert fixes == (rule.fix is not None), f"{rule.code}: fixes {fixes}, declares {rule.fix}"


def test_values_are_quoted_for_the_file():
    from sapo_toolkit.linter.core.written import shell_word, written_word, yaml_entry, yaml_value

    assert shell_word("a.b", 1.0) == "a.b=1.0"
    assert shell_word("a.b", [1, 2]) == "'a.b=[1,2]'"
    assert shell_word("a.b", "x y") == "\"a.b='x y'\""  # Hydra's quotes kept inside the shell's
    assert yaml_value("[1,2]") == "'[1,2]'" and yaml_value("1") == "'1'" and yaml_value(None) == "null"
    assert yaml_entry("+a.b", "x: y") == "+a.b: 'x: y'"
    word = written_word('    "a.b=[1, 2]" \\', 5, "a.b=[1, 2]")
    assert word is not None and (word.text, word.after) == ('"a.b=[1, 2]"', " \\")
    assert written_word("    a.b=$X \\", 5, "a.b=2") is None  # a value from a variable is not written as such


def test_an_override_on_a_line_over_the_fixable_length_keeps_no_copy_of_it():
    """An override's record holds its line's text around it only on a line of at most LONGEST_FIXABLE_LINE
    characters: 300,000 overrides on one 4 MB line would hold that line once each (quadratic memory)."""
    import yaml

    from sapo_toolkit.linter.core.written import LONGEST_FIXABLE_LINE, written_word
    from sapo_toolkit.linter.sources.recipe import _written_entry

    words = " ".join(f"k{i}=1" for i in range(LONGEST_FIXABLE_LINE // 4))
    assert len(words) > LONGEST_FIXABLE_LINE and written_word(words, 1, "k0=1") is None
    assert written_word("    k0=1 \\", 5, "k0=1").text == "k0=1"
    flow = "{" + ", ".join(f"k{i}: 1" for i in range(LONGEST_FIXABLE_LINE // 4)) + "}"
    node = yaml.compose(flow)
    key, value = node.value[0]
    assert _written_entry([flow], key, value) is None
    short = yaml.compose("{k0: 1}")
    assert _written_entry(["{k0: 1}"], *short.value[0]).text == "k0: 1"
