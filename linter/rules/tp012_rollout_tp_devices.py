from ..core.diagnostics import Severity
from ..core.paths import ROLLOUT
from ..engine import LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import nearest_divisors, rollout_devices, separated_rollout


@rule(
    "TP012",
    "rollout-tp-not-dividing-devices",
    Severity.ERROR,
    part=Part.ROLLOUT,
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
    that fits. (TP larger than a node, in whole nodes, is a multi-node replica and is allowed.)

    verl main's fully-async and one-step-off trainers run the rollout as standalone servers on its own
    `rollout.nnodes x rollout.n_gpus_per_node` devices: a replica must still fit whole nodes (`RolloutReplica`
    asserts `world_size % gpus_per_replica_node == 0`, verl/workers/rollout/replica.py), but the replica count is
    `devices // replica size` (verl/workers/rollout/llm_server.py): devices left over sit idle (a warning), and a
    replica larger than the rollout's devices gives no replica at all (an error). Reported at the rollout TP, with
    the device-count lines as related locations."""
    tp = ctx.number(f"{ROLLOUT}.tensor_model_parallel_size")
    per_node, world = rollout_devices(ctx)
    if not tp or not per_node or not world:
        return
    tp, per_node = int(tp), int(per_node)
    fits_node = per_node % tp == 0 if tp <= per_node else tp % per_node == 0
    separated = separated_rollout(ctx)
    keys = ("rollout.n_gpus_per_node", "rollout.nnodes") if separated else ("trainer.n_gpus_per_node", "trainer.nnodes")
    where = ctx.blame(f"{ROLLOUT}.tensor_model_parallel_size", otherwise=keys)
    related = ctx.set_at(*keys)
    if separated and fits_node and tp <= world:
        if world % tp:
            yield Finding(
                where,
                f"rollout TP {tp} leaves {world % tp} of the rollout's {world} devices idle: verl "
                f"starts {world // tp} standalone replica(s) of {tp}; nearest TP that tiles them: "
                f"{nearest_divisors(tp, per_node)}",
                severity=Severity.WARNING,
                related=related,
            )
        return
    if fits_node and world % tp == 0:
        return
    devices = (
        f"the rollout's {per_node} devices per node x {world // per_node} node(s) (`{keys[1]}`, `{keys[0]}`)"
        if separated
        else f"{per_node} devices per node x {world // per_node} node(s) (world {world})"
    )
    yield Finding(
        where,
        f"rollout TP {tp} does not tile {devices}; nearest valid: {nearest_divisors(tp, per_node)}",
        related=related,
    )
