"""Model and accelerator records, and the one reader of a Hugging Face config.json."""

from __future__ import annotations

from typing import NamedTuple


class ModelShape(NamedTuple):
    """What the topology rules need to know of an architecture, in Megatron's terms."""

    name: str
    source: str  # where the numbers came from, for messages
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_query_groups: int
    kv_channels: int  # head_dim; differs from hidden/heads for several Qwen3 models
    ffn_hidden_size: int
    vocab_size: int
    tied_embeddings: bool
    num_experts: int | None = None
    moe_ffn_hidden_size: int | None = None
    moe_router_topk: int | None = None
    first_k_dense: int = 0  # leading dense layers of a MoE model (DeepSeek-V3: 3)
    max_position_embeddings: int | None = None

    @property
    def is_moe(self) -> bool:
        return bool(self.num_experts)


def shape_from_hf_config(config: dict, name: str, source: str) -> ModelShape:
    """Map Hugging Face config.json fields to Megatron's names (as verl's mbridge config converter does)."""
    heads = int(config["num_attention_heads"])
    experts = config.get("num_experts") or config.get("n_routed_experts") or config.get("num_local_experts")
    return ModelShape(
        name=name,
        source=source,
        num_layers=int(config["num_hidden_layers"]),
        hidden_size=int(config["hidden_size"]),
        num_attention_heads=heads,
        num_query_groups=int(config.get("num_key_value_heads") or heads),
        kv_channels=int(config.get("head_dim") or config.get("v_head_dim") or config["hidden_size"] // heads),
        ffn_hidden_size=int(config["intermediate_size"]),
        vocab_size=int(config["vocab_size"]),
        tied_embeddings=bool(config.get("tie_word_embeddings", False)),
        num_experts=int(experts) if experts else None,
        moe_ffn_hidden_size=int(config["moe_intermediate_size"]) if experts and config.get("moe_intermediate_size") else None,
        moe_router_topk=int(config["num_experts_per_tok"]) if experts and config.get("num_experts_per_tok") else None,
        first_k_dense=int(config.get("first_k_dense_replace") or 0),
        max_position_embeddings=config.get("max_position_embeddings"),
    )


class Accelerator(NamedTuple):
    name: str
    device: str  # npu | gpu
    hbm_gib: float
    devices_per_node: int
