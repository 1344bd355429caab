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
    body = (
        "overrides:\n  actor_rollout_ref.actor.tau_poss: 1  # sapo-lint: noqa: SL001\n"
        "  trainer.foo: 1  # sapo-lint: noqa\n"
    )
    assert not only(lint_text(body), "SL001")
    body = "overrides:\n  actor_rollout_ref.actor.tau_poss: 1  # sapo-lint: noqa: SL002\n"
    assert only(lint_text(body), "SL001")


CONTINUED = """#!/bin/bash
python3 -m verl.trainer.main_ppo \\
    trainer.nnodez=1 \\
    trainer.total_epochs=5{end}
python3 -m verl.trainer.main_ppo trainer.nnodez=2
"""


def script_codes(tmp_path, text):
    from pathlib import Path

    from sapo_toolkit.linter.lint import lint_paths

    path = Path(tmp_path) / "run_continued_fsdp.sh"
    path.write_text(text, encoding="utf-8")
    return [
        (d.code, d.location.line)
        for d in lint_paths([path], Settings(shellcheck=False)).diagnostics
        if d.code == "SL001"
    ]


def test_noqa_at_the_end_of_a_continued_command_covers_its_lines(tmp_path):
    assert script_codes(tmp_path, CONTINUED.format(end="")) == [("SL001", 3), ("SL001", 5)]
    # a line ending in `\` cannot hold a comment: the command's last line speaks for it, and for no other command
    assert script_codes(tmp_path, CONTINUED.format(end="  # sapo-lint: noqa: SL001")) == [("SL001", 5)]
    assert script_codes(tmp_path, CONTINUED.format(end="  # sapo-lint: noqa: SL002")) == [("SL001", 3), ("SL001", 5)]
    # an escaped backslash at the end of a line is no continuation
    escaped = CONTINUED.format(end="").replace("trainer.nnodez=1 \\", "trainer.nnodez=1 \\\\")
    assert ("SL001", 3) in script_codes(tmp_path, escaped.replace("epochs=5", "epochs=5  # sapo-lint: noqa"))


def test_noqa_on_a_following_line_does_not_reach_back_in_a_recipe(lint_text):
    body = "overrides:\n  actor_rollout_ref.actor.tau_poss: 1 \\\n  trainer.nnodes: 1  # sapo-lint: noqa: SL001\n"
    assert only(lint_text(body), "SL001")
