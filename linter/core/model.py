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
    # DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): the lightning indexer's heads and head width; 0 = none
    index_num_heads: int = 0
    index_head_dim: int = 0
    # Per layer, what mixes tokens: "attention", "linear_attention" (Qwen3-Next's gated DeltaNet), "mamba"
    # (Nemotron-H's Mamba-2) or "none" (a Nemotron-H MLP or MoE block); empty = attention in every layer.
    mixers: tuple[str, ...] = ()
    mlp_free_layers: tuple[bool, ...] = ()  # per layer: no MLP (Nemotron-H's mixer blocks); empty = MLP everywhere
    gated_mlp: bool = True  # SwiGLU's three matrices; False: up and down only (Nemotron-H's squared ReLU)
    attention_output_gate: bool = False  # Qwen3-Next/Qwen3.5: q_proj also yields a gate as wide as the queries
    attention_sinks: bool = False  # gpt-oss: one learned sink logit per head and layer
    expert_bias: bool = False  # gpt-oss: biases on every expert's projections and on the router
    moe_latent_size: int = 0  # Nemotron-3 Super: experts work in this width, projected from and to hidden
    linear_num_key_heads: int = 0
    linear_num_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel_dim: int = 0
    mamba_num_heads: int = 0
    mamba_head_dim: int = 0
    mamba_state_size: int = 0
    mamba_groups: int = 0
    mamba_conv_kernel: int = 0
    mamba_conv_bias: bool = False
    mamba_proj_bias: bool = False
    mtp_layers: int = 0  # multi-token prediction blocks after the last layer (not in transformers' model)
    vision_params: int = 0  # the vision tower and its projector to the text model, counted from `vision_config`

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

    def mixer(self, i: int) -> str:
        return self.mixers[i] if self.mixers else "attention"

    def has_mlp(self, i: int) -> bool:
        return not (self.mlp_free_layers and self.mlp_free_layers[i])


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


# Fields whose layers the reader cannot count: DeepSeek-V4's hyper-connections (`hc_mult`) and grouped low-rank output
# projection (`o_lora_rank`) replace the residual stream and MLA's o_proj of every layer.
_UNCOUNTED_FIELDS = {"hc_mult": "hyper-connections", "o_lora_rank": "a grouped low-rank output projection"}
# `layer_types` values that name an attention layer (gpt-oss alternates sliding and full windows, same weights).
_ATTENTION_LAYERS = frozenset({"full_attention", "sliding_attention", "chunked_attention", "attention"})
# Nemotron-H's layer pattern: `hybrid_override_pattern` characters, and `layers_block_type` names, old and new.
_NEMOTRON_BLOCKS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
_NEMOTRON_BLOCK_NAMES = {"mamba": "mamba", "linear_attention": "mamba", "attention": "attention"}
_NEMOTRON_BLOCK_NAMES |= {"full_attention": "attention", "mlp": "mlp", "moe": "moe"}


def _missing(config: dict, keys: list[str], needed_by: str = "") -> None:
    """`BadModelConfig` naming every key of `keys` that `config` lacks (`needed_by`: the part that needs them, as in
    "the Mamba layers")."""
    absent = [f"`{k}`" for k in keys if config.get(k) is None]
    if absent:
        one = len(absent) == 1
        listed = absent[0] if one else ", ".join(absent[:-1]) + " and " + absent[-1]
        raise BadModelConfig(f"{listed} {'is' if one else 'are'} missing" + (f", for {needed_by}" if needed_by else ""))


def _names(config: dict, key: str) -> list | None:
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadModelConfig(f"`{key}` must be a list of layer kinds, not {_shown(value)}")
    return value


def _nemotron_blocks(config: dict) -> list[str]:
    """Nemotron-H's blocks in order, each one mixer: `mamba`, `attention`, `mlp` or `moe`."""
    pattern = config.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern and all(ch in _NEMOTRON_BLOCKS for ch in pattern):
        return [_NEMOTRON_BLOCKS[ch] for ch in pattern]
    listed = _names(config, "layers_block_type") or _names(config, "layer_types")
    if listed and all(kind in _NEMOTRON_BLOCK_NAMES for kind in listed):
        return [_NEMOTRON_BLOCK_NAMES[kind] for kind in listed]
    raise BadModelConfig(
        "`hybrid_override_pattern` (a string of M, *, - and E) or `layers_block_type` is missing: Nemotron-H's "
        f"layers are Mamba, attention, MLP or MoE blocks in that order, not {_shown(pattern or listed)}"
    )


