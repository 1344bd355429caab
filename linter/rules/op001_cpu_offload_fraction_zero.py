from __future__ import annotations

from typing import Any

from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.registry import Finding, rule
from ..topology import active_roles

# Where each training role's optimizer settings live (the ref is forward-only: no optimizer).
OPTIM_ROLES = {
    "actor": ("actor_rollout_ref.actor.optim", "actor_rollout_ref.actor.megatron"),
    "critic": ("critic.optim", "critic.megatron"),
}
HALF = {16, "16", "fp16", "float16"}
BFLOAT = {"bf16", "bfloat16"}


class OptimizerView:
    """megatron-core `OptimizerConfig` fields as verl 0.9.1 builds them for one role
    (`verl/utils/megatron/optimizer.py:init_megatron_optim_config`): a few from the role's `optim` and
    `megatron` blocks, then every `optim.override_optimizer_config` key on top, megatron-core's defaults for
    the rest."""

    MCORE_DEFAULTS = {"optimizer_cpu_offload": False, "optimizer_offload_fraction": 0.0,
                      "use_precision_aware_optimizer": False, "use_distributed_optimizer": False, "optimizer": "adam"}

    def __init__(self, ctx, role: str) -> None:
        self.ctx, self.role = ctx, role
        self.optim, self.megatron = OPTIM_ROLES[role]

    def override_key(self, name: str) -> str:
        return f"{self.optim}.override_optimizer_config.{name}"

    def overridden(self, name: str) -> bool:
        return self.ctx.config.exists(self.override_key(name))

    def source(self, name: str) -> str:
        """The config key that decides the field."""
        if self.overridden(name):
            return self.override_key(name)
        return {"optimizer": f"{self.optim}.optimizer",
                "use_distributed_optimizer": f"{self.megatron}.use_distributed_optimizer",
                "use_precision_aware_optimizer": f"{self.optim}.use_precision_aware_optimizer"}.get(name, self.override_key(name))

    def value(self, name: str) -> Any:
        config = self.ctx.config
        if self.overridden(name):
            return config.value(self.override_key(name))
        if name == "optimizer":
            return config.value(f"{self.optim}.optimizer")
        if name == "use_distributed_optimizer":
            return config.value(f"{self.megatron}.use_distributed_optimizer")
        if name == "use_precision_aware_optimizer":
            dtype = config.value(f"{self.megatron}.dtype")
            if dtype in HALF:
                return True  # verl's fp16 path forces it
            if dtype in BFLOAT:
                return bool(config.value(f"{self.optim}.use_precision_aware_optimizer"))
            return False
        return self.MCORE_DEFAULTS.get(name)


def optimizer_views(ctx) -> list[OptimizerView]:
    """One view per role that builds a Megatron optimizer."""
    if ctx.model_engine != "megatron":
        return []
    return [OptimizerView(ctx, role) for role in active_roles(ctx)
            if role in OPTIM_ROLES and ctx.tree.get(OPTIM_ROLES[role][1]) is not None]


@rule(
    "OP001", "cpu-offload-fraction-zero", Severity.WARNING,
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
            yield Finding(ctx.blame(view.override_key("optimizer_cpu_offload"), view.override_key("optimizer_offload_fraction")),
                          f"{view.role}: optimizer_cpu_offload=True with optimizer_offload_fraction {where}: "
                          f"megatron-core's HybridDeviceOptimizer offloads parameters while their size is below "
                          f"`gpu_params_total_numel * offload_fraction` = 0, i.e. none; the optimizer state stays on the "
                          f"device. Set `+{view.override_key('optimizer_offload_fraction')}` in (0, 1], e.g. 1.0",
                          )
