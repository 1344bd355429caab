"""Per-role Megatron parallel settings, resolved from the config (the ref inherits the actor's by interpolation)."""

from __future__ import annotations

import math
from typing import NamedTuple

from .catalog import model_path_key
from .core.paths import ACTOR_KEYS, ROLE_PREFIX, SFT, SFT_KEYS, TrainedKeys
from .engine import MEGATRON, SEPARATED_ROLLOUT_ENTRY_MODULES, LintContext, Part, parts_run


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
# The SFT trainer that places its workers with Ray on `trainer.nnodes x trainer.n_gpus_per_node` devices
# (verl/trainer/sft_trainer_ray.py: `RayResourcePool(process_on_nodes=[n_gpus_per_node] * nnodes)`); the others
# (sft_trainer.py, fsdp_sft_trainer.py) run one process per device under torchrun and never read those keys.
SFT_RAY_ENTRY_MODULE = "verl.trainer.sft_trainer_ray"


def world_size(ctx: LintContext) -> int | None:
    """Devices of the colocated actor/rollout worker group: trainer.nnodes x trainer.n_gpus_per_node; an SFT
    trainer's devices (`sft_devices`)."""
    if runs_sft(ctx):
        return sft_devices(ctx)[1]
    return _devices(ctx, "trainer")[1]


def runs_sft(ctx: LintContext) -> bool:
    """Whether the command runs an SFT trainer (`engine.Part.SFT`): one model, role `sft`, no rollout."""
    return ctx.command is not None and Part.SFT in parts_run(ctx.command.entry_module)


def trained_keys(ctx: LintContext) -> TrainedKeys:
    """Where the settings of the model the command trains are: the actor's, or an SFT trainer's engine."""
    return SFT_KEYS if runs_sft(ctx) else ACTOR_KEYS


# The world group's timeout of an SFT trainer, fixed in verl's code: sft_trainer.py (and fsdp_sft_trainer.py) call
# `initialize_global_process_group()`, whose default is `timeout_second=36000` (verl 0.5.0-main
# verl/utils/distributed.py); sft_trainer_ray's TrainingWorker calls `initialize_global_process_group_ray(
# timeout_second=None)` with the backend "cpu:gloo,<device>:<nccl|hccl>", for which torch takes its
# `default_pg_timeout`, 30 minutes (torch/distributed/distributed_c10d.py `_get_default_timeout`: only the backend
# "nccl" alone gets `default_pg_nccl_timeout`).
SFT_TIMEOUT_S = 36000.0
SFT_RAY_TIMEOUT_S = 1800.0


def sft_timeout(ctx: LintContext) -> tuple[float, str]:
    """(seconds, what sets them) of an SFT trainer's world-group timeout, which bounds its checkpoint barriers."""
    if ctx.command is not None and ctx.command.entry_module == SFT_RAY_ENTRY_MODULE:
        return SFT_RAY_TIMEOUT_S, "torch's default process-group timeout (sft_trainer_ray sets none)"
    return SFT_TIMEOUT_S, "world-group timeout that verl's SFT trainer sets (initialize_global_process_group)"


def world_keys(ctx: LintContext) -> tuple[str, ...]:
    """The keys that set the world size, for a finding's related locations: none where torchrun's options do."""
    if runs_sft(ctx) and ctx.command.entry_module != SFT_RAY_ENTRY_MODULE:
        return ()
    return WORLD


def model_path(ctx: LintContext) -> str:
    """The key that names the command's model (`actor_rollout_ref.model.path`; an SFT trainer's own)."""
    command = ctx.command
    return model_path_key(command.entry_module, command.config_name) if command is not None else MODEL_PATH


def sft_devices(ctx: LintContext) -> tuple[int | None, int | None]:
    """(devices per node, devices) of an SFT trainer: sft_trainer_ray's `trainer` keys; else the torchrun command
    that starts it (`--nproc_per_node` x `--nnodes`; a `--standalone` run without `--nnodes` is one node). None
    where a count is not a number written in the script (`--nproc_per_node=$1`, `auto`, an elastic `--nnodes=1:4`,
    an option left to torchrun's environment) or no torchrun starts it (a bare `python -m`, whose ranks come from a
    launcher outside the script)."""
    if ctx.command is None:
        return None, None
    if ctx.command.entry_module == SFT_RAY_ENTRY_MODULE:
        return _devices(ctx, "trainer")
    return torchrun_devices(ctx.command.launch)


def torchrun_devices(launch: tuple[str, ...]) -> tuple[int | None, int | None]:
    """(processes per node, processes) of a torchrun command's words before its module (`Command.launch`)."""
    at = next((i for i, word in enumerate(launch) if word.rsplit("/", 1)[-1] == "torchrun"), None)
    if at is None:
        return None, None
    options: dict[str, str] = {}
    words = launch[at + 1 :]
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        name, eq, value = word[2:].partition("=")
        name = name.replace("-", "_")
        if not eq:
            value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("-") else ""
        options[name] = value
    # An option not written may come from the environment torchrun runs in (PET_NPROC_PER_NODE, PET_NNODES: what a
    # Kubeflow PyTorchJob sets): unknown, but a `--standalone` run's one node.
    per_node = _count(options.get("nproc_per_node"))
    nodes = _count(options.get("nnodes", "1" if "standalone" in options else None))
    if per_node is None or nodes is None:
        return per_node, None
    return per_node, per_node * nodes


def _count(text: str | None) -> int | None:
    """A positive whole number as torchrun takes it (`8`; `1:1`, a range whose ends agree), else None."""
    if text is None:
        return None
    low, _, high = text.partition(":")
    if not low.isdigit() or (high and high != low):
        return None
    return int(low) if int(low) >= 1 else None


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
    """Roles that run: the actor always; the ref when a KL term needs it; the critic as verl's need_critic decides.
    An SFT trainer's one model is the role `sft`."""
    if "active_roles" not in ctx.derived:
        ctx.derived["active_roles"] = [SFT] if runs_sft(ctx) else _active_roles(ctx)
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
