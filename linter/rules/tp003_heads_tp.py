from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import megatron_roles, model_path, nearest_divisors, own_setting


@rule(
    "TP003",
    "heads-not-divisible-by-tp",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    engines=MEGATRON_ONLY,
    needs_model=True,
    summary="attention heads not divisible by TP",
    bad="""
    model: {path: Qwen/Qwen2.5-7B}
    overrides:
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 8
    """,
    good="""
    model: {path: Qwen/Qwen2.5-7B}
    overrides:
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 4
    """,
)
def check(ctx: LintContext):
    """`TransformerConfig.__post_init__` raises `num_attention_heads (H) must be a multiple of
    tensor_model_parallel_size (TP).` when the model is built in each worker, minutes into the job."""
    model = ctx.model
    if model is None:
        return
    for role, par in megatron_roles(ctx):
        if model.num_attention_heads % par.tp and own_setting(ctx, par, "tensor_model_parallel_size"):
            yield Finding(
                ctx.blame(par.path("tensor_model_parallel_size")),
                f"{role}: {model.name} has {model.num_attention_heads} attention heads; Megatron: "
                f'"num_attention_heads ({model.num_attention_heads}) must be a multiple of tensor_model_parallel_size '
                f'({par.tp})." Nearest valid TP: {nearest_divisors(par.tp, model.num_attention_heads)}',
                related=ctx.set_at(model_path(ctx)),
            )
