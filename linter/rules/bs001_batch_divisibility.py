import math

from ..core.diagnostics import Severity
from ..core.paths import ACTOR
from ..engine import LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import parallelism, world_size


@rule(
    "BS001",
    "batch-divisibility",
    Severity.ERROR,
    part=Part.TRAIN_BATCH,
    summary="train_batch_size x rollout.n is not a multiple of dp x ppo_micro_batch_size_per_gpu",
    bad="""
    overrides:
      data.train_batch_size: 100
      actor_rollout_ref.actor.ppo_mini_batch_size: 50
      actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 3
    """,
    good="""
    overrides:
      data.train_batch_size: 96
      actor_rollout_ref.actor.ppo_mini_batch_size: 48
      actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 3
    """,
)
def check(ctx: LintContext):
    """verl's driver-side `validate_config` (verl 0.9.1 `verl/utils/config.py:101-124`, run by `main_ppo`
    before Ray starts) requires, when the actor's batch size is static (`use_dynamic_bsz=False`), that
    `data.train_batch_size * rollout.n` be a multiple of the smallest batch one step can hold: on the Megatron
    strategy `megatron_dp * ppo_micro_batch_size_per_gpu` with `megatron_dp = n_gpus // (TP * PP * CP)` of the
    actor, otherwise `n_gpus`. It fails with `real_train_batch_size (...) must be divisible by minimal possible
    batch size (...)`. World sizes that TP*PP*CP does not divide are left to the topology rules, and a missing
    `ppo_micro_batch_size_per_gpu` to BS003.

    verl 0.1 and forks of it make no such check at start-up (for a source tree its own code decides,
    `schemas/facts.json`: `train-batch-divisible-by-minimal-batch`). There the same batch fails at the first
    training step instead, after a whole rollout: the FSDP workers' dispatch splits it over the `n_gpus` workers
    with `DataProto.chunk`, which asserts `only support equal chunk` (verl 0.1 `verl/protocol.py`); a run that
    only validates (`trainer.val_only=True`, whose `fit` returns after validating) never gets there, and the
    Megatron workers' split over data-parallel ranks is not checked."""
    if ctx.config.value(f"{ACTOR}.use_dynamic_bsz") is not False:
        return
    checked_at_start = ctx.fact("verl:train-batch-divisible-by-minimal-batch")
    megatron = ctx.config.value(f"{ACTOR}.strategy") == "megatron"
    if not checked_at_start and (megatron or ctx.config.value("trainer.val_only") is True):
        return
    n_gpus = world_size(ctx)
    train, n = ctx.number("data.train_batch_size"), ctx.number("actor_rollout_ref.rollout.n")
    if not n_gpus or not isinstance(train, int) or not isinstance(n, int):
        return
    if megatron:
        par = parallelism(ctx, "actor")
        micro = ctx.number(f"{ACTOR}.ppo_micro_batch_size_per_gpu")
        if par is None or not isinstance(micro, int) or micro <= 0:
            return
        mp = par.tp * par.pp * par.cp
        if n_gpus % mp:
            return  # topology rules report it
        dp = n_gpus // mp
        minimal = dp * micro
        how = (
            f"megatron_dp {dp} (= {n_gpus} devices / TP {par.tp} x PP {par.pp} x CP {par.cp}) "
            f"x ppo_micro_batch_size_per_gpu {micro}"
        )
        paths = (
            "data.train_batch_size",
            "actor_rollout_ref.rollout.n",
            f"{ACTOR}.ppo_micro_batch_size_per_gpu",
            f"{par.prefix}.tensor_model_parallel_size",
            f"{par.prefix}.pipeline_model_parallel_size",
            f"{par.prefix}.context_parallel_size",
            "trainer.nnodes",
            "trainer.n_gpus_per_node",
        )
    else:
        minimal, how = n_gpus, f"n_gpus {n_gpus}"
        paths = ("data.train_batch_size", "actor_rollout_ref.rollout.n", "trainer.nnodes", "trainer.n_gpus_per_node")
    real = train * n
    if real % minimal == 0:
        return
    # the nearest train_batch_size that works with this n
    step = minimal // math.gcd(minimal, n)
    lower, upper = (train // step) * step, (train // step + 1) * step
    options = " or ".join(str(v) for v in (lower, upper) if v > 0)
    sizes = f"data.train_batch_size {train} x rollout.n {n}"
    if checked_at_start:
        what = (
            f"verl's validate_config fails: real_train_batch_size ({real}) must be divisible by minimal possible "
            f"batch size ({minimal}); real_train_batch_size = {sizes}, minimal = {how}"
        )
    else:
        what = (
            f"the first training step fails after its rollout: verl {ctx.snapshot.label} splits the batch of "
            f"{real} sequences ({sizes}) over the {n_gpus} workers with DataProto.chunk, which asserts "
            "`only support equal chunk` (this verl checks nothing at start-up)"
        )
    yield Finding(ctx.blame(*paths), f"{what}. Nearest data.train_batch_size that fits: {options}")
