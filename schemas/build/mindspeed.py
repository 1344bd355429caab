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

from .layout import CONSUMER_FORMAT
from .mindspeed_arguments import FEATURES_DIR, MINDSPEED_ARGUMENTS, Transcribed

MINDSPEED_REPO = "github Ascend/MindSpeed"
MINDSPEED_VERSION = "git-master"


# MindSpeed-Bridge's Qwen3.5 model-config switches (see the module docstring), in the same class: on NPU they reach
# the same patched `TransformerConfig`.
MINDSPEED_BRIDGE_SOURCE = (
    "Ascend/MindSpeed-Bridge master, mindspeed_bridge/models/qwen_vl/modelling_qwen3_vl/"
    "gated_delta_net.py and its Qwen3.5 recipes (names transcribed; not in the source index)"
)
MINDSPEED_BRIDGE_FIELDS = ("use_ascend_gdn", "use_triton_gdn")


def _field(arg: Transcribed) -> dict:
    entry: dict = {"type": arg.type, "source": f"{FEATURES_DIR}{arg.path}@{arg.commit}"}
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
