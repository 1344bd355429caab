from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import megatron_roles, model_path, own_setting


@rule(
    "TP008",
    "vpp-without-pp",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    engines=MEGATRON_ONLY,
    needs_model=True,
    summary="virtual pipeline size set with PP = 1, or layers per stage not divisible by VPP",
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size: 2
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.pipeline_model_parallel_size: 2
      actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size: 3
    """,
)
def check(ctx: LintContext):
    """Interleaved (virtual) pipelining splits each pipeline stage into VPP chunks: it needs PP > 1, and
    Megatron asserts `num_layers_per_pipeline_rank N should be divisible by vp_size VPP` when it builds the
    layers. (Megatron-LM's own launcher also wants PP > 2 without p2p overlap; verl turns overlap on with VPP.)
    Reported at the VPP size, with the PP line as a related location."""
    for role, par in megatron_roles(ctx):
        if par.vpp is None or not own_setting(
            ctx, par, "virtual_pipeline_model_parallel_size", "pipeline_model_parallel_size"
        ):
            continue
        vpp, pp = par.path("virtual_pipeline_model_parallel_size"), par.path("pipeline_model_parallel_size")
        blame = ctx.blame(vpp, otherwise=(pp,))
        if par.pp <= 1:
            yield Finding(
                blame,
                f"{role}: virtual_pipeline_model_parallel_size {par.vpp} needs "
                "pipeline_model_parallel_size > 1 (it is 1)",
                related=ctx.set_at(pp),
            )
        elif (
            ctx.model is not None and ctx.model.num_layers % par.pp == 0 and (ctx.model.num_layers // par.pp) % par.vpp
        ):
            per_rank = ctx.model.num_layers // par.pp
            yield Finding(
                blame,
                f'{role}: Megatron: "num_layers_per_pipeline_rank {per_rank} should be divisible by '
                f'vp_size {par.vpp}" ({ctx.model.name}, {ctx.model.num_layers} layers over PP {par.pp})',
                related=ctx.set_at(pp, model_path(ctx)),
            )
