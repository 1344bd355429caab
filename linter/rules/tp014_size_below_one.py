from ..core.diagnostics import Severity
from ..core.paths import ROLE_PREFIX
from ..engine import MEGATRON, LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import active_roles, world_keys

# TP, PP and CP below 1 are TP001's (they divide the world size); these are the other Megatron sizes.
MEGATRON_SIZES = {
    "expert_model_parallel_size": "Megatron divides the world size by EP*ETP*PP (`initialize_model_parallel`, "
    "megatron/core/parallel_state.py)",
    "expert_tensor_parallel_size": "Megatron divides the world size by EP*ETP*PP (`initialize_model_parallel`, "
    "megatron/core/parallel_state.py); leave it null for ETP = TP",
    "virtual_pipeline_model_parallel_size": "Megatron splits each pipeline stage's layers into VPP chunks "
    "(`num_layers_per_pipeline_rank % vp_size`, "
    "megatron/core/transformer/transformer_block.py); leave it null for no "
    "interleaving",
}


@rule(
    "TP014",
    "size-below-one",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    summary="device count or Megatron EP/ETP/VPP below 1, or trainer.nnodes / n_gpus_per_node deleted",
    bad="""
    overrides:
      trainer.nnodes: 0
    """,
    good="""
    overrides:
      trainer.nnodes: 1
    """,
)
def check(ctx: LintContext):
    """verl places the trainer's workers in one resource pool of `[trainer.n_gpus_per_node] * trainer.nnodes`
    devices (verl `verl/trainer/ppo/v1/trainer_base.py` and `main_ppo_v0.py`, `init_resource_pool_mgr`). With
    `nnodes: 0` the pool is empty and `validate_config` (`verl/utils/config.py`) divides the batch by
    `n_gpus = n_gpus_per_node * nnodes` = 0 (ZeroDivisionError, static batch sizes); with a negative
    `n_gpus_per_node` a node gets `range(-8)`, no bundles, and Ray refuses the placement group. Deleting either
    key (`~trainer.nnodes`) composes, then `validate_config` stops at `config.trainer.nnodes` (OmegaConf: missing
    key). The Megatron sizes the topology rules divide by are checked the same way: EP and ETP divide the world
    size in `initialize_model_parallel`, and a VPP of 0 divides each stage's layers (TP001 reports TP, PP and CP
    below 1). A size below 1 makes the world size unknown to the other rules and the memory estimate: they skip
    it rather than report a second time."""
    for path in world_keys(ctx):  # none where torchrun's options count an SFT trainer's devices
        value = ctx.number(path)
        if not ctx.config.exists(path):
            deleter = _deleter(ctx, path)
            if deleter is not None:
                yield Finding(
                    deleter,
                    f"`{deleter.override.key_text}` deletes `{path}`; verl reads it to size the "
                    "trainer's resource pool and stops at start-up (OmegaConf: missing key). Set "
                    "it instead",
                )
        elif value is not None and value < 1:
            yield Finding(
                ctx.blame(path),
                f"`{path}` is {value}: verl's resource pool is `[n_gpus_per_node] * "
                "nnodes` devices, so there would be none to place the trainer's workers "
                "on (verl needs at least 1)",
            )
    if ctx.model_engine != MEGATRON:  # the device count applies to every engine, the sizes below to Megatron's
        return
    for role in active_roles(ctx):
        for name, why in MEGATRON_SIZES.items():
            path = f"{ROLE_PREFIX[role]}.{name}"
            value = ctx.number(path)
            if value is not None and value < 1 and ctx.explicit(path) is not None:  # the ref inherits the actor's
                yield Finding(ctx.blame(path), f"{role}: `{path}` is {value}; {why}")


def _deleter(ctx: LintContext, path: str):
    """The `~key` override that deleted `path` (or an ancestor); None when the config never had it (a config
    other than the trainer's)."""
    for ro in reversed(ctx.overrides):
        if ro.parsed.op == "delete" and (path == ro.path or path.startswith(ro.path + ".")):
            return ro
    return None
