"""The GitHub Action (issue 34, item 3): action.yml's lint step is action/lint.sh, run here as the runner runs it
(the same environment variables and $GITHUB_OUTPUT): annotations for the pull request, a SARIF 2.1.0 report that
code scanning accepts, and sapo-lint's exit code recorded for the action's last step."""

import json
import os
import subprocess

import yaml

from .helpers import REPO, RUNNABLE, recipe
from .test_sarif import code_scanning_problems, validate

LINT_STEP = REPO / "action" / "lint.sh"


def run_step(cwd, paths=".", args="--no-shellcheck --select SL,SP"):
    output = cwd / "github_output"
    env = {
        **os.environ,
        "CI": "true",
        "GITHUB_OUTPUT": str(output),
        "SAPO_LINT_PATHS": paths,
        "SAPO_LINT_ARGS": args,
        "SAPO_LINT_SARIF": "report.sarif",
    }
    proc = subprocess.run(["bash", str(LINT_STEP)], cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr  # the action uploads the SARIF before it fails
    recorded = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return proc, int(recorded["exit-code"]), json.loads((cwd / "report.sarif").read_text())


def test_a_bad_recipe_is_annotated_reported_and_fails_the_action(tmp_path):
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "bad.yaml").write_text(
        recipe("overrides:\n  +actor_rollout_ref.actor.policy_loss.tau_pos: 1.0\n" + RUNNABLE), encoding="utf-8"
    )
    proc, code, sarif = run_step(tmp_path, paths="recipes")
    assert code == 1
    assert proc.stdout.startswith("::error file=recipes/bad.yaml,line=6,col=3,title=SP001 sapo-tau-nested::")
    validate(sarif)
    assert code_scanning_problems(sarif) == []
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "SP001" and result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "recipes/bad.yaml"
    )


def test_a_clean_repository_passes_and_its_report_has_no_results(tmp_path):
    (tmp_path / "good.yaml").write_text(recipe("overrides:\n" + RUNNABLE), encoding="utf-8")
    proc, code, sarif = run_step(tmp_path)
    assert (code, proc.stdout, sarif["runs"][0]["results"]) == (0, "", [])


def test_verl_examples_give_a_report_code_scanning_accepts(tmp_path):
    corpus = REPO.parent / "shared" / "corpus" / "verl-examples"
    if not corpus.is_dir():
        import pytest

        pytest.skip("the verl-examples corpus is not here")
    _, code, sarif = run_step(tmp_path, paths=str(corpus), args="--no-shellcheck")
    validate(sarif)
    assert code == 1 and code_scanning_problems(sarif) == [] and sarif["runs"][0]["results"]


def test_the_action_runs_its_lint_step_uploads_and_then_fails_on_errors():
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    steps = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    lint = next(s for s in steps if s.get("id") == "lint")
    assert "action/lint.sh" in lint["run"] and lint["env"]["SAPO_LINT_PATHS"] == "${{ inputs.paths }}"
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif"))
    assert steps.index(upload) > steps.index(lint) and "always()" in upload["if"]
    assert "steps.lint.outputs.exit-code" in steps[-1]["run"]
