"""Snapshots of what MindSpeed (Ascend) adds to megatron-core's ``TransformerConfig`` on NPU, transcribed with
provenance (format: FORMAT.md, ``schemas/consumers/mindspeed-*.json``).

Why these names are accepted on NPU.  verl's ``MindspeedEngine`` (verl/workers/engine/mindspeed/transformer_impl.py,
registered for ``device="npu"``) calls ``mindspeed.megatron_adaptor.repatch(override_transformer_config)`` before
building the model; ``repatch`` sets every key on MindSpeed's full argument namespace and re-applies the feature
patches, each of which switches on when its argument is set (``MindSpeedFeature.feature_name``,
mindspeed/features_manager/feature.py).  MindSpeed's ``MegatronBasicFeature`` also patches
``TransformerConfig.__init__`` with ``transformer_config_init_wrapper`` (mindspeed/core/megatron_basic/
arguments_basic.py): keyword arguments that are not dataclass fields become fields of a derived dataclass instead of
raising TypeError.  So on NPU a key is meaningful when it is a megatron-core field or a MindSpeed argument; any other
key is stored and never read.

MindSpeed is not on PyPI and no complete source tree could be fetched, so each argument below is transcribed from
one stored version of its feature module in github Ascend/MindSpeed (path and commit per argument; the feature list
is the one ``create_features_list`` assembles in mindspeed/features_manager/__init__.py).  The commits come from
the master / core_r0.18.0 line of 2025-2026 (gmm.py there refers to Megatron 0.18); they are not one release.
``use_flash_attn`` and ``reset_attention_mask`` are Megatron-LM training arguments that MindSpeed features use as
their switch (feature names), not arguments MindSpeed registers.

MindSpeed-Bridge (Ascend/MindSpeed-Bridge, not in the source index either) adds ``use_triton_gdn`` and
``use_ascend_gdn`` to its Qwen3.5 model config: its GatedDeltaNet picks the Triton, AscendC or torch kernel from them
(mindspeed_bridge/models/qwen_vl/modelling_qwen3_vl/gated_delta_net.py) and its recipes set ``cfg.model.use_triton_gdn``
/ ``cfg.model.use_ascend_gdn``; verl's grpo_trainer/run_qwen3_5_122b_a10b_megatron.sh passes both when
``USE_MINDSPEED_BRIDGE=True``.
"""

from __future__ import annotations

from typing import NamedTuple

from .layout import CONSUMER_FORMAT

MINDSPEED_REPO = "github Ascend/MindSpeed"
MINDSPEED_VERSION = "git-master"


class Transcribed(NamedTuple):
    name: str
    type: str
    default: str | None  # Python source of argparse's default; None when argparse gives None
    path: str  # under mindspeed/features_manager/
    commit: str
    how: str = "add_argument"  # or "feature switch": a Megatron-LM argument a MindSpeed feature is switched on by


_FM = "mindspeed/features_manager/"

