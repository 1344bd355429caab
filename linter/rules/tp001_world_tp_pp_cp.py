from ..core.diagnostics import Location, Severity
from ..core.paths import ROLE_PREFIX
from ..engine import MEGATRON_ONLY, LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import (
    active_roles,
    breaking_factors,
    fitting_sizes,
    megatron_roles,
    own_setting,
    world_keys,
    world_size,
)

SIZES = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size")
LABEL = dict(zip(SIZES, ("TP", "PP", "CP"), strict=True))


@rule(
    "TP001",
    "world-not-divisible-by-tp-pp-cp",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    engines=MEGATRON_ONLY,
    summary="world size not divisible by TP x PP x CP",
    bad="""
    overrides:
      trainer.nnodes: 1
      trainer.n_gpus_per_node: 8
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 3
    """,
    good="""
    overrides:
      trainer.nnodes: 1
      trainer.n_gpus_per_node: 8
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 4
    """,
)
def check(ctx: LintContext):
    """Megatron's `initialize_model_parallel` needs `world_size % (TP * PP * CP) == 0` and derives the data-parallel
    size `dp = world / (TP * PP * CP)`; verl's `validate_config` checks the same for the actor before Ray starts,
    and the ref and critic hit it in their workers. The world is `trainer.nnodes * trainer.n_gpus_per_node`
    (the colocated actor/rollout group). The finding is at the size the script sets that breaks it (the one that,
    at 1, would leave a product that divides the world: PP 3 next to TP 4 on 8 devices), with the other sizes and
    the world-size lines it sets as related locations; the message names the nearest values of that size that
    divide. A size below 1 is reported too: Megatron divides by the product. An SFT trainer on the Megatron
    engine (`verl.trainer.sft_trainer`, `sft_trainer_ray`) is checked the same way: its sizes are `engine.*`, its
    world torchrun's `--nproc_per_node` x `--nnodes` (sft_trainer_ray: `trainer.nnodes` x
    `trainer.n_gpus_per_node`), unknown -- and the check skipped -- where the script does not write a number."""
    yield from _below_one(ctx)
    world = world_size(ctx)
    if not world:
        return
    for role, par in megatron_roles(ctx):
        factors = dict(zip((par.path(s) for s in SIZES), (par.tp, par.pp, par.cp), strict=True))
        if world % (par.tp * par.pp * par.cp) == 0 or not own_setting(ctx, par, *SIZES):
            continue
        at = ctx.blame(*breaking_factors(ctx, world, factors), otherwise=(*factors, *world_keys(ctx)))
        size = par.path(SIZES[0]) if isinstance(at, Location) or at.path not in factors else at.path
        fits = fitting_sizes(world, factors, size)
        yield Finding(
            at,
            f"{role}: world size {world} is not divisible by TP*PP*CP = {par.tp}*{par.pp}*{par.cp} = "
            f"{par.tp * par.pp * par.cp} (Megatron: world_size must be divisible by tensor x pipeline x context "
            "parallel size)" + (f"; {LABEL[size.rsplit('.', 1)[1]]} {fits} would give an integer dp" if fits else ""),
            related=ctx.set_at(*factors, *world_keys(ctx)),
        )


def _below_one(ctx: LintContext):
    for role in active_roles(ctx):
        for path in (f"{ROLE_PREFIX[role]}.{s}" for s in SIZES):
            value = ctx.number(path)
            if value is not None and value < 1 and ctx.explicit(path) is not None:  # the ref inherits the actor's
                yield Finding(
                    ctx.blame(path),
                    f"{role}: `{path}` is {value}; Megatron needs a positive size "
                    "(it divides the world size by TP*PP*CP)",
                )
