from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.registry import Finding, rule
from ..rulekit.sapo import CLIP_KEYS, LOSS_MODE


@rule(
    "SP005",
    "sapo-clip-ignored",
    Severity.INFO,
    summary="clip ratios set while loss_mode is sapo",
    bad="""
    overrides:
      actor_rollout_ref.actor.policy_loss.loss_mode: sapo
      actor_rollout_ref.actor.clip_ratio_high: 0.28
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.policy_loss.loss_mode: sapo
    """,
)
def check(ctx: LintContext):
    """SAPO replaces PPO's hard ratio clip with a soft gate and never reads `clip_ratio`, `clip_ratio_low`,
    `clip_ratio_high` or `clip_ratio_c`; leaving them in a recipe suggests they matter."""
    if ctx.config.value(LOSS_MODE) != "sapo":
        return
    for path in CLIP_KEYS:
        ro = ctx.explicit(path)
        if ro is not None:
            yield Finding(ro, f"`{path}` has no effect with loss_mode=sapo: SAPO does not clip the ratio")
