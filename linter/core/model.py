"""Model and accelerator records, and the one reader of a Hugging Face config.json."""

from __future__ import annotations

from typing import NamedTuple


class ModelShape(NamedTuple):
    """A decoder-only transformer as the topology rules and the resource estimator see it: Megatron's
    `TransformerConfig` / `MLATransformerConfig` field names where Megatron has one, HF config.json values."""

    name: str
    source: str  # where the numbers came from, for messages
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_query_groups: int
    kv_channels: int  # head_dim; differs from hidden/heads for several Qwen3 models (MLA uses its own dims below)
    ffn_hidden_size: int
    vocab_size: int
    tied_embeddings: bool
    qkv_bias: bool = False
    o_proj_bias: bool = False
    qk_layernorm: bool = False
    num_experts: int = 0  # routed experts; 0 = dense
    moe_ffn_hidden_size: int = 0
    moe_router_topk: int = 0
    moe_layers: tuple[bool, ...] = ()  # per layer: MoE (True) or dense (False); empty = all dense
    moe_shared_expert_intermediate_size: int = 0  # all shared experts together (DeepSeek: n_shared x moe_ffn)
    moe_shared_expert_gate: bool = False  # Qwen2-MoE's sigmoid gate on the shared expert (hidden -> 1)
    # multi-latent attention (DeepSeek-V2/V3); kv_lora_rank 0 = standard attention
    q_lora_rank: int = 0  # 0 = queries without a low-rank projection
    kv_lora_rank: int = 0
    qk_head_dim: int = 0  # HF qk_nope_head_dim
    qk_pos_emb_head_dim: int = 0  # HF qk_rope_head_dim
    v_head_dim: int = 0

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0 and any(self.moe_layers)

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def first_k_dense(self) -> int:
        """Leading dense layers of a MoE model (DeepSeek-V3: 3)."""
        return next((i for i, moe in enumerate(self.moe_layers) if moe), len(self.moe_layers))

    def is_moe_layer(self, i: int) -> bool:
        return bool(self.moe_layers) and self.moe_layers[i]


def shape_from_hf_config(config: dict, name: str, source: str) -> ModelShape:
    """Read an HF config.json dict -- Qwen2/Qwen3 (dense and MoE), Llama-style models, Mixtral and DeepSeek-V3
    (MLA) -- into Megatron's terms, as verl's mbridge config converters map them."""
    model_type = str(config.get("model_type", "")).lower()
    layers = int(config["num_hidden_layers"])
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    experts = int(config.get("num_experts") or config.get("n_routed_experts") or config.get("num_local_experts") or 0)
    # Mixtral has no moe_intermediate_size: its experts are intermediate_size wide.
    moe_ffn = int(config.get("moe_intermediate_size") or config.get("intermediate_size") or 0) if experts else 0
    if not experts:
        moe_layers: tuple[bool, ...] = ()
    elif "first_k_dense_replace" in config or "n_routed_experts" in config:  # DeepSeek
        first, freq = int(config.get("first_k_dense_replace") or 0), int(config.get("moe_layer_freq") or 1)
        moe_layers = tuple(i >= first and i % freq == 0 for i in range(layers))
    else:  # Qwen2-MoE / Qwen3-MoE / Mixtral
        step = int(config.get("decoder_sparse_step") or 1)
        dense_only = set(config.get("mlp_only_layers") or ())
        moe_layers = tuple(i not in dense_only and (i + 1) % step == 0 for i in range(layers))
    shared, gate = 0, False
    if experts and config.get("n_shared_experts"):
        shared = int(config["n_shared_experts"]) * moe_ffn
    elif experts and config.get("shared_expert_intermediate_size"):
        shared, gate = int(config["shared_expert_intermediate_size"]), True
    attention_bias = config.get("attention_bias")
    qwen2 = model_type in ("qwen2", "qwen2_moe")
    qkv_bias = bool(attention_bias) if attention_bias is not None else qwen2
    return ModelShape(
        name=name,
        source=source,
        num_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_query_groups=int(config.get("num_key_value_heads") or heads),
        kv_channels=int(config.get("head_dim") or hidden // heads),
        ffn_hidden_size=int(config["intermediate_size"]),
        vocab_size=int(config["vocab_size"]),
        tied_embeddings=bool(config.get("tie_word_embeddings", False)),
        qkv_bias=qkv_bias,
        o_proj_bias=qkv_bias and not qwen2,  # Llama's attention_bias covers o_proj too; Qwen2's only q/k/v
        qk_layernorm=model_type in ("qwen3", "qwen3_moe"),
        num_experts=experts,
        moe_ffn_hidden_size=moe_ffn,
        moe_router_topk=int(config.get("num_experts_per_tok") or 0) if experts else 0,
        moe_layers=moe_layers,
        moe_shared_expert_intermediate_size=shared,
        moe_shared_expert_gate=gate,
        q_lora_rank=int(config.get("q_lora_rank") or 0),
        kv_lora_rank=int(config.get("kv_lora_rank") or 0),
        qk_head_dim=int(config.get("qk_nope_head_dim") or 0),
        qk_pos_emb_head_dim=int(config.get("qk_rope_head_dim") or 0),
        v_head_dim=int(config.get("v_head_dim") or 0),
    )


class Accelerator(NamedTuple):
    name: str
    device: str  # npu | gpu
    hbm_gib: float
    devices_per_node: int
