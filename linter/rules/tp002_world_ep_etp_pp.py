from ..core.diagnostics import Location, Severity
from ..engine import MEGATRON_ONLY, LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import breaking_factors, fitting_sizes, megatron_roles, own_setting, world_keys, world_size

SIZES = (
    "expert_model_parallel_size",
    "expert_tensor_parallel_size",
    "pipeline_model_parallel_size",
    "tensor_model_parallel_size",
)
LABEL = dict(zip(SIZES, ("EP", "ETP", "PP", "TP"), strict=True))


@rule(
    "TP002",
    "world-not-divisible-by-ep-etp-pp",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    engines=MEGATRON_ONLY,
    summary="world size not divisible by EP x ETP x PP",
    bad="""
    model: {path: Qwen/Qwen3-30B-A3B}
    overrides:
      trainer.n_gpus_per_node: 8
      actor_rollout_ref.actor.megatron.expert_model_parallel_size: 8
      actor_rollout_ref.actor.megatron.expert_tensor_parallel_size: 2
    """,
    good="""
    model: {path: Qwen/Qwen3-30B-A3B}
    overrides:
      trainer.n_gpus_per_node: 8
      actor_rollout_ref.actor.megatron.expert_model_parallel_size: 8
      actor_rollout_ref.actor.megatron.expert_tensor_parallel_size: 1
    """,
)
def check(ctx: LintContext):
    """The expert layers get their own decomposition: Megatron needs `world % (EP * ETP * PP) == 0` and derives
    the expert-data-parallel size `edp = world / (EP * ETP * PP)`, over which the distributed optimizer shards
    expert state. ETP defaults to TP when unset (verl passes `megatron.expert_tensor_parallel_size`, null by default,
    to `initialize_model_parallel`: verl main's workers/engine/megatron/transformer_impl.py; megatron-core
    core_v0.18.0 parallel_state.py then takes TP). (`EP * ETP == world` is not a requirement, whatever old
    comments say.) As for TP001, the finding is at the size the script sets that breaks it (the one that, at 1,
    would leave a product that divides the world), with the other sizes and the world-size lines as related
    locations; an ETP the script leaves to follow TP is that size first (reported at TP, the fix named is
    `expert_tensor_parallel_size=1`)."""
    world = world_size(ctx)
    if not world:
        return
    for role, par in megatron_roles(ctx):
        if world % (par.ep * par.etp * par.pp) == 0 or not own_setting(ctx, par, *SIZES):
            continue
        ep, etp, pp, tp = (par.path(s) for s in SIZES)
        etp_set = ctx.config.value(etp) is not None
        factors = {ep: par.ep, etp if etp_set else tp: par.etp, pp: par.pp}
        culprits = breaking_factors(ctx, world, factors)
        if not etp_set and tp in culprits:
            # An ETP nobody chose (it follows TP) is the one to change: ETP 1 is the usual MoE setting.
            at, hint = ctx.blame(tp), "; expert_tensor_parallel_size=1 would give one"
        else:
            at = ctx.blame(*culprits, otherwise=(*factors, *world_keys(ctx)))
            size = ep if isinstance(at, Location) or at.path not in factors else at.path
            fits = fitting_sizes(world, factors, size)
            hint = f"; {LABEL[size.rsplit('.', 1)[1]]} {fits} would give one" if fits else ""
        yield Finding(
            at,
            f"{role}: world size {world} is not divisible by EP*ETP*PP = {par.ep}*{par.etp}*{par.pp} = "
            f"{par.ep * par.etp * par.pp} (ETP defaults to TP), so there is no integer expert-data-parallel size"
            + hint,
            related=ctx.set_at(ep, etp, pp, tp, *world_keys(ctx)),
        )