def _mixers(config: dict, layers: int) -> tuple[str, ...]:
    """Per layer, what mixes tokens: `layer_types` (Qwen3-Next, Qwen3.5, gpt-oss), else every
    `full_attention_interval`-th layer attention and the others gated DeltaNet (Qwen3-Next's default)."""
    listed = _names(config, "layer_types")
    if listed is None:
        interval = _count(config, "full_attention_interval", 1, MAX_LAYERS)
        if interval is None:
            return ()
        listed = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(layers)]
    if len(listed) < layers:
        raise BadModelConfig(f"`layer_types` names {len(listed)} layers, `num_hidden_layers` is {layers}")
    unknown = sorted({kind for kind in listed[:layers] if kind not in _ATTENTION_LAYERS | {"linear_attention"}})
    if unknown:
        raise BadModelConfig(f"`layer_types` has layers the reader cannot count: {', '.join(unknown)}")
    mixers = tuple("linear_attention" if kind == "linear_attention" else "attention" for kind in listed[:layers])
    if "linear_attention" in mixers:
        _missing(config, list(_LINEAR_ATTENTION_FIELDS.values()), "the gated DeltaNet layers")
    return mixers if any(kind != "attention" for kind in mixers) else ()


# ModelShape field -> config.json field, for gated DeltaNet (linear attention) and Mamba-2 layers.
_LINEAR_ATTENTION_FIELDS = {
    "linear_num_key_heads": "linear_num_key_heads",
    "linear_num_value_heads": "linear_num_value_heads",
    "linear_key_head_dim": "linear_key_head_dim",
    "linear_value_head_dim": "linear_value_head_dim",
    "linear_conv_kernel_dim": "linear_conv_kernel_dim",
}
_MAMBA_FIELDS = {
    "mamba_num_heads": "mamba_num_heads",
    "mamba_head_dim": "mamba_head_dim",
    "mamba_state_size": "ssm_state_size",
    "mamba_groups": "n_groups",
    "mamba_conv_kernel": "conv_kernel",
}


