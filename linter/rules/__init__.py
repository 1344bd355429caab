"""All rules, one module per code: `linter/rules/<code>_<name>.py` holds the check, its docs and examples.

Importing this package imports every such module, which registers its rule in `RULES` (code -> Rule).
Rules that a source reports about a whole file live in family modules: `rf_recipe.py` (recipe files),
`nm_naming.py` (run-script names), `sh_*.py` (shell scripts; shellcheck findings pass through as SH<SC number>,
documented by SH100).
"""

import pkgutil
import re
from importlib import import_module

from ..rulekit.registry import RULES, Finding, Rule

_RULE_MODULE = re.compile(r"^([a-z]{2,3}\d{3}_\w+|(rf|nm|sh)_\w+)$")

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _RULE_MODULE.match(_module):
        import_module(f"{__name__}.{_module}")

__all__ = ["RULES", "Finding", "Rule"]
