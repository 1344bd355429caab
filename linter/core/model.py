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


MAX_LAYERS = 10_000  # real models have a few hundred at most; per-layer tables are built from this
MAX_SIZE = 10**7  # above any real width, vocabulary or expert count; keeps the estimator's arithmetic finite


class BadModelConfig(ValueError):
    """A config.json whose architecture fields cannot describe a model; the message names the field."""


def _shown(value) -> str:
    if isinstance(value, int) and abs(value) >= 10**30:  # repr of a huge int is slow, or refused past 4300 digits
        return "an integer over 10^30"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _count(config: dict, key: str, minimum: int = 0, maximum: int = MAX_SIZE) -> int | None:
    """The integer at `key`, None when absent or null. Anything else -- a bool, float, string, or a value out of
    [minimum, maximum] -- is `BadModelConfig`: int() would truncate, overflow, or build absurd tables silently."""
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise BadModelConfig(f"`{key}` must be an integer from {minimum} to {maximum:,}, not {_shown(value)}")
    return value


def _required(config: dict, key: str, maximum: int = MAX_SIZE) -> int:
    value = _count(config, key, 1, maximum)
    if value is None:
        raise BadModelConfig(f"`{key}` is missing")
    return value


# What transformers assumes for fields a config.json leaves out, by `model_type` (the text model's, for a VL model).
# Gemma ties its output layer to the input embedding unless told otherwise (`tie_word_embeddings: bool = True` in
# transformers' `models/gemma2/configuration_gemma2.py`, and in Gemma's and Gemma 3's); its config.json files omit it.
_TIED_BY_DEFAULT = frozenset({"gemma", "gemma2", "gemma3_text"})
# Qwen2's attention has q/k/v biases and no o_proj bias, with no `attention_bias` field (transformers'
# `Qwen2Attention`); the Qwen2-VL and Qwen2.5-VL text models are Qwen2's decoder.
_QWEN2_ATTENTION = frozenset({"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "qwen2_vl_text", "qwen2_5_vl_text"})
# Per-head RMSNorm on queries and keys (QK-norm) in transformers' attention of these model types.
_QK_NORM = frozenset(
    {"qwen3", "qwen3_moe", "qwen3_vl_text", "qwen3_vl_moe_text", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"}
    | {"gemma3_text"}
)


def language_config(config: dict) -> dict:
    """The text model's fields of a config.json: a vision-language model (Qwen3-VL, GLM-4.1V, Gemma 3, Mistral 3,
    Qwen3.5) nests them under `text_config`, with fields such as `tie_word_embeddings` sometimes left at the top;
    a text model (and Qwen2.5-VL, which keeps them at the top) is returned as it is."""
    text = config.get("text_config")
    if "num_hidden_layers" in config or not isinstance(text, dict):
        return config
    outer = {k: v for k, v in config.items() if k not in ("text_config", "vision_config", "model_type")}
    return {**outer, **text}


def shape_from_hf_config(config: dict, name: str, source: str) -> ModelShape:
    """Read an HF config.json dict -- Qwen2/Qwen2.5/Qwen3 (dense and MoE), Llama-style models (Llama, Mistral,
    Gemma, Phi-3, GLM, Seed-OSS), Mixtral and GPT-OSS, DeepSeek-V2/V3 and GLM-4.5 (MLA or not), and the language
    model of a vision-language model (`language_config`) -- into Megatron's terms, as verl's mbridge config
    converters map them. Raises `BadModelConfig` for anything that is not such a config (its message names the
    field)."""
    if not isinstance(config, dict):
        raise BadModelConfig(f"a config is a JSON object ({{...}}), not {_shown(config)}")
    config = language_config(config)
    model_type = config.get("model_type")
    model_type = model_type.lower() if isinstance(model_type, str) else ""
    layers = _required(config, "num_hidden_layers", MAX_LAYERS)
    hidden = _required(config, "hidden_size")
    heads = _required(config, "num_attention_heads")
    vocab = _required(config, "vocab_size")
    experts = (
        _count(config, "num_experts") or _count(config, "n_routed_experts") or _count(config, "num_local_experts") or 0
    )
    # Qwen3.5's MoE models have no dense MLP, and no intermediate_size
    ffn = _count(config, "intermediate_size", 1) or 0
    # Mixtral and GPT-OSS have no moe_intermediate_size: their experts are intermediate_size wide.
    moe_ffn = (_count(config, "moe_intermediate_size", 1) or ffn) if experts else 0
    if not ffn and not moe_ffn:
        raise BadModelConfig("`intermediate_size` is missing")
    if not experts:
        moe_layers: tuple[bool, ...] = ()
    elif "first_k_dense_replace" in config or "n_routed_experts" in config:  # DeepSeek, Moonlight, Kimi, GLM-4.5
        first = _count(config, "first_k_dense_replace") or 0
        freq = _count(config, "moe_layer_freq") or 1
        moe_layers = tuple(i >= first and i % freq == 0 for i in range(layers))
    else:  # Qwen2-MoE / Qwen3-MoE / Mixtral / GPT-OSS
        step = _count(config, "decoder_sparse_step") or 1
        listed = config.get("mlp_only_layers") or []
        if not isinstance(listed, list) or not all(isinstance(i, int) for i in listed):
            raise BadModelConfig(f"`mlp_only_layers` must be a list of layer numbers, not {_shown(listed)}")
        dense_only = set(listed)
        moe_layers = tuple(i not in dense_only and (i + 1) % step == 0 for i in range(layers))
    if not ffn and not all(moe_layers):
        raise BadModelConfig("`intermediate_size` is missing: the dense layers need it")
    shared, gate = 0, False
    if experts and config.get("n_shared_experts"):
        shared = _count(config, "n_shared_experts") * moe_ffn
    elif experts and config.get("shared_expert_intermediate_size"):
        shared, gate = _count(config, "shared_expert_intermediate_size"), True
    attention_bias = config.get("attention_bias")
    qwen2 = model_type in _QWEN2_ATTENTION
    qkv_bias = bool(attention_bias) if attention_bias is not None else qwen2
    out_bias = config.get("attention_out_bias")  # Seed-OSS states its o_proj bias apart from q/k/v's
    tied = config.get("tie_word_embeddings")
    return ModelShape(
        name=name,
        source=source,
        num_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_query_groups=_count(config, "num_key_value_heads") or heads,
        kv_channels=_count(config, "head_dim") or hidden // heads,
        ffn_hidden_size=ffn,
        vocab_size=vocab,
        tied_embeddings=bool(tied) if tied is not None else model_type in _TIED_BY_DEFAULT,
        qkv_bias=qkv_bias,
        # Llama's attention_bias covers o_proj too; Qwen2's only q/k/v
        o_proj_bias=bool(out_bias) if out_bias is not None else qkv_bias and not qwen2,
        qk_layernorm=model_type in _QK_NORM or bool(config.get("use_qk_norm")),
        num_experts=experts,
        moe_ffn_hidden_size=moe_ffn,
        moe_router_topk=(_count(config, "num_experts_per_tok") or 0) if experts else 0,
        moe_layers=moe_layers,
        moe_shared_expert_intermediate_size=shared,
        moe_shared_expert_gate=gate,
        q_lora_rank=_count(config, "q_lora_rank") or 0,
        kv_lora_rank=_count(config, "kv_lora_rank") or 0,
        qk_head_dim=_count(config, "qk_nope_head_dim") or 0,
        qk_pos_emb_head_dim=_count(config, "qk_rope_head_dim") or 0,
        v_head_dim=_count(config, "v_head_dim") or 0,
    )


class Accelerator(NamedTuple):
    name: str
    device: str  # npu | gpu
    hbm_gib: float  # nominal (datasheet) capacity
    devices_per_node: int
    usable_hbm_gib: float  # what the runtime reports (mem_get_info total); hbm_gib where no figure is known
    usable_source: str = ""
    # Why this accelerator was assumed ("assumed for npu (variant `DEVICE=npu`)"); empty when the user named it.
    assumed: str = ""
