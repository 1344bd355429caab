from ..core.diagnostics import Applicability, Severity
from ..core.paths import ROLLOUT
from ..engine import LintContext, Part
from ..rulekit.fixes import set_value
from ..rulekit.registry import Finding, rule


@rule(
    "BS008",
    "rollout-pipeline-parallel",
    Severity.ERROR,
    part=Part.ROLLOUT,
    summary="rollout pipeline_model_parallel_size > 1 is not implemented for vllm, sglang or trtllm",
    bad="""
    overrides:
      actor_rollout_ref.rollout.name: vllm
      actor_rollout_ref.rollout.pipeline_model_parallel_size: 2
    """,
    good="""
    overrides:
      actor_rollout_ref.rollout.name: vllm
      actor_rollout_ref.rollout.pipeline_model_parallel_size: 1
    """,
    fix=Applicability.SAFE,
)
def check(ctx: LintContext):
    """`RolloutConfig.__post_init__` (verl 0.9.1 `verl/workers/config/rollout.py:319-323`) raises
    `NotImplementedError(f"Current rollout {self.name=} not implemented pipeline_model_parallel_size > 1 yet.")`
    for `vllm`, `sglang` and `trtllm` — every rollout backend verl 0.9.1 ships — when the rollout config is
    instantiated on the workers. Use rollout tensor (or data) parallelism instead."""
    name = ctx.config.value(f"{ROLLOUT}.name")
    pp = ctx.number(f"{ROLLOUT}.pipeline_model_parallel_size")
    if name not in ("vllm", "sglang", "trtllm") or not isinstance(pp, int) or pp <= 1:
        return
    at = ctx.blame(f"{ROLLOUT}.pipeline_model_parallel_size", f"{ROLLOUT}.name")
    yield Finding(
        at,
        f'rollout pipeline_model_parallel_size {pp} with rollout.name={name}: verl raises "Current rollout '
        f"self.name='{name}' not implemented pipeline_model_parallel_size > 1 yet.\" Set it to 1 and use "
        f"rollout tensor_model_parallel_size instead",
        fix=set_value(1) if at is ctx.explicit(f"{ROLLOUT}.pipeline_model_parallel_size") else None,
    )
