from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.recompute import GRANULARITY, finding, recompute_roles, rejects
from ..rulekit.registry import rule


@rule(
    "RC001",
    "recompute-granularity-value",
    Severity.ERROR,
    engines=MEGATRON_ONLY,
    summary='recompute_granularity is not "full", "selective" or null',
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: Full
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method: uniform
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
    """`override_transformer_config.recompute_granularity` goes unchecked through verl into megatron-core's
    `TransformerConfig`, whose `__post_init__` accepts only `"full"`, `"selective"` or None (null = no
    recompute), case-sensitively, in every megatron-core version (0.12.1, 0.15.3, 0.16.1): the choices of the
    megatron-core snapshot's `TransformerConfig.recompute_granularity`. Anything else raises
    `ValueError: When using recompute_granuarlity: <value> must be "full"or "selective".` (Megatron's spelling)
    when the worker builds the model, minutes after launch. Reported at `recompute_granularity`."""
    consumer, cls = ctx.consumer("megatron-core:TransformerConfig")
    # the snapshot's `Literal` choices; a version that annotates a plain `str` checks them in `__post_init__`
    choices = consumer.choices(cls, GRANULARITY) or tuple(ctx.fact("megatron-core:recompute-granularity-values"))
    for par, v in recompute_roles(ctx, GRANULARITY):
        g = v[GRANULARITY]
        if g is None or g in choices or (isinstance(g, str) and "${" in g):
            continue
        quoted = f'When using recompute_granuarlity: {g} must be "full"or "selective".'
        yield finding(
            ctx,
            par,
            f"{par.role}: recompute_granularity={g!r}: {rejects(ctx, quoted)} Use {', '.join(choices)} or null.",
            GRANULARITY,
        )
