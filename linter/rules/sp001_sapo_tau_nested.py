from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.registry import Finding, rule
from ..rulekit.sapo import is_nested_tau


@rule(
    "SP001", "sapo-tau-nested", Severity.ERROR,
    summary="tau_pos/tau_neg nested under policy_loss",
    bad="""
    overrides:
      +actor_rollout_ref.actor.policy_loss.tau_pos: 1.0
      +actor_rollout_ref.actor.policy_loss.tau_neg: 1.05
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.tau_pos: 1.0
      actor_rollout_ref.actor.tau_neg: 1.05
    """,
)
def check(ctx: LintContext):
    """SAPO's temperatures live on the actor (`ActorConfig.tau_pos`/`tau_neg`); `compute_policy_loss_sapo`
    reads `config.tau_pos` from the actor config. `PolicyLossConfig` has no such fields, so
    `+actor_rollout_ref.actor.policy_loss.tau_pos` (the form in upstream verl's SAPO README and FSDP example
    scripts) composes, then either crashes when verl instantiates the policy-loss dataclass or, where the
    node is read as a dict, is never read: the paper's key hyper-parameter silently stays at its default.
    The fix moves the key to the actor."""
    for ro in ctx.overrides:
        if ro.assigns and is_nested_tau(ro.path):
            real = ro.path.replace(".policy_loss.", ".")
            fix = real if ctx.config.exists(real) else "+" + real
            yield Finding(ro, f"`{ro.path}` is not read by SAPO: the temperatures are actor fields; "
                              f"set `{real}` instead", fix=fix)
