from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import megatron_roles, model_path, own_setting


@rule(
    "TP009",
    "ffn-or-vocab-not-divisible",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    engines=MEGATRON_ONLY,
    needs_model=True,
    summary="FFN, MoE FFN or vocabulary size not divisible by TP / ETP",
    bad="""
    model: {path: Qwen/Qwen3-30B-A3B}
    stack: {megatron_core: "0.16.1"}
    overrides:
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 1
      actor_rollout_ref.actor.megatron.expert_tensor_parallel_size: 5
    """,
    good="""
    model: {path: Qwen/Qwen3-30B-A3B}
    overrides:
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 1
      actor_rollout_ref.actor.megatron.expert_tensor_parallel_size: 4
    """,
)
def check(ctx: LintContext):
    """Column/row-parallel linears split their output/input dimension with Megatron's `divide()`, which asserts
    `"{numerator} is not divisible by {denominator}"`: the dense FFN size must divide by TP, each expert's FFN
    size by ETP, and — since verl and mbridge pass the Hugging Face vocabulary unpadded — the vocabulary by TP."""
    model = ctx.model
    if model is None:
        return
    for role, par in megatron_roles(ctx):
        if not own_setting(ctx, par, "tensor_model_parallel_size", "expert_tensor_parallel_size"):
            continue
        checks = [("vocabulary", model.vocab_size, par.tp, "tensor_model_parallel_size")]
        if not model.is_moe or model.first_k_dense:
            checks.append(("FFN hidden size", model.ffn_hidden_size, par.tp, "tensor_model_parallel_size"))
        if model.is_moe and model.moe_ffn_hidden_size:
            checks.append(("expert FFN hidden size", model.moe_ffn_hidden_size, par.etp, "expert_tensor_parallel_size"))
        for what, size, parts, key in checks:
            if size % parts:
                yield Finding(
                    ctx.blame(par.path(key)),
                    f"{role}: {model.name}'s {what} {size} is not divisible by {parts} "
                    f'(Megatron\'s divide(): "{size} is not divisible by {parts}")',
                    related=ctx.set_at(model_path(ctx)),
                )
