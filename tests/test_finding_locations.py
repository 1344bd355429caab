"""Findings are where the user made the change (issue 20, item 7): a topology error at the parallel size that breaks
the invariant, not at the world-size line written after it; a recompute combination at the key whose value makes it
invalid; the other settings the finding depends on as related locations in every output format."""

import json

import pytest

from .helpers import RUNNABLE
from .test_cli import sapo_lint
from .test_sarif import validate

OTC = "actor_rollout_ref.actor.megatron.override_transformer_config"
MEGATRON = "actor_rollout_ref.actor.megatron"
WORLD = ("trainer.nnodes=1", "trainer.n_gpus_per_node=8")


def run_script(tmp_path, *overrides: str, model: str = "Qwen/Qwen2.5-7B-Instruct"):
    """A run script whose trainer call sets `overrides` after the model path, one per line, and the 1-based line of
    each override's key (column 5, after the continuation indent)."""
    written = [f"actor_rollout_ref.model.path={model}", *overrides]
    lines = ["#!/usr/bin/env bash", "python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\"]
    lines += [f"    {o} \\" for o in written[:-1]] + [f"    {written[-1]}"]
    path = tmp_path / "run_qwen_megatron.sh"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, {o.split("=", 1)[0].lstrip("+"): i for i, o in enumerate(written, 3)}


def lint_json(path, *args, select="TP,RC"):
    proc = sapo_lint(str(path), "--format", "json", "--no-shellcheck", "--select", select, *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return json.loads(proc.stdout)["diagnostics"]


def one(diagnostics, code):
    """The record of `code`'s finding, whether reported on its own or inside the finding of its cause (`also`)."""
    (found,) = [x for d in diagnostics for x in (d, *d["also"]) if x["code"] == code]
    return found


def related_lines(d) -> list[int]:
    assert all(r["path"] == d["path"] and r["column"] == 5 for r in d["related"]), d["related"]
    return [r["line"] for r in d["related"]]


def test_world_size_error_is_at_the_size_that_breaks_it_with_the_world_lines_related(tmp_path):
    # TP 4 x PP 3 on 8 devices: PP is the size that, at 1, would leave a product (4) that divides the world.
    path, line = run_script(
        tmp_path, f"{MEGATRON}.tensor_model_parallel_size=4", f"{MEGATRON}.pipeline_model_parallel_size=3", *WORLD
    )
    found = lint_json(path, select="TP001,TP002")  # the world-size rules alone: the heads' would add the model line
    pp, tp = line[f"{MEGATRON}.pipeline_model_parallel_size"], line[f"{MEGATRON}.tensor_model_parallel_size"]
    world = [line["trainer.nnodes"], line["trainer.n_gpus_per_node"]]
    for code in ("TP001", "TP002"):  # TP002: EP 1 x ETP 4 (it follows TP) x PP 3
        d = one(found, code)
        assert (d["line"], d["column"]) == (pp, 5), d
        assert related_lines(d) == [tp, *world]
    assert "PP 2 would give an integer dp" in one(found, "TP001")["message"]


def test_when_no_single_size_fits_the_error_is_at_a_size_the_script_sets(tmp_path):
    # TP 3 x PP 3 on 8 devices: neither alone at 1 fits, so there is no hint; still not at the world lines.
    path, line = run_script(
        tmp_path, f"{MEGATRON}.pipeline_model_parallel_size=3", f"{MEGATRON}.tensor_model_parallel_size=3", *WORLD
    )
    d = one(lint_json(path, select="TP001"), "TP001")
    sizes = [line[f"{MEGATRON}.pipeline_model_parallel_size"], line[f"{MEGATRON}.tensor_model_parallel_size"]]
    assert d["line"] == sizes[1] and related_lines(d) == [
        sizes[0],
        line["trainer.nnodes"],
        line["trainer.n_gpus_per_node"],
    ]
    assert "would give" not in d["message"]


def test_an_expert_tp_left_to_follow_tp_is_the_size_reported(tmp_path):
    # EP 2 x ETP 4 (unset: it follows TP 4) x PP 2 = 16 on 8 devices: ETP 1 is the usual MoE setting.
    path, line = run_script(
        tmp_path,
        f"{MEGATRON}.tensor_model_parallel_size=4",
        f"{MEGATRON}.pipeline_model_parallel_size=2",
        f"{MEGATRON}.expert_model_parallel_size=2",
        *WORLD,
        model="Qwen/Qwen3-30B-A3B",
    )
    d = one(lint_json(path), "TP002")
    assert d["line"] == line[f"{MEGATRON}.tensor_model_parallel_size"], d
    assert "expert_tensor_parallel_size=1 would give one" in d["message"]


def test_rollout_tp_error_is_at_the_rollout_tp(tmp_path):
    path, line = run_script(tmp_path, "actor_rollout_ref.rollout.tensor_model_parallel_size=3", *WORLD)
    d = one(lint_json(path), "TP012")
    assert d["line"] == line["actor_rollout_ref.rollout.tensor_model_parallel_size"], d
    assert related_lines(d) == [line["trainer.nnodes"], line["trainer.n_gpus_per_node"]]


@pytest.mark.parametrize(
    ("code", "overrides", "cause", "other"),
    [
        # switching to selective while the full triplet's layer count stays: the granularity is the change
        (
            "RC005",
            (f"+{OTC}.recompute_granularity=selective", f"+{OTC}.recompute_num_layers=1"),
            "recompute_granularity",
            "recompute_num_layers",
        ),
        # megatron-core's check is about cpu_offloading, whatever line the granularity is on
        (
            "RC007",
            (
                f"+{OTC}.cpu_offloading=true",
                f"+{OTC}.recompute_granularity=full",
                f"+{OTC}.recompute_method=uniform",
                f"+{OTC}.recompute_num_layers=1",
            ),
            "cpu_offloading",
            "recompute_granularity",
        ),
    ],
)
def test_recompute_combination_is_at_the_key_whose_value_breaks_it(tmp_path, code, overrides, cause, other):
    path, line = run_script(tmp_path, *overrides)
    d = one(lint_json(path), code)
    assert d["line"] == line[f"{OTC}.{cause}"], d
    assert line[f"{OTC}.{other}"] in related_lines(d)


def test_recipe_findings_are_at_the_breaking_key_too(lint_text):
    found = lint_text(
        "overrides:\n"
        f"  {MEGATRON}.tensor_model_parallel_size: 4\n"
        f"  {MEGATRON}.pipeline_model_parallel_size: 3\n"
        "  trainer.nnodes: 1\n"
        "  trainer.n_gpus_per_node: 8\n" + RUNNABLE
    )
    (d,) = [d for d in found if d.code == "TP001"]
    lines = {"tp": 6, "pp": 7, "nnodes": 8, "gpus": 9}  # after recipe()'s header: the overrides start on line 6
    assert d.location.line == lines["pp"] and [r.line for r in d.related] == [
        lines["tp"],
        lines["nnodes"],
        lines["gpus"],
    ]


def test_every_output_format_names_the_related_locations(tmp_path):
    path, line = run_script(
        tmp_path, f"{MEGATRON}.tensor_model_parallel_size=4", f"{MEGATRON}.pipeline_model_parallel_size=3", *WORLD
    )
    related = [line[f"{MEGATRON}.tensor_model_parallel_size"], line["trainer.nnodes"], line["trainer.n_gpus_per_node"]]
    see_also = f"(see also lines {', '.join(map(str, related))})"
    select = ("--no-shellcheck", "--select", "TP001")

    where = f"{path}:{line[f'{MEGATRON}.pipeline_model_parallel_size']}:5: TP001 "
    concise = sapo_lint(str(path), "--format", "concise", *select).stdout.splitlines()[0]
    assert concise.startswith(where) and concise.endswith(see_also)
    text = sapo_lint(str(path), *select).stdout.splitlines()
    assert text[0].startswith(where) and f"  = see also: {see_also[10:-1]}" in text

    github = sapo_lint(str(path), "--format", "github", *select).stdout
    assert github.startswith("::error ") and github.rstrip().endswith(see_also)

    doc = json.loads(sapo_lint(path.name, "--format", "sarif", *select, cwd=tmp_path).stdout)
    validate(doc)
    (result,) = doc["runs"][0]["results"]
    locations = result["relatedLocations"]
    assert [r["physicalLocation"]["region"]["startLine"] for r in locations] == related
    assert [r["id"] for r in locations] == [1, 2, 3]
    assert [r["message"]["text"] for r in locations] == [
        f"{MEGATRON}.tensor_model_parallel_size",
        "trainer.nnodes",
        "trainer.n_gpus_per_node",
    ]
    # GitHub code scanning links a related location only where the message embeds it
    assert result["message"]["text"].endswith(
        f"(see also [{MEGATRON}.tensor_model_parallel_size](1), [trainer.nnodes](2), [trainer.n_gpus_per_node](3))"
    )


def test_a_model_finding_names_the_model_path_line(tmp_path):
    path, _ = run_script(tmp_path, f"{MEGATRON}.tensor_model_parallel_size=3")  # 28 heads % TP 3: TP003
    d = one(lint_json(path, "--select", "TP003"), "TP003")
    assert d["related"] == [{"path": d["path"], "line": 3, "column": 5}]  # the model path line it depends on


def test_one_bad_size_is_one_finding_naming_every_check_it_breaks(tmp_path):
    """TP 3 for a 32-head MoE on 8 devices breaks the world size, the expert world size, the heads, the query groups
    and the vocabulary: one value to change, so one finding at it, led by the first code, carrying the others
    (`also`, each a complete record) and every line they depend on as related locations, in every format."""
    path, line = run_script(tmp_path, f"{MEGATRON}.tensor_model_parallel_size=3", *WORLD, model="Qwen/Qwen3-30B-A3B")
    tp = line[f"{MEGATRON}.tensor_model_parallel_size"]
    (d,) = lint_json(path, select="TP")
    assert (d["code"], d["line"]) == ("TP001", tp)
    assert [a["code"] for a in d["also"]] == ["TP002", "TP003", "TP004", "TP009"]
    assert all(a["line"] == tp and a["also"] == [] for a in d["also"])
    assert related_lines(d) == sorted(
        {line["actor_rollout_ref.model.path"], line["trainer.nnodes"], line["trainer.n_gpus_per_node"]}
    )
    text = sapo_lint(str(path), "--no-shellcheck", "--select", "TP", "--format", "concise").stdout
    assert text.count(": TP0") == 1 and "(also fails TP002 " in text and "TP009 " in text
    assert "Found 1 error" in text
    full = sapo_lint(str(path), "--no-shellcheck", "--select", "TP").stdout
    also = [line.split()[2] for line in full.splitlines() if line.startswith("  = also ")]
    assert also == ["TP002", "TP003", "TP004", "TP009"], (
        full
    )  # a code turned off is not reported inside another, and the next one leads where the first is off
    (d,) = lint_json(path, "--ignore", "TP001,TP004", select="TP")
    assert d["code"] == "TP002" and [a["code"] for a in d["also"]] == ["TP003", "TP009"]
    sarif = json.loads(sapo_lint(str(path), "--no-shellcheck", "--select", "TP", "--format", "sarif").stdout)
    (result,) = sarif["runs"][0]["results"]
    assert result["properties"]["alsoRuleIds"] == ["TP002", "TP003", "TP004", "TP009"]
    assert " Also TP003 " in result["message"]["text"]
    github = sapo_lint(str(path), "--no-shellcheck", "--select", "TP", "--format", "github").stdout
    assert github.count("::error ") == 1 and " Also TP009 " in github


def test_findings_of_different_settings_or_families_stay_apart(tmp_path):
    """Only findings at one setting share a cause: a bad TP and a bad PP are two findings, and a recompute finding
    at its own key is never folded into a topology one."""
    path, line = run_script(
        tmp_path,
        f"{MEGATRON}.tensor_model_parallel_size=3",
        f"{MEGATRON}.pipeline_model_parallel_size=5",
        f"+{OTC}.recompute_granularity=full",
        *WORLD,
    )
    found = lint_json(path)
    assert sorted({d["line"] for d in found}) == sorted(
        {
            line[f"{MEGATRON}.tensor_model_parallel_size"],
            line[f"{MEGATRON}.pipeline_model_parallel_size"],
            line[f"{OTC}.recompute_granularity"],
        }
    )
    (recompute,) = [d for d in found if d["code"].startswith("RC")]
    assert (recompute["code"], [a["code"] for a in recompute["also"]]) == ("RC003", ["RC004"])


def test_add_noqa_names_every_code_of_the_cause_and_a_partial_noqa_leaves_the_rest(tmp_path):
    path, line = run_script(tmp_path, f"{MEGATRON}.tensor_model_parallel_size=3", *WORLD, model="Qwen/Qwen3-30B-A3B")
    proc = sapo_lint(str(path), "--no-shellcheck", "--select", "TP", "--add-noqa")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "TP001, TP002, TP003, TP004, TP009" in path.read_text(encoding="utf-8")
    assert sapo_lint(str(path), "--no-shellcheck", "--select", "TP").returncode == 0


def test_one_rule_failing_twice_at_a_place_stays_two_findings():
    """The actor's and the rollout's missing micro-batch size are both reported where the overrides start: two
    things to change. A finding of another code there joins the first."""
    from sapo_toolkit.linter.core.diagnostics import Diagnostic, Location, Severity
    from sapo_toolkit.linter.rules import one_finding_per_cause

    at = Location("r.yaml", 5, 1)
    found = [
        Diagnostic(at, "BS002", "mini-batch-divisibility", Severity.ERROR, "actor mini-batch"),
        Diagnostic(at, "BS003", "micro-batch-keys", Severity.ERROR, "actor micro-batch"),
        Diagnostic(at, "BS003", "micro-batch-keys", Severity.ERROR, "rollout micro-batch"),
    ]
    assert [(d.message, [a.message for a in d.also]) for d in one_finding_per_cause(found)] == [
        ("actor mini-batch", ["actor micro-batch"]),
        ("rollout micro-batch", []),
    ]
