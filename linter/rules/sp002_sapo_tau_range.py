from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.common import is_number
from ..rulekit.registry import Finding, rule
from ..rulekit.sapo import TAU_NEG, TAU_POS


@rule(
    "SP002",
    "sapo-tau-range",
    Severity.ERROR,
    summary="tau_pos or tau_neg <= 0",
    bad="""
    overrides:
      actor_rollout_ref.actor.tau_neg: 0
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.tau_neg: 1.05
    """,
)
def check(ctx: LintContext):
    """SAPO's soft gate is `(4/tau) * sigmoid(tau * (r - 1))`: tau = 0 divides by zero and a negative tau
    inverts the gate, turning the trust region into an anti-trust region. verl does not check the values
    (the ActorConfig docstring's advice is not enforced), so the first sign is NaN or diverging losses."""
    for path in (TAU_POS, TAU_NEG):
        ro = ctx.explicit(path)
        if ro is None:
            continue
        value = ro.parsed.value
        if is_number(value) and value <= 0:
            yield Finding(
                ro, f"`{path}`={value} must be > 0: SAPO's gate (4/tau)*sigmoid(tau*(r-1)) needs a positive tau"
            )
