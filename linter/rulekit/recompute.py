"""What the RC rules share: the recompute keys, the roles to check, and how messages quote megatron-core."""

from ..topology import megatron_roles, sets_itself
from .registry import Finding

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


def finding(ctx, par, message: str, cause: str, *others: str) -> Finding:
    """A finding of the role's `override_transformer_config` at `cause`, the setting whose value makes
    megatron-core's check fail, where the command sets it, else at the last of `others` (the settings the check
    also reads) it sets; the others it sets are related locations. The cause is the option whose own requirement
    fails in `TransformerConfig.__post_init__` (megatron-core core_v0.18.0,
    megatron/core/transformer/transformer_config.py): an invalid value at its own key; the granularity when its
    method or layer count does not fit it (`recompute_granularity=selective` next to a leftover
    `recompute_num_layers`); the feature that cannot be combined with recompute (`cpu_offloading`,
    `distribute_saved_activations`, `moe_layer_recompute`, `overlap_moe_expert_parallel_comm`), whose `if`
    holds the check."""
    keys = [par.transformer(n) for n in (cause, *others)]
    return Finding(ctx.blame(keys[0], otherwise=keys[1:]), message, related=ctx.set_at(*keys))


def mcore(ctx) -> str:
    return f"megatron-core {ctx.stack.megatron_core}"


def rejects(ctx, message: str) -> str:
    """How every RC message quotes Megatron: verbatim, a sentence (a full stop after a quote that has none of its
    own: what follows is the next sentence, `Set ...`)."""
    stop = "" if message.endswith((".", "!", "?")) else "."
    return f'{mcore(ctx)} rejects this at model init (`TransformerConfig.__post_init__`): "{message}"{stop}'
