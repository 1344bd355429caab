from ..core.diagnostics import Severity
from ..core.paths import ACTOR_DYNAMIC_BSZ, REF_DYNAMIC_BSZ
from ..engine import LintContext
from ..rulekit.registry import Finding, rule
from ..topology import active_roles


@rule(
    "PF003",
    "static-micro-batch-one",
    Severity.INFO,
    summary="static batch size with a micro-batch of 1",
    bad="""
    overrides:
      actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 1
      actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 4
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.use_dynamic_bsz: true
    """,
)
def check(ctx: LintContext):
    """With a static batch size every forward and backward runs `*_micro_batch_size_per_gpu` sequences at a
    time; at 1 each step is many small, poorly-occupied launches (and on pipeline-parallel models the most
    pipeline bubbles). In the 30B-MoE bring-up a micro-batch of 1 was the bottleneck; dynamic batch size
    (`use_dynamic_bsz=True` with a `*_max_token_len_per_gpu` budget) gave +40% over the best static setting
    (incident 11). Prefer dynamic batch size, or a larger static micro-batch if memory allows."""
    actor_static = ctx.config.value(ACTOR_DYNAMIC_BSZ) is False
    checks = []
    if actor_static:
        checks += [
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
        ]
    roles = active_roles(ctx)
    if "ref" in roles and ctx.config.value(REF_DYNAMIC_BSZ) is False:
        checks.append("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu")
    if "critic" in roles and ctx.config.value("critic.use_dynamic_bsz") is False:
        checks.append("critic.ppo_micro_batch_size_per_gpu")
    for key in checks:
        if ctx.number(key) == 1:
            yield Finding(
                ctx.blame(key),
                f"`{key}`=1 with a static batch size: one sequence per forward leaves the device "
                f"under-used. Consider dynamic batch size (use_dynamic_bsz=True with a max_token_len_per_gpu "
                f"budget; +40% in the 30B bring-up) or a larger micro-batch",
            )
