from ..core.diagnostics import Severity
from ..core.paths import ACTOR_DYNAMIC_BSZ, REF_DYNAMIC_BSZ, ROLE_NODE
from ..engine import LintContext
from ..rulekit.common import runs_engine_workers
from ..rulekit.registry import Finding, rule
from ..topology import active_roles, parallelism

PROMPT, RESPONSE = "data.max_prompt_length", "data.max_response_length"
ACTOR_BUDGET = "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"
# The engine config node under each role, per model_engine option (the critic's FSDP node is `fsdp`).
_ENGINE_NODE = {"dp": "fsdp_config", "veomni": "veomni", "torchtitan": "torchtitan"}
# The engine size each engine passes as `sp_size` (see `check`).
_SP_NAME = {
    "dp": "ulysses_sequence_parallel_size",
    "veomni": "ulysses_parallel_size",
    "torchtitan": "tensor_parallel_size",
}


def _sequence_parallel(ctx: LintContext, role: str) -> tuple[int, str] | None:
    """The factor verl multiplies the role's token budget by, and the key it comes from (None: the dynamic-CP
    scheduler packs by itself, or a size is not a positive integer)."""
    if ctx.model_engine == "megatron":
        par = parallelism(ctx, role)
        if par is None:
            return 1, ""
        if ctx.config.value(f"{par.prefix}.dynamic_context_parallel"):
            return None
        return par.cp, par.path("context_parallel_size")
    if ctx.model_engine not in _SP_NAME:
        return 1, ""
    node = ROLE_NODE[role]
    engine_node = "fsdp" if (role, ctx.model_engine) == ("critic", "dp") else _ENGINE_NODE[ctx.model_engine]
    key = f"{node}.{engine_node}.{_SP_NAME[ctx.model_engine]}"
    if ctx.model_engine == "dp" and not runs_engine_workers(ctx):
        key = f"{node}.ulysses_sequence_parallel_size"  # the legacy FSDP workers multiply by the role's own
    elif ctx.model_engine == "dp" and role != "critic":
        legacy = f"{node}.ulysses_sequence_parallel_size"  # FSDPActorConfig copies it over the engine's when > 1
        legacy_size = ctx.number(legacy)
        if isinstance(legacy_size, int) and legacy_size > 1:
            key = legacy
    size = ctx.number(key)
    if size is None and ctx.tree.get(key) is None:
        return 1, ""
    return (size, key) if isinstance(size, int) and size >= 1 else None


@rule(
    "BS010",
    "dynamic-bsz-token-budget",
    Severity.ERROR,
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
    """With dynamic batch size verl packs sequences into micro-batches of at most `max_token_len_per_gpu *
    sp_size` tokens and cannot split one sequence: `rearrange_micro_batches` asserts `max_token_len >=
    max_seq_len` ("max_token_len must be greater than the sequence length", verl `verl/utils/seqlen_balancing.py`;
    the product is taken in `prepare_micro_batches`, `verl/workers/engine/utils.py`: `max_token_len =
    max_token_len_per_gpu * sp_size`). Each engine sets `sp_size` from its own sequence split
    (`verl/workers/engine/*/transformer_impl.py`, `tu.assign_non_tensor(data, sp_size=...)`): FSDP the Ulysses size
    (`fsdp_config.ulysses_sequence_parallel_size`, or the deprecated role-level `ulysses_sequence_parallel_size`
    when > 1, which `FSDPActorConfig.__post_init__` copies over it, `verl/workers/config/actor.py`; the FSDP critic
    has no such copy, `verl/workers/config/critic.py`, so only `critic.fsdp.ulysses_sequence_parallel_size`
    counts), Megatron `context_parallel_size`, VeOmni `veomni.ulysses_parallel_size`, TorchTitan
    `torchtitan.tensor_parallel_size`. verl 0.8.0, 0.9.1 and main have no other place (the legacy FSDP/Megatron
    workers are gone), so a budget of (prompt + response) / sp is the standard long-context setting. The legacy
    FSDP workers, the default before verl 0.8.0 (`schemas/facts.json`: `default-engine-workers`), multiply each
    role's budget by that role's own `ulysses_sequence_parallel_size` (verl 0.7.1 `dp_actor.py:559`,
    `dp_critic.py:212`: `max_token_len = self.config.ppo_max_token_len_per_gpu * self.ulysses_sequence_parallel_size`),
    the critic's included.
    A sequence is up to `data.max_prompt_length + data.max_response_length` tokens, so a smaller effective budget
    fails the first time such a sample reaches the actor update (`actor.ppo_max_token_len_per_gpu`), the
    old-log-prob recompute (`rollout.log_prob_max_token_len_per_gpu`), the ref
    (`ref.log_prob_max_token_len_per_gpu`) or the critic — after a rollout, possibly hours in. The rollout and ref
    budgets default to the actor's by interpolation."""
    prompt, response = ctx.number(PROMPT), ctx.number(RESPONSE)
    if not isinstance(prompt, int) or not isinstance(response, int):
        return
    need = prompt + response
    roles = active_roles(ctx)
    actor_dyn = ctx.config.value(ACTOR_DYNAMIC_BSZ) is True
    budgets = []  # (role whose sequence split applies, budget key, the pass it limits)
    if actor_dyn:
        budgets += [
            ("actor", ACTOR_BUDGET, "actor update"),
            ("actor", "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu", "old-log-prob recompute"),
        ]
    if "ref" in roles and ctx.config.value(REF_DYNAMIC_BSZ) is True:
        budgets.append(("ref", "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu", "ref log-prob"))
    if "critic" in roles and ctx.config.value("critic.use_dynamic_bsz") is True:
        budgets += [
            ("critic", "critic.ppo_max_token_len_per_gpu", "critic update"),
            ("critic", "critic.ppo_infer_max_token_len_per_gpu", "critic values"),
        ]
    flagged = set()
    for role, key, phase in budgets:
        budget = ctx.number(key)
        if not isinstance(budget, int):
            continue
        if (
            key != ACTOR_BUDGET
            and ctx.explicit(key) is None
            and ctx.number(ACTOR_BUDGET) == budget
            and ACTOR_BUDGET in flagged
        ):
            continue  # follows the actor's budget by interpolation: already reported there
        split = _sequence_parallel(ctx, role)
        if split is None:
            continue
        sp, sp_key = split
        if budget * sp >= need:
            continue
        sp_text = f" x `{sp_key.rpartition('.')[2]}` {sp} = {budget * sp} tokens" if sp > 1 else ""
        flagged.add(key)
        followers = " (the rollout and ref budgets follow it unless set)" if key == ACTOR_BUDGET else ""
        yield Finding(
            ctx.blame(key, PROMPT, RESPONSE, *([sp_key] if sp_key else [])),
            f"`{key}`={budget}{sp_text} is below max_prompt_length {prompt} + max_response_length "
            f"{response} = {need}: the {role}'s effective budget (max_token_len_per_gpu x sp_size) cannot "
            f'hold a full-length sample, which fails "max_token_len must be greater than the sequence '
            f'length" in the {phase}{followers}. Set it to at least {-(-need // sp)}',
        )
