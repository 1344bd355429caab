from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import megatron_roles, model_path, own_setting


@rule(
    "TP006",
    "expert-parallel-on-dense-model",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    engines=MEGATRON_ONLY,
    needs_model=True,
    summary="EP > 1 on a model without experts",
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.expert_model_parallel_size: 2
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.expert_model_parallel_size: 1
    """,
)
def check(ctx: LintContext):
    """Megatron: `num_moe_experts must be non None to use expert-parallel.` (TransformerConfig, at model init).
    Usually a MoE recipe reused for a dense model."""
    model = ctx.model
    if model is None or model.is_moe:
        return
    for role, par in megatron_roles(ctx):
        if par.ep > 1 and own_setting(ctx, par, "expert_model_parallel_size"):
            yield Finding(
                ctx.blame(par.path("expert_model_parallel_size")),
                f'{role}: EP {par.ep} but {model.name} is a dense model; Megatron: "num_moe_experts must be non None '
                'to use expert-parallel." Set EP to 1',
                related=ctx.set_at(model_path(ctx)),
            )
