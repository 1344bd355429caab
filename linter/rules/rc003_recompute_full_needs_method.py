from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.recompute import GRANULARITY, METHOD, finding, recompute_roles, rejects
from ..rulekit.registry import rule


@rule(
    "RC003",
    "recompute-full-needs-method",
    Severity.ERROR,
    engines=MEGATRON_ONLY,
    summary="recompute_granularity=full without a recompute_method",
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: full
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers: 1
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: full
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method: uniform
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers: 1
    """,
)
def check(ctx: LintContext):
    """Full recompute needs a method: `uniform` (checkpoint every `recompute_num_layers` layers) or `block`
    (checkpoint the first `recompute_num_layers` layers of each pipeline stage). verl's default method is null,
    so setting only `recompute_granularity=full` makes megatron-core's `TransformerConfig.__post_init__`
    (0.12.1, 0.15.3, 0.16.1) raise `ValueError: Using recompute_granularity: full so recompute_method must be
    "block" or "uniform"` at model init. The usual full triplet is `full` / `uniform` / `1`. Reported at
    `recompute_granularity=full`, whose requirement fails (a `recompute_method` line as a related location)."""
    for par, v in recompute_roles(ctx, GRANULARITY, METHOD):
        if v[GRANULARITY] != "full" or v[METHOD] is not None:
            continue
        quoted = 'Using recompute_granularity: full so recompute_method must be "block" or "uniform"'
        yield finding(
            ctx,
            par,
            f"{par.role}: recompute_granularity=full with recompute_method=null: {rejects(ctx, quoted)} "
            f"Set {par.transformer(METHOD)}=uniform (or block).",
            GRANULARITY,
            METHOD,
        )
