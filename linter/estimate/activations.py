"""Activation memory of a training step and of a forward-only pass on the most-loaded pipeline stage.

The per-layer terms follow Megatron's `compute_activation_memory` (`megatron/training/theoretical_memory_usage.py`)
for flash attention (no s x s score matrix), bf16 activations and no dropout, with the tensors Megatron keeps for
QK-norm, multi-latent attention and the alltoall MoE dispatcher added; recompute follows megatron-core's
`recompute_granularity` / `recompute_method` / `recompute_num_layers` / `recompute_modules`. Three terms Megatron's
formula leaves out are added: the logits' fp32 working set (`logit_bytes_per_element`), the backward working set of
one layer (`layer_backward_bytes`) and the MoE token dispatcher's buffers (`moe_dispatch_bytes`).

Which of these are solid and which modelled: the stored activations follow the tensors megatron-core saves
(modelled: kernels, allocator rounding and fragmentation are not counted); the logit bytes are derived from the code
paths named below; the backward working set and the dispatcher buffers are modelled upper-end estimates.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from ..core.model import ModelShape
from .params import Layout, stage_layers

#: Ratio of the tokens the most-loaded expert-parallel rank receives in one MoE layer to the balanced share. verl
#: trains dropless (no `moe_expert_capacity_factor`), so nothing caps it; 1.5 is an assumption for aux-loss-balanced
#: models (Qwen3-MoE, DeepSeek-V3) and applies to one layer's transient dispatcher buffers. The stored expert
#: activations use the balanced share: the hot rank changes from layer to layer, so over the layers of a stage the
#: loads average out.
MOE_ROUTING_IMBALANCE = 1.5


def logit_bytes_per_element(training: bool, entropy: bool) -> float:
    """Peak bytes per element of the [tokens, vocab / TP] logits on the last pipeline stage, from the code verl
    0.9.1's Megatron engine runs (`workers/engine/megatron/transformer_impl.py` `_lm_head_logits_processor`):

    * megatron-core's `Float16Module` (which verl wraps around the model, `utils/megatron_utils.py`) returns the last
      stage's output in fp32 (`float16_to_fp32`): the bf16 logits of the output layer (2 B) and their fp32 copy (4 B)
      coexist while it casts; the bf16 tensor is then freed (nothing saves it).
    * the log-prob is `-vocab_parallel_cross_entropy` (megatron-core `tensor_parallel/cross_entropy.py`): its
      `.float()` is a no-op on fp32 logits, and max-subtraction, exp and the division by the sum run in place, so the
      softmax it saves for backward is that same fp32 tensor; its backward turns the softmax into the gradient in
      place, and `Float16Module`'s cast sends a bf16 copy (2 B) to the output layer. Peak: 4 + 2 = **6 B**, in the
      forward and in the backward alike (10 B was counted before: a separate bf16 copy of the kept logits that
      nothing holds).
    * with entropy (`actor.entropy_coeff != 0` or `actor.calculate_entropy` in the update; always in the old-log-prob
      pass, `trainer/ppo/ray_trainer.py` `_compute_old_log_prob`): verl clones the fp32 logits for the log-prob
      (4 B) and `vocab_parallel_entropy` (`utils/megatron/tensor_parallel.py`) computes a new fp32 softmax (4 B) and
      saves it with the logits. Training keeps logits + softmax + clone (12 B) for backward; in backward autograd sums
      the two gradients of the logits into a new fp32 tensor (4 B) before the bf16 cast (2 B) while the entropy's
      saved tensors are still held: **about 16 B** (14-18 B, depending on whether autograd can accumulate in place).
      Forward only (no graph), the entropy's softmax is freed when it returns: logits + clone + softmax = **12 B**.
    """
    if training:
        return 16.0 if entropy else 6.0
    return 12.0 if entropy else 6.0


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
def layer_activation_bytes(
    m: ModelShape, layer: int, tokens: float, tp: int, sp: bool, etp: int, modules: frozenset[str] = frozenset()
) -> float:
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
    the routed-expert part. Balanced routing: `MOE_ROUTING_IMBALANCE` says why.
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


def _mlp_kept_bytes(m: ModelShape, layer: int, tokens: float, tp: int, sp: bool, etp: int) -> float:
    """What the MLP block of `layer` keeps for backward (the MLP part of `layer_activation_bytes`, no recompute)."""
    if not m.is_moe_layer(layer):
        return 2.0 * tokens * 3 * m.ffn_hidden_size / tp
    local = tokens / (tp if sp else 1)
    experts = 2.0 * local * m.moe_router_topk * (2 * etp * m.hidden_size + 3 * m.moe_ffn_hidden_size)
    return 4.0 * local * m.num_experts + experts + 2.0 * tokens * 3 * m.moe_shared_expert_intermediate_size / tp


def layer_backward_bytes(m: ModelShape, layer: int, tokens: float, tp: int, sp: bool, etp: int) -> float:
    """Gradients alive while one layer runs its backward, on top of what the layers keep (modelled): the gradient
    arriving at the layer's output and the one it produces for its input (bf16, h per token each, SP-split), and the
    gradients of the MLP block's intermediates -- every tensor the MLP keeps gets a gradient of its shape during
    backward (SwiGLU: of the FC1 and activation outputs; experts: of the permuted input and the expert outputs as
    well), and autograd frees them as it goes, so at most about that much exists at once.

    Formula: 2 B x T x 2h / (TP if SP) + `_mlp_kept_bytes`. Under full recompute this comes on top of the recomputed
    group's activations (megatron-core `tensor_parallel/random.py` CheckpointFunction.backward reruns the forward of
    the group, then its backward); without recompute on top of the last layer's kept activations."""
    return 2.0 * tokens * 2 * m.hidden_size / (tp if sp else 1) + _mlp_kept_bytes(m, layer, tokens, tp, sp, etp)


