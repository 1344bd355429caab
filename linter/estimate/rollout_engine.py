"""The least device memory a colocated rollout engine (vLLM / SGLang) can start with, so that MEM001 never proposes
a `gpu_memory_utilization` below it.

The engine must hold its own copy of the weights and the KV cache of at least one sequence of the longest length
it accepts: vLLM refuses to start otherwise ("No available memory for the cache blocks", or max_model_len larger
than the KV cache can store). The floor counts exactly these two and nothing else (the engine's activation peak
and CUDA graphs come on top), so a utilization at the floor starts with no room to batch: it is a bound, not a
recommendation.

* Weights: bf16, the whole model over the rollout's TP (an upper bound for a MoE whose experts the engine also
  splits over expert-parallel ranks).
* KV cache per token, bf16: standard attention keeps K and V of each layer's query groups, split over TP (a group
  is replicated on the ranks beyond the group count); multi-latent attention keeps the compressed latent and the
  rope key (`kv_lora_rank + qk_pos_emb_head_dim`) per layer on every rank.
"""

from __future__ import annotations

import math

from ..core.model import ModelShape
from .inputs import PlanInputs

KV_BYTES = 2  # bf16 KV cache, the engines' default `kv_cache_dtype=auto` for a bf16 model


def kv_cache_bytes_per_token(m: ModelShape, tp: int) -> float:
    """KV cache of one token on one device of an engine with tensor-parallel size `tp`."""
    if m.is_mla:
        return m.num_layers * (m.kv_lora_rank + m.qk_pos_emb_head_dim) * KV_BYTES
    groups_per_rank = math.ceil(m.num_query_groups / max(1, tp))
    return m.num_layers * 2 * groups_per_rank * m.kv_channels * KV_BYTES


def engine_weights_bytes(inputs: PlanInputs, total_params: int) -> float:
    """The engine's bf16 weights on one device."""
    return total_params * 2.0 / max(1, inputs.rollout.tp)


def minimum_engine_bytes(inputs: PlanInputs, total_params: int) -> float:
    """The engine's weights plus the KV cache of one sequence of `rollout.sequence_tokens`, on one device."""
    tokens = inputs.rollout.sequence_tokens
    return engine_weights_bytes(inputs, total_params) + tokens * kv_cache_bytes_per_token(
        inputs.model, inputs.rollout.tp
    )
