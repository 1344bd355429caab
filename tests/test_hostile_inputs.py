"""Hostile and malformed inputs: each gets a clear diagnostic at its place, the other files are still linted, and
nothing crashes. One test per input, named after it."""

import json
import subprocess
import sys

import pytest

from .helpers import HEADER

HOSTILE = {
    "verl_as_a_float": ("verl: 0.9\noverrides: {}\n", "RF001", 5),
    "accelerator_as_a_list": ("hardware: {accelerator: [a]}\noverrides: {}\n", "RF001", 5),
    "custom_tag": ("overrides:\n  actor_rollout_ref.actor.tau_pos: !custom x\n", "RF002", 6),
    "complex_key": ("overrides:\n  ? [a, b]\n  : 1\n", "RF002", 6),
    "flow_nesting_999_levels": ("overrides:\n  trainer.x: " + "[" * 999 + "]" * 999 + "\n", "RF002", 6),
    "version_with_a_path": ('verl: "0.9.1/../../../../../elsewhere/evil"\noverrides: {}\n', "RF001", 5),
    "second_overrides_block": ("overrides:\n  trainer.nnodez: 1\noverrides:\n  trainer.nnodes: 2\n", "RF007", 7),
}


def lint_json(*args, cwd):
    exe = [sys.executable, "-m", "sapo_toolkit.linter"]
    proc = subprocess.run([*exe, "--format", "json", *args], capture_output=True, text=True, cwd=cwd, timeout=60)
    return proc, json.loads(proc.stdout) if proc.stdout.startswith("{") else None


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_recipe(tmp_path, name):
    body, code, line = HOSTILE[name]
    (tmp_path / f"{name}.yaml").write_text(HEADER + body)
    proc, report = lint_json(f"{name}.yaml", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    (found,) = [d for d in report["diagnostics"] if d["code"] == code]
    assert found["line"] == line, found


def test_value_1e400_is_infinity_not_a_crash(tmp_path):
    (tmp_path / "r.yaml").write_text(HEADER + "overrides:\n  actor_rollout_ref.actor.tau_pos: 1e400\n")
    proc, report = lint_json("r.yaml", "--override", "actor_rollout_ref.actor.tau_neg=1e400", cwd=tmp_path)
    assert proc.returncode in (0, 1) and report is not None, proc.stderr


def test_every_hostile_file_in_one_directory_with_a_real_typo(tmp_path):
    for name, (body, _, _) in HOSTILE.items():
        (tmp_path / f"{name}.yaml").write_text(HEADER + body)
    (tmp_path / "typo.yaml").write_text(HEADER + "overrides:\n  actor_rollout_ref.actor.tau_poss: 1.0\n")
    proc, report = lint_json(".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    codes_by_file = {}
    for d in report["diagnostics"]:
        codes_by_file.setdefault(d["path"].removeprefix("./"), set()).add(d["code"])
    assert "SL001" in codes_by_file["typo.yaml"]
    for name, (_, code, _) in HOSTILE.items():
        assert code in codes_by_file[f"{name}.yaml"], name
