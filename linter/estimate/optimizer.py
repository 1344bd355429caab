"""Optimizer state per parameter element: Megatron's mixed-precision Adam, its precision-aware variant and its
hybrid CPU offload.

Mixed-precision Adam keeps an fp32 master copy and two fp32 moments (4 + 4 + 4 B) per element, sharded over
DP x CP for dense parameters and over expert-DP for routed experts when `use_distributed_optimizer` is on
(megatron-core `optimizer/distrib_optimizer.py`). The hybrid CPU optimizer
(`megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py`) moves `optimizer_offload_fraction` f of the
optimizer's parameters to pinned host memory.

Adam's moments are created lazily: torch's Adam and the fused Adams Megatron uses (TE / apex FusedAdam) fill
`optimizer.state` on the first `step()`, while the distributed optimizer builds its fp32 main shards when it is
constructed (`_build_model_and_main_param_groups`). Until the first optimizer step (the rollout and log-prob phases
of step 1) the device holds the master part only (`device_master_bytes_per_element`).
"""

from __future__ import annotations

from typing import NamedTuple


class Optimizer(NamedTuple):
    """Megatron optimizer state per parameter element.

    Without CPU offload the device holds master + exp_avg + exp_avg_sq bytes per element (12 for AdamW;
    precision-aware with `store_param_remainders` keeps a 16-bit remainder of the fp32 master, 2 B, and moments in
    `exp_avg_dtype`/`exp_avg_sq_dtype`). With `optimizer_cpu_offload` and fraction f Megatron's
    HybridDeviceOptimizer keeps (1 - f) x 12 B on the device (an fp32 copy of the bf16 shard and fp32 moments), or
    4 + (1 - f) x 8 B without the precision-aware optimizer (the fp32 main shard stays), and puts f x 16 B in pinned
    host memory (fp32 copy, two moments, fp32 gradient copy)."""

    distributed: bool = True
    precision_aware: bool = False
    master_bytes: float = 4
    exp_avg_bytes: float = 4
    exp_avg_sq_bytes: float = 4
    cpu_offload: bool = False
    offload_fraction: float = 0.0
    kind: str = "adam"  # "sgd": one momentum buffer

    @property
    def fraction(self) -> float:
        return min(1.0, max(0.0, float(self.offload_fraction))) if self.cpu_offload else 0.0

    @property
    def moment_bytes(self) -> float:
        return self.exp_avg_bytes + (self.exp_avg_sq_bytes if self.kind != "sgd" else 0)

    def device_bytes_per_element(self) -> float:
        if not self.cpu_offload:
            return self.master_bytes + self.moment_bytes
        f = self.fraction
        moments = 8.0 if self.kind != "sgd" else 4.0
        return (1 - f) * (4 + moments) if self.precision_aware else 4 + (1 - f) * moments

    def device_master_bytes_per_element(self) -> float:
        """The part of `device_bytes_per_element` that exists before the first `step()`: the fp32 master (or its
        16-bit remainder), without the moments. With CPU offload the precision-aware hybrid optimizer keeps (1 - f)
        of its fp32 copy on the device, the other keeps the whole fp32 main shard there."""
        if not self.cpu_offload:
            return self.master_bytes
        return (1 - self.fraction) * 4 if self.precision_aware else 4.0

    def host_bytes_per_element(self) -> float:
        return self.fraction * (16.0 if self.kind != "sgd" else 12.0) if self.cpu_offload else 0.0

    def checkpoint_bytes_per_element(self) -> float:
        """fp32 master (rebuilt from remainders when they are stored) and the moments in their dtypes."""
        if self.cpu_offload:
            return 4.0 + (8.0 if self.kind != "sgd" else 4.0)
        return 4.0 + self.moment_bytes
