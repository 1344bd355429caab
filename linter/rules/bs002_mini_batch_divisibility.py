from ..core.diagnostics import Severity
from ..core.paths import ACTOR, ROLLOUT
from ..engine import LintContext
from ..rulekit.common import runs_engine_workers
from ..rulekit.registry import Finding, rule
from ..topology import active_roles, parallelism, world_size

N = f"{ROLLOUT}.n"


@rule(
    "BS002",
    "mini-batch-divisibility",
    Severity.ERROR,
    summary="ppo_mini_batch_size x rollout.n does not split evenly over dp and micro-batches",
    bad="""
    overrides:
      actor_rollout_ref.actor.ppo_mini_batch_size: 12
      actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 1
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.ppo_mini_batch_size: 16
      actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 1
    """,
)
def check(ctx: LintContext):
    """The trainer hands the Megatron worker a global mini-batch of `ppo_mini_batch_size * rollout.n` samples
    (verl 0.9.1 `verl/trainer/ppo/ray_trainer.py:1352-1363`). The worker asserts
    `mini_batch_size % self.engine.get_data_parallel_size() == 0` (`verl/workers/engine_workers.py:267`), with
    dp = world / (TP * PP * CP); with a static batch size it then cuts each rank's share into micro-batches and
    asserts "data size must be divisible by force_group_size * micro_batch_size_per_gpu"
    (`verl/workers/engine/utils.py:125-127`). `validate_config` checks neither, so both fail in the first
    `update_actor` (or `update_critic`), after a complete rollout. Both are the engine workers' (verl 0.8.0 on, or
    `trainer.use_legacy_worker_impl=disable`): the legacy workers of older verls divide the mini-batch themselves
    and split what is left (`schemas/facts.json`: `default-engine-workers`)."""
    if not runs_engine_workers(ctx):
        return
    n_gpus, n = world_size(ctx), ctx.number(N)
    if not n_gpus or not isinstance(n, int):
        return
    for role in active_roles(ctx):
        if role == "ref":
            continue  # forward only: no mini-batches
        base = ACTOR if role == "actor" else "critic"
        par = parallelism(ctx, role)
        mini = ctx.number(f"{base}.ppo_mini_batch_size")
        if par is None or not isinstance(mini, int) or mini <= 0:
            continue
        mp = par.tp * par.pp * par.cp
        if n_gpus % mp:
            continue  # topology rules report it
        dp = n_gpus // mp
        global_mini = mini * n
        sizes = (
            f"{par.prefix}.tensor_model_parallel_size",
            f"{par.prefix}.pipeline_model_parallel_size",
            f"{par.prefix}.context_parallel_size",
            "trainer.nnodes",
            "trainer.n_gpus_per_node",
        )
        dp_text = f"dp {dp} (= {n_gpus} devices / TP {par.tp} x PP {par.pp} x CP {par.cp})"
        if global_mini % dp:
            fit = dp // _gcd(dp, n)
            yield Finding(
                ctx.blame(f"{base}.ppo_mini_batch_size", N, *sizes),
                f"{role} mini-batch {base}.ppo_mini_batch_size {mini} x rollout.n {n} = {global_mini} is not a "
                f"multiple of {dp_text}: the worker's `assert mini_batch_size % "
                f"self.engine.get_data_parallel_size() == 0` fails in the first update, after a rollout. "
                f"Use a ppo_mini_batch_size that is a multiple of {fit}",
            )
            continue
        dynamic = ctx.config.value(f"{base}.use_dynamic_bsz")
        micro = ctx.number(f"{base}.ppo_micro_batch_size_per_gpu")
        if dynamic is not False or not isinstance(micro, int) or micro <= 0:
            continue
        if ctx.config.value(f"{par.prefix}.dynamic_context_parallel"):
            continue  # the dynamic-CP scheduler forms its own micro-batches
        per_rank = global_mini // dp
        if per_rank % micro:
            yield Finding(
                ctx.blame(f"{base}.ppo_micro_batch_size_per_gpu", f"{base}.ppo_mini_batch_size", N, *sizes),
                f"{role} mini-batch per rank {per_rank} (= {global_mini} / {dp_text}) is not a multiple of "
                f'ppo_micro_batch_size_per_gpu {micro}: "data size must be divisible by force_group_size * '
                f'micro_batch_size_per_gpu" in the first update, after a rollout. Use a micro-batch that '
                f"divides {per_rank}",
            )


def _gcd(a: int, b: int) -> int:
    import math

    return math.gcd(a, b)
