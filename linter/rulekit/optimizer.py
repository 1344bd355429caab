"""The Megatron optimizer settings of each training role, as verl builds them (shared by the OP rules)."""

from __future__ import annotations

from typing import Any

from ..core.paths import ACTOR, CRITIC, ROLE_PREFIX
from ..engine import MEGATRON, LintContext
from ..topology import active_roles

# Where each training role's optimizer settings live (the ref is forward-only: no optimizer).
OPTIM_ROLES = {
    "actor": (f"{ACTOR}.optim", ROLE_PREFIX["actor"]),
    "critic": (f"{CRITIC}.optim", ROLE_PREFIX["critic"]),
}
HALF = {16, "16", "fp16", "float16"}
BFLOAT = {"bf16", "bfloat16"}


class OptimizerView:
    """megatron-core `OptimizerConfig` fields as verl 0.9.1 builds them for one role
    (`verl/utils/megatron/optimizer.py:init_megatron_optim_config`): a few from the role's `optim` and
    `megatron` blocks, then every `optim.override_optimizer_config` key on top, megatron-core's defaults for
    the rest."""

    MCORE_DEFAULTS = {
        "optimizer_cpu_offload": False,
        "optimizer_offload_fraction": 0.0,
        "use_precision_aware_optimizer": False,
        "use_distributed_optimizer": False,
        "optimizer": "adam",
    }

    def __init__(self, ctx: LintContext, role: str) -> None:
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
        return {
            "optimizer": f"{self.optim}.optimizer",
            "use_distributed_optimizer": f"{self.megatron}.use_distributed_optimizer",
            "use_precision_aware_optimizer": f"{self.optim}.use_precision_aware_optimizer",
        }.get(name, self.override_key(name))

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


def optimizer_views(ctx: LintContext) -> list[OptimizerView]:
    """One view per role that builds a Megatron optimizer."""
    if ctx.model_engine != MEGATRON:
        return []
    return [
        OptimizerView(ctx, role)
        for role in active_roles(ctx)
        if role in OPTIM_ROLES and ctx.tree.get(OPTIM_ROLES[role][1]) is not None
    ]
