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
    # HF weights 2 B * 30,532,122,624 = 61,064,245,248 B = 56.9 GiB (61.1 GB); at 0.05 GiB/s 1137 s > 600 s.
    # Megatron-Bridge (vanilla_mbridge=False, the default) writes them from rank 0 alone.
    assert len(findings) == 1
    message = findings[0].message
    assert message.startswith(
        "checkpoint save: ~1137 s of 56.9 GiB (61.1 GB) of HF weights per writing rank: rank 0 alone writes the HF "
        "weights (Megatron-Bridge `save_hf_weights`: the other ranks only feed the gather) at 0.05 GiB/s per writing "
        "rank exceeds the 600 s"
    ), message
    assert "(assumed)" not in message


def test_ck001_names_vanilla_mbridge_as_the_writer(tmp_path):
    path = tmp_path / "vanilla.yaml"
    path.write_text(
        RECIPE_30B.read_text().replace(
            "  actor_rollout_ref.actor.megatron.use_distributed_optimizer: true\n",
            "  actor_rollout_ref.actor.megatron.use_distributed_optimizer: true\n"
            "  actor_rollout_ref.actor.megatron.vanilla_mbridge: true\n",
        )
    )
    findings = list(
        all_rules()["CK001"].check(contexts(path, resources={"write_gib_per_s": 0.05})["DEVICE=npu,RECOMPUTE=full"])
    )
    assert (
        len(findings) == 1
        and "rank 0 alone writes the HF weights (vanilla mbridge `save_weights`)" in findings[0].message
    )


def test_ck002_counts_two_full_checkpoints(lint_text):
    found = lint_text(
        "model: {path: Qwen/Qwen3-32B}\nhardware: {accelerator: nvidia-h100}\noverrides:\n"
        "  algorithm.adv_estimator: grpo\n  trainer.nnodes: 2\n  trainer.save_freq: 10\n"
        "  trainer.max_actor_ckpt_to_keep: 1\n  actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 8\n"
    )
    ck = [d for d in found if d.code == "CK002"]
    # 32,762,123,264 params * 14 B = 458.7 GB per full checkpoint; two = 917.3 GB = 854 GiB < 1024 GiB: silent
    assert not ck, ck


def test_ck003_table():
    assert [
        b.mode for b in broken_modes("0.8.0", "0.15.1", async_save=True, saves_model=True, vanilla_mbridge=False)
    ] == ["async_save"]
    assert not broken_modes("0.9.1", "0.15.1", async_save=True, saves_model=True, vanilla_mbridge=True)
    assert [
        b.mode for b in broken_modes("0.7.0", "0.15.1", async_save=False, saves_model=True, vanilla_mbridge=True)
    ] == ["mbridge_save_weights"]
    assert not broken_modes("0.7.0", "git-main", async_save=False, saves_model=True, vanilla_mbridge=True)
    assert not broken_modes("0.7.0", "0.15.1", async_save=False, saves_model=False, vanilla_mbridge=True)
    # verl 0.7.1 filters save_weights's arguments by signature; 0.7.0's development trees do not
    assert not broken_modes("0.7.1", "0.15.1", async_save=False, saves_model=True, vanilla_mbridge=True)
    assert broken_modes("0.7.0.dev", "0.15.1", async_save=False, saves_model=True, vanilla_mbridge=True)


def test_ck003_needs_saves(lint_text):
    found = lint_text('verl: "0.8.0"\noverrides:\n  actor_rollout_ref.actor.checkpoint.async_save: true\n')
    assert not [d for d in found if d.code == "CK003"]


def test_ck002_gives_gib_and_gb():
    ctx = contexts(RECIPE_30B, resources={"disk_budget_gib": 100})["DEVICE=npu,RECOMPUTE=full"]
    (finding,) = all_rules()["CK002"].check(ctx)
    # two weight-only checkpoints: 4 B * 30,532,122,624 = 122,128,490,496 B = 113.7 GiB (122 GB) > 100 GiB;
    # one is 61,064,245,248 B = 56.9 GiB (61 GB)
    assert finding.message.startswith(
        "peak checkpoint disk use ~114 GiB (122 GB; two checkpoints of 57 GiB (61 GB), "
    ), finding.message