# (argument, type, default, feature module, commit): `group.add_argument("--<argument with dashes>", ...)` there.
MINDSPEED_ARGUMENTS = (
    Transcribed("use_fused_rmsnorm", "bool", "False", "megatron_basic/megatron_basic.py",
                "2436b58a499e5245b395cb7c24eadda0f6fe544d"),
    Transcribed("use_fused_swiglu", "bool", "False", "megatron_basic/megatron_basic.py",
                "2436b58a499e5245b395cb7c24eadda0f6fe544d"),
    Transcribed("context_parallel_algo", "str", "'megatron_cp_algo'", "context_parallel/context_parallel_feature.py",
                "010c43dfee817fec6e4ed268721c96807d63ff65"),
    Transcribed("cp_window_size", "int", "1", "context_parallel/context_parallel_feature.py",
                "010c43dfee817fec6e4ed268721c96807d63ff65"),
    Transcribed("attention_mask_type", "str", "'causal'", "context_parallel/context_parallel_feature.py",
                "010c43dfee817fec6e4ed268721c96807d63ff65"),
    Transcribed("use_cp_send_recv_overlap", "bool", "False", "context_parallel/context_parallel_feature.py",
                "010c43dfee817fec6e4ed268721c96807d63ff65"),
    Transcribed("use_fused_ring_attention_update", "bool", "False", "context_parallel/context_parallel_feature.py",
                "010c43dfee817fec6e4ed268721c96807d63ff65"),
    Transcribed("megatron_cp_in_bnsd", "bool", "False", "context_parallel/context_parallel_feature.py",
                "010c43dfee817fec6e4ed268721c96807d63ff65"),
    Transcribed("use_naive_l2norm", "bool", "False", "context_parallel/gated_delta_net.py",
                "7953c49bf4d8f41700c0301d1bc780d354a877f7"),
    Transcribed("use_fused_rotary_pos_emb", "bool", "False", "fusions/fused_rope.py",
                "41283d098590a78b9c20ad31801177d269a1b4e7"),
    Transcribed("use_fused_moe_token_permute_and_unpermute", "bool", "False", "fusions/fused_moe_permute.py",
                "16472ac6334e79087253ab777c42a44c547d7e8c"),
    Transcribed("use_batch_invariant_ops", "bool", "False", "batch_invariant/batch_invariant.py",
                "2863e271ef5055e27bd43b862f7dcd190f977e0c"),
    Transcribed("use_flash_attn_npu_batch_invariant", "bool", "False", "batch_invariant/batch_invariant.py",
                "2863e271ef5055e27bd43b862f7dcd190f977e0c"),
    Transcribed("use_flash_attn", "bool", "False", "transformer/flash_attention/fusion_attention_v1_feature.py",
                "010c43dfee817fec6e4ed268721c96807d63ff65", "feature switch"),
    Transcribed("pre_tockens", "int", "65536", "transformer/flash_attention/fusion_attention_v1_feature.py",
                "010c43dfee817fec6e4ed268721c96807d63ff65"),
    Transcribed("next_tockens", "int", "0", "transformer/flash_attention/fusion_attention_v1_feature.py",
                "010c43dfee817fec6e4ed268721c96807d63ff65"),
    Transcribed("sparse_mode", "int", "0", "transformer/flash_attention/fusion_attention_v1_feature.py",
                "010c43dfee817fec6e4ed268721c96807d63ff65"),
    Transcribed("use_fusion_attn_v2", "bool", "False", "transformer/flash_attention/fusion_attention_v2_feature.py",
                "0a7d606afe7a16a1dd80c37a4d5e000e0f0e2db9"),
    Transcribed("square_alibi_mask", "bool", "False", "transformer/flash_attention/alibi_feature.py",
                "3892059a008e66113c7fdb1ea2c144a1d56a3ff7"),
    Transcribed("fill_neg_inf", "bool", "False", "transformer/flash_attention/alibi_feature.py",
                "3892059a008e66113c7fdb1ea2c144a1d56a3ff7"),
    Transcribed("alibi_fusion_attn_type", "int", None, "transformer/flash_attention/alibi_feature.py",
                "3892059a008e66113c7fdb1ea2c144a1d56a3ff7"),
    Transcribed("alibi_diagonal_opposite", "bool", "False", "transformer/flash_attention/alibi_feature.py",
                "3892059a008e66113c7fdb1ea2c144a1d56a3ff7"),
    Transcribed("reset_attention_mask", "bool", "False",
                "transformer/flash_attention/reset_attention_mask_feature.py",
                "0bda3e134e1d8185b229d201b030757cdcb3ac36", "feature switch"),
    Transcribed("multi_head_latent_attention", "bool", "False",
                "transformer/multi_head_latent_attention/mla_feature.py", "285cec1f6b9602f7f89083ab8f2974129f17b422"),
    Transcribed("qk_rope_head_dim", "int", None, "transformer/multi_head_latent_attention/mla_feature.py",
                "285cec1f6b9602f7f89083ab8f2974129f17b422"),
    Transcribed("qk_nope_head_dim", "int", None, "transformer/multi_head_latent_attention/mla_feature.py",
                "285cec1f6b9602f7f89083ab8f2974129f17b422"),
    Transcribed("gemm_gradient_accumulation_fusion", "bool", "False", "moe/gmm.py",
                "049ff1af8c5f02f5fa0eb3d5429b92cc579717a9"),
    Transcribed("moe_tp_extend_ep", "bool", "False", "moe/tp_extend_ep.py", "e6644e372ebc7143dd5d4a28d205554c3c49b8a9"),
    Transcribed("moe_permutation_async_comm", "bool", "False", "moe/tp_extend_ep.py",
                "e6644e372ebc7143dd5d4a28d205554c3c49b8a9"),
    Transcribed("n_shared_experts", "int", None, "moe/shared_expert.py", "02321cc5292fc6a44ff6cf6edad07ff16ac6c578"),
    Transcribed("moe_alltoall_overlap_comm", "bool", "False", "moe/moe_alltoall_overlap.py",
                "02321cc5292fc6a44ff6cf6edad07ff16ac6c578"),
    Transcribed("moe_allgather_overlap_comm", "bool", "False", "moe/moe_allgather_overlap.py",
                "9a41a7f0114337c59b7515d889b98b1edd1557b1"),
    Transcribed("moe_zero_memory", "str", "'disable'", "moe/moe_zero_memory.py",
                "02321cc5292fc6a44ff6cf6edad07ff16ac6c578"),
    Transcribed("moe_zero_memory_num_layers", "int", None, "moe/moe_zero_memory.py",
                "02321cc5292fc6a44ff6cf6edad07ff16ac6c578"),
    Transcribed("recompute_activation_function", "bool", "False", "recompute/activation_function.py",
                "fbdde7859566ba4ad0d8c5ab7e38b75e9715bcae"),
    Transcribed("recompute_activation_function_num_layers", "int", None, "recompute/activation_function.py",
                "fbdde7859566ba4ad0d8c5ab7e38b75e9715bcae"),
    Transcribed("recompute_norm", "bool", "False", "recompute/norm_function.py",
                "08f98b28f1c2367579a07ef5806f3f58baa4b620"),
    Transcribed("recompute_norm_num_layers", "int", None, "recompute/norm_function.py",
                "08f98b28f1c2367579a07ef5806f3f58baa4b620"),
    Transcribed("enable_recompute_layers_per_pp_rank", "bool", "False",
                "recompute/enable_recompute_layers_per_pp_rank.py", "2ca573cbd8aa003a4b450c1c04f99f1cbc317f1d"),
    Transcribed("swap_attention", "bool", "False", "memory/swap_attention.py",
                "0e5976c7e6a2dddc77919bb4eeff9bfced37d780"),
    Transcribed("swap_modules", "str", "'input_norm,self_attention,post_attention_norm'", "memory/swap_attention.py",
                "0e5976c7e6a2dddc77919bb4eeff9bfced37d780"),
    Transcribed("reuse_fp32_param", "bool", "False", "memory/reuse_fp32_param.py",
                "4213c91313fe4de6da12794109515f6275572750"),
    Transcribed("use_ascend_mc2", "bool", "False", "tensor_parallel/mc2.py", "295e7ccee41f280da30632d00f6bc260f73b6ee5"),
    Transcribed("use_ascend_coc", "bool", "False", "tensor_parallel/locl_coc.py",
                "18ebaaffffe4c5756e5250727c4bc56df61ebb0a"),
    Transcribed("coc_mode", "int", "-1", "tensor_parallel/locl_coc.py", "18ebaaffffe4c5756e5250727c4bc56df61ebb0a"),
    Transcribed("coc_parallel_num", "int", "1", "tensor_parallel/locl_coc.py",
                "18ebaaffffe4c5756e5250727c4bc56df61ebb0a"),
    Transcribed("coc_fused_kernel", "bool", "False", "tensor_parallel/locl_coc.py",
                "18ebaaffffe4c5756e5250727c4bc56df61ebb0a"),
    Transcribed("noop_layers", "str", None, "pipeline_parallel/noop_layers.py",
                "a40d2bf1193d5a022bc2abc99df7f31d9c7c1ea7"),
)

