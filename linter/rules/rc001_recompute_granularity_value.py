from ..diagnostics import Severity
from ..schema import version_key
from .parallel import megatron_roles
from .registry import Finding, rule

# Shared by the RC rules (recompute checks of megatron-core's `TransformerConfig.__post_init__`).
GRANULARITY, METHOD, NUM_LAYERS, MODULES = (
    "recompute_granularity", "recompute_method", "recompute_num_layers", "recompute_modules")


def recompute_roles(ctx, *names):
    """(Parallelism, {name: effective value}) for each active Megatron role. The ref, whose
    `override_transformer_config` interpolates the actor's by default, is checked only when it sets one of
    `names` itself, so an inherited setting is reported once, for the actor."""
    for role, par in megatron_roles(ctx):
        if role == "ref" and not any(ctx.explicit(par.transformer(n)) is not None for n in names):
            continue
        yield par, {n: ctx.config.value(par.transformer(n)) for n in names}


def blame(ctx, par, *names):
    return ctx.blame(*(par.transformer(n) for n in names))


def mcore(ctx) -> str:
    return f"megatron-core {ctx.stack.megatron_core}"


def at_or_after(ctx, version: str) -> bool:
    return version_key(ctx.stack.megatron_core) >= version_key(version)


def rejects(ctx, message: str) -> str:
    """How every RC message quotes Megatron."""
    return f"{mcore(ctx)} rejects this at model init (`TransformerConfig.__post_init__`): \"{message}\""


@rule(
    "RC001", "recompute-granularity-value", Severity.ERROR,
    summary='recompute_granularity is not "full", "selective" or null',
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: Full
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method: uniform
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers: 1
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: full
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method: uniform
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers: 1
    """,
)
def check(ctx):
    """`override_transformer_config.recompute_granularity` goes unchecked through verl into megatron-core's
    `TransformerConfig`, whose `__post_init__` accepts only `"full"`, `"selective"` or None (null = no
    recompute), case-sensitively, in every megatron-core version (0.12.1, 0.15.3, 0.16.1). Anything else raises
    `ValueError: When using recompute_granuarlity: <value> must be "full"or "selective".` (Megatron's spelling)
    when the worker builds the model, minutes after launch."""
    for par, v in recompute_roles(ctx, GRANULARITY):
        g = v[GRANULARITY]
        if g is None or g in ("full", "selective") or (isinstance(g, str) and "${" in g):
            continue
        quoted = f'When using recompute_granuarlity: {g} must be "full"or "selective".'
        yield Finding(blame(ctx, par, GRANULARITY),
                      f"{par.role}: recompute_granularity={g!r}: {rejects(ctx, quoted)} Use full, selective or null.")
