from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.common import is_number
from ..rulekit.registry import Finding, rule
from ..rulekit.sapo import TAU_NEG, TAU_POS


@rule(
    "SP003",
    "sapo-tau-order",
    Severity.WARNING,
    summary="tau_neg < tau_pos",
    bad="""
    overrides:
      actor_rollout_ref.actor.tau_pos: 1.05
      actor_rollout_ref.actor.tau_neg: 1.0
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.tau_pos: 1.0
      actor_rollout_ref.actor.tau_neg: 1.05
    """,
)
def check(ctx: LintContext):
    """The SAPO paper (arXiv:2511.20347) sets tau_neg > tau_pos so that tokens with negative advantage are
    damped faster than positive ones are rewarded; verl's defaults follow it (1.0 and 1.05). Reversing the
    order is legal but usually a swapped pair of values."""
    pos_ro, neg_ro = ctx.explicit(TAU_POS), ctx.explicit(TAU_NEG)
    if pos_ro is None and neg_ro is None:
        return
    pos, neg = ctx.config.value(TAU_POS), ctx.config.value(TAU_NEG)
    if not (is_number(pos) and is_number(neg)) or neg >= pos:
        return
    at = max((r for r in (pos_ro, neg_ro) if r is not None), key=lambda r: (r.location.line, r.location.column))
    yield Finding(
        at, f"tau_neg={neg} < tau_pos={pos}: SAPO recommends tau_neg > tau_pos (paper and verl defaults: 1.05 > 1.0)"
    )
