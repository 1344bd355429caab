"""Parameter counts of a model and of the most-loaded rank under a Megatron layout.

The counts follow Megatron's `megatron/training/theoretical_memory_usage.py` (`compute_weight_and_optimizer_memory`)
extended with QK-norm, QKV bias, multi-latent attention and its indexer, shared experts, gated DeltaNet and Mamba-2
token mixers, and a vision tower. They are exact for the shipped cards and the fixtures of tests/test_param_counts.py,
which compares them with the parameters of the same architecture built by transformers on torch's `meta` device.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

from ..core.model import ModelShape


class ParamCounts(NamedTuple):
    """Whole-model counts. `embedding` = input embedding + untied output layer; `dense` = every other non-expert
    parameter (attention, dense MLPs, norms, routers, shared experts, the vision tower); `expert` = routed experts;
    `active` = what one token touches (top-k of the routed experts). `total` is the model transformers builds: MTP
    blocks (`ParamParts.mtp`) are left out, as verl's Hugging Face loading and the published totals leave them."""

    total: int
    embedding: int
    dense: int
    expert: int
    active: int


class ParamParts(NamedTuple):
    """The same parameters by part of the model."""

    embedding: int  # input embedding + untied output layer (or a critic's value head)
    attention: int  # token mixers -- attention, gated DeltaNet, Mamba -- with their input norms
    dense_mlp: int  # dense MLPs with their norms
    shared_experts: int
    routed_experts: int
    routers: int  # MoE layers' norms, routers (and their biases) and shared-expert gates
    final_norm: int
    vision: int  # vision tower and projector
    mtp: int  # multi-token prediction blocks (DeepSeek, GLM, Qwen3-Next): not in `ParamCounts.total`


class _LayerParams(NamedTuple):
    sharded: int  # split over TP
    replicated: int  # every TP rank holds them
    expert: int  # split over EP x ETP

    @property
    def total(self) -> int:
        return self.sharded + self.replicated + self.expert


_NOTHING = _LayerParams(0, 0, 0)


def _attention_params(m: ModelShape, tp: int = 1, mla_down_replicated: bool = False) -> _LayerParams:
    h, heads = m.hidden_size, m.num_attention_heads
    if m.is_mla:
        q_out = heads * (m.qk_head_dim + m.qk_pos_emb_head_dim)
        down = (h * m.q_lora_rank if m.q_lora_rank else 0) + h * (m.kv_lora_rank + m.qk_pos_emb_head_dim)
        sharded = m.q_lora_rank * q_out if m.q_lora_rank else h * q_out
        sharded += m.kv_lora_rank * heads * (m.qk_head_dim + m.v_head_dim) + heads * m.v_head_dim * h
        replicated = h + (m.q_lora_rank or 0) + m.kv_lora_rank  # input norm, q/kv latent norms
        if m.index_num_heads:  # the sparse attention's indexer: wq_b, wk, its LayerNorm (weight, bias), weights_proj
            index_q = m.index_num_heads * m.index_head_dim
            replicated += m.q_lora_rank * index_q + h * m.index_head_dim + 2 * m.index_head_dim + h * m.index_num_heads
        if mla_down_replicated:
            replicated += down
        else:
            sharded += down
        return _LayerParams(sharded, replicated, 0)
    q, kv = heads * m.kv_channels, m.num_query_groups * m.kv_channels
    # With TP > query groups Megatron (>= 0.16) replicates KV heads: each rank holds one group.
    kv_sharded = kv if m.num_query_groups >= tp else m.kv_channels * tp
    sharded = 2 * h * q + 2 * h * kv_sharded + ((q + 2 * kv_sharded) if m.qkv_bias else 0)
    if m.attention_output_gate:  # q_proj's second half: the gate on the attention output
        sharded += h * q + (q if m.qkv_bias else 0)
    if m.attention_sinks:
        sharded += heads
    replicated = h + (h if m.o_proj_bias else 0) + (2 * m.kv_channels if m.qk_layernorm else 0)
    return _LayerParams(sharded, replicated, 0)


def _linear_attention_params(m: ModelShape) -> _LayerParams:
    """Gated DeltaNet (transformers' `Qwen3NextGatedDeltaNet`): q/k/v/z and beta/alpha input projections, a
    depthwise convolution over q/k/v, per-value-head dt bias and A, a gated RMSNorm of one value head, out_proj."""
    h, value_heads = m.hidden_size, m.linear_num_value_heads
    key, value = m.linear_num_key_heads * m.linear_key_head_dim, value_heads * m.linear_value_head_dim
    conv = (2 * key + value) * m.linear_conv_kernel_dim
    sharded = h * (2 * key + 2 * value) + h * 2 * value_heads + conv + 2 * value_heads + value * h
    return _LayerParams(sharded, h + m.linear_value_head_dim, 0)


