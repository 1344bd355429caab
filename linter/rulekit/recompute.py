"""What the RC rules share: the recompute keys, the roles to check, and how messages quote megatron-core."""

from ..schema import version_key
from ..topology import megatron_roles, sets_itself

GRANULARITY, METHOD, NUM_LAYERS, MODULES = (
    "recompute_granularity",
    "recompute_method",
    "recompute_num_layers",
    "recompute_modules",
)


def recompute_roles(ctx, *names):
    """(Parallelism, {name: effective value}) for each active Megatron role. The ref, whose
    `override_transformer_config` interpolates the actor's by default, is checked only when it sets one of
    `names` itself, so an inherited setting is reported once, for the actor."""
    for _, par in megatron_roles(ctx):
        if not sets_itself(ctx, par, (par.transformer(n) for n in names)):
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
    return f'{mcore(ctx)} rejects this at model init (`TransformerConfig.__post_init__`): "{message}"'
