"""All rules, one module per code: `linter/rules/<code>_<name>.py` holds the check, its docs and examples.

Importing this package registers every rule in `RULES` (code -> Rule).
"""

from . import (  # noqa: F401  (imported for registration)
    sl001_unknown_key,
    sl002_append_existing,
    sl003_unread_key,
    sl004_type_mismatch,
    sl005_invalid_choice,
    sl006_delete_missing,
    sl007_passthrough_unknown_field,
    sl008_duplicate_override,
    sl009_override_syntax,
    sl010_breaks_inherited_node,
    sp001_sapo_tau_nested,
    sp002_sapo_tau_range,
    sp003_sapo_tau_order,
    sp004_sapo_tau_ignored,
    rf_recipe,
    sp005_sapo_clip_ignored,
)
from .registry import RULES, Finding, Rule

__all__ = ["RULES", "Finding", "Rule"]
