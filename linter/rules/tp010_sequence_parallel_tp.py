from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import megatron_roles, own_setting


@rule(
    "TP010",
    "sequence-parallel-vs-tp-ep",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    engines=MEGATRON_ONLY,
    summary="EP x TP without sequence parallel (error up to megatron-core 0.14, warning after); SP with TP 1 (info)",
    bad="""
    model: {path: Qwen/Qwen3-30B-A3B}
    stack: {megatron_core: "0.12.1"}
    overrides:
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2
      actor_rollout_ref.actor.megatron.expert_model_parallel_size: 2
      actor_rollout_ref.actor.megatron.sequence_parallel: false
    """,
    good="""
    model: {path: Qwen/Qwen3-30B-A3B}
    stack: {megatron_core: "0.12.1"}
    overrides:
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2
      actor_rollout_ref.actor.megatron.expert_model_parallel_size: 2
      actor_rollout_ref.actor.megatron.sequence_parallel: true
    """,
)
def check(ctx: LintContext):
    """`ModelParallelConfig.__post_init__`: with EP > 1 and TP > 1 "sequence parallelism must be used" — a
    ValueError up to megatron-core 0.14, a warning from 0.15. Sequence parallel with TP = 1 raises
    `Cannot use sequence parallelism without tensor parallelism` in Megatron, but verl switches
    `sequence_parallel` off itself when TP is 1 (its default is true), so that case is only noted when the recipe
    sets it explicitly. Reported at `sequence_parallel` where the script turns it off, else at TP or EP, the
    other sizes as related locations."""
    strict = ctx.fact("megatron-core:ep-tp-requires-sequence-parallel")
    for role, par in megatron_roles(ctx):
        if not own_setting(ctx, par, "tensor_model_parallel_size", "expert_model_parallel_size", "sequence_parallel"):
            continue
        if par.ep > 1 and par.tp > 1 and not par.sp:
            sizes = (par.path("tensor_model_parallel_size"), par.path("expert_model_parallel_size"))
            yield Finding(
                ctx.blame(par.path("sequence_parallel"), otherwise=sizes),
                f"{role}: EP {par.ep} x TP {par.tp} without sequence parallel; "
                f"megatron-core {ctx.stack.megatron_core}: "
                '"When using expert parallelism and tensor parallelism, sequence parallelism must be used"'
                + (" (ValueError up to 0.14)" if strict else " (a warning from 0.15)"),
                severity=None if strict else Severity.WARNING,
                related=ctx.set_at(*sizes),
            )
        elif par.sp and par.tp == 1 and ctx.explicit(par.path("sequence_parallel")) is not None:
            yield Finding(
                ctx.explicit(par.path("sequence_parallel")),
                f"{role}: sequence_parallel with TP 1 has no effect: verl turns it off when TP is 1",
                severity=Severity.INFO,
            )
