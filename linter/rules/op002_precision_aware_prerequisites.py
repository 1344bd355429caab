from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.optimizer import optimizer_views
from ..rulekit.registry import Finding, rule


@rule(
    "OP002",
    "precision-aware-optimizer-prerequisites",
    Severity.ERROR,
    engines=MEGATRON_ONLY,
    summary="use_precision_aware_optimizer needs optimizer adam and the distributed optimizer",
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.use_distributed_optimizer: false
      actor_rollout_ref.actor.optim.use_precision_aware_optimizer: true
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.use_distributed_optimizer: true
      actor_rollout_ref.actor.optim.use_precision_aware_optimizer: true
    """,
)
def check(ctx: LintContext):
    """megatron-core's `OptimizerConfig.__post_init__` (`megatron/core/optimizer/optimizer_config.py`,
    0.12.1 l.165-171, 0.16.1 l.375-381) asserts, when `use_precision_aware_optimizer` is on,
    `'--use-precision-aware-optimizer only supported with adam'` and
    `'--use-precision-aware-optimizer only supported with distributed optimizer'`. verl 0.9.1 builds that config
    when the worker creates the optimizer (`verl/utils/megatron/optimizer.py:init_megatron_optim_config`):
    `optimizer` from `<role>.optim.optimizer`, `use_distributed_optimizer` from
    `<role>.megatron.use_distributed_optimizer`, `use_precision_aware_optimizer` from
    `<role>.optim.use_precision_aware_optimizer` with a bf16 model (forced on with fp16), and then every key of
    `<role>.optim.override_optimizer_config` on top. Beyond these asserts, megatron-core then needs Transformer
    Engine's FusedAdam (`RuntimeError: --use-precision-aware-optimizer requires FusedAdam from
    TransformerEngine, but not found.`) unless `optimizer_cpu_offload=True`, which returns before that import; on
    Ascend, which has no Transformer Engine, the CPU-offload path is the one megatron-core itself accepts (whether
    a MindSpeed patch lifts this is version-dependent and not checked here)."""
    for view in optimizer_views(ctx):
        if view.value("use_precision_aware_optimizer") is not True:
            continue
        optimizer = view.value("optimizer")
        if isinstance(optimizer, str) and optimizer != "adam":
            yield Finding(
                ctx.blame(view.source("optimizer"), view.source("use_precision_aware_optimizer")),
                f"{view.role}: use_precision_aware_optimizer with optimizer={optimizer!r}: megatron-core asserts "
                f"'--use-precision-aware-optimizer only supported with adam' when verl builds the optimizer. "
                f"Use optimizer adam or turn the precision-aware optimizer off",
            )
        if view.value("use_distributed_optimizer") is False:
            yield Finding(
                ctx.blame(view.source("use_distributed_optimizer"), view.source("use_precision_aware_optimizer")),
                f"{view.role}: use_precision_aware_optimizer with use_distributed_optimizer=False "
                f"(`{view.source('use_distributed_optimizer')}`): megatron-core asserts "
                f"'--use-precision-aware-optimizer only supported with distributed optimizer'. Set "
                f"`{view.megatron}.use_distributed_optimizer: true`",
            )
