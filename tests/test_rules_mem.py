"""MEM rules (estimated device and host memory against the hardware): failing and passing cases beyond the
documented examples. The estimate itself is tested in test_estimate.py."""

from sapo_toolkit.linter.estimate.from_context import estimate_for
from sapo_toolkit.linter.rules import all_rules

from .helpers import REPO, contexts

RECIPE_30B = REPO / "recipes" / "qwen3-30b-a3b-sapo.yaml"


def test_mem001_warns_between_90_percent_and_hbm(lint_text):
    found = lint_text(
        "hardware: {accelerator: nvidia-h100}\noverrides:\n  algorithm.adv_estimator: grpo\n"
        "  actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2\n"
        "  actor_rollout_ref.rollout.gpu_memory_utilization: 0.5\n")
    # Qwen3-8B on 8 x H100, TP2 (P = 4,095,521,792 per rank, dp 4); the device reports 79.11 GiB.
    # Step 1's rollout: 2P + 4P + the fp32 master 4P / dp 4 = 7P (26.7 GiB) + 0.5 * 79.11 GiB + 1 GiB = 67.3 GiB,
    # 85%: fine. From step 2 on Adam's moments are there: 9P = 34.3 GiB + 39.6 GiB + 1 GiB = 74.9 GiB, 95%
    mem = [d for d in found if d.code == "MEM001"]
    assert len(mem) == 1 and mem[0].severity.value == "warning", mem
    assert mem[0].message.startswith("rollout phase from step 2 on (Adam's moments exist): estimated 74.9 GiB per "
                                     "device is over 90% of the 79.11 GiB the runtime reports for nvidia-h100 "
                                     "(80 GiB nominal)"), mem[0].message


def test_mem001_silent_without_accelerator(lint_text):
    found = lint_text("overrides:\n  actor_rollout_ref.rollout.gpu_memory_utilization: 0.99\n")
    assert not [d for d in found if d.code.startswith("MEM")]


def test_mem002_stated_ram_is_an_error():
    ctx = contexts(RECIPE_30B, resources={"host_ram_gib": 256})["DEVICE=npu,RECOMPUTE=full"]
    e = estimate_for(ctx)
    # per rank 30,570,504,192 B offloaded Adam state + rollout weights asleep 30,532,122,624*2/4 = 15,266,061,312
    # -> 45,836,565,504 B; x8 ranks = 366,692,524,032 B = 341.5 GiB > 256 GiB
    assert e.host_peak_per_node == 8 * (30_570_504_192 + 15_266_061_312)

    findings = list(all_rules()["MEM002"].check(ctx))
    assert len(findings) == 1 and findings[0].severity is None  # the rule's own severity: error
    assert "exceeds the node's 256 GiB;" in findings[0].message
