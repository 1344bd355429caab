from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import megatron_roles, model_path, own_setting


@rule(
    "TP004",
    "query-groups-vs-tp",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    engines=MEGATRON_ONLY,
    needs_model=True,
    summary="KV heads (query groups) incompatible with TP for the megatron-core version",
    bad="""
    model: {path: Qwen/Qwen3-30B-A3B}
    stack: {megatron_core: "0.12.1"}
    overrides:
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 8
      actor_rollout_ref.actor.megatron.expert_tensor_parallel_size: 1
    """,
    good="""
    model: {path: Qwen/Qwen3-30B-A3B}
    stack: {megatron_core: "0.16.1"}
    overrides:
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 8
      actor_rollout_ref.actor.megatron.expert_tensor_parallel_size: 1
    """,
)
def check(ctx: LintContext):
    """Up to megatron-core 0.15 a GQA model's KV heads must split evenly over TP:
    `num_query_groups (G) must be a multiple of tensor_model_parallel_size (TP).` From 0.16 Megatron replicates
    KV heads, so TP may also be a multiple of the group count (`must be a multiple or divisor of`). Qwen3-30B-A3B
    (4 KV heads) at TP 8 therefore fails on the Ascend stack's 0.12.1 and passes on 0.16."""
    model = ctx.model
    if model is None:
        return
    replicates = ctx.fact("megatron-core:tp-replicates-kv-heads")
    groups = model.num_query_groups
    for role, par in megatron_roles(ctx):
        if not own_setting(ctx, par, "tensor_model_parallel_size"):
            continue
        if groups % par.tp == 0 or (replicates and par.tp % groups == 0):
            continue
        wording = "a multiple or divisor of" if replicates else "a multiple of"
        yield Finding(
            ctx.blame(par.path("tensor_model_parallel_size")),
            f"{role}: {model.name} has {groups} query groups (KV heads); megatron-core {ctx.stack.megatron_core}: "
            f'"num_query_groups ({groups}) must be {wording} tensor_model_parallel_size ({par.tp})."'
            + ("" if replicates else " (megatron-core >= 0.16 also accepts TP a multiple of the groups)"),
            related=ctx.set_at(model_path(ctx)),
        )
