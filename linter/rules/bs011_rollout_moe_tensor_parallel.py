from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.registry import Finding, rule
from ..topology import ROLLOUT

MOE_TP = f"{ROLLOUT}.moe_tensor_parallel_size"


@rule(
    "BS011", "rollout-moe-tensor-parallel", Severity.ERROR,
    summary="rollout moe_tensor_parallel_size > 1 is only supported for trtllm",
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
    and spread experts with `expert_parallel_size` (BS007)."""
    size = ctx.number(MOE_TP)
    name = ctx.config.value(f"{ROLLOUT}.name")
    if not isinstance(size, int) or size <= 1 or not isinstance(name, str) or name in ("trtllm", "???"):
        return
    yield Finding(ctx.blame(MOE_TP, f"{ROLLOUT}.name"),
                  f"rollout moe_tensor_parallel_size {size} with rollout.name={name}: verl asserts "
                  f"\"moe_tensor_parallel_size is only supported for trtllm\" when it builds the rollout config. "
                  f"Remove it (or set it to 1) for {name}")
