"""Parameter counts of a model and of the most-loaded rank under a Megatron layout.

The counts follow Megatron's `megatron/training/theoretical_memory_usage.py` (`compute_weight_and_optimizer_memory`)
extended with QK-norm, QKV bias, multi-latent attention and shared experts. They are exact for the shipped cards:
tests/test_estimate.py compares them with the parameters of the same architecture built by transformers on torch's
`meta` device.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

from ..core.model import ModelShape


class ParamCounts(NamedTuple):
    """Whole-model counts. `embedding` = input embedding + untied output layer; `dense` = every other non-expert
    parameter (attention, dense MLPs, norms, routers, shared experts); `expert` = routed experts;
    `active` = what one token touches (top-k of the routed experts)."""

    total: int
    embedding: int
    dense: int
    expert: int
    active: int


class _LayerParams(NamedTuple):
    sharded: int  # split over TP
    replicated: int  # every TP rank holds them
    expert: int  # split over EP x ETP


def _attention_params(m: ModelShape, tp: int = 1, mla_down_replicated: bool = False) -> _LayerParams:
    h, heads = m.hidden_size, m.num_attention_heads
    if m.is_mla:
        q_out = heads * (m.qk_head_dim + m.qk_pos_emb_head_dim)
        down = (h * m.q_lora_rank if m.q_lora_rank else 0) + h * (m.kv_lora_rank + m.qk_pos_emb_head_dim)
        sharded = m.q_lora_rank * q_out if m.q_lora_rank else h * q_out
        sharded += m.kv_lora_rank * heads * (m.qk_head_dim + m.v_head_dim) + heads * m.v_head_dim * h
        replicated = h + (m.q_lora_rank or 0) + m.kv_lora_rank  # input norm, q/kv latent norms
        if mla_down_replicated:
            replicated += down
        else:
            sharded += down
        return _LayerParams(sharded, replicated, 0)
    q, kv = heads * m.kv_channels, m.num_query_groups * m.kv_channels
    # With TP > query groups Megatron (>= 0.16) replicates KV heads: each rank holds one group.
    kv_sharded = kv if m.num_query_groups >= tp else m.kv_channels * tp
    sharded = 2 * h * q + 2 * h * kv_sharded + ((q + 2 * kv_sharded) if m.qkv_bias else 0)
    replicated = h + (h if m.o_proj_bias else 0) + (2 * m.kv_channels if m.qk_layernorm else 0)
    return _LayerParams(sharded, replicated, 0)


def _mlp_params(m: ModelShape, moe: bool) -> _LayerParams:
    h = m.hidden_size
    if not moe:
        return _LayerParams(3 * h * m.ffn_hidden_size, h, 0)  # SwiGLU gate/up/down; pre-MLP norm
    replicated = h + m.num_experts * h + (h if m.moe_shared_expert_gate else 0)  # norm, router, shared-expert gate
    experts = 3 * h * m.moe_ffn_hidden_size * m.num_experts
    return _LayerParams(3 * h * m.moe_shared_expert_intermediate_size, replicated, experts)


@functools.lru_cache(maxsize=256)  # pure; every variant of a recipe asks for the same architecture
def count_params(m: ModelShape, value_head: bool = False) -> ParamCounts:
    """Exact parameter counts (HF layout; Megatron's fused modules hold the same numbers). `value_head`: a critic,
    whose output layer maps hidden -> 1 instead of -> vocab."""
    h, vocab = m.hidden_size, m.vocab_size
    embedding = vocab * h + (h if value_head else 0 if m.tied_embeddings else vocab * h)
    dense, expert, active = h, 0, 0  # final norm
    for i in range(m.num_layers):
        attn, mlp = _attention_params(m), _mlp_params(m, m.is_moe_layer(i))
        dense += attn.sharded + attn.replicated + mlp.sharded + mlp.replicated
        expert += mlp.expert
        if mlp.expert:
            active += mlp.expert // m.num_experts * m.moe_router_topk
    total = embedding + dense + expert
    return ParamCounts(total, embedding, dense, expert, embedding + dense + active)


class Layout(NamedTuple):
    """Megatron parallel sizes of one role on `world` devices."""

    world: int
    tp: int = 1
    pp: int = 1
    vpp: int | None = None
    cp: int = 1
    ep: int = 1
    etp: int | None = None  # None = TP (Megatron's default)

    @property
    def expert_tp(self) -> int:
        return self.etp or self.tp

    @property
    def dp(self) -> int:
        """world / (TP x PP x CP) (at least 1; TP001 reports a world it does not divide)."""
        return max(1, self.world // (self.tp * self.pp * self.cp))

    @property
    def edp(self) -> int:
        """Expert data-parallel size world / (EP x ETP x PP) (at least 1; TP002 reports a world it does not divide)."""
        return max(1, self.world // (self.ep * self.expert_tp * self.pp))


def stage_layers(num_layers: int, pp: int, vpp: int | None = None) -> list[list[int]]:
    """Layer indices held by each pipeline stage. With VPP the model is cut into PP x VPP chunks and chunk c sits on
    stage c % PP (Megatron's interleaved schedule). An uneven split gives the first chunks one layer more."""
    chunks = pp * (vpp or 1)
    base, extra = divmod(num_layers, chunks)
    stages: list[list[int]] = [[] for _ in range(pp)]
    start = 0
    for c in range(chunks):
        size = base + (1 if c < extra else 0)
        stages[c % pp].extend(range(start, start + size))
        start += size
    return stages


class RankParams(NamedTuple):
    """Parameters held by the most-loaded rank (pipeline stage `stage`): non-expert (`dense`, including its share of
    the embedding/output layer) and routed-expert."""

    dense: int
    expert: int
    stage: int

    @property
    def total(self) -> int:
        return self.dense + self.expert


def stage_params(
    m: ModelShape, layout: Layout, stage: int, value_head: bool = False, mla_down_replicated: bool = False
) -> RankParams:
    """What one rank of pipeline stage `stage` holds: TP-split attention/MLP/embedding, TP-replicated norms and
    routers, experts split over EP x ETP. The first stage holds the input embedding, the last the output layer
    (with tied embeddings and PP > 1 Megatron keeps a copy of the word embeddings there) and the final norm."""
    tp, pp = layout.tp, layout.pp
    sharded = replicated = expert = 0
    for i in stage_layers(m.num_layers, pp, layout.vpp)[stage]:
        for part in (_attention_params(m, tp, mla_down_replicated), _mlp_params(m, m.is_moe_layer(i))):
            sharded += part.sharded
            replicated += part.replicated
            expert += part.expert
    if stage == 0:
        sharded += m.vocab_size * m.hidden_size
    if stage == pp - 1:
        replicated += m.hidden_size  # final norm
        if value_head:
            replicated += m.hidden_size
        elif not m.tied_embeddings or pp > 1:
            sharded += m.vocab_size * m.hidden_size
    dense = math.ceil(sharded / tp) + replicated
    return RankParams(dense, math.ceil(expert / (layout.ep * layout.expert_tp)), stage)


@functools.lru_cache(maxsize=256)  # pure, as above
def params_per_rank(
    m: ModelShape, layout: Layout, value_head: bool = False, mla_down_replicated: bool = False
) -> RankParams:
    """The most-loaded rank's parameters (the pipeline stage holding the most)."""
    stages = [stage_params(m, layout, s, value_head, mla_down_replicated) for s in range(layout.pp)]
    return max(stages, key=lambda r: (r.total, -r.stage))
