from ..core.diagnostics import Severity
from ..core.paths import ROLLOUT
from ..engine import LintContext, Part
from ..rulekit.registry import Finding, rule


@rule(
    "BS007",
    "rollout-expert-parallel",
    Severity.ERROR,
    part=Part.ROLLOUT,
    summary="rollout expert_parallel_size > 1 must equal rollout TP x DP (vllm, sglang)",
    bad="""
    overrides:
      actor_rollout_ref.rollout.tensor_model_parallel_size: 4
      actor_rollout_ref.rollout.expert_parallel_size: 2
    """,
    good="""
    overrides:
      actor_rollout_ref.rollout.tensor_model_parallel_size: 4
      actor_rollout_ref.rollout.expert_parallel_size: 4
    """,
)
def check(ctx: LintContext):
    """In the inference engines verl drives (vLLM, SGLang) the experts are spread over every device of a
    replica, so `RolloutConfig.__post_init__` (verl 0.9.1 `verl/workers/config/rollout.py:294-297`) asserts, for
    any `rollout.name` other than `trtllm`, "expert_parallel_size must be equal to tensor_model_parallel_size *
    data_parallel_size" when `expert_parallel_size > 1`. It fires when the rollout config is instantiated on the
    workers."""
    name = ctx.config.value(f"{ROLLOUT}.name")
    ep, tp, dp = (
        ctx.number(f"{ROLLOUT}.{k}")
        for k in ("expert_parallel_size", "tensor_model_parallel_size", "data_parallel_size")
    )
    if name == "trtllm" or not isinstance(ep, int) or not isinstance(tp, int) or not isinstance(dp, int) or ep <= 1:
        return
    if ep == tp * dp:
        return
    yield Finding(
        ctx.blame(
            f"{ROLLOUT}.expert_parallel_size", f"{ROLLOUT}.tensor_model_parallel_size", f"{ROLLOUT}.data_parallel_size"
        ),
        f"rollout expert_parallel_size {ep} != tensor_model_parallel_size {tp} x data_parallel_size {dp}: "
        f'verl asserts "expert_parallel_size must be equal to tensor_model_parallel_size * '
        f'data_parallel_size". Set expert_parallel_size to {tp * dp} (or 1)',
    )
