from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.recompute import GRANULARITY, NUM_LAYERS, finding, recompute_roles, rejects
from ..rulekit.registry import rule


@rule(
    "RC005",
    "recompute-selective-num-layers",
    Severity.ERROR,
    engines=MEGATRON_ONLY,
    summary="recompute_granularity=selective with recompute_num_layers still set",
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: selective
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers: 1
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: selective
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_modules: [core_attn]
    """,
)
def check(ctx: LintContext):
    """Selective recompute checkpoints the submodules named in `recompute_modules` in every layer; it takes no
    layer count. megatron-core's `TransformerConfig.__post_init__` (0.12.1, 0.15.3, 0.16.1) raises
    `ValueError: When using recompute_granularity: selective recompute_num_layers must be None.` at model
    init, minutes after launch. This is what happens when a script switches `recompute_granularity` to
    selective but keeps the rest of a hard-coded "full" triplet (method + num_layers). A leftover
    `recompute_method` alone is accepted by megatron-core. Reported at `recompute_granularity=selective`, the
    value that makes the layer count invalid, with the `recompute_num_layers` line as a related location."""
    for par, v in recompute_roles(ctx, GRANULARITY, NUM_LAYERS):
        if v[GRANULARITY] != "selective" or v[NUM_LAYERS] is None:
            continue
        quoted = "When using recompute_granularity: selective recompute_num_layers must be None."
        yield finding(
            ctx,
            par,
            f"{par.role}: recompute_granularity=selective with recompute_num_layers={v[NUM_LAYERS]!r}: "
            f"{rejects(ctx, quoted)} Drop the {par.transformer(NUM_LAYERS)} override (or set it to null), or use full "
            "recompute.",
            GRANULARITY,
            NUM_LAYERS,
        )
