"""The transcribed MindSpeed consumer snapshot (schemas/build/mindspeed.py, its data in mindspeed_arguments.py) is what
is committed, and every field says where it was transcribed from."""

from __future__ import annotations

import json
import re
from pathlib import Path

from sapo_toolkit.linter.schema import DEFAULT_MINDSPEED, consumer_versions, load_consumer
from sapo_toolkit.schemas.build.layout import snapshot_text
from sapo_toolkit.schemas.build.mindspeed import MINDSPEED_ARGUMENTS, mindspeed_snapshot

COMMITTED = Path(__file__).resolve().parents[1] / "schemas" / "consumers" / f"mindspeed-{DEFAULT_MINDSPEED}.json"


def test_committed_snapshot_is_the_transcription():
    assert COMMITTED.read_text(encoding="utf-8") == snapshot_text(mindspeed_snapshot())


def test_every_mindspeed_field_names_its_module_and_commit():
    fields = json.loads(COMMITTED.read_text(encoding="utf-8"))["classes"]["TransformerConfig"]["fields"]
    for name, entry in fields.items():
        if entry["library"] == "MindSpeed":
            assert re.fullmatch(r"mindspeed/features_manager/\S+\.py@[0-9a-f]{40}", entry["source"]), name
        else:
            assert entry["library"] == "MindSpeed-Bridge" and "MindSpeed-Bridge" in entry["source"], name


def test_fields_verl_npu_scripts_pass_are_in_the_snapshot():
    # grpo_trainer/run_qwen3_5_122b_a10b_megatron.sh and ascend_extras/.../run_qwen3_5_122b_a10b_32k_megatron.sh
    accepted = load_consumer("mindspeed", DEFAULT_MINDSPEED).accepts("TransformerConfig")
    assert {
        "use_flash_attn",
        "use_fused_rmsnorm",
        "use_fused_swiglu",
        "use_naive_l2norm",
        "context_parallel_algo",
        "use_triton_gdn",
        "use_ascend_gdn",
    } <= accepted
    assert "use_flash_atn" not in accepted


def test_every_feature_module_argument_is_accepted_on_npu():
    # one from each of moe/fb_overlap.py, pipeline_parallel/chimera_feature.py, memory/smart_swap.py,
    # optimizer/swap_optimizer_feature.py: none is a megatron-core field, so only the MindSpeed list accepts them
    accepted = load_consumer("mindspeed", DEFAULT_MINDSPEED).accepts("TransformerConfig")
    assert {"moe_fb_overlap", "schedules_method", "smart_swap", "swap_optimizer"} <= accepted
    assert "swap_optimiser" not in accepted
    transcribed = [a.name for a in MINDSPEED_ARGUMENTS]
    assert len(transcribed) == len(set(transcribed))  # a repeated name would silently replace the first entry
    fields = json.loads(COMMITTED.read_text(encoding="utf-8"))["classes"]["TransformerConfig"]["fields"]
    assert {n for n, e in fields.items() if e["library"] == "MindSpeed"} == set(transcribed)
    assert len(transcribed) >= 150  # 71 feature modules; a shorter list lost entries


def test_mindspeed_is_not_a_megatron_core_version():
    assert consumer_versions("mindspeed") == (DEFAULT_MINDSPEED,)
    assert all(v[0].isdigit() for v in consumer_versions("megatron-core"))
