from ..core.diagnostics import Severity
from ..core.paths import ACTOR_DYNAMIC_BSZ, ROLLOUT_DYNAMIC_BSZ
from ..engine import LintContext
from ..rulekit.registry import Finding, rule


@rule(
    "BS006",
    "dynamic-bsz-actor-rollout-mismatch",
    Severity.ERROR,
    summary="actor.use_dynamic_bsz differs from rollout.log_prob_use_dynamic_bsz",
    bad="""
    overrides:
      actor_rollout_ref.actor.use_dynamic_bsz: true
      actor_rollout_ref.rollout.log_prob_use_dynamic_bsz: false
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.use_dynamic_bsz: true
      actor_rollout_ref.rollout.log_prob_use_dynamic_bsz: true
    """,
)
def check(ctx: LintContext):
    """The actor's training forward and its old-log-prob recompute share one engine, so verl 0.9.1 asserts
    `assert self.config.actor.use_dynamic_bsz == self.config.rollout.log_prob_use_dynamic_bsz`
    (`verl/workers/engine_workers.py:616`) when it builds the actor, after Ray has started and the workers are
    placed. `rollout.log_prob_use_dynamic_bsz` defaults to the actor's value by interpolation; this fires only
    when one of them is set so that they differ."""
    actor, rollout = ctx.config.value(ACTOR_DYNAMIC_BSZ), ctx.config.value(ROLLOUT_DYNAMIC_BSZ)
    if not isinstance(actor, bool) or not isinstance(rollout, bool) or actor == rollout:
        return
    yield Finding(
        ctx.blame(ACTOR_DYNAMIC_BSZ, ROLLOUT_DYNAMIC_BSZ),
        f"actor.use_dynamic_bsz={actor} but rollout.log_prob_use_dynamic_bsz={rollout}: the actor worker's "
        f"`assert self.config.actor.use_dynamic_bsz == self.config.rollout.log_prob_use_dynamic_bsz` fails at "
        f"init. Set both to the same value (or drop the rollout override: it follows the actor's)",
    )
