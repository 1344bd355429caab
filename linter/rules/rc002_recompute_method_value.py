from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.recompute import GRANULARITY, METHOD, finding, recompute_roles, rejects
from ..rulekit.registry import rule


@rule(
    "RC002",
    "recompute-method-value",
    Severity.ERROR,
    engines=MEGATRON_ONLY,
    summary='recompute is on and recompute_method is not "block", "uniform" or null',
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: full
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method: uniformly
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
    """When `recompute_granularity` is set, megatron-core's `TransformerConfig.__post_init__` (0.12.1, 0.15.3,
    0.16.1) requires `recompute_method` to be `"block"`, `"uniform"` or None, case-sensitively, and raises
    `ValueError: recompute_method: <value> must be "block" or "uniform".` at model init otherwise. With
    `recompute_granularity: null` the method is not looked at (and not used). Reported at `recompute_method`, with
    the granularity line as a related location."""
    for par, v in recompute_roles(ctx, GRANULARITY, METHOD):
        g, m = v[GRANULARITY], v[METHOD]
        if g is None or m is None or m in ("block", "uniform") or (isinstance(m, str) and "${" in m):
            continue
        quoted = f'recompute_method: {m} must be "block" or "uniform".'
        yield finding(
            ctx,
            par,
            f"{par.role}: recompute_method={m!r} with recompute_granularity={g!r}: {rejects(ctx, quoted)}",
            METHOD,
            GRANULARITY,
        )
