"""Activation memory of a training step and of a forward-only pass on the most-loaded pipeline stage.

The per-layer terms follow Megatron's `compute_activation_memory` (`megatron/training/theoretical_memory_usage.py`)
for flash attention (no s x s score matrix), bf16 activations and no dropout, with the tensors Megatron keeps for
QK-norm, multi-latent attention and the alltoall MoE dispatcher added; recompute follows megatron-core's
`recompute_granularity` / `recompute_method` / `recompute_num_layers` / `recompute_modules`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from ..core.model import ModelShape
from .params import Layout, stage_layers

#: Bytes per logit element kept while training: bf16 logits (2) + the fp32 copy inside the vocab-parallel
#: log-softmax (4) + the fp32 gradient of the logits during backward (4).
TRAIN_LOGIT_BYTES = 10
#: Bytes per logit element in a forward-only log-prob pass: bf16 logits + fp32 log-softmax.
FORWARD_LOGIT_BYTES = 6


class Recompute(NamedTuple):
    """Megatron's activation recomputation settings (`override_transformer_config.recompute_*`)."""

    granularity: str | None = None  # None | "full" | "selective"
    method: str | None = None  # "uniform" | "block" (full only)
    num_layers: int | None = None
    modules: tuple[str, ...] = ("core_attn",)  # selective only

    def describe(self) -> str:
        if self.granularity == "full":
            return f"full recompute ({self.method or 'uniform'}, {self.num_layers or 1} layer(s))"
        if self.granularity == "selective":
            return f"selective recompute ({', '.join(self.modules)})"
        return "no recompute"


@functools.lru_cache(maxsize=4096)  # pure; called once per layer of every stage of every variant
def layer_activation_bytes(m: ModelShape, layer: int, tokens: float, tp: int, sp: bool, etp: int,
                           modules: frozenset[str] = frozenset()) -> float:
    """Bytes one transformer layer keeps for its backward pass on one rank, for `tokens` tokens of a micro-batch on
    this rank (after the CP split). bf16 activations (2 B), flash attention (no s x s score matrix; the fp32
    log-sum-exp per head and token is kept), no dropout (RL fine-tuning sets it to 0), SwiGLU MLPs.

    Kept tensors (TP-split ones divided by TP; sequence-parallel ones by TP when SP is on):

    * attention: input-norm input and output (2h, SP), Q/K/V (q + 2kv, TP), attention output = projection input
      (q, TP), fp32 log-sum-exp (4 B x heads, TP); QK-norm keeps pre-norm Q and K too. MLA keeps its latents
      (q_lora + kv_lora + rope), Q and K (heads x (nope + rope)), V and the output (heads x v).
    * dense MLP: norm input and output (2h, SP), FC1 output (2F, TP), activation output (F, TP).
    * MoE MLP (alltoall dispatcher, balanced routing): norm input and output (2h, SP), fp32 router
      probabilities (E per token), and per routed token copy: the permuted input and the un-permuted output
      (2h each, all-gathered over the ETP group so each rank sees ETP x its share), FC1 output (2 moe_ffn / ETP)
      and activation output (moe_ffn / ETP); shared experts like a dense MLP of width
      moe_shared_expert_intermediate_size.

    Selective recompute modules remove what they recompute: `core_attn` the log-sum-exp, `layernorm` the norm
    outputs, `mlp` a dense MLP's FC1/activation outputs, `moe_act` the experts' activation outputs, `moe` all of
    the routed-expert part. Ignores imbalanced routing (a hot expert sees more than its share).
    """
    h, T = m.hidden_size, float(tokens)
    s = tp if sp else 1
    bf16 = 2.0
    heads = m.num_attention_heads
    if m.is_mla:
        latent = (m.q_lora_rank or 0) + m.kv_lora_rank + m.qk_pos_emb_head_dim
        qk = heads * (m.qk_head_dim + m.qk_pos_emb_head_dim) / tp
        v = heads * m.v_head_dim / tp
        attn = bf16 * T * (2 * h / s + latent + 2 * qk + 2 * v)
    else:
        q = heads * m.kv_channels / tp
        kv = max(m.num_query_groups / tp, 1) * m.kv_channels
        attn = bf16 * T * (2 * h / s + q + 2 * kv + q)
        if m.qk_layernorm:
            attn += bf16 * T * (q + kv)
    lse = 4.0 * T * heads / tp
    attn += 0 if "core_attn" in modules else lse
    if "layernorm" in modules:
        attn -= bf16 * T * h / s
    norm = bf16 * T * 2 * h / s - (bf16 * T * h / s if "layernorm" in modules else 0)
    if not m.is_moe_layer(layer):
        mlp = 0.0 if "mlp" in modules else bf16 * T * 3 * m.ffn_hidden_size / tp
        return attn + norm + mlp
    local = T / s  # tokens this rank routes (SP splits them over TP)
    router = 4.0 * local * m.num_experts
    topk, moe_ffn = m.moe_router_topk, m.moe_ffn_hidden_size
    experts = bf16 * local * topk * (2 * etp * h + 3 * moe_ffn)
    if "moe_act" in modules:
        experts -= bf16 * local * topk * moe_ffn
    if "moe" in modules:
        experts = router = 0.0
    shared = bf16 * T * 3 * m.moe_shared_expert_intermediate_size / tp
    return attn + norm + router + experts + shared


