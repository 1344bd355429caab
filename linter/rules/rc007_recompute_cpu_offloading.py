from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.recompute import GRANULARITY, finding, recompute_roles, rejects
from ..rulekit.registry import rule

CPU_OFFLOADING = "cpu_offloading"


@rule(
    "RC007",
    "recompute-cpu-offloading",
    Severity.ERROR,
    engines=MEGATRON_ONLY,
    summary="activation recompute together with Megatron's cpu_offloading",
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: selective
      +actor_rollout_ref.actor.megatron.override_transformer_config.cpu_offloading: true
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: selective
    """,
)
def check(ctx: LintContext):
    """megatron-core's activation/weight CPU offloading (`cpu_offloading`, a `TransformerConfig` field, not
    verl's `param_offload`/`optimizer_offload`) cannot be combined with activation recompute:
    `TransformerConfig.__post_init__` (0.12.1, 0.15.3, 0.16.1) raises `ValueError: CPU offloading does not work
    when activation recomputation is enabled` at model init when `recompute_granularity` is not null. Reported at
    `cpu_offloading` (Megatron's check is about it), with the granularity line as a related location."""
    for par, v in recompute_roles(ctx, GRANULARITY, CPU_OFFLOADING):
        if v[GRANULARITY] is None or v[CPU_OFFLOADING] is not True:
            continue
        quoted = "CPU offloading does not work when activation recomputation is enabled"
        yield finding(
            ctx,
            par,
            f"{par.role}: cpu_offloading=true with recompute_granularity={v[GRANULARITY]!r}: "
            f"{rejects(ctx, quoted)} Use one or the other.",
            CPU_OFFLOADING,
            GRANULARITY,
        )
