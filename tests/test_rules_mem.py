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
        "  actor_rollout_ref.rollout.gpu_memory_utilization: 0.5\n"
    )
    # Qwen3-8B on 8 x H100, TP2 (P = 4,095,521,792 per rank, dp 4); the device reports 79.11 GiB.
    # Step 1's rollout: 2P + 4P + the fp32 master 4P / dp 4 = 7P (26.7 GiB) + 0.5 * 79.11 GiB + 1 GiB = 67.3 GiB,
    # 85%: fine. From step 2 on Adam's moments are there: 9P = 34.3 GiB + 39.6 GiB + 1 GiB = 74.9 GiB, 95%
    mem = [d for d in found if d.code == "MEM001"]
    assert len(mem) == 1 and mem[0].severity.value == "warning", mem
    assert mem[0].message.startswith(
        "rollout phase from step 2 on (Adam's moments exist): estimated 74.9 GiB per "
        "device is over 90% of the 79.11 GiB the runtime reports for nvidia-h100 "
        "(80 GiB nominal)"
    ), mem[0].message


def test_mem001_on_an_assumed_accelerator_says_so(lint_text):
    # Nothing names the device: GPU, assumed nvidia-h100 (79.11 GiB). Qwen3-8B on 8 devices, TP1, P = 8.19e9 per
    # rank: step 1's rollout holds weights 2P, fp32 grads 4P and the fp32 master 4P / dp 8 = 6.5P (49.6 GiB) plus
    # 0.5 x 79.11 GiB of rollout and 1 GiB of runtime = 90.2 GiB: over the H100. A B200 (178.4 GiB) would hold it
    # (49.6 + 89.2 + 1 = 139.8 GiB; 147 GiB from step 2 on), so the verdict rests on the assumption: a warning.
    found = lint_text(
        "overrides:\n  algorithm.adv_estimator: grpo\n  actor_rollout_ref.rollout.gpu_memory_utilization: 0.5\n"
    )
    mem = [d for d in found if d.code == "MEM001"]
    assert len(mem) == 1 and mem[0].severity.value == "warning", mem
    assert ("nvidia-h100 is assumed (none is named), hence a warning: name yours with --accelerator") in mem[0].message
    # The same plan on a named H100 is an error, and says nothing of an assumption.
    named = [
        d
        for d in lint_text(
            "hardware: {accelerator: H100}\noverrides:\n  algorithm.adv_estimator: grpo\n"
            "  actor_rollout_ref.rollout.gpu_memory_utilization: 0.5\n"
        )
        if d.code == "MEM001"
    ]
    assert len(named) == 1 and named[0].severity.value == "error" and "assumed" not in named[0].message


def test_mem001_on_an_assumed_accelerator_is_an_error_when_no_device_of_its_kind_fits(lint_text):
    # trainer.device=npu: assumed ascend-910b3. Qwen3-8B with TP1 (49.6 GiB of weights, grads and master copy in
    # step 1's rollout, as above) and 0.99 of the HBM for the rollout exceeds every NPU in the table (the largest,
    # ascend-a3, reports 61.27 GiB): an error whichever NPU it is.
    found = lint_text(
        "overrides:\n  algorithm.adv_estimator: grpo\n  trainer.device: npu\n"
        "  actor_rollout_ref.rollout.gpu_memory_utilization: 0.99\n"
    )
    # The rollout and the update need different changes: two findings, both errors, in one run.
    mem = [d for d in found if d.code == "MEM001"]
    assert [d.message.split(" ", 1)[0] for d in mem] == ["train", "rollout"], mem
    for d in mem:
        assert d.severity.value == "error", d
        assert (
            "ascend-910b3 is assumed (none is named), but no accelerator of its kind that sapo-lint knows" in d.message
        )
        assert "(ascend-a3: 61.27 GiB)" in d.message


def test_an_unknown_accelerator_skips_mem001_only(lint_text):
    # RF006 names what is skipped; the host-RAM and checkpoint checks do not need the device's memory and still run.
    body = (
        "hardware: {accelerator: tpu-v5, host_ram_gib: 64}\noverrides:\n  algorithm.adv_estimator: grpo\n"
        "  actor_rollout_ref.rollout.gpu_memory_utilization: 0.99\n"
        "  actor_rollout_ref.actor.megatron.param_offload: true\n"
        "  actor_rollout_ref.actor.megatron.optimizer_offload: true\n"
    )
    found = lint_text(body)
    codes = {d.code for d in found}
    assert "RF006" in codes and "MEM001" not in codes and "MEM002" in codes, codes
    rf006 = next(d for d in found if d.code == "RF006")
    assert "known: ascend-910b1" in rf006.message and "MEM001 is skipped" in rf006.message
    assert "CK001, CK002 and MEM002 still run" in rf006.message


def test_mem002_stated_ram_is_an_error():
    ctx = contexts(RECIPE_30B, resources={"host_ram_gib": 256})["DEVICE=npu,RECOMPUTE=full"]
    e = estimate_for(ctx)
    # per rank 30,570,504,192 B offloaded Adam state + rollout weights asleep 30,532,122,624*2/4 = 15,266,061,312
    # -> 45,836,565,504 B; x8 ranks = 366,692,524,032 B = 341.5 GiB > 256 GiB
    assert e.host_peak_per_node == 8 * (30_570_504_192 + 15_266_061_312)

    findings = list(all_rules()["MEM002"].check(ctx))
    assert len(findings) == 1 and findings[0].severity is None  # the rule's own severity: error
    assert "exceeds the node's 256 GiB;" in findings[0].message


def test_no_memory_or_checkpoint_finding_on_a_layout_the_world_does_not_divide(lint_text):
    # The assumed-H100 plan above is over memory; with CP3 the 8 devices hold no integer dp, verl stops at start-up
    # (TP001), and an estimate with dp rounded describes no run: TP001, and one info saying memory was not checked.
    body = (
        "overrides:\n  algorithm.adv_estimator: grpo\n  actor_rollout_ref.rollout.gpu_memory_utilization: 0.5\n"
        "  trainer.save_freq: 1\n"
    )
    assert "MEM001" in {d.code for d in lint_text(body)}
    found = lint_text(body + "  actor_rollout_ref.actor.megatron.context_parallel_size: 3\n")
    estimated = [d for d in found if d.code.startswith(("MEM", "CK"))]
    assert "TP001" in {d.code for d in found}, found
    assert [(d.code, d.severity.value) for d in estimated] == [("MEM001", "info")], estimated
    assert estimated[0].message.startswith(
        "memory not checked: the world size 8 does not divide the actor's parallel layout (TP001/TP002)"
    ), estimated[0].message
