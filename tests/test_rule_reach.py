"""Which rules a run reaches is declared on the rules (`@rule(..., part=..., needs_model=...)`), not decided by
rule codes elsewhere: no module of the linter outside `linter/rules/` (the rules and the code table) names a rule
code in its logic, and the facts the code table keeps for speed agree with the rules' declarations."""

import ast
import re
from pathlib import Path

from sapo_toolkit.linter.engine import MODEL_PARTS
from sapo_toolkit.linter.rules import all_rules
from sapo_toolkit.linter.rules.rf_recipe import MODEL_RULES

LINTER = Path(__file__).resolve().parents[1] / "linter"
# sapo-lint's codes, and shellcheck's findings as it reports them (SH<SC number>: selected and ignored like them)
RULE_CODE = re.compile(r"^((SL|SP|TP|RC|BS|MEM|CK|NM|PF|SH|RF|OP)\d{3}|SH\d{4})$")


def _docstrings(tree: ast.AST) -> set[int]:
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def rule_codes_in_logic(path: Path) -> list[str]:
    """The string constants of the module that are a rule code, but in docstrings (comments are not in the AST)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstrings(tree)
    return [
        f"{node.lineno}: {node.value}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and RULE_CODE.match(node.value)
    ]


def test_no_module_outside_the_rules_names_a_rule_code_in_its_logic(tmp_path):
    sample = tmp_path / "m.py"  # the scan sees a code in logic, not in a docstring or a comment
    sample.write_text('"""TP003 in a docstring."""\n# TP003 in a comment\nSKIPPED = ("BS009",)\n', encoding="utf-8")
    assert rule_codes_in_logic(sample) == ["3: BS009"]
    found = {}
    for path in sorted(LINTER.rglob("*.py")):
        relative = path.relative_to(LINTER).as_posix()
        if relative.startswith("rules/"):
            continue
        codes = rule_codes_in_logic(path)
        if codes:
            found[relative] = codes
    assert not found, f"rule codes outside linter/rules/ (declare the fact on the rule instead): {found}"


def test_the_code_tables_model_parts_are_the_parts_of_the_rules_that_need_the_model():
    declared = {part for r in all_rules().values() if r.needs_model for part in r.parts}
    assert MODEL_PARTS == declared, "update MODEL_PARTS in linter/engine.py to the rules' declarations"


def test_the_rf005_message_names_every_rule_that_needs_the_model():
    # "skipped the rules that need the model's shape: the topology rules from TP003, and ... (MEM001, ...)"
    named = set(re.findall(r"[A-Z]+\d{3}", MODEL_RULES))
    for r in all_rules().values():
        if r.needs_model:
            assert r.code in named or (r.code.startswith("TP") and int(r.code[2:]) >= 3), (r.code, MODEL_RULES)


# The helpers that yield only Megatron roles: a rule that takes every finding from them checks Megatron commands
# only, and says so with `@rule(..., engines=MEGATRON_ONLY)` (the engine skips it elsewhere; docs/rules.md shows it).
MEGATRON_HELPERS = re.compile(r"\b(?:recompute_roles|optimizer_views)\(")


def test_rules_over_megatron_only_helpers_declare_their_engine():
    for rule in all_rules().values():
        if rule.check is None:
            continue
        source = Path(__import__(rule.module, fromlist=["_"]).__file__).read_text()
        if MEGATRON_HELPERS.search(source):
            assert rule.engines == frozenset({"megatron"}), f"{rule.code}: declare engines=MEGATRON_ONLY"


def test_a_megatron_rule_is_skipped_on_another_engine_and_runs_on_an_old_verl_s_megatron_config(lint_text):
    """The engine enforces the declaration; a verl without a `model_engine` group (<= 0.7) runs Megatron where the
    actor's `strategy` is megatron (`ppo_megatron_trainer`)."""
    body = (
        "  trainer.n_gpus_per_node: 8\n"
        "  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 1\n"
        "  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 1\n"
        "  actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: Full\n"
    )
    megatron = lint_text(f'verl: "0.5.0"\nconfig_name: ppo_megatron_trainer\noverrides:\n{body}')
    assert [d for d in megatron if d.code == "RC001"]
    fsdp = lint_text(f'verl: "0.5.0"\nconfig_name: ppo_megatron_trainer\noverrides:\n{body}'
                     "  actor_rollout_ref.actor.strategy: fsdp\n")  # fmt: skip
    assert not [d for d in fsdp if d.code == "RC001"]
