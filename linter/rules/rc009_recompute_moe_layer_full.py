from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.recompute import GRANULARITY, finding, recompute_roles, rejects
from ..rulekit.registry import rule

MOE_LAYER_RECOMPUTE = "moe_layer_recompute"


@rule(
    "RC009",
    "recompute-moe-layer-full",
    Severity.ERROR,
    engines=MEGATRON_ONLY,
    summary="deprecated moe_layer_recompute with full recompute granularity",
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: full
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method: uniform
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers: 1
      +actor_rollout_ref.actor.megatron.override_transformer_config.moe_layer_recompute: true
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: selective
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_modules: [moe]
    """,
)
def check(ctx: LintContext):
    """`moe_layer_recompute` is deprecated: megatron-core turns it into `recompute_granularity=selective` with
    `moe` added to `recompute_modules`. Combined with full recompute, `TransformerConfig.__post_init__`
    (0.12.1, 0.15.3, 0.16.1) raises `ValueError: Do not set --moe-layer-recompute with full recompute
    granularity.` at model init. Use selective recompute with `recompute_modules: [moe]` instead. Reported at
    `moe_layer_recompute`, with the granularity line as a related location."""
    for par, v in recompute_roles(ctx, GRANULARITY, MOE_LAYER_RECOMPUTE):
        if v[GRANULARITY] != "full" or v[MOE_LAYER_RECOMPUTE] is not True:
            continue
        quoted = "Do not set --moe-layer-recompute with full recompute granularity. "
        yield finding(
            ctx,
            par,
            f"{par.role}: moe_layer_recompute=true with recompute_granularity=full: {rejects(ctx, quoted)} "
            "Use recompute_granularity=selective with recompute_modules containing moe.",
            MOE_LAYER_RECOMPUTE,
            GRANULARITY,
        )
