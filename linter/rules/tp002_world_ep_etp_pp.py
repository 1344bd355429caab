from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.registry import Finding, rule
from ..topology import megatron_roles, own_setting, world_size

SIZES = (
    "expert_model_parallel_size",
    "expert_tensor_parallel_size",
    "pipeline_model_parallel_size",
    "tensor_model_parallel_size",
)


@rule(
    "TP002",
    "world-not-divisible-by-ep-etp-pp",
    Severity.ERROR,
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
    expert state. ETP defaults to TP when unset. (`EP * ETP == world` is not a requirement, whatever old
    comments say.)"""
    world = world_size(ctx)
    if not world:
        return
    for role, par in megatron_roles(ctx):
        product = par.ep * par.etp * par.pp
        if world % product and own_setting(ctx, par, *SIZES):
            yield Finding(
                ctx.blame(*(par.path(s) for s in SIZES), "trainer.nnodes", "trainer.n_gpus_per_node"),
                f"{role}: world size {world} is not divisible by EP*ETP*PP = {par.ep}*{par.etp}*{par.pp} = {product} "
                "(ETP defaults to TP), so there is no integer expert-data-parallel size",
            )
