"""Resource estimator: parameter counts, per-device memory by phase, host RAM, checkpoint size and save time.

Everything here is a pure function of immutable records (no file, network or device access); `plan_inputs` reads a
resolved `LintContext` (an in-memory config) and the shipped model card's `config` dict, which
`linter.model` has already loaded and cached. Sizes are bytes; `GIB` converts.

Sources of the formulas (quoted in ../shared/reference/megatron.md):

* Parameter counts follow Megatron's `theoretical_memory_usage.py` (§4.1) extended with QK-norm, QKV bias,
  multi-latent attention and shared experts, and are exact for the shipped cards: the tests compare them with
  the parameters of the same architecture built by transformers on torch's `meta` device.
* Mixed-precision Adam (§4.2/§4.3): bf16 weights (2 B) and fp32 main gradients (4 B; verl passes
  `grad_reduce_in_fp32=True` to Megatron's DDP) are held on every rank; the fp32 master copy and the two Adam
  moments (4 + 4 + 4 B) are sharded over DP x CP for dense parameters and over expert-DP for routed experts
  when `use_distributed_optimizer` is on.
* Megatron's hybrid CPU optimizer (§3.3, `cpu_offloading/hybrid_optimizer.py`): `optimizer_cpu_offload` with
  `optimizer_offload_fraction` f moves f of the optimizer's parameters to pinned host memory, where each element
  costs an fp32 copy, two fp32 moments and an fp32 gradient copy (16 B); the part left on the device keeps an
  fp32 copy and fp32 moments (12 B). Without the precision-aware optimizer the fp32 main parameter shard stays on
  the device whatever f is.
* verl's own offload (`actor.megatron.param_offload` / `optimizer_offload`, verl 0.9.1
  `workers/engine/base.py` BaseEngineCtx): weights and gradients, resp. the optimizer state, live in host memory
  outside the engine's train/eval contexts and are loaded back for them -- so they free the rollout phase, never
  the optimizer step (SPEC incident 3).
* The rollout engine (vLLM / SGLang) takes `gpu_memory_utilization` x HBM while it generates; with
  `free_cache_engine=True` (the default) it sleeps during training and releases that memory. On Ascend verl uses
  sleep level 1, which parks the rollout weights in host RAM.
* Ascend HCCL reserves 2 x HCCL_BUFFSIZE (default 200 MB) of HBM per communicator (§6.5).
* A dist checkpoint holds each parameter once in bf16 plus the fp32 master and both moments (§4.4); the HF
  weights that verl writes through a bridge are gathered and written by rank 0. Save barriers wait on the world
  group, whose timeout is verl's `nccl_timeout` (600 s default; on Ascend also HCCL_EXEC_TIMEOUT, §7).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

GIB = float(2**30)
MB = float(10**6)

# ---- Documented assumptions: defaults when neither the recipe's `hardware` nor [tool.sapo-lint] states them -----
#: Write bandwidth of one writing process to the checkpoint directory, GiB/s: a 2 Gbit/s share of a node's link to
#: shared storage with eight ranks writing at once. Slow NFS is far below this; state yours.
DEFAULT_WRITE_GIB_PER_S = 0.25
#: Host RAM per node, GiB: common for 8-device training servers (1-2 TiB); state yours.
DEFAULT_HOST_RAM_GIB = 1024.0
#: Disk budget for the checkpoint directory, GiB; state yours.
DEFAULT_DISK_BUDGET_GIB = 1024.0
#: Device runtime per device that no formula counts: CUDA/CANN context, kernels, workspaces (megatron.md §4.2:
#: ~0.5-1 GB).
RUNTIME_GIB = 1.0
#: HCCL_BUFFSIZE default, MB (CANN docs, megatron.md §6.5).
DEFAULT_HCCL_BUFFSIZE_MB = 200.0
#: HCCL_EXEC_TIMEOUT default on Atlas A2/A3, seconds (megatron.md §6.5).
DEFAULT_HCCL_EXEC_TIMEOUT_S = 1836.0
#: verl's world-group timeout default, seconds (`actor_rollout_ref.nccl_timeout`).
DEFAULT_NCCL_TIMEOUT_S = 600.0
#: Fraction of HBM above which MEM001 warns.
WARN_FRACTION = 0.9
#: Bytes per logit element kept while training: bf16 logits (2) + the fp32 copy inside the vocab-parallel
#: log-softmax (4) + the fp32 gradient of the logits during backward (4).
TRAIN_LOGIT_BYTES = 10
#: Bytes per logit element in a forward-only log-prob pass: bf16 logits + fp32 log-softmax.
FORWARD_LOGIT_BYTES = 6

PHASES = ("rollout", "logprob", "train")  # plus "critic" when a critic trains
DEVICE_TERMS = (
    "weights", "grads", "optimizer", "activations", "logits", "ref_weights",
    "critic_weights", "critic_grads", "critic_optimizer", "rollout", "comm_buffers", "runtime",
)
HOST_TERMS = ("optimizer_cpu_offload", "verl_offload", "rollout_sleep")


# ============================================================================================ architecture


class Arch(NamedTuple):
    """A decoder-only transformer in the terms parameter counting needs (HF config.json values)."""

    name: str
    num_layers: int
    hidden: int
    heads: int
    query_groups: int
    head_dim: int
    ffn: int
    vocab: int
    tied: bool
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    num_experts: int = 0
    moe_ffn: int = 0
    topk: int = 0
    moe_layers: tuple[bool, ...] = ()  # per layer: MoE (True) or dense (False); empty = all dense
    shared_ffn: int = 0  # total intermediate size of the shared experts (DeepSeek: n_shared x moe_ffn)
    shared_gate: bool = False  # Qwen2-MoE's sigmoid gate on the shared expert (hidden -> 1)
    # multi-latent attention (DeepSeek-V2/V3)
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_dim: int = 0
    qk_rope_dim: int = 0
    v_head_dim: int = 0

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0 and any(self.moe_layers)

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    def is_moe_layer(self, i: int) -> bool:
        return bool(self.moe_layers) and self.moe_layers[i]


def arch_from_hf_config(config: Mapping[str, Any], name: str = "model") -> Arch:
    """Read an HF config.json dict: Qwen2/Qwen3 (dense and MoE), Llama-style models and DeepSeek-V3 (MLA)."""
    model_type = str(config.get("model_type", "")).lower()
    layers = int(config["num_hidden_layers"])
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    experts = int(config.get("num_experts") or config.get("n_routed_experts") or config.get("num_local_experts") or 0)
    moe_ffn = int(config.get("moe_intermediate_size") or config.get("intermediate_size") or 0) if experts else 0
    if experts:
        if "first_k_dense_replace" in config or "n_routed_experts" in config:  # DeepSeek
            first, freq = int(config.get("first_k_dense_replace") or 0), int(config.get("moe_layer_freq") or 1)
            moe = tuple(i >= first and i % freq == 0 for i in range(layers))
        else:  # Qwen2-MoE / Qwen3-MoE / Mixtral
            step = int(config.get("decoder_sparse_step") or 1)
            dense_only = set(config.get("mlp_only_layers") or ())
            moe = tuple(i not in dense_only and (i + 1) % step == 0 for i in range(layers))
    else:
        moe = ()
    shared, gate = 0, False
    if experts and config.get("n_shared_experts"):
        shared = int(config["n_shared_experts"]) * moe_ffn
    elif experts and config.get("shared_expert_intermediate_size"):
        shared, gate = int(config["shared_expert_intermediate_size"]), True
    attention_bias = config.get("attention_bias")
    qwen2 = model_type in ("qwen2", "qwen2_moe")
    qkv_bias = bool(attention_bias) if attention_bias is not None else qwen2
    return Arch(
        name=name,
        num_layers=layers,
        hidden=hidden,
        heads=heads,
        query_groups=int(config.get("num_key_value_heads") or heads),
        head_dim=int(config.get("head_dim") or hidden // heads),
        ffn=int(config.get("intermediate_size") or 0),
        vocab=int(config["vocab_size"]),
        tied=bool(config.get("tie_word_embeddings", False)),
        qkv_bias=qkv_bias,
        o_bias=qkv_bias and not qwen2,  # Llama's attention_bias covers o_proj too; Qwen2's only q/k/v
        qk_norm=model_type in ("qwen3", "qwen3_moe"),
        num_experts=experts,
        moe_ffn=moe_ffn,
        topk=int(config.get("num_experts_per_tok") or 0) if experts else 0,
        moe_layers=moe,
        shared_ffn=shared,
        shared_gate=gate,
        q_lora_rank=int(config.get("q_lora_rank") or 0),
        kv_lora_rank=int(config.get("kv_lora_rank") or 0),
        qk_nope_dim=int(config.get("qk_nope_head_dim") or 0),
        qk_rope_dim=int(config.get("qk_rope_head_dim") or 0),
        v_head_dim=int(config.get("v_head_dim") or 0),
    )


def arch_from_shape(shape, hf_config: Mapping[str, Any] | None = None) -> Arch:
    """The architecture of a `linter.model.ModelShape`; its card's full config when given (QK-norm, biases, MLA
    and shared experts are not in ModelShape)."""
    if hf_config:
        return arch_from_hf_config(hf_config, shape.name)
    config = {
        "num_hidden_layers": shape.num_layers, "hidden_size": shape.hidden_size,
        "num_attention_heads": shape.num_attention_heads, "num_key_value_heads": shape.num_query_groups,
        "head_dim": shape.kv_channels, "intermediate_size": shape.ffn_hidden_size, "vocab_size": shape.vocab_size,
        "tie_word_embeddings": shape.tied_embeddings,
    }
    if shape.num_experts:
        config.update(num_experts=shape.num_experts, moe_intermediate_size=shape.moe_ffn_hidden_size,
                      num_experts_per_tok=shape.moe_router_topk)
        if shape.first_k_dense:
            config.update(first_k_dense_replace=shape.first_k_dense)
    return arch_from_hf_config(config, shape.name)


# ============================================================================================ parameters


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


def _attention_params(a: Arch, tp: int = 1, mla_down_replicated: bool = False) -> _LayerParams:
    h = a.hidden
    if a.is_mla:
        q_out = a.heads * (a.qk_nope_dim + a.qk_rope_dim)
        down = (h * a.q_lora_rank if a.q_lora_rank else 0) + h * (a.kv_lora_rank + a.qk_rope_dim)
        sharded = (a.q_lora_rank * q_out if a.q_lora_rank else h * q_out)
        sharded += a.kv_lora_rank * a.heads * (a.qk_nope_dim + a.v_head_dim) + a.heads * a.v_head_dim * h
        replicated = h + (a.q_lora_rank or 0) + a.kv_lora_rank  # input norm, q/kv latent norms
        if mla_down_replicated:
            replicated += down
        else:
            sharded += down
        return _LayerParams(sharded, replicated, 0)
    q, kv = a.heads * a.head_dim, a.query_groups * a.head_dim
    # With TP > query groups Megatron (>= 0.16) replicates KV heads: each rank holds one group.
    kv_sharded = kv if a.query_groups >= tp else a.head_dim * tp
    sharded = 2 * h * q + 2 * h * kv_sharded + ((q + 2 * kv_sharded) if a.qkv_bias else 0)
    replicated = h + (h if a.o_bias else 0) + (2 * a.head_dim if a.qk_norm else 0)
    return _LayerParams(sharded, replicated, 0)


def _mlp_params(a: Arch, moe: bool) -> _LayerParams:
    h = a.hidden
    if not moe:
        return _LayerParams(3 * h * a.ffn, h, 0)  # SwiGLU gate/up/down; pre-MLP norm
    replicated = h + a.num_experts * h + (h if a.shared_gate else 0)  # norm, router, shared-expert gate
    return _LayerParams(3 * h * a.shared_ffn, replicated, 3 * h * a.moe_ffn * a.num_experts)


@functools.lru_cache(maxsize=256)  # pure; every variant of a recipe asks for the same architecture
def count_params(a: Arch, value_head: bool = False) -> ParamCounts:
    """Exact parameter counts (HF layout; Megatron's fused modules hold the same numbers). `value_head`: a critic,
    whose output layer maps hidden -> 1 instead of -> vocab."""
    embedding = a.vocab * a.hidden + (a.hidden if value_head else 0 if a.tied else a.vocab * a.hidden)
    dense, expert, active = a.hidden, 0, 0  # final norm
    for i in range(a.num_layers):
        attn, mlp = _attention_params(a), _mlp_params(a, a.is_moe_layer(i))
        dense += attn.sharded + attn.replicated + mlp.sharded + mlp.replicated
        expert += mlp.expert
        if mlp.expert:
            active += mlp.expert // a.num_experts * a.topk
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


def stage_params(a: Arch, layout: Layout, stage: int, value_head: bool = False,
                 mla_down_replicated: bool = False) -> RankParams:
    """What one rank of pipeline stage `stage` holds: TP-split attention/MLP/embedding, TP-replicated norms and
    routers, experts split over EP x ETP. The first stage holds the input embedding, the last the output layer
    (with tied embeddings and PP > 1 Megatron keeps a copy of the word embeddings there) and the final norm."""
    tp, pp = layout.tp, layout.pp
    sharded = replicated = expert = 0
    for i in stage_layers(a.num_layers, pp, layout.vpp)[stage]:
        for part in (_attention_params(a, tp, mla_down_replicated), _mlp_params(a, a.is_moe_layer(i))):
            sharded += part.sharded
            replicated += part.replicated
            expert += part.expert
    if stage == 0:
        sharded += a.vocab * a.hidden
    if stage == pp - 1:
        replicated += a.hidden  # final norm
        if value_head:
            replicated += a.hidden
        elif not a.tied or pp > 1:
            sharded += a.vocab * a.hidden
    dense = math.ceil(sharded / tp) + replicated
    return RankParams(dense, math.ceil(expert / (layout.ep * layout.expert_tp)), stage)


@functools.lru_cache(maxsize=256)  # pure, as above
def params_per_rank(a: Arch, layout: Layout, value_head: bool = False, mla_down_replicated: bool = False) -> RankParams:
    """The most-loaded rank's parameters (the pipeline stage holding the most)."""
    stages = [stage_params(a, layout, s, value_head, mla_down_replicated) for s in range(layout.pp)]
    return max(stages, key=lambda r: (r.total, -r.stage))


# ============================================================================================ activations


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
def layer_activation_bytes(a: Arch, layer: int, tokens: float, tp: int, sp: bool, etp: int,
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
      and activation output (moe_ffn / ETP); shared experts like a dense MLP of width shared_ffn.

    Selective recompute modules remove what they recompute: `core_attn` the log-sum-exp, `layernorm` the norm
    outputs, `mlp` a dense MLP's FC1/activation outputs, `moe_act` the experts' activation outputs, `moe` all of
    the routed-expert part. Ignores imbalanced routing (a hot expert sees more than its share).
    """
    h, T = a.hidden, float(tokens)
    s = tp if sp else 1
    bf16 = 2.0
    if a.is_mla:
        latent = (a.q_lora_rank or 0) + a.kv_lora_rank + a.qk_rope_dim
        qk = a.heads * (a.qk_nope_dim + a.qk_rope_dim) / tp
        v = a.heads * a.v_head_dim / tp
        attn = bf16 * T * (2 * h / s + latent + 2 * qk + 2 * v)
    else:
        q = a.heads * a.head_dim / tp
        kv = max(a.query_groups / tp, 1) * a.head_dim
        attn = bf16 * T * (2 * h / s + q + 2 * kv + q)
        if a.qk_norm:
            attn += bf16 * T * (q + kv)
    lse = 4.0 * T * a.heads / tp
    attn += 0 if "core_attn" in modules else lse
    if "layernorm" in modules:
        attn -= bf16 * T * h / s
    norm = bf16 * T * 2 * h / s - (bf16 * T * h / s if "layernorm" in modules else 0)
    if not a.is_moe_layer(layer):
        mlp = 0.0 if "mlp" in modules else bf16 * T * 3 * a.ffn / tp
        return attn + norm + mlp
    local = T / s  # tokens this rank routes (SP splits them over TP)
    router = 4.0 * local * a.num_experts
    experts = bf16 * local * a.topk * (2 * etp * h + 3 * a.moe_ffn)
    if "moe_act" in modules:
        experts -= bf16 * local * a.topk * a.moe_ffn
    if "moe" in modules:
        experts = router = 0.0
    shared = bf16 * T * 3 * a.shared_ffn / tp
    return attn + norm + router + experts + shared


def layer_input_bytes(a: Arch, tokens: float, tp: int, sp: bool) -> float:
    """A fully recomputed layer keeps only its input (bf16, SP-split)."""
    return 2.0 * tokens * a.hidden / (tp if sp else 1)


class Activations(NamedTuple):
    layers: float  # stored for backward, in-flight micro-batches included, plus the recompute working set
    logits: float
    stage: int


def train_activations(a: Arch, layout: Layout, sp: bool, tokens: float, recompute: Recompute,
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
    for stage, layers in enumerate(stage_layers(a.num_layers, pp, layout.vpp)):
        full = [layer_activation_bytes(a, i, tokens, tp, sp, layout.expert_tp, modules) for i in layers]
        inp = layer_input_bytes(a, tokens, tp, sp)
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
            logits = TRAIN_LOGIT_BYTES * tokens * a.vocab / tp
        candidate = Activations(stored * inflight + working, logits, stage)
        if best is None or candidate.layers + candidate.logits > best.layers + best.logits:
            best = candidate
    return best  # type: ignore[return-value]


def forward_activations(a: Arch, layout: Layout, sp: bool, tokens: float, value_head: bool = False) -> Activations:
    """A forward-only pass (old/ref log-probs): no activations kept, one layer's intermediates at a time and the
    logits (`FORWARD_LOGIT_BYTES` per element) on the last stage."""
    tp = layout.tp
    per_layer = max(layer_activation_bytes(a, i, tokens, tp, sp, layout.expert_tp) for i in range(a.num_layers))
    logits = 0.0 if value_head else FORWARD_LOGIT_BYTES * tokens * a.vocab / tp
    return Activations(per_layer, logits, layout.pp - 1)


# ============================================================================================ optimizer


def dtype_bytes(name: Any, default: int = 4) -> int:
    """Bytes per element of a dtype as verl/Megatron configs spell it (`fp32`, `bf16`, `torch.bfloat16`, ...)."""
    if name is None:
        return default
    text = str(name).lower().removeprefix("torch.")
    if text in ("fp32", "float32", "float", "32"):
        return 4
    if text in ("bf16", "bfloat16", "fp16", "float16", "half", "16"):
        return 2
    if text in ("fp8", "uint8", "int8", "float8_e4m3fn", "float8_e5m2"):
        return 1
    return default


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

    def host_bytes_per_element(self) -> float:
        return self.fraction * (16.0 if self.kind != "sgd" else 12.0) if self.cpu_offload else 0.0

    def checkpoint_bytes_per_element(self) -> float:
        """fp32 master (rebuilt from remainders when they are stored) and the moments in their dtypes."""
        if self.cpu_offload:
            return 4.0 + (8.0 if self.kind != "sgd" else 4.0)
        return 4.0 + self.moment_bytes


# ============================================================================================ plan inputs


class RoleSetup(NamedTuple):
    """One Megatron role (actor, ref or critic) on the shared devices."""

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


class RolloutSetup(NamedTuple):
    gpu_memory_utilization: float = 0.5
    free_cache_engine: bool = True
    tp: int = 1
    sleep_keeps_weights_on_host: bool = False  # vLLM sleep level 1 (verl's choice on Ascend)


class CheckpointSetup(NamedTuple):
    saves: bool = False  # trainer.save_freq > 0
    contents: tuple[str, ...] = ("model", "optimizer", "extra")
    use_dist_checkpointing: bool = False
    hf_distributed: bool = False  # vanilla mbridge writing HF shards from every rank (distributed_filesystem)
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
        for key in ("write_gib_per_s", "host_ram_gib", "disk_budget_gib"):
            value = (values or {}).get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                out[key], stated = float(value), stated | {key}
        return cls(**out, stated=frozenset(stated))


class PlanInputs(NamedTuple):
    arch: Arch
    world: int
    devices_per_node: int
    hbm_gib: float
    device: str  # "npu" | "gpu"
    actor: RoleSetup
    ref: RoleSetup | None = None
    critic: RoleSetup | None = None
    rollout: RolloutSetup = RolloutSetup()
    checkpoint: CheckpointSetup = CheckpointSetup()
    limits: Limits = Limits()
    hccl_buffsize_mb: float = DEFAULT_HCCL_BUFFSIZE_MB
    runtime_gib: float = RUNTIME_GIB
    mla_down_replicated: bool = False
    accelerator: str = ""


# ============================================================================================ estimate


class RoleState(NamedTuple):
    role: str
    params: RankParams
    weights: float
    grads: float
    optimizer_device: float
    optimizer_host: float  # Megatron CPU offload
    d_dense: int
    d_expert: int


class CheckpointEstimate(NamedTuple):
    weights_bytes: float  # whole model in bf16 (HF weights or the model part of a dist checkpoint)
    full_bytes: float  # weights + optimizer state (+ negligible extra state)
    saved_bytes: float  # what `save_contents` writes
    rank_dist_bytes: float  # the busiest rank's share of the dist checkpoint
    rank0_hf_bytes: float  # HF weights written through the bridge by rank 0 (or each rank's share)
    dist_seconds: float
    hf_seconds: float
    timeout_s: float
    timeout_source: str
    write_gib_per_s: float
    disk_peak_bytes: float  # computed whether or not `trainer.save_freq` makes verl save
    saves: bool
    async_save: bool

    @property
    def save_seconds(self) -> float:
        return self.dist_seconds + self.hf_seconds

    @property
    def longest_wait_seconds(self) -> float:
        """The longest stretch other ranks wait at one world barrier: the dist checkpoint (unless async) or rank 0
        alone writing the HF weights."""
        return max(0.0 if self.async_save else self.dist_seconds, self.hf_seconds)


class Estimate(NamedTuple):
    inputs: PlanInputs
    params: ParamCounts
    actor: RoleState
    ref: RoleState | None
    critic: RoleState | None
    phases: dict[str, dict[str, float]]  # phase -> term -> bytes per device
    host: dict[str, dict[str, float]]  # phase -> term -> bytes per rank in host RAM
    checkpoint: CheckpointEstimate
    communicators: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def world(self) -> int:
        return self.inputs.world

    @property
    def dp(self) -> int:
        return self.inputs.actor.layout.dp

    @property
    def edp(self) -> int:
        return self.inputs.actor.layout.edp

    @property
    def hbm_bytes(self) -> float:
        return self.inputs.hbm_gib * GIB

    def total(self, phase: str) -> float:
        return sum(self.phases[phase].values())

    @property
    def peak_phase(self) -> str:
        return max(self.phases, key=lambda p: (self.total(p), -list(self.phases).index(p)))

    @property
    def peak_bytes(self) -> float:
        return self.total(self.peak_phase)

    def biggest_term(self, phase: str) -> tuple[str, float]:
        return max(self.phases[phase].items(), key=lambda kv: kv[1])

    def host_total(self, phase: str) -> float:
        return sum(self.host[phase].values())

    @property
    def host_peak_phase(self) -> str:
        return max(self.host, key=lambda p: (self.host_total(p), -list(self.host).index(p)))

    @property
    def host_peak_per_node(self) -> float:
        return self.host_total(self.host_peak_phase) * self.inputs.devices_per_node


def role_state(a: Arch, setup: RoleSetup, mla_down_replicated: bool = False) -> RoleState:
    """Weights, main gradients and optimizer state of one role on its most-loaded rank. With the distributed
    optimizer the state of dense parameters is sharded over DP x CP and that of routed experts over expert-DP."""
    layout = setup.layout
    rank = params_per_rank(a, layout, setup.value_head, mla_down_replicated)
    weights = rank.total * setup.param_bytes
    if setup.optimizer is None:
        return RoleState(setup.role, rank, weights, 0.0, 0.0, 0.0, 1, 1)
    opt = setup.optimizer
    d_dense, d_expert = (layout.dp * layout.cp, layout.edp) if opt.distributed else (1, 1)
    elements = rank.dense / d_dense + rank.expert / d_expert
    return RoleState(
        setup.role, rank, weights, rank.total * setup.grad_bytes,
        elements * opt.device_bytes_per_element(), elements * opt.host_bytes_per_element(), d_dense, d_expert,
    )


def communicators(layout: Layout, moe: bool) -> tuple[str, ...]:
    """Device communicators a trainer rank uses collectives on (size > 1): verl's world group; Megatron's TP, PP, CP,
    DP x CP (gradient reduce-scatter / parameter all-gather), DP when CP splits it, the model-parallel group
    (gradient-norm all-reduce), the embedding group (PP > 1) and, for MoE, EP, expert-TP and expert-DP. The rollout
    engine's own groups are inside its `gpu_memory_utilization` budget."""
    out = ["world"] if layout.world > 1 else []
    checks = [
        ("tp", layout.tp > 1), ("pp", layout.pp > 1), ("cp", layout.cp > 1),
        ("dp_cp", layout.dp * layout.cp > 1), ("dp", layout.cp > 1 and layout.dp > 1),
        ("mp", layout.tp * layout.pp > 1), ("embedding", layout.pp > 1),
        ("ep", moe and layout.ep > 1), ("etp", moe and layout.expert_tp > 1), ("edp", moe and layout.edp > 1),
    ]
    return tuple(out + [name for name, used in checks if used])


def checkpoint_estimate(a: Arch, inputs: PlanInputs, state: RoleState, counts: ParamCounts) -> CheckpointEstimate:
    """Checkpoint of the actor (and critic) as verl 0.9.1 writes it.

    * `model` / `hf_model` with `use_dist_checkpointing=False` (the default): HF safetensors through the bridge,
      bf16, gathered and written by rank 0 (mbridge 0.15.1 `save_weights`: every other rank returns; assumed the
      same for Megatron-Bridge), or split over all ranks when vanilla mbridge writes with
      `distributed_filesystem=True`. With `use_dist_checkpointing=True` the model goes into the dist checkpoint,
      its bf16 shards spread over the data-parallel replicas.
    * `optimizer`: each rank writes its own shard (fp32 master and moments; `Optimizer.checkpoint_bytes_per_element`).
    * `extra` (RNG, scheduler): negligible.

    Time = bytes / `write_gib_per_s` per writing rank; the dist part and rank 0's HF part are sequential.
    Peak disk = two checkpoints: verl deletes the previous one only after the new one completes, whatever
    `max_actor_ckpt_to_keep` says (SPEC incident 7)."""
    setup, ck = inputs.actor, inputs.checkpoint
    opt = setup.optimizer or Optimizer()
    weights = counts.total * setup.param_bytes
    full = weights + counts.total * opt.checkpoint_bytes_per_element()
    contents = set(ck.contents)
    saves_model = "model" in contents or "hf_model" in contents
    saved = (weights if saves_model else 0.0) + (full - weights if "optimizer" in contents else 0.0)
    if ck.use_dist_checkpointing and "hf_model" in contents and "model" in contents:
        saved += weights  # both the dist model shards and the HF weights
    layout = setup.layout
    rank = state.params
    dist = 0.0
    if "optimizer" in contents:
        dist += (rank.dense / state.d_dense + rank.expert / state.d_expert) * opt.checkpoint_bytes_per_element()
    if "model" in contents and ck.use_dist_checkpointing:
        dist += (rank.dense / (layout.dp * layout.cp) + rank.expert / layout.edp) * setup.param_bytes
    hf_writes = ("model" in contents and not ck.use_dist_checkpointing) or "hf_model" in contents
    hf = (weights / layout.world if ck.hf_distributed else weights) if hf_writes else 0.0
    bw = inputs.limits.write_gib_per_s * GIB
    disk_peak = 2 * saved
    if inputs.critic is not None and inputs.critic.optimizer is not None:
        critic_counts = count_params(a, value_head=True)
        critic_saved = (critic_counts.total * inputs.critic.param_bytes if saves_model else 0.0) + (
            critic_counts.total * inputs.critic.optimizer.checkpoint_bytes_per_element() if "optimizer" in contents else 0.0)
        disk_peak += 2 * critic_saved
    return CheckpointEstimate(weights, full, saved, dist, hf, dist / bw, hf / bw, ck.timeout_s, ck.timeout_source,
                              inputs.limits.write_gib_per_s, disk_peak, ck.saves, ck.async_save)


def estimate(inputs: PlanInputs) -> Estimate:
    """Per-device memory by phase, host RAM by phase, checkpoint size and save time.

    Phases (each a sum of terms, bytes per device):

    * `rollout`: the rollout engine's `gpu_memory_utilization` x HBM, plus what the trainer keeps resident --
      weights and grads unless `param_offload`, the device part of the optimizer state unless
      `optimizer_offload` (Adam's moments exist from the first step on), the ref's weights unless offloaded.
    * `logprob`: old-log-prob / ref-log-prob forward passes (verl's eval mode loads weights only): one layer's
      intermediates and the logits for the log-prob token budget.
    * `train`: the actor update, optimizer step included: weights, grads and optimizer state on the device
      (whatever verl's offload flags say), activations for the token budget and the recompute mode, logits.
    * `critic` (when a critic trains): as `train`, for the critic.

    Every phase adds the communicator buffers (Ascend), the runtime constant, and the rollout engine's
    reservation when `free_cache_engine` is off.
    """
    a, actor = inputs.arch, inputs.actor
    counts = count_params(a)
    act = role_state(a, actor, inputs.mla_down_replicated)
    ref = role_state(a, inputs.ref, inputs.mla_down_replicated) if inputs.ref else None
    critic = role_state(a, inputs.critic, inputs.mla_down_replicated) if inputs.critic else None
    hbm = inputs.hbm_gib * GIB
    comms = communicators(actor.layout, a.is_moe)
    comm_bytes = len(comms) * 2 * inputs.hccl_buffsize_mb * MB if inputs.device == "npu" else 0.0
    rollout_bytes = inputs.rollout.gpu_memory_utilization * hbm
    notes: list[str] = []

    def phase(name: str) -> dict[str, float]:
        terms = dict.fromkeys(DEVICE_TERMS, 0.0)
        training = name in ("train", "critic")
        # actor
        resident = training or (name == "logprob")
        terms["weights"] = act.weights if (resident or not actor.param_offload) else 0.0
        terms["grads"] = act.grads if (training or not actor.param_offload) else 0.0
        terms["optimizer"] = act.optimizer_device if (training or not actor.optimizer_offload) else 0.0
        if ref is not None:
            terms["ref_weights"] = ref.weights if (name == "logprob" or not inputs.ref.param_offload) else 0.0
        if critic is not None:
            c = inputs.critic
            terms["critic_weights"] = critic.weights if (training or name == "logprob" or not c.param_offload) else 0.0
            terms["critic_grads"] = critic.grads if (training or not c.param_offload) else 0.0
            terms["critic_optimizer"] = critic.optimizer_device if (training or not c.optimizer_offload) else 0.0
        if name == "train":
            t = train_activations(a, actor.layout, actor.sp, actor.train_tokens, actor.recompute)
            terms["activations"], terms["logits"] = t.layers, t.logits
        elif name == "critic":
            c = inputs.critic
            t = train_activations(a, c.layout, c.sp, c.train_tokens, c.recompute, value_head=True)
            terms["activations"], terms["logits"] = t.layers, t.logits
        elif name == "logprob":
            tokens = max([actor.logprob_tokens] + ([inputs.ref.logprob_tokens] if inputs.ref else []))
            f = forward_activations(a, actor.layout, actor.sp, tokens)
            terms["activations"], terms["logits"] = f.layers, f.logits
        terms["rollout"] = rollout_bytes if (name == "rollout" or not inputs.rollout.free_cache_engine) else 0.0
        terms["comm_buffers"] = comm_bytes
        terms["runtime"] = inputs.runtime_gib * GIB
        return terms

    names = list(PHASES) + (["critic"] if critic is not None else [])
    phases = {n: phase(n) for n in names}

    def host(name: str) -> dict[str, float]:
        terms = dict.fromkeys(HOST_TERMS, 0.0)
        terms["optimizer_cpu_offload"] = act.optimizer_host + (critic.optimizer_host if critic else 0.0)
        off = 0.0
        for setup, state in ((actor, act), (inputs.critic, critic)):
            if setup is None or state is None:
                continue
            training = name in ("train", "critic")
            if setup.param_offload:
                off += (0.0 if training or name == "logprob" else state.weights) + (0.0 if training else state.grads)
            if setup.optimizer_offload and not training:
                off += state.optimizer_device
        if ref is not None and inputs.ref.param_offload and name != "logprob":
            off += ref.weights
        terms["verl_offload"] = off
        asleep = name != "rollout" and inputs.rollout.free_cache_engine
        if asleep and inputs.rollout.sleep_keeps_weights_on_host:
            terms["rollout_sleep"] = counts.total * 2.0 / max(1, inputs.rollout.tp)
        return terms

    hosts = {n: host(n) for n in names}
    ck = checkpoint_estimate(a, inputs, act, counts)
    if actor.layout.world % (actor.layout.tp * actor.layout.pp * actor.layout.cp) or (
            a.is_moe and actor.layout.world % (actor.layout.ep * actor.layout.expert_tp * actor.layout.pp)):
        notes.append("the world size does not divide the parallel layout (see TP001/TP002); dp/edp rounded up to 1")
    return Estimate(inputs, counts, act, ref, critic, phases, hosts, ck, comms, tuple(notes))


# ============================================================================================ from a LintContext


def card_config(shape) -> dict | None:
    """The shipped card's HF config for a shape resolved from a card (cached by `linter.model`), else None."""
    source = getattr(shape, "source", "") or ""
    if not source.startswith("card "):
        return None
    from .catalog import _cards

    card = _cards().get(source[len("card "):])
    return dict(card["config"]) if card else None


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _num(value: Any, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _tokens(ctx, dynamic_path: str, budget_path: str, micro_path: str, seq: int, cp: int,
            budget_default: int) -> tuple[float, str]:
    """Tokens of one micro-batch on one rank: the dynamic-bsz budget (a sequence longer than it is still one
    micro-batch), or micro-batch size x (prompt + response); divided over CP (verl multiplies the budget by CP)."""
    if ctx.config.value(dynamic_path):
        budget = _int(ctx.config.value(budget_path), budget_default)
        return float(max(budget, math.ceil(seq / cp))), f"dynamic bsz, {budget_path.rsplit('.', 1)[-1]}={budget}"
    micro = _int(ctx.config.value(micro_path), 1)
    return micro * seq / cp, f"{micro_path.rsplit('.', 1)[-1]}={micro} x {seq} tokens"


def _recompute(ctx, prefix: str) -> Recompute:
    def get(name):
        return ctx.config.value(f"{prefix}.override_transformer_config.{name}")

    modules = get("recompute_modules")
    return Recompute(
        granularity=get("recompute_granularity") if get("recompute_granularity") in ("full", "selective") else None,
        method=get("recompute_method") if get("recompute_method") in ("uniform", "block") else None,
        num_layers=_int(get("recompute_num_layers"), 0) or None,
        modules=tuple(str(m) for m in modules) if isinstance(modules, list) else ("core_attn",),
    )


def _optimizer(ctx, prefix: str, param_bytes: float) -> tuple[Optimizer, float]:
    """(Optimizer, main-grad bytes) from `<prefix>.optim` and its `override_optimizer_config` the way verl 0.9.1's
    `init_megatron_optim_config` builds Megatron's OptimizerConfig (overrides win), and the DDP grad buffer dtype
    the way its engine sets `grad_reduce_in_fp32`."""
    optim, megatron = f"{prefix}.optim", f"{prefix}.megatron"

    def ov(name, default=None):
        path = f"{optim}.override_optimizer_config.{name}"
        return ctx.config.value(path) if ctx.config.exists(path) else default

    verl_pa = bool(ctx.config.value(f"{optim}.use_precision_aware_optimizer"))
    pa = bool(ov("use_precision_aware_optimizer", verl_pa))

    def dtype(name):
        default = ctx.config.value(f"{optim}.{name}") if verl_pa else "fp32"
        return dtype_bytes(ov(name, default))

    distributed = bool(ov("use_distributed_optimizer", ctx.config.value(f"{megatron}.use_distributed_optimizer")))
    main_params = dtype_bytes(ov("main_params_dtype", "fp32"))
    remainders = bool(ov("store_param_remainders", True))
    if pa and (main_params < 4 or (remainders and param_bytes == 2)):
        master = 2.0
    else:
        master = 4.0
    kind = "sgd" if str(ctx.config.value(f"{optim}.optimizer") or "adam").lower() == "sgd" else "adam"
    opt = Optimizer(
        distributed=distributed, precision_aware=pa, master_bytes=master,
        exp_avg_bytes=dtype("exp_avg_dtype") if pa else 4, exp_avg_sq_bytes=dtype("exp_avg_sq_dtype") if pa else 4,
        cpu_offload=bool(ov("optimizer_cpu_offload", False)),
        offload_fraction=_num(ov("optimizer_offload_fraction", 0.0), 0.0), kind=kind,
    )
    ddp = f"{megatron}.override_ddp_config.grad_reduce_in_fp32"
    if ctx.config.exists(ddp):
        grad = 4.0 if ctx.config.value(ddp) else param_bytes
    elif verl_pa and dtype_bytes(ctx.config.value(f"{optim}.main_grads_dtype")) < 4:
        grad = 2.0
    else:
        grad = 4.0
    return opt, grad


def _role(ctx, role: str, par, seq: int) -> RoleSetup:
    from .topology import ROLLOUT

    world = _world(ctx)
    layout = Layout(world, par.tp, par.pp, par.vpp, par.cp, par.ep, par.etp)
    prefix = {"actor": "actor_rollout_ref.actor", "ref": "actor_rollout_ref.ref", "critic": "critic"}[role]
    megatron = f"{prefix}.megatron"
    param_bytes = float(dtype_bytes(ctx.config.value(f"{megatron}.dtype"), 2))
    common = dict(role=role, layout=layout, sp=par.sp and par.tp > 1, param_bytes=param_bytes,
                  param_offload=bool(ctx.config.value(f"{megatron}.param_offload")))
    if role == "ref":
        tokens, _ = _tokens(ctx, f"{prefix}.log_prob_use_dynamic_bsz", f"{prefix}.log_prob_max_token_len_per_gpu",
                            f"{prefix}.log_prob_micro_batch_size_per_gpu", seq, par.cp, 16384)
        return RoleSetup(**common, logprob_tokens=tokens)
    opt, grad = _optimizer(ctx, prefix, param_bytes)
    budget_default = 32768 if role == "critic" else 16384
    train, source = _tokens(ctx, f"{prefix}.use_dynamic_bsz", f"{prefix}.ppo_max_token_len_per_gpu",
                            f"{prefix}.ppo_micro_batch_size_per_gpu", seq, par.cp, budget_default)
    if role == "actor":
        logprob, _ = _tokens(ctx, f"{ROLLOUT}.log_prob_use_dynamic_bsz", f"{ROLLOUT}.log_prob_max_token_len_per_gpu",
                             f"{ROLLOUT}.log_prob_micro_batch_size_per_gpu", seq, par.cp, 16384)
    else:
        logprob, _ = _tokens(ctx, f"{prefix}.use_dynamic_bsz", f"{prefix}.forward_max_token_len_per_gpu",
                             f"{prefix}.forward_micro_batch_size_per_gpu", seq, par.cp, budget_default)
    return RoleSetup(**common, grad_bytes=grad, optimizer=opt,
                     optimizer_offload=bool(ctx.config.value(f"{megatron}.optimizer_offload")),
                     recompute=_recompute(ctx, megatron), train_tokens=train, logprob_tokens=logprob,
                     value_head=role == "critic", token_source=source)


def _world(ctx) -> int:
    from .topology import world_size

    return world_size(ctx) or 0


def device_kind(ctx) -> str:
    """`npu` or `gpu`: `trainer.device` when the recipe sets it, else the accelerator's."""
    explicit = ctx.explicit("trainer.device")
    if explicit is not None:
        return "npu" if ctx.config.value("trainer.device") == "npu" else "gpu"
    return ctx.accelerator.device if ctx.accelerator else "gpu"


def env_of(ctx) -> dict[str, str]:
    """The command's environment (a recipe's `env` merged with its variant's): `Command.env`, a tuple of
    `EnvVar(name, value, location)` or a mapping."""
    env = getattr(ctx.command, "env", None) if ctx.command is not None else None
    if not env:
        return {}
    if isinstance(env, Mapping):
        return {str(k): str(v) for k, v in env.items()}
    return {str(getattr(e, "name", "")): str(getattr(e, "value", "")) for e in env if getattr(e, "name", None)}


def limits_of(ctx) -> Limits:
    """Site limits the command states (`Command.resources`, when the recipe source provides it), else defaults."""
    resources = getattr(ctx.command, "resources", None) if ctx.command is not None else None
    return Limits.from_mapping(dict(resources or ()))


def plan_inputs(ctx, env: Mapping[str, str] | None = None, limits: Limits | None = None,
                hf_config: Mapping[str, Any] | None = None) -> PlanInputs | None:
    """Everything the estimate needs, read from a resolved command; None when the model, the accelerator, the
    world size or the actor's Megatron sizes are unknown (other rules report those)."""
    from .schema import version_key
    from .topology import ROLLOUT, active_roles, parallelism

    if ctx.model is None or ctx.accelerator is None:
        return None
    world = _world(ctx)
    actor_par = parallelism(ctx, "actor")
    if not world or actor_par is None:
        return None
    env = dict(env) if env is not None else env_of(ctx)
    arch = arch_from_shape(ctx.model, hf_config if hf_config is not None else card_config(ctx.model))
    seq = _int(ctx.config.value("data.max_prompt_length"), 512) + _int(ctx.config.value("data.max_response_length"), 512)
    roles = active_roles(ctx)
    actor = _role(ctx, "actor", actor_par, seq)
    ref = critic = None
    if "ref" in roles and (p := parallelism(ctx, "ref")) is not None:
        ref = _role(ctx, "ref", p, seq)
    if "critic" in roles and (p := parallelism(ctx, "critic")) is not None:
        critic = _role(ctx, "critic", p, seq)
    device = device_kind(ctx)
    rollout = RolloutSetup(
        gpu_memory_utilization=_num(ctx.config.value(f"{ROLLOUT}.gpu_memory_utilization"), 0.5),
        free_cache_engine=ctx.config.value(f"{ROLLOUT}.free_cache_engine") is not False,
        tp=_int(ctx.config.value(f"{ROLLOUT}.tensor_model_parallel_size"), 1),
        sleep_keeps_weights_on_host=device == "npu",
    )
    contents = ctx.config.value("actor_rollout_ref.actor.checkpoint.save_contents")
    mbridge_cfg = "actor_rollout_ref.actor.checkpoint.mbridge_config"
    hf_distributed = (
        bool(ctx.config.value("actor_rollout_ref.actor.megatron.vanilla_mbridge"))
        and bool(ctx.config.value(f"{mbridge_cfg}.distributed_filesystem"))
        and bool(ctx.config.value(f"{mbridge_cfg}.memory_efficient"))
        and not ctx.stack.mbridge[:1].isdigit()  # released mbridge (<= 0.15.1) has no distributed_filesystem
    )
    timeout = _num(ctx.config.value("actor_rollout_ref.nccl_timeout"), DEFAULT_NCCL_TIMEOUT_S)
    source = "actor_rollout_ref.nccl_timeout"
    if device == "npu":
        exec_timeout = _num(_float_or_none(env.get("HCCL_EXEC_TIMEOUT")), DEFAULT_HCCL_EXEC_TIMEOUT_S)
        if 0 < exec_timeout < timeout:
            timeout, source = exec_timeout, "HCCL_EXEC_TIMEOUT"
    checkpoint = CheckpointSetup(
        saves=_num(ctx.config.value("trainer.save_freq"), -1) > 0,
        contents=tuple(str(c) for c in contents) if isinstance(contents, list) else ("model", "optimizer", "extra"),
        use_dist_checkpointing=bool(ctx.config.value("actor_rollout_ref.actor.megatron.use_dist_checkpointing")),
        hf_distributed=hf_distributed,
        async_save=bool(ctx.config.value("actor_rollout_ref.actor.checkpoint.async_save")),
        timeout_s=timeout, timeout_source=source,
    )
    per_node = _int(ctx.config.value("trainer.n_gpus_per_node"), ctx.accelerator.devices_per_node)
    return PlanInputs(
        arch=arch, world=world, devices_per_node=per_node, hbm_gib=float(ctx.accelerator.hbm_gib), device=device,
        actor=actor, ref=ref, critic=critic, rollout=rollout, checkpoint=checkpoint,
        limits=limits or limits_of(ctx),
        hccl_buffsize_mb=_num(_float_or_none(env.get("HCCL_BUFFSIZE")), DEFAULT_HCCL_BUFFSIZE_MB),
        mla_down_replicated=version_key(ctx.stack.megatron_core) >= (0, 15),
        accelerator=ctx.accelerator.name,
    )


def _float_or_none(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


_CACHE = "_sapo_lint_estimate"


def estimate_context(ctx) -> Estimate | None:
    """`estimate(plan_inputs(ctx))`, cached on the context so that the MEM/CK rules share one computation
    (`explain` primes it with its own environment and limits through `prime_estimate`)."""
    if _CACHE not in ctx.__dict__:
        inputs = plan_inputs(ctx)
        ctx.__dict__[_CACHE] = estimate(inputs) if inputs is not None else None
    return ctx.__dict__[_CACHE]


def prime_estimate(ctx, est: Estimate | None) -> None:
    ctx.__dict__[_CACHE] = est


__all__ = [
    "GIB",
    "Activations",
    "Arch",
    "CheckpointEstimate",
    "CheckpointSetup",
    "Estimate",
    "Layout",
    "Limits",
    "Optimizer",
    "ParamCounts",
    "PlanInputs",
    "RankParams",
    "Recompute",
    "RoleSetup",
    "RolloutSetup",
    "arch_from_hf_config",
    "arch_from_shape",
    "count_params",
    "estimate",
    "estimate_context",
    "forward_activations",
    "layer_activation_bytes",
    "params_per_rank",
    "plan_inputs",
    "prime_estimate",
    "stage_layers",
    "train_activations",
]

