from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.recompute import GRANULARITY, recompute_roles, rejects
from ..rulekit.registry import Finding, rule

DSA, SP = "distribute_saved_activations", "sequence_parallel"


def effective_sequence_parallel(ctx, par) -> bool:
    """`sequence_parallel` as the `TransformerConfig` gets it: an override_transformer_config value wins;
    otherwise Megatron-Bridge (verl's default) takes `megatron.sequence_parallel`, which verl turns off at TP=1,
    and the legacy mbridge (`vanilla_mbridge=True`) sets it to TP>1."""
    own = ctx.config.value(par.transformer(SP))
    if isinstance(own, bool):
        return own
    if ctx.config.value(par.path("vanilla_mbridge")) is True:
        return par.tp > 1
    return par.sp and par.tp > 1


@rule(
    "RC008",
    "recompute-distributed-activations-sp",
    Severity.ERROR,
    engines=MEGATRON_ONLY,
    summary="distribute_saved_activations with sequence parallel while recompute is on",
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: full
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method: uniform
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers: 1
      +actor_rollout_ref.actor.megatron.override_transformer_config.distribute_saved_activations: true
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: full
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method: uniform
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers: 1
    """,
)
def check(ctx: LintContext):
    """`distribute_saved_activations` splits the checkpointed layer inputs across the tensor-parallel group;
    with sequence parallelism they are already split, and megatron-core's `TransformerConfig.__post_init__`
    (0.12.1, 0.15.3, 0.16.1) raises `ValueError: distribute_saved_activations: True must be false when sequence
    parallel is enabled: True` at model init whenever `recompute_granularity` is set. verl enables sequence
    parallel by default whenever TP > 1. Reported at `distribute_saved_activations`, with the granularity,
    sequence-parallel and TP lines as related locations."""
    for par, v in recompute_roles(ctx, GRANULARITY, DSA, SP):
        if v[GRANULARITY] is None or v[DSA] is not True or not effective_sequence_parallel(ctx, par):
            continue
        quoted = "distribute_saved_activations: True must be false when sequence parallel is enabled: True"
        reads = (
            par.transformer(GRANULARITY),
            par.transformer(SP),
            par.path(SP),
            par.path("tensor_model_parallel_size"),
        )
        yield Finding(
            ctx.blame(par.transformer(DSA), otherwise=reads),
            f"{par.role}: distribute_saved_activations=true with sequence parallel (TP={par.tp}) and "
            f"recompute_granularity={v[GRANULARITY]!r}: {rejects(ctx, quoted)} "
            f"Drop distribute_saved_activations (or set {par.path(SP)}=false).",
            related=ctx.set_at(par.transformer(DSA), *reads),
        )