def moe_dispatch_bytes(
    m: ModelShape, tokens: float, tp: int, sp: bool, etp: int, imbalance: float = MOE_ROUTING_IMBALANCE
) -> float:
    """Transient buffers of megatron-core's alltoall token dispatcher (`transformer/moe/token_dispatcher.py`
    MoEAlltoAllTokenDispatcher) in one MoE layer, not saved for backward and so not in `layer_activation_bytes`
    (modelled). Per routed token copy, bf16, h wide, with local = T / TP (SP) tokens routed by this rank and k = top-k:

    * the permuted tokens before the dispatch all-to-all and the combined tokens after the return all-to-all:
      2 x local x k x h;
    * what this rank receives from the dispatch all-to-all, and the expert outputs after the expert-TP
      reduce-scatter, before the combine all-to-all: 2 x f x local x k x h;
    * the expert outputs before that reduce-scatter, ETP x wider: f x ETP x local x k x h;

    with f = `MOE_ROUTING_IMBALANCE` on what the most-loaded rank receives. Formula:
    2 B x local x k x h x (2 + f x (2 + ETP)). Zero for a dense layer."""
    if not m.is_moe:
        return 0.0
    local = tokens / (tp if sp else 1)
    return 2.0 * local * m.moe_router_topk * m.hidden_size * (2 + imbalance * (2 + etp))


class Activations(NamedTuple):
    layers: float  # stored for backward on the stage, in-flight micro-batches included
    working: float  # one layer's (or recompute group's) backward working set: recomputed activations + gradients
    dispatch: float  # MoE token-dispatcher buffers of one layer (0 for a dense model)
    logits: float
    stage: int

    @property
    def total(self) -> float:
        return self.layers + self.working + self.dispatch + self.logits


def train_activations(
    m: ModelShape,
    layout: Layout,
    sp: bool,
    tokens: float,
    recompute: Recompute,
    value_head: bool = False,
    entropy: bool = False,
) -> Activations:
    """Activation memory of the training step on the most-loaded pipeline stage.

    Per stage: the layers' kept bytes (`layer_activation_bytes`) for one micro-batch, times the micro-batches in
    flight under 1F1B (PP - stage; with VPP Megatron's interleaving factor PP x (1 + (PP-1)/(PP x VPP)), assuming at
    least PP micro-batches), plus:

    * full recompute, `uniform` with N layers: one layer input per group of N is kept; `block` with N: the first N
      layers keep only inputs, the rest keep everything;
    * the backward working set: under full recompute the recomputed group's (`uniform`) or layer's (`block`) full
      activations, plus the biggest `layer_backward_bytes` of the stage;
    * one MoE layer's dispatcher buffers (`moe_dispatch_bytes`);
    * the last stage's logits, `logit_bytes_per_element(training=True, entropy)` per element of tokens x vocab / TP
      (a critic's value head: none).
    """
    tp, pp = layout.tp, layout.pp
    modules = frozenset(recompute.modules) if recompute.granularity == "selective" else frozenset()
    best: Activations | None = None
    for stage, layers in enumerate(stage_layers(m.num_layers, pp, layout.vpp)):
        full = [layer_activation_bytes(m, i, tokens, tp, sp, layout.expert_tp, modules) for i in layers]
        inp = layer_input_bytes(m, tokens, tp, sp)
        recomputed = 0.0
        if recompute.granularity == "full" and full:
            n = max(1, recompute.num_layers or 1)
            if recompute.method == "block":
                k = min(n, len(full))
                stored = k * inp + sum(full[k:])
                recomputed = max(full[:k]) if k else 0.0
            else:
                groups = [full[j : j + n] for j in range(0, len(full), n)]
                stored = len(groups) * inp
                recomputed = max(sum(g) for g in groups)
        else:
            stored = sum(full)
        gradients = max((layer_backward_bytes(m, i, tokens, tp, sp, layout.expert_tp) for i in layers), default=0.0)
        dispatch = moe_dispatch_bytes(m, tokens, tp, sp, layout.expert_tp) if any(map(m.is_moe_layer, layers)) else 0.0
        if pp == 1:
            inflight = 1.0
        elif layout.vpp:
            inflight = pp * (1 + (pp - 1) / (pp * layout.vpp))
        else:
            inflight = float(pp - stage)
        logits = 0.0
        if stage == pp - 1 and not value_head:
            logits = logit_bytes_per_element(True, entropy) * tokens * m.vocab_size / tp
        candidate = Activations(stored * inflight, recomputed + gradients, dispatch, logits, stage)
        if best is None or candidate.total > best.total:
            best = candidate
    return best  # type: ignore[return-value]


def forward_activations(
    m: ModelShape, layout: Layout, sp: bool, tokens: float, value_head: bool = False, entropy: bool = False
) -> Activations:
    """A forward-only pass (old/ref log-probs): no activations kept, one layer's intermediates at a time, one MoE
    layer's dispatcher buffers, and the logits (`logit_bytes_per_element(training=False, entropy)` per element) on
    the last stage."""
    tp = layout.tp
    per_layer = max(layer_activation_bytes(m, i, tokens, tp, sp, layout.expert_tp) for i in range(m.num_layers))
    dispatch = moe_dispatch_bytes(m, tokens, tp, sp, layout.expert_tp)
    logits = 0.0 if value_head else logit_bytes_per_element(False, entropy) * tokens * m.vocab_size / tp
    return Activations(0.0, per_layer, dispatch, logits, layout.pp - 1)
