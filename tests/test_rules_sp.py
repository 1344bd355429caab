"""SP rules (SAPO semantics): failing and passing cases beyond the documented examples."""

from .helpers import codes, only


# SP rules
def test_sp001_in_every_variant_reported_once_without_variant(lint_text):
    body = (
        "overrides:\n  +actor_rollout_ref.actor.policy_loss.tau_pos: 1.2\nvariants:\n  device:\n"
        "    npu: {overrides: {trainer.device: npu}}\n    gpu: {overrides: {trainer.device: cuda}}\n"
    )
    found = only(lint_text(body), "SP001")
    assert len(found) == 1 and found[0].variant is None and found[0].location.line == 6


def test_sp002_to_sp004_judge_effective_values(lint_text):
    found = lint_text("overrides:\n  actor_rollout_ref.actor.tau_pos: -1\n")
    assert codes(found).count("SP002") == 1
    assert "SP004" in codes(found)  # loss_mode stays vanilla
    found = lint_text(
        "overrides:\n  actor_rollout_ref.actor.policy_loss.loss_mode: sapo\n  actor_rollout_ref.actor.tau_pos: 1.2\n"
    )
    assert "SP003" in codes(found) and "SP004" not in codes(found)  # default tau_neg 1.05 < 1.2


def test_sp001_says_the_run_stops_at_start_up(lint_text):
    found = only(lint_text("overrides:\n  +actor_rollout_ref.actor.policy_loss.tau_neg: 1.05\n"), "SP001")
    assert len(found) == 1
    assert "unexpected keyword argument 'tau_neg'" in found[0].message and "not read" not in found[0].message
    assert found[0].fix.text == "actor_rollout_ref.actor.tau_neg"
    assert not only(lint_text("overrides:\n  actor_rollout_ref.actor.tau_neg: 1.05\n"), "SP001")
