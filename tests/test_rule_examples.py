"""Every rule's documented bad example triggers it and its good example does not (docs cannot rot)."""

import shlex

import pytest

from linter.lint import lint_paths
from linter.rules import RULES
from linter.settings import Settings

from .conftest import recipe

OVERRIDE_RULES = sorted(code for code, r in RULES.items() if r.check is not None or not r.bad.startswith("("))


def run_example(example: str, tmp_path):
    if example.startswith("sapo-lint"):
        args = shlex.split(example)[1:]
        overrides = [args[i + 1] for i, a in enumerate(args) if a == "--override"]
        path = tmp_path / "empty.yaml"
        path.write_text(recipe("overrides: {}"), encoding="utf-8")
        return lint_paths([path], Settings(), overrides).diagnostics
    path = tmp_path / "example.yaml"
    path.write_text(recipe(example), encoding="utf-8")
    return lint_paths([path], Settings()).diagnostics


@pytest.mark.parametrize("code", OVERRIDE_RULES)
def test_bad_example_triggers_rule(code, tmp_path):
    found = run_example(RULES[code].bad, tmp_path)
    assert code in [d.code for d in found], found


@pytest.mark.parametrize("code", OVERRIDE_RULES)
def test_good_example_is_clean_of_rule(code, tmp_path):
    found = run_example(RULES[code].good, tmp_path)
    assert code not in [d.code for d in found], found


def test_every_rule_is_documented():
    for code, r in RULES.items():
        assert r.explanation and r.bad and r.good and r.summary, code
        assert r.module.rsplit(".", 1)[-1].upper().startswith(code[:2]), (code, r.module)
