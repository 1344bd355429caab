"""A variant whose trainer command is another's but for its label is linted once (issue 32 item 4): the findings are
that one's, under each variant's own label, unless the labels name different devices (which rules read)."""

from sapo_toolkit.linter import api
from sapo_toolkit.linter.settings import Settings
from sapo_toolkit.linter.sources.files import TextFile

SCRIPT = """#!/bin/bash
{switch}=${{{switch}:-{first}}}
case "${switch}" in
  {first}) echo one ;;
  {second}) echo two ;;
esac
python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.actor.policy_loss.loss_mode=sapo \\
    actor_rollout_ref.actor.tau_pos=-1
"""


def _lint(monkeypatch, tmp_path, **names):
    commands = []
    lint_command = api.lint_command
    monkeypatch.setattr(api, "lint_command", lambda c, *rest: commands.append(c.variant) or lint_command(c, *rest))
    source = TextFile(str(tmp_path / "run_x_megatron.sh"), SCRIPT.format(**names))
    loaded = api.load_text(source, api.read_options(Settings()))
    found = api.check(loaded, Settings())
    return [c.variant for c in loaded.commands], commands, {d.variant for d in found if d.code == "SP002"}


def test_variants_with_the_same_command_are_linted_once_and_each_has_the_findings(monkeypatch, tmp_path):
    variants, linted, labels = _lint(monkeypatch, tmp_path, switch="MODE", first="fast", second="slow")
    assert variants == ["MODE=fast", "MODE=slow"] and linted == ["MODE=fast"]
    assert labels == {None}  # the finding holds in both variants


def test_variants_whose_labels_name_different_devices_are_each_linted(monkeypatch, tmp_path):
    variants, linted, _ = _lint(monkeypatch, tmp_path, switch="DEVICE", first="npu", second="gpu")
    assert variants == linted == ["DEVICE=npu", "DEVICE=gpu"]
