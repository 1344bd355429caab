"""Fixes carry how far they can be trusted (ruff's applicability): `--fix` applies the safe ones, `--fix
--unsafe-fixes` the unsafe ones too, a display-only one is never applied; JSON, SARIF, text and --statistics say
which each is."""

import json

from .helpers import recipe
from .test_cli import sapo_lint, write
from .test_recipe_schema import NESTED
from .test_sarif import validate

SAFE = "  +trainer.nnodes: 1\n"  # SL002: the key exists, drop the `+`
UNSAFE = "  actor_rollout_ref.actor.megatron.tau_pos: 1.0\n"  # SL001: renamed to the one near spelling, a guess
GUESSED = "  actor_rollout_ref.actor.tau_pos: 1.0\n"


def test_fix_applies_safe_fixes_and_unsafe_fixes_only_when_asked(tmp_path):
    path = write(tmp_path / "r.yaml", "overrides:\n" + SAFE + UNSAFE)
    text = sapo_lint(str(path), "--no-shellcheck").stdout
    assert "  = fix: trainer.nnodes\n" in text and "  = unsafe fix: actor_rollout_ref.actor.tau_pos\n" in text, text

    assert sapo_lint(str(path), "--unsafe-fixes").returncode == 2  # it says which fixes --fix applies: --fix first
    diff = sapo_lint(str(path), "--diff", "--unsafe-fixes", "--no-shellcheck")
    assert "+  actor_rollout_ref.actor.tau_pos: 1.0" in diff.stdout and "Would fix 2 overrides" in diff.stderr

    fixed = sapo_lint(str(path), "--fix", "--no-shellcheck")
    body = path.read_text()
    assert "Fixed 1 override." in fixed.stderr and "  trainer.nnodes: 1\n" in body and UNSAFE in body, body
    assert fixed.returncode == 1  # the unknown key is still there

    fixed = sapo_lint(str(path), "--fix", "--unsafe-fixes", "--no-shellcheck")
    body = path.read_text()
    assert "Fixed 1 override." in fixed.stderr and UNSAFE not in body and GUESSED in body, body


def test_json_sarif_and_statistics_say_how_safe_each_fix_is(tmp_path):
    path = write(tmp_path / "r.yaml", "overrides:\n" + SAFE + UNSAFE)
    found = {d["code"]: d for d in json.loads(sapo_lint(str(path), "--format", "json").stdout)["diagnostics"]}
    assert (found["SL002"]["fix"], found["SL002"]["fix_applicability"]) == ("trainer.nnodes", "safe")
    assert (found["SL001"]["fix"], found["SL001"]["fix_applicability"]) == ("actor_rollout_ref.actor.tau_pos", "unsafe")

    doc = json.loads(sapo_lint(str(path), "--format", "sarif", cwd=tmp_path).stdout)
    validate(doc)
    results = {r["ruleId"]: r for r in doc["runs"][0]["results"]}
    lines = path.read_text().splitlines()
    for code, applicability in (("SL002", "safe"), ("SL001", "unsafe")):
        result = results[code]
        assert result["properties"]["fixApplicability"] == applicability
        (fix,) = result["fixes"]
        assert fix["properties"] == {"applicability": applicability}
        (change,) = fix["artifactChanges"]
        (replacement,) = change["replacements"]
        region = replacement["deletedRegion"]
        replaced = lines[region["startLine"] - 1][region["startColumn"] - 1 : region["endColumn"] - 1]
        assert replaced == (SAFE if code == "SL002" else UNSAFE).strip().split(":")[0], replaced
        assert replacement["insertedContent"]["text"] == found[code]["fix"]

    statistics = json.loads(sapo_lint(str(path), "--statistics", "--format", "json").stdout)["statistics"]
    rows = {r["code"]: r for r in statistics}
    assert rows["SL002"]["fixes"] == {"safe": 1, "unsafe": 0, "display-only": 0} and rows["SL002"]["fixable"] == 1
    assert rows["SL001"]["fixes"] == {"safe": 0, "unsafe": 1, "display-only": 0} and rows["SL001"]["fixable"] == 0
    text = {line.split()[1]: line for line in sapo_lint(str(path), "--statistics").stdout.splitlines()[:-1]}
    assert "1 fixable" in text["SL002"] and "1 unsafe" in text["SL001"] and "fixable" not in text["SL001"], text


def test_a_display_only_fix_is_a_hint_in_json_and_sarif_never_a_sarif_fix(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(recipe(NESTED), encoding="utf-8")
    found = json.loads(sapo_lint(str(path), "--format", "json", "--no-shellcheck").stdout)["diagnostics"]
    (tau,) = [d for d in found if d["code"] == "SP001"]
    assert (tau["fix"], tau["fix_applicability"]) == ("actor_rollout_ref.actor.tau_pos", "display-only")
    doc = json.loads(sapo_lint(str(path), "--format", "sarif", "--no-shellcheck", cwd=tmp_path).stdout)
    validate(doc)
    (result,) = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "SP001"]
    assert result["properties"]["fixApplicability"] == "display-only" and "fixes" not in result
