from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.registry import Finding, rule
from ..topology import ROLLOUT, nearest_divisors, world_size


@rule(
    "TP012", "rollout-tp-not-dividing-devices", Severity.ERROR,
    summary="rollout TP does not divide the devices per node or the world",
    bad="""
    overrides:
      trainer.n_gpus_per_node: 8
      actor_rollout_ref.rollout.tensor_model_parallel_size: 3
    """,
    good="""
    overrides:
      trainer.n_gpus_per_node: 8
      actor_rollout_ref.rollout.tensor_model_parallel_size: 2
    """,
)
def check(ctx: LintContext):
    """verl packs rollout replicas of `rollout TP` devices onto the colocated worker group: a TP that does not
    divide the devices per node leaves a replica straddling two nodes (or devices unused), and one that does not
    divide the world cannot tile it. verl fails when it builds the replicas; the message names the nearest TP
    that fits. (TP larger than a node, in whole nodes, is a multi-node replica and is allowed.)"""
    tp = ctx.number(f"{ROLLOUT}.tensor_model_parallel_size")
    per_node, world = ctx.number("trainer.n_gpus_per_node"), world_size(ctx)
    if not tp or not per_node or not world:
        return
    tp, per_node = int(tp), int(per_node)
    fits_node = per_node % tp == 0 if tp <= per_node else tp % per_node == 0
    if fits_node and world % tp == 0:
        return
    yield Finding(ctx.blame(f"{ROLLOUT}.tensor_model_parallel_size", "trainer.n_gpus_per_node", "trainer.nnodes"),
                  f"rollout TP {tp} does not tile {per_node} devices per node x {world // per_node} node(s) "
                  f"(world {world}); nearest valid: {nearest_divisors(tp, per_node)}")
