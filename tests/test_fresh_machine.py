"""Findings a user acts on once: one problem on one line is one finding, through the console script."""

import json

from .test_cli import TAU_NEG, sapo_lint, write

NESTED_TAU = (
    "overrides:\n  actor_rollout_ref.actor.policy_loss.loss_mode: sapo\n"
    "  actor_rollout_ref.actor.policy_loss.tau_pos: 1.2\n"
)  # no `+`: an unknown key, and why


def findings(path, *args):
    proc = sapo_lint(str(path), "--format", "json", *args)
    diagnostics = json.loads(proc.stdout)["diagnostics"]
    return proc.returncode, [(d["line"], d["code"], d["fix"] is not None) for d in diagnostics]


def test_a_nested_tau_without_plus_is_one_finding_that_keeps_its_fix(tmp_path):
    path = write(tmp_path / "r.yaml", NESTED_TAU + TAU_NEG)
    line = path.read_text().splitlines().index("  actor_rollout_ref.actor.policy_loss.tau_pos: 1.2") + 1
    code, found = findings(path)
    assert code == 1 and [f for f in found if f[0] == line] == [(line, "SP001", True)], found
    code, found = findings(path, "--ignore", "SP001")  # the specific rule off: the key is still reported
    assert code == 1 and [f[:2] for f in found if f[0] == line] == [(line, "SL001")], found
    assert sapo_lint(str(path), "--fix").returncode == 0
    assert "  actor_rollout_ref.actor.tau_pos: 1.2\n" in path.read_text()
