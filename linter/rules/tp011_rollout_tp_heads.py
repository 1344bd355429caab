from ..core.diagnostics import Severity
from ..core.paths import ROLLOUT
from ..engine import LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import MODEL_PATH, nearest_divisors


@rule(
    "TP011",
    "rollout-tp-not-dividing-heads",
    Severity.ERROR,
    part=Part.ROLLOUT,
    needs_model=True,
    summary="rollout TP does not divide the attention heads",
    bad="""
    model: {path: Qwen/Qwen2.5-7B}
    overrides:
      actor_rollout_ref.rollout.tensor_model_parallel_size: 8
    """,
    good="""
    model: {path: Qwen/Qwen2.5-7B}
    overrides:
      actor_rollout_ref.rollout.tensor_model_parallel_size: 4
    """,
)
def check(ctx: LintContext):
    """The inference engine shards attention heads over its own tensor-parallel group: vLLM and SGLang require
    `num_attention_heads % tensor_parallel_size == 0` when the rollout server loads the model, after the trainer
    has already started its workers. Rollout TP is independent of the actor's Megatron TP."""
    model = ctx.model
    tp = ctx.number(f"{ROLLOUT}.tensor_model_parallel_size")
    if model is None or not tp or model.num_attention_heads % int(tp) == 0:
        return
    yield Finding(
        ctx.blame(f"{ROLLOUT}.tensor_model_parallel_size"),
        f"rollout: {model.name} has {model.num_attention_heads} attention heads, not divisible by rollout TP "
        f"{tp}; nearest valid: {nearest_divisors(int(tp), model.num_attention_heads)}",
        related=ctx.set_at(MODEL_PATH),
    )
