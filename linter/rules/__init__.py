"""All rules, one module per code: `linter/rules/<code>_<name>.py` holds the check, its docs and examples.

Importing this package imports every such module, which registers its rule in `RULES` (code -> Rule).
Recipe-level rules that a source reports (RF) live in `rf_recipe.py`.
"""

import pkgutil
import re
from importlib import import_module

from .registry import RULES, Finding, Rule

_RULE_MODULE = re.compile(r"^([a-z]{2,3}\d{3}_\w+|rf_recipe)$")

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _RULE_MODULE.match(_module):
        import_module(f"{__name__}.{_module}")

__all__ = ["RULES", "Finding", "Rule"]