# MindSpeed-Bridge's Qwen3.5 model-config switches (see the module docstring), in the same class: on NPU they reach
# the same patched `TransformerConfig`.
MINDSPEED_BRIDGE_SOURCE = ("Ascend/MindSpeed-Bridge master, mindspeed_bridge/models/qwen_vl/modelling_qwen3_vl/"
                           "gated_delta_net.py and its Qwen3.5 recipes (names transcribed; not in the source index)")
MINDSPEED_BRIDGE_FIELDS = ("use_ascend_gdn", "use_triton_gdn")


def _field(arg: Transcribed) -> dict:
    entry: dict = {"type": arg.type, "source": f"{_FM}{arg.path}@{arg.commit}"}
    if arg.default is None:
        entry["nullable"] = True
    else:
        entry["default"] = arg.default
    if arg.how != "add_argument":
        entry["how"] = arg.how
    return entry


def mindspeed_snapshot() -> dict:
    """The MindSpeed snapshot: its arguments (and MindSpeed-Bridge's model switches), which become
    ``TransformerConfig`` fields on NPU. A field's ``library`` names the project that defines it."""
    fields = {a.name: {**_field(a), "library": "MindSpeed"} for a in MINDSPEED_ARGUMENTS}
    fields.update({name: {"type": "bool", "library": "MindSpeed-Bridge", "source": MINDSPEED_BRIDGE_SOURCE}
                   for name in MINDSPEED_BRIDGE_FIELDS})
    return {
        "format": CONSUMER_FORMAT, "package": "mindspeed", "version": MINDSPEED_VERSION,
        "source": f"{MINDSPEED_REPO} feature modules, transcribed (not on PyPI); each field names its module@commit",
        "classes": {"TransformerConfig": {"fields": fields}},
    }
