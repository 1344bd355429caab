from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.recompute import GRANULARITY, METHOD, NUM_LAYERS, finding, mcore, recompute_roles
from ..rulekit.registry import rule

OVERLAP = "overlap_moe_expert_parallel_comm"


@rule(
    "RC010",
    "recompute-moe-a2a-overlap",
    Severity.ERROR,
    engines=MEGATRON_ONLY,
    summary="full recompute (or a recompute method/num_layers) with overlap_moe_expert_parallel_comm",
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: full
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method: uniform
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers: 1
      +actor_rollout_ref.actor.megatron.override_transformer_config.overlap_moe_expert_parallel_comm: true
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: selective
      +actor_rollout_ref.actor.megatron.override_transformer_config.overlap_moe_expert_parallel_comm: true
    """,
)
def check(ctx: LintContext):
    """megatron-core 0.15+ can overlap the MoE expert-parallel all-to-all with computation
    (`overlap_moe_expert_parallel_comm`, absent in 0.12). `TransformerConfig.__post_init__` (0.15.3, 0.16.1)
    then asserts that recompute is not full and that `recompute_method` and `recompute_num_layers` are None:
    `disable full recomputation when enabling overlap_moe_expert_parallel_comm`, `disable recomputation method
    when enabling overlap_moe_expert_parallel_comm`, `recompute_num_layers must be None when enabling
    overlap_moe_expert_parallel_comm`, each an AssertionError at model init (checked after the overlap's other
    requirements: EP > 1, alltoall/flex dispatcher, VPP when PP > 1). Selective recompute is allowed.
    Reported at `overlap_moe_expert_parallel_comm` (the checks sit under it), with the recompute lines as related
    locations."""
    if not ctx.fact("megatron-core:moe-a2a-overlap"):
        return  # the field does not exist there (SL007 reports it)
    for par, v in recompute_roles(ctx, GRANULARITY, METHOD, NUM_LAYERS, OVERLAP):
        if v[OVERLAP] is not True:
            continue
        failed = []
        if v[GRANULARITY] == "full":
            failed.append("disable full recomputation when enabling overlap_moe_expert_parallel_comm")
        if v[METHOD] is not None:
            failed.append("disable recomputation method when enabling overlap_moe_expert_parallel_comm")
        if v[NUM_LAYERS] is not None:
            failed.append("recompute_num_layers must be None when enabling overlap_moe_expert_parallel_comm")
        if not failed:
            continue
        settings = ", ".join(f"{n}={v[n]!r}" for n in (GRANULARITY, METHOD, NUM_LAYERS) if v[n] is not None)
        quoted = "; then ".join(f'"{m}"' for m in failed)
        yield finding(
            ctx,
            par,
            f"{par.role}: overlap_moe_expert_parallel_comm=true with {settings}: {mcore(ctx)} fails an "
            f"assertion at model init (`TransformerConfig.__post_init__`): {quoted}",
            OVERLAP,
            GRANULARITY,
            METHOD,
            NUM_LAYERS,
        )
