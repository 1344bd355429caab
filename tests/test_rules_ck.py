"""CK rules (checkpoint save time, disk peak, broken save modes): failing and passing cases beyond the documented
examples. The checkpoint estimate itself is tested in test_estimate.py."""

from sapo_toolkit.linter.rules import all_rules
from sapo_toolkit.linter.rules.ck003_broken_save_mode import broken_modes

from .helpers import REPO, contexts

RECIPE_30B = REPO / "recipes" / "qwen3-30b-a3b-sapo.yaml"
GB = 10**9


def test_ck001_slow_storage_and_weight_only_advice():
    ctx = contexts(RECIPE_30B, resources={"write_gib_per_s": 0.05})["DEVICE=npu,RECOMPUTE=full"]

    findings = list(all_rules()["CK001"].check(ctx))
    # 56.9 GiB at 0.05 GiB/s = 1137 s > 600 s
    assert len(findings) == 1
    assert "rank 0 writing the 57 GiB of HF weights at 0.05 GiB/s per writing rank exceeds the 600 s" in findings[0].message
    assert "(assumed)" not in findings[0].message


def test_ck002_counts_two_full_checkpoints(lint_text):
    found = lint_text(
        "model: {path: Qwen/Qwen3-32B}\nhardware: {accelerator: nvidia-h100}\noverrides:\n"
        "  algorithm.adv_estimator: grpo\n  trainer.nnodes: 2\n  trainer.save_freq: 10\n"
        "  trainer.max_actor_ckpt_to_keep: 1\n  actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 8\n")
    ck = [d for d in found if d.code == "CK002"]
    # 32,762,123,264 params * 14 B = 458.7 GB per full checkpoint; two = 917.3 GB = 854 GiB < 1024 GiB: silent
    assert not ck, ck


def test_ck003_table():
    assert [b.mode for b in broken_modes("0.8.0", "0.15.1", async_save=True, saves_model=True, vanilla_mbridge=False)] == ["async_save"]
    assert not broken_modes("0.9.1", "0.15.1", async_save=True, saves_model=True, vanilla_mbridge=True)
    assert [b.mode for b in broken_modes("0.7.2", "0.15.1", async_save=False, saves_model=True, vanilla_mbridge=True)] == [
        "mbridge_save_weights"]
    assert not broken_modes("0.7.2", "git-main", async_save=False, saves_model=True, vanilla_mbridge=True)
    assert not broken_modes("0.7.2", "0.15.1", async_save=False, saves_model=False, vanilla_mbridge=True)


def test_ck003_needs_saves(lint_text):
    found = lint_text('verl: "0.8.0"\noverrides:\n  actor_rollout_ref.actor.checkpoint.async_save: true\n')
    assert not [d for d in found if d.code == "CK003"]
