"""Per-role Megatron parallel settings, resolved from the config (the ref inherits the actor's by interpolation)."""

from __future__ import annotations

import math
from typing import NamedTuple

from .core.paths import ROLE_PREFIX
from .engine import MEGATRON, SEPARATED_ROLLOUT_ENTRY_MODULES, LintContext


class Parallelism(NamedTuple):
    role: str
    prefix: str
    tp: int
    pp: int
    vpp: int | None
    cp: int
    ep: int
    etp: int  # expert TP; Megatron defaults it to TP
    sp: bool

    def path(self, name: str) -> str:
        return f"{self.prefix}.{name}"

    def transformer(self, name: str) -> str:
        return f"{self.prefix}.override_transformer_config.{name}"


WORLD = ("trainer.nnodes", "trainer.n_gpus_per_node")  # the colocated worker group's devices
MODEL_PATH = "actor_rollout_ref.model.path"  # names the model whose shape the model-aware rules read


def world_size(ctx: LintContext) -> int | None:
    """Devices of the colocated actor/rollout worker group: trainer.nnodes x trainer.n_gpus_per_node."""
    return _devices(ctx, "trainer")[1]


def separated_rollout(ctx: LintContext) -> bool:
    """Whether the rollout runs on devices of its own (verl main's fully-async and one-step-off trainers)."""
    return bool(ctx.command) and ctx.command.entry_module in SEPARATED_ROLLOUT_ENTRY_MODULES


def rollout_devices(ctx: LintContext) -> tuple[int | None, int | None]:
    """(devices per node, devices) that rollout replicas are placed on: the colocated worker group, or for a
    separated rollout its own `rollout.nnodes x rollout.n_gpus_per_node` (verl/experimental/separation/utils.py)."""
    return _devices(ctx, "rollout" if separated_rollout(ctx) else "trainer")


def _devices(ctx: LintContext, node: str) -> tuple[int | None, int | None]:
    nodes, per_node = ctx.number(f"{node}.nnodes"), ctx.number(f"{node}.n_gpus_per_node")
    if nodes is None or per_node is None or nodes < 1 or per_node < 1:
        return per_node, None
    return per_node, nodes * per_node


def active_roles(ctx: LintContext) -> list[str]:
    """Roles that run: the actor always; the ref when a KL term needs it; the critic as verl's need_critic decides."""
    if "active_roles" not in ctx.derived:
        ctx.derived["active_roles"] = _active_roles(ctx)
    return ctx.derived["active_roles"]


def _active_roles(ctx: LintContext) -> list[str]:
    roles = ["actor"]
    if ctx.config.value("actor_rollout_ref.actor.use_kl_loss") or ctx.config.value("algorithm.use_kl_in_reward"):
        roles.append("ref")
    enable = ctx.config.value("critic.enable")
    if enable or (enable is None and ctx.config.value("algorithm.adv_estimator") == "gae"):
        roles.append("critic")
    return roles


def parallelism(ctx: LintContext, role: str) -> Parallelism | None:
    """The role's sizes, or None when it does not run on the Megatron engine or a size is not a positive integer
    (no arithmetic of the rules or the estimator can take a TP of 0; SL004 reports a size of the wrong type)."""
    key = ("parallelism", role)
    if key not in ctx.derived:
        ctx.derived[key] = _parallelism(ctx, role)
    return ctx.derived[key]


def _parallelism(ctx: LintContext, role: str) -> Parallelism | None:
    prefix = ROLE_PREFIX[role]
    if ctx.model_engine != MEGATRON or ctx.tree.get(prefix) is None:
        return None

    def size(name: str, default: int | None) -> int | None:
        value = ctx.config.value(f"{prefix}.{name}")
        if value is None:
            return default
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None

    tp, pp, cp, ep = (
        size(n, 1)
        for n in (
            "tensor_model_parallel_size",
            "pipeline_model_parallel_size",
            "context_parallel_size",
            "expert_model_parallel_size",
        )
    )
    vpp, etp = size("virtual_pipeline_model_parallel_size", None), size("expert_tensor_parallel_size", None)
    if None in (tp, pp, cp, ep):
        return None
    sp = ctx.config.value(f"{prefix}.sequence_parallel")
    return Parallelism(role, prefix, tp, pp, vpp, cp, ep, etp or tp, bool(sp))


MAX_FACTORED = 10**12  # trial division up to its square root stays under ~0.1 s


def divisors(n: int) -> list[int]:
    """The divisors of n in increasing order (none for n < 1)."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0] if n >= 1 else []
    return small + [n // d for d in reversed(small) if d * d != n]


def nearest_divisors(value: int, n: int) -> str:
    """The divisors of n closest to value, for "nearest valid setting" hints. An n beyond any real size (a world
    of `nnodes: 99999999999999999999` devices) is not factored: that could take hours; 1 always divides it."""
    found = divisors(n) if n <= MAX_FACTORED else [1]
    below = [d for d in found if d < value]
    above = [d for d in found if d > value]
    near = ([below[-1]] if below else []) + ([above[0]] if above else [])
    return " or ".join(str(d) for d in near) or "1"


def breaking_factors(ctx: LintContext, n: int, factors: dict[str, int]) -> list[str]:
    """Of `factors` (key -> size) whose product must divide `n`, the keys the command sets that break it: each
    whose size, were it 1, would leave a product that divides `n` (TP 4 x PP 3 on 8 devices: PP); where no single
    one would, every one it sets above 1. A topology finding is reported there, not at the world size."""
    product = math.prod(factors.values())
    set_here = [k for k, v in factors.items() if v > 1 and ctx.explicit(k) is not None]
    return [k for k in set_here if n % (product // factors[k]) == 0] or set_here


def fitting_sizes(n: int, factors: dict[str, int], key: str) -> str | None:
    """The sizes of `key` nearest its own that make the product of `factors` divide `n` ("2 or 4"); None when the
    other factors' product does not divide `n` (no size of `key` alone fits)."""
    rest = math.prod(v for k, v in factors.items() if k != key)
    return nearest_divisors(factors[key], n // rest) if key in factors and n % rest == 0 else None


def megatron_roles(ctx: LintContext):
    """(role, Parallelism) for every active role on the Megatron engine."""
    for role in active_roles(ctx):
        par = parallelism(ctx, role)
        if par is not None:
            yield role, par


def sets_itself(ctx: LintContext, par: Parallelism, paths) -> bool:
    """Whether the role sets any of these keys itself; the ref inherits the actor's megatron settings by
    interpolation, and a finding about inherited values is reported once, for the actor."""
    return par.role != "ref" or any(ctx.explicit(p) is not None for p in paths)


def own_setting(ctx: LintContext, par: Parallelism, *names: str) -> bool:
    """`sets_itself` for sizes under the role's `megatron` node."""
    return sets_itself(ctx, par, (par.path(n) for n in names))