def _mamba_params(m: ModelShape) -> _LayerParams:
    """Mamba-2 (transformers' `NemotronHMamba2Mixer`): in_proj to x, z, B, C and dt; a depthwise convolution over
    x, B, C; per-head dt bias, A and D; a grouped gated RMSNorm; out_proj."""
    h, heads = m.hidden_size, m.mamba_num_heads
    inner = heads * m.mamba_head_dim
    conv_dim = inner + 2 * m.mamba_groups * m.mamba_state_size
    in_proj = inner + conv_dim + heads
    sharded = h * in_proj + (in_proj if m.mamba_proj_bias else 0) + inner * h + (h if m.mamba_proj_bias else 0)
    sharded += conv_dim * m.mamba_conv_kernel + (conv_dim if m.mamba_conv_bias else 0) + 3 * heads + inner
    return _LayerParams(sharded, h, 0)


def _mixer_params(m: ModelShape, i: int, tp: int = 1, mla_down_replicated: bool = False) -> _LayerParams:
    mixer = m.mixer(i)
    if mixer == "linear_attention":
        return _linear_attention_params(m)
    if mixer == "mamba":
        return _mamba_params(m)
    if mixer == "none":
        return _NOTHING
    return _attention_params(m, tp, mla_down_replicated)


def _mlp_params(m: ModelShape, moe: bool) -> _LayerParams:
    h = m.hidden_size
    matrices = 3 if m.gated_mlp else 2  # SwiGLU gate/up/down, or up/down
    if not moe:
        return _LayerParams(matrices * h * m.ffn_hidden_size, h, 0)  # pre-MLP norm
    replicated = h + m.num_experts * h + (h if m.moe_shared_expert_gate else 0)  # norm, router, shared-expert gate
    width = m.moe_latent_size or h  # Nemotron-3 Super's experts work in a latent width
    experts = matrices * width * m.moe_ffn_hidden_size * m.num_experts
    if m.expert_bias:  # gpt-oss: gate_up and down biases of every expert, and the router's
        experts += m.num_experts * (2 * m.moe_ffn_hidden_size + h)
        replicated += m.num_experts
    sharded = matrices * h * m.moe_shared_expert_intermediate_size + 2 * h * m.moe_latent_size
    return _LayerParams(sharded, replicated, experts)


def _layer_mlp(m: ModelShape, i: int) -> _LayerParams:
    return _mlp_params(m, m.is_moe_layer(i)) if m.has_mlp(i) else _NOTHING


@functools.lru_cache(maxsize=256)  # pure; every variant of a recipe asks for the same architecture
def count_parts(m: ModelShape, value_head: bool = False) -> ParamParts:
    """Exact parameter counts by part (HF layout; Megatron's fused modules hold the same numbers). `value_head`: a
    critic, whose output layer maps hidden -> 1 instead of -> vocab."""
    h, vocab = m.hidden_size, m.vocab_size
    embedding = vocab * h + (h if value_head else 0 if m.tied_embeddings else vocab * h)
    attention = dense_mlp = shared = routed = routers = 0
    for i in range(m.num_layers):
        attention += _mixer_params(m, i).total
        mlp = _layer_mlp(m, i)
        if m.is_moe_layer(i):
            shared, routed, routers = shared + mlp.sharded, routed + mlp.expert, routers + mlp.replicated
        else:
            dense_mlp += mlp.total
    # An MTP block (DeepSeek-V3's `MultiTokenPredictor`, Qwen3-Next's `mtp`): norms of the hidden state and of the
    # next token's embedding, their concatenation projected to hidden, one decoder layer like the last, a final norm;
    # the embedding and output layer are the main model's.
    last = m.num_layers - 1
    mtp_block = 3 * h + 2 * h * h + _attention_params(m).total + _layer_mlp(m, last).total
    return ParamParts(
        embedding, attention, dense_mlp, shared, routed, routers, h, m.vision_params, m.mtp_layers * mtp_block
    )


@functools.lru_cache(maxsize=256)  # pure, as above
def count_params(m: ModelShape, value_head: bool = False) -> ParamCounts:
    """Whole-model counts (`ParamCounts`), from `count_parts`."""
    parts = count_parts(m, value_head)
    dense = parts.attention + parts.dense_mlp + parts.shared_experts + parts.routers + parts.final_norm + parts.vision
    total = parts.embedding + dense + parts.routed_experts
    active_experts = parts.routed_experts // m.num_experts * m.moe_router_topk if m.num_experts else 0
    return ParamCounts(total, parts.embedding, dense, parts.routed_experts, parts.embedding + dense + active_experts)


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
        for part in (_mixer_params(m, i, tp, mla_down_replicated), _layer_mlp(m, i)):
            sharded += part.sharded
            replicated += part.replicated
            expert += part.expert
    if stage == 0:  # the input embedding, and the vision tower (Megatron's first stage encodes the images)
        sharded += m.vocab_size * m.hidden_size + m.vision_params
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
