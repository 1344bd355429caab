"""The code table (`linter/rules/__init__.py: MODULES`) and the rule modules stay in step: every module under
`linter/rules/` registers a rule, every code in the table is registered by the module the table names, and no
module registers a code the table lacks."""

import importlib
import pkgutil
import subprocess
import sys

import sapo_toolkit.linter.rules as rules_package
from sapo_toolkit.linter.rulekit.registry import RULES
from sapo_toolkit.linter.rules import MODULES, load_rules


def test_every_rule_module_is_in_the_table_and_registers_exactly_its_codes():
    modules = {m.name for m in pkgutil.iter_modules(rules_package.__path__)}
    assert modules == set(MODULES.values()), "a module under linter/rules/ is missing from MODULES, or vice versa"
    for module in sorted(modules):
        importlib.import_module(f"{rules_package.__name__}.{module}")
    registered = {code: r.module.rsplit(".", 1)[1] for code, r in RULES.items()}
    assert registered == MODULES


def test_codes_follow_their_module_names():
    for code, module in MODULES.items():
        family = module.split("_")[0]
        assert module.startswith(code.lower()) or family in ("rf", "nm", "sh"), (code, module)
        assert code[: len(family)].lower() == family if family in ("rf", "nm", "sh") else True


def test_selecting_a_family_imports_only_its_modules():
    code = (
        "import sys\n"
        "from sapo_toolkit.linter.rules import load_rules\n"
        "rules = load_rules(lambda c: c.startswith('SL'))\n"
        "loaded = sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('sapo_toolkit.linter.rules.'))\n"
        "print(' '.join(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out and all(m.startswith(("sl", "sp", "rf_", "sh_")) for m in out), out
    assert not any(m.startswith(("mem", "ck", "tp")) for m in out), out


def test_load_rules_returns_them_in_code_order():
    codes = [r.code for r in load_rules()]
    assert codes == sorted(MODULES)


def test_every_code_prefix_has_one_family_record_and_every_family_has_rules():
    import re

    from sapo_toolkit.linter.rules import FAMILIES, MODULES

    prefixes = {re.match(r"[A-Z]+", code)[0] for code in MODULES}
    families = [f.prefix for f in FAMILIES]
    assert len(families) == len(set(families)), families
    assert prefixes == set(families), prefixes ^ set(families)


def test_supersedes_is_declared_on_the_rule_and_names_real_codes():
    from sapo_toolkit.linter.rules import all_rules

    rules = all_rules()
    declared = {code: r.supersedes for code, r in rules.items() if r.supersedes}
    assert declared == {"RF014": ("SL004", "SL005"), "RF015": ("SH001",), "SP001": ("SL001",)}
    assert all(code in rules for replaced in declared.values() for code in replaced)
