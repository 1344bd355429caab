"""Choosing findings: variants named on a finding, --select/--ignore, `# sapo-lint: noqa`."""

from sapo_toolkit.linter.settings import Settings

from .helpers import codes, only


def test_variant_only_finding_names_its_variant(lint_text):
    body = (
        "overrides: {}\nvariants:\n  device:\n"
        "    npu: {overrides: {trainer.devcie: npu}}\n    gpu: {overrides: {trainer.device: cuda}}\n"
        "  infer_backend:\n    vllm: {overrides: {actor_rollout_ref.rollout.name: vllm}}\n"
        "    sglang: {overrides: {actor_rollout_ref.rollout.name: sglang}}\n"
    )
    found = only(lint_text(body), "SL001")
    assert [d.variant for d in found] == ["DEVICE=npu"]

def test_select_and_ignore(lint_text):
    body = "overrides:\n  actor_rollout_ref.actor.tau_poss: 1\n  actor_rollout_ref.actor.tau_pos: 1.2\n"
    assert set(codes(lint_text(body, Settings(select=["SP"])))) <= {"SP003", "SP004"}
    assert "SL001" not in codes(lint_text(body, Settings(ignore=["SL001"])))

def test_noqa_comment(lint_text):
    body = "overrides:\n  actor_rollout_ref.actor.tau_poss: 1  # sapo-lint: noqa: SL001\n  trainer.foo: 1  # sapo-lint: noqa\n"
    assert not only(lint_text(body), "SL001")
    body = "overrides:\n  actor_rollout_ref.actor.tau_poss: 1  # sapo-lint: noqa: SL002\n"
    assert only(lint_text(body), "SL001")
