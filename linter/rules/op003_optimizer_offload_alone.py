from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.optimizer import optimizer_views
from ..rulekit.registry import Finding, rule


@rule(
    "OP003",
    "optimizer-offload-not-cpu-offload",
    Severity.INFO,
    engines=MEGATRON_ONLY,
    summary=(
        "megatron.optimizer_offload without Megatron's optimizer CPU offload "
        "keeps Adam state on the device for the step"
    ),
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.optimizer_offload: true
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.optimizer_offload: true
      +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload: true
      +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction: 1.0
    """,
)
def check(ctx: LintContext):
    """`<role>.megatron.optimizer_offload` is verl's own swap: between phases it moves the optimizer state to
    the CPU (`offload_megatron_optimizer`, `verl/utils/megatron_utils.py:931`), and on entering train mode the
    engine context loads it back (`BaseEngineCtx._context_switch`, `verl/workers/engine/base.py:314-327` ->
    `load_megatron_optimizer`, `verl/workers/engine/megatron/transformer_impl.py:740-741`), so
    during `optimizer.step()` the full (distributed-optimizer-sharded) Adam state is on the device again. It
    frees memory for the rollout, not for the step: a model whose fp32 moments do not fit still runs out of
    memory in the first `optimizer.step()`, after a complete rollout (incident 3). Megatron's own CPU
    offload (`+<role>.optim.override_optimizer_config.optimizer_cpu_offload: true` with
    `optimizer_offload_fraction` > 0) keeps the state and the update on the CPU.

    An info, not a warning: verl's own large-model scripts set `optimizer_offload` to make room for the rollout and
    their step fits; whether it does is MEM001's question, which names Megatron's CPU offload knobs when it does not."""
    for view in optimizer_views(ctx):
        key = f"{view.megatron}.optimizer_offload"
        if ctx.config.value(key) is not True or view.value("optimizer_cpu_offload") is True:
            continue
        yield Finding(
            ctx.blame(key),
            f"{view.role}: `{key}` only swaps the optimizer state to the CPU between steps; verl loads it back "
            f"before `optimizer.step()`, so peak device memory at the step is unchanged. To keep Adam's state on "
            f"the CPU add `+{view.override_key('optimizer_cpu_offload')}: true` and "
            f"`+{view.override_key('optimizer_offload_fraction')}: 1.0`",
        )
