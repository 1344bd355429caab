"""PF rules (performance): failing and passing cases beyond the documented examples."""

from .helpers import DYNAMIC, STATIC, body, only


# PF001
def test_pf001_zero_workers_is_one_process(lint_text):
    text = body(DYNAMIC, "data.filter_overlong_prompts: true", "data.filter_overlong_prompts_workers: 0")
    assert only(lint_text(text), "PF001")
    assert not only(lint_text(body(DYNAMIC, "data.filter_overlong_prompts_workers: 1")), "PF001")  # filtering off


# PF002
def test_pf002_needs_the_ref_to_run(lint_text):
    text = body(DYNAMIC, "actor_rollout_ref.ref.log_prob_use_dynamic_bsz: false")
    assert not only(lint_text(text), "PF002")
    assert only(lint_text(text + "  actor_rollout_ref.actor.use_kl_loss: true\n"), "PF002")


def test_pf002_ref_dynamic_actor_static(lint_text):
    text = body(
        STATIC, "actor_rollout_ref.actor.use_kl_loss: true", "actor_rollout_ref.ref.log_prob_use_dynamic_bsz: true"
    )
    found = only(lint_text(text), "PF002")
    assert found and "on for the ref log-prob" in found[0].message


# PF003
def test_pf003_reports_each_micro_batch_of_one(lint_text):
    found = only(lint_text(STATIC), "PF003")
    assert len(found) == 2 and all(d.severity.name.lower() == "info" for d in found)
    text = body(
        STATIC,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 4",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 8",
    )
    assert not only(lint_text(text), "PF003")


# PF004 (HCCL environment ranges; the env comes from the recipe and its variant)
def test_pf004_variant_env_is_checked_and_names_its_variant(lint_text):
    body = (
        'overrides: {}\nenv: {HCCL_CONNECT_TIMEOUT: "1800"}\nvariants:\n  device:\n'
        '    npu: {env: {HCCL_EXEC_TIMEOUT: "3600", HCCL_OP_EXPANSION_MODE: AIV}}\n    gpu: {}\n'
    )
    (found,) = [d for d in lint_text(body) if d.code == "PF004"]
    assert found.variant == "DEVICE=npu" and "1091" in found.message


def test_pf004_non_integer_and_in_range_values(lint_text):
    found = [
        d
        for d in lint_text('overrides: {}\nenv: {HCCL_BUFFSIZE: "200MB", HCCL_RDMA_TIMEOUT: "20"}\n')
        if d.code == "PF004"
    ]
    assert [d.message for d in found] == ["HCCL_BUFFSIZE='200MB' is not an integer"]
