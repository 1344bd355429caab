from ..core.diagnostics import Applicability, Severity
from ..core.paths import ROLLOUT
from ..engine import LintContext, Part
from ..rulekit.fixes import set_value
from ..rulekit.registry import Finding, rule

MOE_TP = f"{ROLLOUT}.moe_tensor_parallel_size"


@rule(
    "BS011",
    "rollout-moe-tensor-parallel",
    Severity.ERROR,
    part=Part.ROLLOUT,
    summary="rollout moe_tensor_parallel_size > 1 outside trtllm, or with trtllm not times expert_parallel_size = TP",
    bad="""
    overrides:
      actor_rollout_ref.rollout.name: vllm
      actor_rollout_ref.rollout.tensor_model_parallel_size: 4
      +actor_rollout_ref.rollout.moe_tensor_parallel_size: 2
    """,
    good="""
    overrides:
      actor_rollout_ref.rollout.name: trtllm
      actor_rollout_ref.rollout.tensor_model_parallel_size: 4
      +actor_rollout_ref.rollout.moe_tensor_parallel_size: 2
    """,
    fix=Applicability.SAFE,
)
def check(ctx: LintContext):
    """`RolloutConfig.moe_tensor_parallel_size` (a dataclass field verl's YAML does not list, so it is added with
    `+`) splits the experts' weights over tensor-parallel ranks inside the TensorRT-LLM server only (it is passed
    on in `verl/workers/rollout/trtllm_rollout/trtllm_async_server.py`). For every other backend
    `RolloutConfig.__post_init__` (verl main and 0.9.1 `verl/workers/config/rollout.py`) asserts
    `self.name == "trtllm"`, "moe_tensor_parallel_size is only supported for trtllm", when the value is above 1.
    It fires when the rollout config is instantiated: on the workers when they are built
    (`verl/workers/engine_workers.py`, `omega_conf_to_dataclass(self.config.rollout)`), and in
    `main_generation_server`'s replicas (`verl/workers/rollout/replica.py`). With vLLM or SGLang, leave it at 1
    and spread experts with `expert_parallel_size` (BS007). With trtllm, when both it and `expert_parallel_size`
    are above 1, the same `__post_init__` asserts that their product is the rollout's `tensor_model_parallel_size`
    ("moe_tensor_parallel_size * expert_parallel_size must equal tensor_model_parallel_size"); with one of them at
    1, TensorRT-LLM derives it."""
    size = ctx.number(MOE_TP)
    name = ctx.config.value(f"{ROLLOUT}.name")
    if not isinstance(size, int) or size <= 1 or not isinstance(name, str) or name == "???":
        return
    if name == "trtllm":
        ep, tp = ctx.number(f"{ROLLOUT}.expert_parallel_size"), ctx.number(f"{ROLLOUT}.tensor_model_parallel_size")
        if isinstance(ep, int) and isinstance(tp, int) and ep > 1 and size * ep != tp:
            at = ctx.blame(MOE_TP, f"{ROLLOUT}.expert_parallel_size", f"{ROLLOUT}.tensor_model_parallel_size")
            # tp / size satisfies the assertion, but leaving one of them at 1 does too: a guess at the one meant
            divides = tp % size == 0 and at is ctx.explicit(f"{ROLLOUT}.expert_parallel_size")
            yield Finding(
                at,
                f"rollout moe_tensor_parallel_size {size} x expert_parallel_size {ep} = {size * ep} != "
                f'tensor_model_parallel_size {tp}: verl asserts "moe_tensor_parallel_size * '
                'expert_parallel_size must equal tensor_model_parallel_size" when it builds the trtllm '
                f"rollout config. Set expert_parallel_size to {tp // size if tp % size == 0 else 1} or "
                "leave one of them at 1 (TensorRT-LLM derives it)",
                fix=set_value(tp // size, Applicability.UNSAFE) if divides else None,
            )
        return
    at = ctx.blame(MOE_TP, f"{ROLLOUT}.name")
    yield Finding(
        at,
        f"rollout moe_tensor_parallel_size {size} with rollout.name={name}: verl asserts "
        f'"moe_tensor_parallel_size is only supported for trtllm" when it builds the rollout config. '
        f"Remove it (or set it to 1) for {name}",
        fix=set_value(1) if at is ctx.explicit(MOE_TP) else None,  # 1 is no split: the same run, without it
    )
