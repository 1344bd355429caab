from __future__ import annotations

from ..core.diagnostics import Applicability, Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.fixes import add_override, set_value
from ..rulekit.optimizer import optimizer_views
from ..rulekit.registry import Finding, rule


@rule(
    "OP001",
    "cpu-offload-fraction-zero",
    Severity.WARNING,
    engines=MEGATRON_ONLY,
    summary="optimizer_cpu_offload with optimizer_offload_fraction 0 offloads nothing",
    bad="""
    overrides:
      +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload: true
    """,
    good="""
    overrides:
      +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload: true
      +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction: 1.0
    """,
    fix=Applicability.UNSAFE,
)
def check(ctx: LintContext):
    """verl passes `optim.override_optimizer_config` straight into megatron-core's `OptimizerConfig`
    (`verl/utils/megatron/optimizer.py:210-217`). With `optimizer_cpu_offload=True` megatron-core builds a
    `HybridDeviceOptimizer` with `offload_fraction=config.optimizer_offload_fraction`, whose default is 0.0; it
    moves a parameter's optimizer state to the CPU only while `offload_params_numel < offload_threshold`, with
    `offload_threshold = gpu_params_total_numel * offload_fraction`
    (`megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py:258-273`, megatron-core 0.12-0.16). A
    fraction of 0 therefore offloads nothing while still paying for the hybrid optimizer and its fp32 copies,
    and the Adam state stays on the device. Set a fraction in (0, 1] (verl's examples use 1)."""
    for view in optimizer_views(ctx):
        if view.value("optimizer_cpu_offload") is not True:
            continue
        fraction = view.value("optimizer_offload_fraction")
        if isinstance(fraction, (int, float)) and not isinstance(fraction, bool) and fraction <= 0:
            where = "its default 0.0" if not view.overridden("optimizer_offload_fraction") else f"{fraction}"
            fraction_key = view.override_key("optimizer_offload_fraction")
            at = ctx.blame(view.override_key("optimizer_cpu_offload"), fraction_key)
            # 1.0 (offload everything, as verl's examples do) is one choice in the range: a guess
            if at is ctx.explicit(fraction_key):
                fix = set_value(1.0, Applicability.UNSAFE)
            else:
                fix = add_override(f"+{fraction_key}", 1.0, Applicability.UNSAFE)
            yield Finding(
                at,
                f"{view.role}: optimizer_cpu_offload=True with optimizer_offload_fraction {where}: "
                f"megatron-core's HybridDeviceOptimizer offloads parameters while their size is below "
                f"`gpu_params_total_numel * offload_fraction` = 0, i.e. none; the optimizer state stays on the "
                f"device. Set `+{view.override_key('optimizer_offload_fraction')}` in (0, 1], e.g. 1.0",
                fix=fix,
            )
