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
one stored version of its feature module in github Ascend/MindSpeed (path and commit per argument).  The commits come
from the master / core_r0.18.0 line of 2025-2026 (gmm.py there refers to Megatron 0.18); they are not one release.
Every stored feature module's ``register_args`` is included, not only the features ``create_features_list``
(mindspeed/features_manager/__init__.py) switches on in one version: that list changes from version to version, and
``repatch`` sets keys on MindSpeed's full argument namespace.  Where two modules register the same argument
(``--schedules-method`` in chimera_feature.py and dualpipev_feature.py, ``--moe-fb-overlap`` in moe/ and
pipeline_parallel/), it is listed once, under the first module by path.  Arguments a module registers only by
widening the choices of a Megatron-LM argument (``--fp8-format``, ``--tokenizer-type``) are Megatron's, not listed.
Modules that ``create_features_list`` imports but the source index does not hold (context_parallel_kv_cache.py,
fusions/grouped_matmul.py, moe/balanced_moe.py, distributed/layerzero.py, ...) are not transcribed.
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
    Transcribed(
        "auto_settings",
        "bool",
        "False",
        "auto_settings/auto_settings_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "auto_settings_work_dir",
        "str",
        "os.getcwd()",
        "auto_settings/auto_settings_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "auto_settings_ranks",
        "int",
        "8",
        "auto_settings/auto_settings_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "auto_settings_log_level",
        "str",
        "'info'",
        "auto_settings/auto_settings_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "target_nnodes",
        "int",
        "1",
        "auto_settings/auto_settings_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "nnodes", "int", "1", "auto_settings/auto_settings_feature.py", "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5"
    ),
    Transcribed(
        "nproc_per_node",
        "int",
        "1",
        "auto_settings/auto_settings_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "node_rank", "int", "0", "auto_settings/auto_settings_feature.py", "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5"
    ),
    Transcribed(
        "auto_settings_type",
        "str",
        "'white'",
        "auto_settings/auto_settings_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "prof_file", "str", None, "auto_settings/auto_settings_feature.py", "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5"
    ),
    Transcribed(
        "master_addr",
        "str",
        "'127.0.0.1'",
        "auto_settings/auto_settings_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "master_port",
        "int",
        "29500",
        "auto_settings/auto_settings_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "automated_pipeline",
        "bool",
        "False",
        "auto_settings/auto_settings_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "automated_pipeline_perf",
        "bool",
        "False",
        "auto_settings/auto_settings_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "recompute_module_list",
        "str",
        None,
        "auto_settings/auto_settings_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "jit_compile",
        "bool",
        "False",
        "auto_settings/auto_settings_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "use_batch_invariant_ops",
        "bool",
        "False",
        "batch_invariant/batch_invariant.py",
        "2863e271ef5055e27bd43b862f7dcd190f977e0c",
    ),
    Transcribed(
        "use_flash_attn_npu_batch_invariant",
        "bool",
        "False",
        "batch_invariant/batch_invariant.py",
        "2863e271ef5055e27bd43b862f7dcd190f977e0c",
    ),
    Transcribed("compress_activation", "str", "''", "compress/compress.py", "102c3f3643836a621f6ddd82290a70129af2c6cf"),
    Transcribed(
        "compress_optimizer", "bool", "False", "compress/compress.py", "102c3f3643836a621f6ddd82290a70129af2c6cf"
    ),
    Transcribed(
        "compress_dense",
        "str",
        "'disable'",
        "compress_dense/compress_dense.py",
        "7df73c77fa9cd587d59f848da07dcf2f69b61b23",
    ),
    Transcribed(
        "attention_mask_on_cpu",
        "bool",
        "False",
        "context_parallel/adaptive_context_parallel.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "adaptive_cp_without_coarse",
        "bool",
        "False",
        "context_parallel/adaptive_context_parallel.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "adaptive_cp_dynamic_attn_mask",
        "bool",
        "False",
        "context_parallel/adaptive_context_parallel.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "adaptive_cp_only_reschedule",
        "bool",
        "False",
        "context_parallel/adaptive_context_parallel.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "adaptive_cp_manually_set_mask_list",
        "bool",
        "False",
        "context_parallel/adaptive_context_parallel.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "context_parallel_algo",
        "str",
        "'megatron_cp_algo'",
        "context_parallel/context_parallel_feature.py",
        "010c43dfee817fec6e4ed268721c96807d63ff65",
    ),
    Transcribed(
        "cp_window_size",
        "int",
        "1",
        "context_parallel/context_parallel_feature.py",
        "010c43dfee817fec6e4ed268721c96807d63ff65",
    ),
    Transcribed(
        "attention_mask_type",
        "str",
        "'causal'",
        "context_parallel/context_parallel_feature.py",
        "010c43dfee817fec6e4ed268721c96807d63ff65",
    ),
    Transcribed(
        "use_cp_send_recv_overlap",
        "bool",
        "False",
        "context_parallel/context_parallel_feature.py",
        "010c43dfee817fec6e4ed268721c96807d63ff65",
    ),
    Transcribed(
        "use_fused_ring_attention_update",
        "bool",
        "False",
        "context_parallel/context_parallel_feature.py",
        "010c43dfee817fec6e4ed268721c96807d63ff65",
    ),
    Transcribed(
        "megatron_cp_in_bnsd",
        "bool",
        "False",
        "context_parallel/context_parallel_feature.py",
        "010c43dfee817fec6e4ed268721c96807d63ff65",
    ),
    Transcribed(
        "use_naive_l2norm",
        "bool",
        "False",
        "context_parallel/gated_delta_net.py",
        "7953c49bf4d8f41700c0301d1bc780d354a877f7",
    ),
    Transcribed(
        "ulysses_degree_in_cp",
        "int",
        None,
        "context_parallel/ulysses_context_parallel.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "use_megatron_fsdp",
        "bool",
        "False",
        "custom_fsdp/custom_fsdp_feature.py",
        "5201b3645a41502c7e959d332a382460b065b125",
    ),
    Transcribed(
        "use_custom_fsdp",
        "bool",
        "False",
        "custom_fsdp/custom_fsdp_feature.py",
        "5201b3645a41502c7e959d332a382460b065b125",
    ),
    Transcribed(
        "async_log_allreduce",
        "bool",
        "False",
        "data_parallel/async_log_allreduce.py",
        "1881e01a996074b30d424349237d55a2c608e6b7",
    ),
    Transcribed(
        "disable_gloo_group",
        "bool",
        "False",
        "disable_gloo_group/disable_gloo_group_feature.py",
        "e5db331b7433dcfa749d0580bc6a0ddc65c7fb30",
    ),
    Transcribed(
        "hccl_slice_size",
        "int",
        "10 * 1024 * 1024",
        "disable_gloo_group/disable_gloo_group_feature.py",
        "e5db331b7433dcfa749d0580bc6a0ddc65c7fb30",
    ),
    Transcribed(
        "dist_train", "bool", "False", "dist_train/dist_train_feature.py", "f47acfffd8cdd95213b963ec7e45fc58bc64f364"
    ),
    Transcribed(
        "param_and_grad_buffer_pad",
        "int",
        None,
        "distributed/buffer_pad.py",
        "049ff1af8c5f02f5fa0eb3d5429b92cc579717a9",
    ),
    Transcribed(
        "fsdp2_config_path",
        "str",
        None,
        "distributed/torch_fully_sharded_data_parallel.py",
        "93c45456c7044bacddebc5072316c01006c938f9",
    ),
    Transcribed(
        "cache_get_batch_config",
        "bool",
        "False",
        "functional/cache_get_batch_config.py",
        "d8307bcea50089fb470603a619f7f4974861d612",
    ),
    Transcribed(
        "npu_datadump", "bool", "False", "functional/npu_datadump.py", "5e05cbd7b827af446063d0385f4b2ba7e5269801"
    ),
    Transcribed(
        "npu_deterministic",
        "bool",
        "False",
        "functional/npu_deterministic.py",
        "8bfd51c210466f2fd45ab64c9f68556225b66ee5",
    ),
    Transcribed(
        "profile_level", "str", "'level0'", "functional/profile.py", "069a9ca5d389a336ec372725975defee518ca6ae"
    ),
    Transcribed(
        "profile_with_cpu", "bool", "False", "functional/profile.py", "069a9ca5d389a336ec372725975defee518ca6ae"
    ),
    Transcribed(
        "profile_with_stack", "bool", "False", "functional/profile.py", "069a9ca5d389a336ec372725975defee518ca6ae"
    ),
    Transcribed(
        "profile_with_memory", "bool", "False", "functional/profile.py", "069a9ca5d389a336ec372725975defee518ca6ae"
    ),
    Transcribed(
        "profile_record_shapes", "bool", "False", "functional/profile.py", "069a9ca5d389a336ec372725975defee518ca6ae"
    ),
    Transcribed(
        "profile_save_path",
        "str",
        "'./profile_dir'",
        "functional/profile.py",
        "069a9ca5d389a336ec372725975defee518ca6ae",
    ),
    Transcribed(
        "use_fused_moe_token_permute_and_unpermute",
        "bool",
        "False",
        "fusions/fused_moe_permute.py",
        "16472ac6334e79087253ab777c42a44c547d7e8c",
    ),
    Transcribed(
        "use_fused_rotary_pos_emb", "bool", "False", "fusions/fused_rope.py", "41283d098590a78b9c20ad31801177d269a1b4e7"
    ),
    Transcribed(
        "hccl_group_buffer_adaptive",
        "bool",
        "False",
        "hccl_buffer/hccl_buffer_adaptive.py",
        "6aaf96e204b573958240306239dcc488c40e2992",
    ),
    Transcribed(
        "hccl_ep_group_buffer_adaptive_factor",
        "float",
        "-1.0",
        "hccl_buffer/hccl_buffer_adaptive.py",
        "6aaf96e204b573958240306239dcc488c40e2992",
    ),
    Transcribed(
        "use_fused_rmsnorm",
        "bool",
        "False",
        "megatron_basic/megatron_basic.py",
        "2436b58a499e5245b395cb7c24eadda0f6fe544d",
    ),
    Transcribed(
        "use_fused_swiglu",
        "bool",
        "False",
        "megatron_basic/megatron_basic.py",
        "2436b58a499e5245b395cb7c24eadda0f6fe544d",
    ),
    Transcribed(
        "optimizer_selection",
        "str",
        "'fused_adamw'",
        "megatron_basic/requirements_basic.py",
        "8abea92e4e88ddbf1cd7d54f41aeed214d0538b9",
    ),
    Transcribed(
        "optimization_level",
        "int",
        "2",
        "megatron_basic/requirements_basic.py",
        "8abea92e4e88ddbf1cd7d54f41aeed214d0538b9",
    ),
    Transcribed(
        "use_gmm_fp8",
        "bool",
        "True",
        "megatron_basic/transformer_engine_basic.py",
        "9eb0e3c3d4b49112dfe1d0f6e6a791929fb72d27",
    ),
    Transcribed(
        "te_comparison_with_cpu",
        "bool",
        "False",
        "megatron_basic/transformer_engine_basic.py",
        "9eb0e3c3d4b49112dfe1d0f6e6a791929fb72d27",
    ),
    Transcribed(
        "te_comparison_with_bf16",
        "bool",
        "False",
        "megatron_basic/transformer_engine_basic.py",
        "9eb0e3c3d4b49112dfe1d0f6e6a791929fb72d27",
    ),
    Transcribed(
        "te_gmm_mode",
        "str",
        "'compatible'",
        "megatron_basic/transformer_engine_basic.py",
        "9eb0e3c3d4b49112dfe1d0f6e6a791929fb72d27",
    ),
    Transcribed(
        "reuse_fp32_param", "bool", "False", "memory/reuse_fp32_param.py", "4213c91313fe4de6da12794109515f6275572750"
    ),
    Transcribed("smart_swap", "bool", "False", "memory/smart_swap.py", "04226f2f84f44b7a4199c9c8f24b13db585b776b"),
    Transcribed("swap_delay", "int", "10", "memory/smart_swap.py", "04226f2f84f44b7a4199c9c8f24b13db585b776b"),
    Transcribed(
        "swap_attention", "bool", "False", "memory/swap_attention.py", "0e5976c7e6a2dddc77919bb4eeff9bfced37d780"
    ),
    Transcribed(
        "swap_modules",
        "str",
        "'input_norm,self_attention,post_attention_norm'",
        "memory/swap_attention.py",
        "0e5976c7e6a2dddc77919bb4eeff9bfced37d780",
    ),
    Transcribed(
        "swap_layer_input", "bool", "False", "memory/swap_layer_input.py", "bd0935498c539e6e09729a26b02557b8cb607db2"
    ),
    Transcribed("moe_fb_overlap", "bool", "False", "moe/fb_overlap.py", "ccf1139023a4fce157921f29091fd0160524de3f"),
    Transcribed(
        "moe_unperm2_mem_optim_swap", "bool", "False", "moe/fb_overlap.py", "ccf1139023a4fce157921f29091fd0160524de3f"
    ),
    Transcribed(
        "gemm_gradient_accumulation_fusion", "bool", "False", "moe/gmm.py", "049ff1af8c5f02f5fa0eb3d5429b92cc579717a9"
    ),
    Transcribed(
        "moe_allgather_overlap_comm",
        "bool",
        "False",
        "moe/moe_allgather_overlap.py",
        "9a41a7f0114337c59b7515d889b98b1edd1557b1",
    ),
    Transcribed(
        "moe_alltoall_overlap_comm",
        "bool",
        "False",
        "moe/moe_alltoall_overlap.py",
        "02321cc5292fc6a44ff6cf6edad07ff16ac6c578",
    ),
    Transcribed("fix_router", "bool", "False", "moe/moe_fix_router.py", "255be5014077de0c80659833798074b9f6df7daa"),
    Transcribed(
        "moe_npu_fast_ops", "bool", "True", "moe/moe_npu_fast_ops.py", "94bb30f1bdf86d3d67a772f4312970196b217816"
    ),
    Transcribed("moe_zerc", "bool", "False", "moe/moe_zerc_feature.py", "0d202f97dfa587f79813a3cb65897aa82d4e2b4f"),
    Transcribed(
        "moe_zero_memory", "str", "'disable'", "moe/moe_zero_memory.py", "02321cc5292fc6a44ff6cf6edad07ff16ac6c578"
    ),
    Transcribed(
        "moe_zero_memory_num_layers", "int", None, "moe/moe_zero_memory.py", "02321cc5292fc6a44ff6cf6edad07ff16ac6c578"
    ),
    Transcribed(
        "moe_router_score_reuse",
        "bool",
        "False",
        "moe/router_score_reuse.py",
        "53d65bb6e29824d365ebbb6fa3ff261f8142de32",
    ),
    Transcribed("n_shared_experts", "int", None, "moe/shared_expert.py", "02321cc5292fc6a44ff6cf6edad07ff16ac6c578"),
    Transcribed("moe_tp_extend_ep", "bool", "False", "moe/tp_extend_ep.py", "e6644e372ebc7143dd5d4a28d205554c3c49b8a9"),
    Transcribed(
        "moe_permutation_async_comm", "bool", "False", "moe/tp_extend_ep.py", "e6644e372ebc7143dd5d4a28d205554c3c49b8a9"
    ),
    Transcribed(
        "fp8_reuse_quantized_weight",
        "bool",
        "False",
        "npu_enhancement/npu_enhancement.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "ema_decay",
        "float",
        "0.9999",
        "optimizer/fused_ema_adamw_feature.py",
        "f4b2e9208f1e567545c61f37f233c6e7831c7748",
    ),
    Transcribed(
        "quant_states",
        "str",
        None,
        "optimizer/low_precision_optimizer_feature.py",
        "b780fce0ca28ca099e5ce88d565abe7ff6091645",
    ),
    Transcribed(
        "quant_grads",
        "bool",
        "False",
        "optimizer/low_precision_optimizer_feature.py",
        "b780fce0ca28ca099e5ce88d565abe7ff6091645",
    ),
    Transcribed(
        "apply_wd_to_qk_layernorm",
        "bool",
        "False",
        "optimizer/muon_optimizer_feature.py",
        "1f5feb86da9e6ccc6f8e981f5f0ac655a2d00ae5",
    ),
    Transcribed(
        "swap_optimizer",
        "bool",
        "False",
        "optimizer/swap_optimizer_feature.py",
        "198033ce4d01393980c84e920b62f571950a8f57",
    ),
    Transcribed(
        "swap_optimizer_times",
        "int",
        "16",
        "optimizer/swap_optimizer_feature.py",
        "198033ce4d01393980c84e920b62f571950a8f57",
    ),
    Transcribed(
        "virtual_optimizer", "list", None, "optimizer/virtual_optimizer.py", "52e4291ea87e881ade25f9cab69748ae8a3a0772"
    ),
    Transcribed(
        "schedules_method",
        "str",
        None,
        "pipeline_parallel/chimera_feature.py",
        "b82aa1bb50ca8c3d394cb351d153e0ccda34dad1",
    ),
    Transcribed(
        "virtual_data_parallel_size",
        "int",
        None,
        "pipeline_parallel/chimera_feature.py",
        "b82aa1bb50ca8c3d394cb351d153e0ccda34dad1",
    ),
    Transcribed(
        "chimera_decouple_bw",
        "bool",
        "False",
        "pipeline_parallel/chimera_feature.py",
        "b82aa1bb50ca8c3d394cb351d153e0ccda34dad1",
    ),
    Transcribed(
        "defer_p2p_send_wait",
        "bool",
        "True",
        "pipeline_parallel/defer_p2p_send_wait.py",
        "94bb30f1bdf86d3d67a772f4312970196b217816",
    ),
    Transcribed(
        "moe_unperm2_mem_optim",
        "bool",
        "False",
        "pipeline_parallel/fb_overlap_feature.py",
        "a6090e5b73ec129e73c77b87f7911cde23618ea6",
    ),
    Transcribed(
        "use_multiparameter_pipeline_model_parallel",
        "bool",
        "False",
        "pipeline_parallel/multi_parameter.py",
        "e5c0f935300329b1dc7e8d18d30113b53b81f360",
    ),
    Transcribed(
        "noop_layers", "str", None, "pipeline_parallel/noop_layers.py", "a40d2bf1193d5a022bc2abc99df7f31d9c7c1ea7"
    ),
    Transcribed(
        "optimize_send_recv_comm",
        "bool",
        "False",
        "pipeline_parallel/optimize_send_recv_comm.py",
        "52053a46efdad19b87b215b1328c7e9993933f13",
    ),
    Transcribed(
        "recompute_in_bubble",
        "bool",
        "False",
        "pipeline_parallel/ripipe_schedules_feature.py",
        "dac29004ab5ce0e7bb61c1e8bd58e1463bca317f",
    ),
    Transcribed(
        "recompute_in_advance",
        "bool",
        "False",
        "pipeline_parallel/ripipe_schedules_feature.py",
        "dac29004ab5ce0e7bb61c1e8bd58e1463bca317f",
    ),
    Transcribed(
        "pipeline_num_transformer_layers",
        "str",
        None,
        "pipeline_parallel/unaligned_pineline_feature.py",
        "395d396515cd092028aa2d441bddc648e3018c34",
    ),
    Transcribed(
        "variable_seq_lengths",
        "bool",
        "False",
        "pipeline_parallel/variable_seq_length.py",
        "4eddf14387de23a3b3d8ad65e411d081da3daa91",
    ),
    Transcribed("qat_scheme", "str", None, "qat/qat_quant_engine.py", "3971eb61c0d4c367b514a705b93e6a1ba0f53f9e"),
    Transcribed("aiqos", "bool", "False", "qos/qos_feature.py", "fecb7ed73f3f5fd7c3855e536067e01d768a5fc4"),
    Transcribed("aiqos_mode", "str", "'auto'", "qos/qos_feature.py", "fecb7ed73f3f5fd7c3855e536067e01d768a5fc4"),
    Transcribed("aiqos_schedule", "str", None, "qos/qos_feature.py", "fecb7ed73f3f5fd7c3855e536067e01d768a5fc4"),
    Transcribed(
        "recompute_activation_function",
        "bool",
        "False",
        "recompute/activation_function.py",
        "fbdde7859566ba4ad0d8c5ab7e38b75e9715bcae",
    ),
    Transcribed(
        "recompute_activation_function_num_layers",
        "int",
        None,
        "recompute/activation_function.py",
        "fbdde7859566ba4ad0d8c5ab7e38b75e9715bcae",
    ),
    Transcribed(
        "enable_recompute_layers_per_pp_rank",
        "bool",
        "False",
        "recompute/enable_recompute_layers_per_pp_rank.py",
        "2ca573cbd8aa003a4b450c1c04f99f1cbc317f1d",
    ),
    Transcribed(
        "recompute_norm", "bool", "False", "recompute/norm_function.py", "08f98b28f1c2367579a07ef5806f3f58baa4b620"
    ),
    Transcribed(
        "recompute_norm_num_layers",
        "int",
        None,
        "recompute/norm_function.py",
        "08f98b28f1c2367579a07ef5806f3f58baa4b620",
    ),
    Transcribed(
        "use_ascend_coc", "bool", "False", "tensor_parallel/locl_coc.py", "18ebaaffffe4c5756e5250727c4bc56df61ebb0a"
    ),
    Transcribed("coc_mode", "int", "-1", "tensor_parallel/locl_coc.py", "18ebaaffffe4c5756e5250727c4bc56df61ebb0a"),
    Transcribed(
        "coc_parallel_num", "int", "1", "tensor_parallel/locl_coc.py", "18ebaaffffe4c5756e5250727c4bc56df61ebb0a"
    ),
    Transcribed(
        "coc_fused_kernel", "bool", "False", "tensor_parallel/locl_coc.py", "18ebaaffffe4c5756e5250727c4bc56df61ebb0a"
    ),
    Transcribed(
        "use_ascend_mc2", "bool", "False", "tensor_parallel/mc2.py", "295e7ccee41f280da30632d00f6bc260f73b6ee5"
    ),
    Transcribed("tp_2d", "bool", "False", "tensor_parallel/tp_2d.py", "6c6ba08a8f82b7599080f39160f7301c36dd209c"),
    Transcribed("tp_x", "int", "1", "tensor_parallel/tp_2d.py", "6c6ba08a8f82b7599080f39160f7301c36dd209c"),
    Transcribed("tp_y", "int", "1", "tensor_parallel/tp_2d.py", "6c6ba08a8f82b7599080f39160f7301c36dd209c"),
    Transcribed(
        "enable_overlap_ag_with_matmul",
        "bool",
        "False",
        "tensor_parallel/tp_2d.py",
        "6c6ba08a8f82b7599080f39160f7301c36dd209c",
    ),
    Transcribed(
        "enable_overlap_matmul_with_rs",
        "bool",
        "False",
        "tensor_parallel/tp_2d.py",
        "6c6ba08a8f82b7599080f39160f7301c36dd209c",
    ),
    Transcribed(
        "enable_backward_overlap_ag_with_matmul",
        "bool",
        "False",
        "tensor_parallel/tp_2d.py",
        "6c6ba08a8f82b7599080f39160f7301c36dd209c",
    ),
    Transcribed(
        "unaligned_linear",
        "bool",
        "False",
        "tensor_parallel/unaligned_linear_feature.py",
        "17a6b8e5e07f0a5822702f4e55e5b7f2a03e41a8",
    ),
    Transcribed(
        "tokenizer_name_or_path",
        "str",
        None,
        "tokenizer/build_tokenizer.py",
        "e25b70b0521b4544c21db6f0d02544f7741c5146",
    ),
    Transcribed(
        "tokenizer_not_use_fast",
        "bool",
        "True",
        "tokenizer/build_tokenizer.py",
        "e25b70b0521b4544c21db6f0d02544f7741c5146",
    ),
    Transcribed(
        "use_dsa_absorb",
        "bool",
        "False",
        "transformer/experimental_attention_variant/dsa.py",
        "1c0773eb05e6bd303bdec29303747b59422c48c9",
    ),
    Transcribed(
        "use_fused_lightning_indexer",
        "bool",
        "False",
        "transformer/experimental_attention_variant/dsa.py",
        "1c0773eb05e6bd303bdec29303747b59422c48c9",
    ),
    Transcribed(
        "use_fused_sparse_flash_attention",
        "bool",
        "False",
        "transformer/experimental_attention_variant/dsa.py",
        "1c0773eb05e6bd303bdec29303747b59422c48c9",
    ),
    Transcribed(
        "use_fused_lightning_indexer_kl_loss",
        "bool",
        "False",
        "transformer/experimental_attention_variant/dsa.py",
        "1c0773eb05e6bd303bdec29303747b59422c48c9",
    ),
    Transcribed(
        "square_alibi_mask",
        "bool",
        "False",
        "transformer/flash_attention/alibi_feature.py",
        "3892059a008e66113c7fdb1ea2c144a1d56a3ff7",
    ),
    Transcribed(
        "fill_neg_inf",
        "bool",
        "False",
        "transformer/flash_attention/alibi_feature.py",
        "3892059a008e66113c7fdb1ea2c144a1d56a3ff7",
    ),
    Transcribed(
        "alibi_fusion_attn_type",
        "int",
        None,
        "transformer/flash_attention/alibi_feature.py",
        "3892059a008e66113c7fdb1ea2c144a1d56a3ff7",
    ),
    Transcribed(
        "alibi_diagonal_opposite",
        "bool",
        "False",
        "transformer/flash_attention/alibi_feature.py",
        "3892059a008e66113c7fdb1ea2c144a1d56a3ff7",
    ),
    Transcribed(
        "use_flash_attn",
        "bool",
        "False",
        "transformer/flash_attention/fusion_attention_v1_feature.py",
        "010c43dfee817fec6e4ed268721c96807d63ff65",
        "feature switch",
    ),
    Transcribed(
        "pre_tockens",
        "int",
        "65536",
        "transformer/flash_attention/fusion_attention_v1_feature.py",
        "010c43dfee817fec6e4ed268721c96807d63ff65",
    ),
    Transcribed(
        "next_tockens",
        "int",
        "0",
        "transformer/flash_attention/fusion_attention_v1_feature.py",
        "010c43dfee817fec6e4ed268721c96807d63ff65",
    ),
    Transcribed(
        "sparse_mode",
        "int",
        "0",
        "transformer/flash_attention/fusion_attention_v1_feature.py",
        "010c43dfee817fec6e4ed268721c96807d63ff65",
    ),
    Transcribed(
        "use_fusion_attn_v2",
        "bool",
        "False",
        "transformer/flash_attention/fusion_attention_v2_feature.py",
        "0a7d606afe7a16a1dd80c37a4d5e000e0f0e2db9",
    ),
    Transcribed(
        "reset_attention_mask",
        "bool",
        "False",
        "transformer/flash_attention/reset_attention_mask_feature.py",
        "0bda3e134e1d8185b229d201b030757cdcb3ac36",
        "feature switch",
    ),
    Transcribed(
        "multi_head_latent_attention",
        "bool",
        "False",
        "transformer/multi_head_latent_attention/mla_feature.py",
        "285cec1f6b9602f7f89083ab8f2974129f17b422",
    ),
    Transcribed(
        "qk_rope_head_dim",
        "int",
        None,
        "transformer/multi_head_latent_attention/mla_feature.py",
        "285cec1f6b9602f7f89083ab8f2974129f17b422",
    ),
    Transcribed(
        "qk_nope_head_dim",
        "int",
        None,
        "transformer/multi_head_latent_attention/mla_feature.py",
        "285cec1f6b9602f7f89083ab8f2974129f17b422",
    ),
    Transcribed(
        "hif8_input_margin", "int", "11", "transformer_engine/te_recipe.py", "9dec7d14495f82c16e4e19566c80a524b39fd023"
    ),
    Transcribed(
        "hif8_weight_margin", "int", "12", "transformer_engine/te_recipe.py", "9dec7d14495f82c16e4e19566c80a524b39fd023"
    ),
    Transcribed(
        "hif8_grad_margin", "int", "11", "transformer_engine/te_recipe.py", "9dec7d14495f82c16e4e19566c80a524b39fd023"
    ),
    Transcribed(
        "hif8_amax_collect_interval",
        "int",
        "5",
        "transformer_engine/te_recipe.py",
        "9dec7d14495f82c16e4e19566c80a524b39fd023",
    ),
    Transcribed(
        "hif8_scale_update_interval",
        "int",
        "10",
        "transformer_engine/te_recipe.py",
        "9dec7d14495f82c16e4e19566c80a524b39fd023",
    ),
    Transcribed(
        "hif8_amax_history_len",
        "int",
        "128",
        "transformer_engine/te_recipe.py",
        "9dec7d14495f82c16e4e19566c80a524b39fd023",
    ),
    Transcribed(
        "no_hif8_step_recovery",
        "bool",
        "False",
        "transformer_engine/te_recipe.py",
        "9dec7d14495f82c16e4e19566c80a524b39fd023",
    ),
)

# MindSpeed-Bridge's Qwen3.5 model-config switches (see the module docstring), in the same class: on NPU they reach
# the same patched `TransformerConfig`.
MINDSPEED_BRIDGE_SOURCE = (
    "Ascend/MindSpeed-Bridge master, mindspeed_bridge/models/qwen_vl/modelling_qwen3_vl/"
    "gated_delta_net.py and its Qwen3.5 recipes (names transcribed; not in the source index)"
)
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
    fields.update(
        {
            name: {"type": "bool", "library": "MindSpeed-Bridge", "source": MINDSPEED_BRIDGE_SOURCE}
            for name in MINDSPEED_BRIDGE_FIELDS
        }
    )
    return {
        "format": CONSUMER_FORMAT,
        "package": "mindspeed",
        "version": MINDSPEED_VERSION,
        "source": f"{MINDSPEED_REPO} feature modules, transcribed (not on PyPI); each field names its module@commit",
        "classes": {"TransformerConfig": {"fields": fields}},
    }
