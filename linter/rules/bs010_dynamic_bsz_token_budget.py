from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.registry import Finding, rule
from ..topology import active_roles, parallelism

PROMPT, RESPONSE = "data.max_prompt_length", "data.max_response_length"
ACTOR_BUDGET = "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"


@rule(
    "BS010", "dynamic-bsz-token-budget", Severity.ERROR,
    summary="dynamic batch size with a per-device token budget below max_prompt_length + max_response_length",
    bad="""
    overrides:
      data.max_prompt_length: 2048
      data.max_response_length: 8192
      actor_rollout_ref.actor.use_dynamic_bsz: true
      actor_rollout_ref.actor.ppo_max_token_len_per_gpu: 8192
    """,
    good="""
    overrides:
      data.max_prompt_length: 2048
      data.max_response_length: 8192
      actor_rollout_ref.actor.use_dynamic_bsz: true
      actor_rollout_ref.actor.ppo_max_token_len_per_gpu: 10240
    """,
)
def check(ctx: LintContext):
    """With dynamic batch size verl packs sequences into micro-batches of at most `max_token_len_per_gpu * CP`
    tokens and cannot split one sequence: `rearrange_micro_batches` asserts `max_token_len >= max_seq_len`
    ("max_token_len must be greater than the sequence length", verl 0.9.1 `verl/utils/seqlen_balancing.py:384`;
    the Megatron engine passes `sp_size = context_parallel_size`, `verl/workers/engine/utils.py:111`). A sequence
    is up to `data.max_prompt_length + data.max_response_length` tokens, so a smaller budget fails the first time
    such a sample reaches the actor update (`actor.ppo_max_token_len_per_gpu`), the old-log-prob recompute
    (`rollout.log_prob_max_token_len_per_gpu`), the ref (`ref.log_prob_max_token_len_per_gpu`) or the critic —
    after a rollout, possibly hours in. The rollout and ref budgets default to the actor's by interpolation."""
    prompt, response = ctx.number(PROMPT), ctx.number(RESPONSE)
    if not isinstance(prompt, int) or not isinstance(response, int):
        return
    need = prompt + response
    roles = active_roles(ctx)
    actor_dyn = ctx.config.value("actor_rollout_ref.actor.use_dynamic_bsz") is True
    budgets = []  # (role whose CP applies, budget key, the pass it limits)
    if actor_dyn:
        budgets += [("actor", ACTOR_BUDGET, "actor update"),
                    ("actor", "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu", "old-log-prob recompute")]
    if "ref" in roles and ctx.config.value("actor_rollout_ref.ref.log_prob_use_dynamic_bsz") is True:
        budgets.append(("ref", "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu", "ref log-prob"))
    if "critic" in roles and ctx.config.value("critic.use_dynamic_bsz") is True:
        budgets += [("critic", "critic.ppo_max_token_len_per_gpu", "critic update"),
                    ("critic", "critic.ppo_infer_max_token_len_per_gpu", "critic values")]
    flagged = set()
    for role, key, phase in budgets:
        budget = ctx.number(key)
        if not isinstance(budget, int):
            continue
        if key != ACTOR_BUDGET and ctx.explicit(key) is None and ctx.number(ACTOR_BUDGET) == budget \
                and ACTOR_BUDGET in flagged:
            continue  # follows the actor's budget by interpolation: already reported there
        par = parallelism(ctx, role)
        if par is not None and ctx.config.value(f"{par.prefix}.dynamic_context_parallel"):
            continue  # the dynamic-CP scheduler does its own packing
        cp = par.cp if par is not None else 1
        if budget * cp >= need:
            continue
        cp_text = f" x context_parallel_size {cp}" if cp > 1 else ""
        flagged.add(key)
        followers = " (the rollout and ref budgets follow it unless set)" if key == ACTOR_BUDGET else ""
        yield Finding(ctx.blame(key, PROMPT, RESPONSE, *( [f"{par.prefix}.context_parallel_size"] if par else [])),
                      f"`{key}`={budget}{cp_text} is below max_prompt_length {prompt} + max_response_length "
                      f"{response} = {need}: a full-length sample fails \"max_token_len must be greater than the "
                      f"sequence length\" in the {phase}{followers}. Set it to at least {-(-need // cp)}")