def layer_input_bytes(m: ModelShape, tokens: float, tp: int, sp: bool) -> float:
    """A fully recomputed layer keeps only its input (bf16, SP-split)."""
    return 2.0 * tokens * m.hidden_size / (tp if sp else 1)


class Activations(NamedTuple):
    layers: float  # stored for backward, in-flight micro-batches included, plus the recompute working set
    logits: float
    stage: int


def train_activations(m: ModelShape, layout: Layout, sp: bool, tokens: float, recompute: Recompute,
                      value_head: bool = False) -> Activations:
    """Activation memory of the training step on the most-loaded pipeline stage.

    Per stage: the layers' kept bytes (`layer_activation_bytes`) for one micro-batch, times the micro-batches in
    flight under 1F1B (PP - stage; with VPP Megatron's interleaving factor PP x (1 + (PP-1)/(PP x VPP)), assuming at
    least PP micro-batches), plus:

    * full recompute, `uniform` with N layers: one layer input per group of N, plus one group's full activations
      while it is recomputed; `block` with N: the first N layers keep only inputs (one recomputed at a time),
      the rest keep everything;
    * the last stage's logits, `TRAIN_LOGIT_BYTES` per element of tokens x vocab / TP (a critic's value head: none).
    """
    tp, pp = layout.tp, layout.pp
    modules = frozenset(recompute.modules) if recompute.granularity == "selective" else frozenset()
    best: Activations | None = None
    for stage, layers in enumerate(stage_layers(m.num_layers, pp, layout.vpp)):
        full = [layer_activation_bytes(m, i, tokens, tp, sp, layout.expert_tp, modules) for i in layers]
        inp = layer_input_bytes(m, tokens, tp, sp)
        working = 0.0
        if recompute.granularity == "full" and full:
            n = max(1, recompute.num_layers or 1)
            if recompute.method == "block":
                k = min(n, len(full))
                stored = k * inp + sum(full[k:])
                working = max(full[:k]) if k else 0.0
            else:
                groups = [full[j:j + n] for j in range(0, len(full), n)]
                stored = len(groups) * inp
                working = max(sum(g) for g in groups)
        else:
            stored = sum(full)
        if pp == 1:
            inflight = 1.0
        elif layout.vpp:
            inflight = pp * (1 + (pp - 1) / (pp * layout.vpp))
        else:
            inflight = float(pp - stage)
        logits = 0.0
        if stage == pp - 1 and not value_head:
            logits = TRAIN_LOGIT_BYTES * tokens * m.vocab_size / tp
        candidate = Activations(stored * inflight + working, logits, stage)
        if best is None or candidate.layers + candidate.logits > best.layers + best.logits:
            best = candidate
    return best  # type: ignore[return-value]


def forward_activations(m: ModelShape, layout: Layout, sp: bool, tokens: float,
                        value_head: bool = False) -> Activations:
    """A forward-only pass (old/ref log-probs): no activations kept, one layer's intermediates at a time and the
    logits (`FORWARD_LOGIT_BYTES` per element) on the last stage."""
    tp = layout.tp
    per_layer = max(layer_activation_bytes(m, i, tokens, tp, sp, layout.expert_tp) for i in range(m.num_layers))
    logits = 0.0 if value_head else FORWARD_LOGIT_BYTES * tokens * m.vocab_size / tp
    return Activations(per_layer, logits, layout.pp - 1)
