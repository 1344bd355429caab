from ..core.diagnostics import Severity
from ..core.paths import ROLLOUT
from ..engine import LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import world_size


@rule(
    "BS009",
    "rollout-world-size",
    Severity.ERROR,
    part=Part.COLOCATED_ROLLOUT,
    summary="rollout TP x DP x PP does not divide the device count",
    bad="""
    overrides:
      trainer.n_gpus_per_node: 8
      actor_rollout_ref.rollout.tensor_model_parallel_size: 2
      actor_rollout_ref.rollout.data_parallel_size: 3
    """,
    good="""
    overrides:
      trainer.n_gpus_per_node: 8
      actor_rollout_ref.rollout.tensor_model_parallel_size: 2
      actor_rollout_ref.rollout.data_parallel_size: 2
    """,
)
def check(ctx: LintContext):
    """When the actor/rollout worker builds its rollout device mesh, verl 0.9.1 computes
    `infer_world_size = rollout TP * rollout DP * rollout PP` and asserts
    `self.world_size % infer_world_size == 0` ("rollout world_size: ... is not divisible by infer_world_size: ...",
    `verl/workers/engine_workers.py:655-661`), where the world is the colocated worker group,
    `trainer.nnodes * trainer.n_gpus_per_node`. It fails at worker init, after Ray has placed the workers."""
    world = world_size(ctx)
    tp, dp, pp = (
        ctx.number(f"{ROLLOUT}.{k}")
        for k in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size")
    )
    if not world or not all(isinstance(v, int) and v > 0 for v in (tp, dp, pp)):
        return
    infer = tp * dp * pp
    if world % infer == 0:
        return
    if pp == 1 and dp == 1:
        return  # plain rollout TP not dividing the world: the topology rule (TP012) reports it
    yield Finding(
        ctx.blame(
            f"{ROLLOUT}.tensor_model_parallel_size",
            f"{ROLLOUT}.data_parallel_size",
            f"{ROLLOUT}.pipeline_model_parallel_size",
            "trainer.nnodes",
            "trainer.n_gpus_per_node",
        ),
        f"rollout world_size: {world} is not divisible by infer_world_size: {infer} (rollout TP {tp} x DP {dp} "
        f"x PP {pp}); verl asserts this when it builds the rollout device mesh. Choose TP x DP x PP dividing "
        f"{world}",
    )
