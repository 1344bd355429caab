from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.registry import Finding, rule
from ..topology import megatron_roles, own_setting


@rule(
    "TP013",
    "context-parallel-sequence-length",
    Severity.WARNING,
    engines=MEGATRON_ONLY,
    summary="CP > 1 without packed sequences and a length not divisible by 2 x CP",
    bad="""
    overrides:
      data.max_prompt_length: 512
      data.max_response_length: 510
      actor_rollout_ref.actor.megatron.context_parallel_size: 2
      actor_rollout_ref.actor.megatron.use_remove_padding: false
    """,
    good="""
    overrides:
      data.max_prompt_length: 512
      data.max_response_length: 512
      actor_rollout_ref.actor.megatron.context_parallel_size: 2
      actor_rollout_ref.actor.megatron.use_remove_padding: false
    """,
)
def check(ctx: LintContext):
    """Load-balanced context parallelism splits each sequence into `2 * CP` equal chunks ("The sequence length must
    be divisible by 2 * cp_size", megatron-core utils). verl pads packed sequences to a multiple of `TP * CP * 2`
    itself (`use_remove_padding: true`, its default), so only unpacked (bshd) batches can break it: then
    `max_prompt_length + max_response_length` must divide by `2 * CP`. Reported at the CP size, with the length
    and `use_remove_padding` lines as related locations."""
    total = (ctx.number("data.max_prompt_length") or 0) + (ctx.number("data.max_response_length") or 0)
    for role, par in megatron_roles(ctx):
        if par.cp <= 1 or ctx.config.value(par.path("use_remove_padding")) is not False:
            continue
        if total and total % (2 * par.cp) and own_setting(ctx, par, "context_parallel_size", "use_remove_padding"):
            lengths = ("data.max_prompt_length", "data.max_response_length", par.path("use_remove_padding"))
            yield Finding(
                ctx.blame(par.path("context_parallel_size"), otherwise=lengths),
                f"{role}: sequence length {total} (prompt + response) is not divisible by 2 x CP = {2 * par.cp} "
                "and sequences are not packed (use_remove_padding is false)",
                related=ctx.set_at(*lengths),
            )
