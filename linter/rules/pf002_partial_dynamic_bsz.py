from ..core.diagnostics import Severity
from ..core.paths import ACTOR_DYNAMIC_BSZ, REF_DYNAMIC_BSZ, ROLLOUT_DYNAMIC_BSZ
from ..engine import LintContext
from ..rulekit.registry import Finding, rule
from ..topology import active_roles


@rule(
    "PF002",
    "partial-dynamic-bsz",
    Severity.WARNING,
    summary="dynamic batch size on the actor but not the ref log-prob, or the other way round",
    bad="""
    overrides:
      actor_rollout_ref.actor.use_kl_loss: true
      actor_rollout_ref.actor.use_dynamic_bsz: true
      actor_rollout_ref.ref.log_prob_use_dynamic_bsz: false
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.use_kl_loss: true
      actor_rollout_ref.actor.use_dynamic_bsz: true
    """,
)
def check(ctx: LintContext):
    """Dynamic batch size packs micro-batches by token count instead of a fixed number of sequences; in the
    30B-MoE bring-up turning it on for the actor update, the rollout's old-log-prob recompute and the ref
    log-prob together gave +40% throughput over the best static micro-batch (incident 11). verl's YAML
    makes `rollout.log_prob_use_dynamic_bsz` and `ref.log_prob_use_dynamic_bsz` follow
    `actor.use_dynamic_bsz` by interpolation, so a partial trio comes only from an explicit override. The
    actor/rollout pair must agree anyway (BS006, an error); this rule reports the ref, when a KL term makes it
    run, set differently from the actor: one pass stays on the slower (or differently tuned) path."""
    if "ref" not in active_roles(ctx):
        return
    actor, rollout, ref = (ctx.config.value(k) for k in (ACTOR_DYNAMIC_BSZ, ROLLOUT_DYNAMIC_BSZ, REF_DYNAMIC_BSZ))
    if not all(isinstance(v, bool) for v in (actor, rollout, ref)) or actor != rollout or ref == actor:
        return
    on, off = (
        ("actor update and rollout log-prob", "ref log-prob")
        if actor
        else ("ref log-prob", "actor update and rollout log-prob")
    )
    yield Finding(
        ctx.blame(REF_DYNAMIC_BSZ, ACTOR_DYNAMIC_BSZ),
        f"dynamic batch size is on for the {on} but off for the {off} (actor.use_dynamic_bsz={actor}, "
        f"ref.log_prob_use_dynamic_bsz={ref}); use it for all three (drop the ref override: it follows the "
        f"actor's)",
    )
