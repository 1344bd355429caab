from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.recompute import GRANULARITY, NUM_LAYERS, finding, recompute_roles, rejects
from ..rulekit.registry import rule


@rule(
    "RC004",
    "recompute-full-needs-num-layers",
    Severity.ERROR,
    engines=MEGATRON_ONLY,
    summary="recompute_granularity=full without recompute_num_layers",
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: full
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method: uniform
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: full
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method: uniform
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers: 1
    """,
)
def check(ctx: LintContext):
    """Full recompute needs `recompute_num_layers` (layers per uniform chunk, or layers per stage for `block`).
    verl's default is null, and megatron-core's `TransformerConfig.__post_init__` (0.12.1, 0.15.3, 0.16.1)
    raises `ValueError: When using recompute_granularity: full recompute_num_layers must be between 1 and
    num_layers_per_pipeline_rank: <num_layers // PP>` at model init. Megatron only checks that the value is
    set: an out-of-range number is not rejected there. Reported at `recompute_granularity=full`, whose requirement
    fails (a `recompute_num_layers` line as a related location)."""
    for par, v in recompute_roles(ctx, GRANULARITY, NUM_LAYERS):
        if v[GRANULARITY] != "full" or v[NUM_LAYERS] is not None:
            continue
        per_rank = str(ctx.model.num_layers // par.pp) if ctx.model is not None else f"<num_layers // {par.pp}>"
        quoted = (
            "When using recompute_granularity: full recompute_num_layers must be between "
            f"1 and num_layers_per_pipeline_rank: {per_rank}"
        )
        yield finding(
            ctx,
            par,
            f"{par.role}: recompute_granularity=full with recompute_num_layers=null: {rejects(ctx, quoted)} "
            f"Set {par.transformer(NUM_LAYERS)} (1 with the uniform method).",
            GRANULARITY,
            NUM_LAYERS,
        )
