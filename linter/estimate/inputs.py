"""What the estimate is computed from: one record per role, the rollout engine, the checkpoint settings and the
site limits, and the documented assumptions used where neither the recipe nor `[tool.sapo-lint]` states a value.

Sizes are bytes; `GIB` converts.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..core.command import RESOURCE_KEYS
from ..core.model import ModelShape
from .activations import Recompute
from .optimizer import Optimizer
from .params import Layout

GIB = float(2**30)
MB = float(10**6)


def gib_text(size_bytes: float) -> str:
    """A size for messages, in GiB, never a bare `0.0` for something that is there: one decimal from 0.1 GiB up, as
    many as show the first significant digit below it (down to 0.001), `<0.001 GiB` under that; `0 GiB` only for
    nothing at all."""
    gib = size_bytes / GIB
    if gib == 0:
        return "0 GiB"
    if gib < 0.001:
        return "<0.001 GiB"
    decimals = 1 if gib >= 0.1 else 2 if gib >= 0.01 else 3
    return f"{gib:.{decimals}f} GiB"


# ---- Documented assumptions: defaults when neither the recipe's `hardware` nor [tool.sapo-lint] states them -----
#: Write bandwidth of one writing process to the checkpoint directory, GiB/s: a 2 Gbit/s share of a node's link to
#: shared storage with eight ranks writing at once. Slow NFS is far below this; state yours.
DEFAULT_WRITE_GIB_PER_S = 0.25
#: Host RAM per node, GiB: common for 8-device training servers (1-2 TiB); state yours.
DEFAULT_HOST_RAM_GIB = 1024.0
#: Disk budget for the checkpoint directory, GiB; state yours.
DEFAULT_DISK_BUDGET_GIB = 1024.0
#: Device runtime per device that no formula counts: CUDA/CANN context, kernels, workspaces (~0.5-1 GB).
RUNTIME_GIB = 1.0
#: HCCL_BUFFSIZE default, MB (CANN's HCCL environment variable reference).
DEFAULT_HCCL_BUFFSIZE_MB = 200.0
#: HCCL_EXEC_TIMEOUT default on Atlas A2/A3, seconds (CANN's HCCL environment variable reference).
DEFAULT_HCCL_EXEC_TIMEOUT_S = 1836.0
#: verl's world-group timeout default, seconds (`actor_rollout_ref.nccl_timeout`).
DEFAULT_NCCL_TIMEOUT_S = 600.0
#: Fraction of HBM above which MEM001 warns.
WARN_FRACTION = 0.9


class RoleSetup(NamedTuple):
    """One Megatron role (actor, ref or critic) on the shared devices, or an SFT trainer's model (`sft`)."""

    role: str
    layout: Layout
    sp: bool = False
    param_bytes: float = 2
    grad_bytes: float = 4
    optimizer: Optimizer | None = None  # None: forward only (the ref)
    param_offload: bool = False  # verl: weights and grads on host outside train/eval
    optimizer_offload: bool = False  # verl: optimizer state on host outside train
    recompute: Recompute = Recompute()
    train_tokens: float = 0.0  # per rank per micro-batch, after the CP split
    logprob_tokens: float = 0.0
    value_head: bool = False
    token_source: str = ""  # how train_tokens was derived, for messages
    entropy: bool = False  # the update computes entropy (actor.entropy_coeff != 0 or actor.calculate_entropy)


class RolloutSetup(NamedTuple):
    """The rollout engine colocated with the trainer (`rollout_engine.py`: the least memory it can start with)."""

    gpu_memory_utilization: float = 0.5
    free_cache_engine: bool = True
    tp: int = 1
    sleep_keeps_weights_on_host: bool = False  # vLLM sleep level 1 (verl's choice on Ascend)
    separate: bool = False  # on devices of its own (verl main's fully-async, one-step-off): not on the trainer's
    sequence_tokens: int = 0  # the longest sequence it holds: `rollout.max_model_len`, else prompt + response


class CheckpointSetup(NamedTuple):
    saves: bool = False  # trainer.save_freq > 0
    contents: tuple[str, ...] = ("model", "optimizer", "extra")
    use_dist_checkpointing: bool = False
    hf_distributed: bool = False  # vanilla mbridge writing HF shards from every rank (distributed_filesystem)
    vanilla_mbridge: bool = False  # megatron.vanilla_mbridge: the legacy mbridge instead of Megatron-Bridge
    async_save: bool = False
    timeout_s: float = DEFAULT_NCCL_TIMEOUT_S
    timeout_source: str = "actor_rollout_ref.nccl_timeout"


class Limits(NamedTuple):
    """Site facts that verl's config has no place for; `stated` names those the user gave (the rest are the
    documented defaults)."""

    write_gib_per_s: float = DEFAULT_WRITE_GIB_PER_S
    host_ram_gib: float = DEFAULT_HOST_RAM_GIB
    disk_budget_gib: float = DEFAULT_DISK_BUDGET_GIB
    stated: frozenset[str] = frozenset()

    def assumed(self, name: str) -> bool:
        return name not in self.stated

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> Limits:
        """`{"write_gib_per_s": .., "host_ram_gib": .., "disk_budget_gib": ..}`; missing or non-positive values keep
        the defaults."""
        out, stated = {}, set()
        for key in RESOURCE_KEYS:
            value = (values or {}).get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                # an integer beyond the floats (10**400 GiB) is as unlimited as `.inf`
                out[key], stated = float(value) if value <= sys.float_info.max else math.inf, stated | {key}
        return cls(**out, stated=frozenset(stated))


class PlanInputs(NamedTuple):
    model: ModelShape
    world: int
    devices_per_node: int
    hbm_gib: float  # what the runtime reports per device (torch.cuda / torch_npu mem_get_info total), GiB
    device: str  # a device kind's name (`core.device.DeviceKind`): "npu" | "gpu"
    actor: RoleSetup
    ref: RoleSetup | None = None
    critic: RoleSetup | None = None
    rollout: RolloutSetup = RolloutSetup()
    checkpoint: CheckpointSetup = CheckpointSetup()
    limits: Limits = Limits()
    hccl_buffsize_mb: float = DEFAULT_HCCL_BUFFSIZE_MB
    runtime_gib: float = RUNTIME_GIB
    mla_down_replicated: bool = False
    accelerator: str = ""  # '' when the accelerator named is not known (hbm_gib is then 0: MEM001 is skipped)
    nominal_hbm_gib: float = 0.0  # the datasheet capacity, for messages (0: same as hbm_gib)
    accelerator_assumed: str = ""  # why the accelerator was assumed (`Accelerator.assumed`); '' when named
    # An SFT trainer: `actor` is its one model; no rollout engine, reference model or critic, no log-prob pass
    sft: bool = False
