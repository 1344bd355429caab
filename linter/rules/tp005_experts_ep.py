from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import megatron_roles, model_path, nearest_divisors, own_setting


@rule(
    "TP005",
    "experts-not-divisible-by-ep",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    engines=MEGATRON_ONLY,
    needs_model=True,
    summary="routed experts not divisible by EP",
    bad="""
    model: {path: Qwen/Qwen3-30B-A3B}
    overrides:
      actor_rollout_ref.actor.megatron.expert_model_parallel_size: 3
    """,
    good="""
    model: {path: Qwen/Qwen3-30B-A3B}
    overrides:
      actor_rollout_ref.actor.megatron.expert_model_parallel_size: 4
    """,
)
def check(ctx: LintContext):
    """Each expert-parallel rank holds `num_moe_experts / EP` experts; Megatron's MoE layer asserts the division
    when it builds the local experts, in every worker at model init."""
    model = ctx.model
    if model is None or not model.is_moe:
        return
    for role, par in megatron_roles(ctx):
        if model.num_experts % par.ep and own_setting(ctx, par, "expert_model_parallel_size"):
            yield Finding(
                ctx.blame(par.path("expert_model_parallel_size")),
                f"{role}: {model.name} has {model.num_experts} routed experts, not divisible by EP {par.ep}; "
                f"nearest valid EP: {nearest_divisors(par.ep, model.num_experts)}",
                related=ctx.set_at(model_path(ctx)),
            )
