"""Every rule's documented bad example triggers it and its good example does not (docs cannot rot).

Examples are recipe snippets, `sapo-lint ...` command lines, run-script snippets (SH rules, and trainer commands
that a recipe cannot hold: an SFT trainer's `torchrun ... -m verl.trainer.sft_trainer`), script names
(`(a script named) path`, NM rules) or shellcheck snippets (`(in name.sh ...)`, SH100, whose findings carry
shellcheck's own SH<SC number> codes).
"""

import re
import shlex

import pytest

from sapo_toolkit.linter.lint import lint_paths
from sapo_toolkit.linter.rules import all_rules
from sapo_toolkit.linter.settings import Settings

from .helpers import recipe

# Prose-only examples (a binary file, say) cannot be run.
RULES = all_rules()
EXAMPLE_RULES = sorted(
    code for code, r in RULES.items() if not r.bad.startswith("(") or r.bad.startswith(("(a script named)", "(in "))
)
SHELLCHECK_FINDING = re.compile(r"SH\d{4}")


def run_example(code: str, example: str, tmp_path):
    """The codes sapo-lint reports for one example, with the family SH100 standing for shellcheck's codes."""
    found = example_findings(code, example, tmp_path)
    return {"SH100" if SHELLCHECK_FINDING.fullmatch(c) else c for d in found for c in d.codes}


def example_findings(code: str, example: str, tmp_path):
    """The findings sapo-lint reports for one of `code`'s documented examples."""
    if example.startswith("sapo-lint"):
        args = shlex.split(example)[1:]
        overrides = [args[i + 1] for i, a in enumerate(args) if a == "--override"]
        path = tmp_path / "empty.yaml"
        path.write_text(recipe("overrides: {}"), encoding="utf-8")
        found = lint_paths([path], Settings(), overrides).diagnostics
    elif example.startswith("(a script named)"):
        # in a repository that runs verl's naming check, as verl's own checkout does: only there do NM rules apply
        (tmp_path / ".git").mkdir()
        (tmp_path / ".pre-commit-config.yaml").write_text(
            "repos:\n- repo: local\n  hooks:\n  - id: check-example-naming\n"
            "    entry: python3 tests/special_sanity/check_example_naming.py --root examples\n",
            encoding="utf-8",
        )
        path = tmp_path / example.split(")", 1)[1].strip()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo\n", encoding="utf-8")  # a run script
        found = lint_paths([path], Settings(shellcheck=False)).diagnostics
    elif example.startswith("(in "):
        name = re.match(r"\(in (\S+?)[;)]", example).group(1)
        path = tmp_path / name
        path.write_text("#!/bin/bash\n" + example.split("\n", 1)[1] + "\n", encoding="utf-8")
        found = lint_paths([path], Settings()).diagnostics
    elif code.startswith("SH") or example.startswith(("torchrun ", "python3 ")):  # a run script's trainer command
        path = tmp_path / "run_example_megatron.sh"
        path.write_text("#!/bin/bash\n" + example + "\n", encoding="utf-8")
        found = lint_paths([path], Settings(shellcheck=False)).diagnostics
    else:
        path = tmp_path / "example.yaml"
        path.write_text(recipe(example), encoding="utf-8")
        found = lint_paths([path], Settings()).diagnostics
    return found


@pytest.mark.parametrize("code", EXAMPLE_RULES)
def test_bad_example_triggers_rule(code, tmp_path):
    assert code in run_example(code, RULES[code].bad, tmp_path)


@pytest.mark.parametrize("code", EXAMPLE_RULES)
def test_good_example_is_clean_of_rule(code, tmp_path):
    assert code not in run_example(code, RULES[code].good, tmp_path)


def test_every_rule_is_documented():
    for code, r in RULES.items():
        assert r.explanation and r.bad and r.good and r.summary, code
        assert r.module.rsplit(".", 1)[-1].upper().startswith(code[:2]), (code, r.module)