def _llama4_vision_params(vision: dict, text_hidden: int) -> int:
    """Llama-4's vision tower (transformers' `Llama4VisionModel`) and its projector to the text model: a ViT with
    biased attention and GELU MLP, LayerNorms, a class and positional embedding, a pixel-shuffle MLP adapter."""
    _missing(
        vision,
        ["hidden_size", "intermediate_size", "num_hidden_layers", "image_size", "patch_size"]
        + ["projector_input_dim", "projector_output_dim", "vision_output_dim"],
        "Llama-4's vision tower",
    )
    d, ffn, n = _count(vision, "hidden_size"), _count(vision, "intermediate_size"), _count(vision, "num_hidden_layers")
    patch, image = _count(vision, "patch_size", 1), _count(vision, "image_size", 1)
    channels = _count(vision, "num_channels") or 3
    layer = 4 * (d * d + d) + 2 * d * ffn + ffn + d + 4 * d  # q/k/v/o with biases, fc1/fc2 with biases, 2 LayerNorms
    embeddings = (
        channels * patch * patch * d + d + ((image // patch) ** 2 + 1) * d + 4 * d
    )  # patches, class, pos, norms
    adapter = ffn * _count(vision, "projector_input_dim") + _count(vision, "projector_output_dim") ** 2
    return n * layer + embeddings + adapter + _count(vision, "vision_output_dim") * text_hidden


def _moe_layers(config: dict, layers: int, experts: int, llama4: bool) -> tuple[bool, ...]:
    """Per layer, MoE (True) or dense; empty for a dense model."""
    if not experts:
        return ()
    if llama4:  # MoE every interleave_moe_layer_step-th layer, unless `moe_layers` lists them
        listed = config.get("moe_layers")
        if listed is not None and (not isinstance(listed, list) or not all(isinstance(i, int) for i in listed)):
            raise BadModelConfig(f"`moe_layers` must be a list of layer numbers, not {_shown(listed)}")
        step = _count(config, "interleave_moe_layer_step", 1, MAX_LAYERS) or 1
        chosen = set(listed) if listed is not None else set(range(step - 1, layers, step))
        return tuple(i in chosen for i in range(layers))
    if "first_k_dense_replace" in config or "n_routed_experts" in config:  # DeepSeek, Moonlight, Kimi, GLM-4.5
        first = _count(config, "first_k_dense_replace") or 0
        freq = _count(config, "moe_layer_freq") or 1
        return tuple(i >= first and i % freq == 0 for i in range(layers))
    # Qwen2-MoE / Qwen3-MoE / Qwen3-Next / Mixtral / gpt-oss
    step = _count(config, "decoder_sparse_step") or 1
    listed = config.get("mlp_only_layers") or []
    if not isinstance(listed, list) or not all(isinstance(i, int) for i in listed):
        raise BadModelConfig(f"`mlp_only_layers` must be a list of layer numbers, not {_shown(listed)}")
    dense_only = set(listed)
    return tuple(i not in dense_only and (i + 1) % step == 0 for i in range(layers))


def shape_from_hf_config(config: dict, name: str, source: str) -> ModelShape:
    """Read an HF config.json dict -- Qwen2/Qwen2.5/Qwen3 (dense and MoE), Llama-style models (Llama, Mistral,
    Gemma, Phi-3, GLM, Seed-OSS), Mixtral and gpt-oss, DeepSeek-V2/V3/V3.2, Kimi K2 and GLM-4.5/5 (MLA or not, sparse
    attention's indexer, MTP), Qwen3-Next and Qwen3.5 (gated DeltaNet hybrids), Nemotron-H (Mamba hybrid), Llama-4
    (interleaved MoE, vision tower), and the language model of a vision-language model (`language_config`) -- into
    Megatron's terms, as verl's mbridge config converters map them. Raises `BadModelConfig` for anything that is not
    such a config (its message names the fields)."""
    if not isinstance(config, dict):
        raise BadModelConfig(f"a config is a JSON object ({{...}}), not {_shown(config)}")
    vision = config.get("vision_config") if config.get("model_type") == "llama4" else None
    config = language_config(config)
    model_type = config.get("model_type")
    model_type = model_type.lower() if isinstance(model_type, str) else ""
    uncounted = [f"`{k}` ({what})" for k, what in _UNCOUNTED_FIELDS.items() if config.get(k) is not None]
    if uncounted:
        raise BadModelConfig(
            f"{model_type or 'this architecture'} has layers the reader cannot count: {', '.join(uncounted)}"
        )
    blocks = _nemotron_blocks(config) if model_type == "nemotron_h" else None
    _missing(
        config,
        ["hidden_size", "num_attention_heads", "vocab_size"] + ([] if blocks else ["num_hidden_layers"]),
        "",
    )
    layers = len(blocks) if blocks else _required(config, "num_hidden_layers", MAX_LAYERS)
    if layers > MAX_LAYERS:
        raise BadModelConfig(f"`hybrid_override_pattern` has {layers:,} layers, over {MAX_LAYERS:,}")
    hidden = _required(config, "hidden_size")
    heads = _required(config, "num_attention_heads")
    vocab = _required(config, "vocab_size")
    experts = (
        _count(config, "num_experts") or _count(config, "n_routed_experts") or _count(config, "num_local_experts") or 0
    )
    if blocks is not None and "moe" not in blocks:
        experts = 0  # transformers' NemotronHConfig has expert defaults that a model without MoE blocks ignores
    # Qwen3.5's MoE models have no dense MLP, and no intermediate_size; Llama-4's dense layers are
    # intermediate_size_mlp wide and its experts (and shared expert) intermediate_size.
    llama4 = model_type in ("llama4", "llama4_text")
    ffn = _count(config, "intermediate_size_mlp" if llama4 else "intermediate_size", 1) or 0
    # Mixtral and gpt-oss have no moe_intermediate_size: their experts are intermediate_size wide.
    moe_ffn = (
        (_count(config, "moe_intermediate_size", 1) or _count(config, "intermediate_size", 1) or 0) if experts else 0
    )
    if not ffn and not moe_ffn:
        raise BadModelConfig("`intermediate_size` is missing")
    mixers: tuple[str, ...] = ()
    mlp_free: tuple[bool, ...] = ()
    if blocks is not None:  # Nemotron-H: one mixer per block
        mixers = tuple({"mamba": "mamba", "attention": "attention"}.get(b, "none") for b in blocks)
        mlp_free = tuple(b in ("mamba", "attention") for b in blocks)
        moe_layers = tuple(b == "moe" for b in blocks) if experts else ()
        if "mamba" in blocks:
            _missing(config, list(_MAMBA_FIELDS.values()), "the Mamba layers")
    else:
        mixers = _mixers(config, layers)
        moe_layers = _moe_layers(config, layers, experts, llama4)
    if not ffn and not all(
        (bool(moe_layers) and moe_layers[i]) or (bool(mlp_free) and mlp_free[i]) for i in range(layers)
    ):
        raise BadModelConfig("`intermediate_size` is missing: the dense layers need it")
    shared, gate = 0, False
    if experts and blocks is not None:
        shared = _count(config, "moe_shared_expert_intermediate_size") or 0
    elif experts and llama4:
        shared = moe_ffn  # one shared expert as wide as a routed one (transformers' Llama4TextMoe)
    elif experts and config.get("n_shared_experts"):
        shared = _count(config, "n_shared_experts") * moe_ffn
    elif experts and config.get("shared_expert_intermediate_size"):
        shared, gate = _count(config, "shared_expert_intermediate_size"), True
    attention_bias = config.get("attention_bias")
    qwen2 = model_type in _QWEN2_ATTENTION
    qkv_bias = bool(attention_bias) if attention_bias is not None else qwen2
    out_bias = config.get("attention_out_bias")  # Seed-OSS states its o_proj bias apart from q/k/v's
    tied = config.get("tie_word_embeddings")
    index_heads = _count(config, "index_n_heads") or 0
    if index_heads:
        _missing(config, ["index_head_dim", "q_lora_rank"], "the sparse attention's indexer")
    gpt_oss = model_type == "gpt_oss"
    extra = (
        {k: _count(config, v) or 0 for k, v in _LINEAR_ATTENTION_FIELDS.items()} if "linear_attention" in mixers else {}
    )
    if "mamba" in mixers:
        extra |= {k: _count(config, v) or 0 for k, v in _MAMBA_FIELDS.items()}
        extra |= {
            "mamba_conv_bias": bool(config.get("use_conv_bias", True)),
            "mamba_proj_bias": bool(config.get("use_bias")),
        }
    return ModelShape(
        name=name,
        source=source,
        num_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_query_groups=_count(config, "num_key_value_heads") or heads,
        kv_channels=_count(config, "head_dim") or _count(config, "attention_head_dim") or hidden // heads,
        ffn_hidden_size=ffn,
        vocab_size=vocab,
        tied_embeddings=bool(tied) if tied is not None else model_type in _TIED_BY_DEFAULT,
        qkv_bias=qkv_bias,
        # Llama's attention_bias covers o_proj too; Qwen2's only q/k/v
        o_proj_bias=bool(out_bias) if out_bias is not None else qkv_bias and not qwen2,
        # Llama-4's QK-norm is an L2 norm without weights
        qk_layernorm=model_type in _QK_NORM or (bool(config.get("use_qk_norm")) and not llama4),
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
        index_num_heads=index_heads,
        index_head_dim=(_count(config, "index_head_dim") or 0) if index_heads else 0,
        mixers=mixers,
        mlp_free_layers=mlp_free,
        gated_mlp=blocks is None,
        # Qwen3-Next always gates its attention output (transformers' Qwen3NextAttention); Qwen3.5 states it
        attention_output_gate=bool(config.get("attn_output_gate", model_type == "qwen3_next")),
        attention_sinks=gpt_oss,
        expert_bias=gpt_oss,
        moe_latent_size=(_count(config, "moe_latent_size") or 0) if experts else 0,
        mtp_layers=_count(config, "num_nextn_predict_layers", 0, MAX_LAYERS)
        or _count(config, "mtp_num_hidden_layers", 0, MAX_LAYERS)
        or 0,
        vision_params=_llama4_vision_params(vision, hidden) if isinstance(vision, dict) else 0,
        **extra,
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
