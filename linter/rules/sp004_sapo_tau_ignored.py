from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.registry import Finding, rule
from ..rulekit.sapo import LOSS_MODE, TAU_NEG, TAU_POS


@rule(
    "SP004",
    "sapo-tau-ignored",
    Severity.WARNING,
    summary="tau set while loss_mode is not sapo",
    bad="""
    overrides:
      actor_rollout_ref.actor.tau_pos: 1.0
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.policy_loss.loss_mode: sapo
      actor_rollout_ref.actor.tau_pos: 1.0
    """,
)
def check(ctx: LintContext):
    """Only `compute_policy_loss_sapo` reads `tau_pos`/`tau_neg`. With any other `policy_loss.loss_mode`
    (verl's default is `vanilla`) the values have no effect, which usually means the loss mode override is
    missing or sits in a variant that was not selected."""
    mode = ctx.config.value(LOSS_MODE)
    if mode == "sapo":
        return
    for path in (TAU_POS, TAU_NEG):
        ro = ctx.explicit(path)
        if ro is not None:
            yield Finding(ro, f"`{path}` is set but `{LOSS_MODE}` is {mode!r}: only the sapo loss reads it")
