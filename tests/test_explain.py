"""`sapo-lint explain`: text, JSON (one object per variant) and the --plot PNG, on every shipped recipe."""

import json

import pytest
from click.testing import CliRunner

from sapo_toolkit.linter.core.variants import matches
from sapo_toolkit.linter.explain import explain

from .helpers import REPO

RECIPES = sorted((REPO / "recipes").glob("*.yaml"))
RECIPE_30B = REPO / "recipes" / "qwen3-30b-a3b-sapo.yaml"

# The keys issue 4 asks for, as dotted paths; `<phase>` is expanded over rollout and train.
REQUIRED = [
    "variant", "world", "dp", "edp", "params.total", "params.per_rank", "memory_gib.peak", "hbm_gib",
    "checkpoint_gib.weights", "checkpoint_gib.full", "checkpoint.save_seconds", "disk_peak_gib",
    *(f"memory_gib.{phase}.{key}" for phase in ("rollout", "train")
      for key in ("total", "weights", "grads", "optimizer", "activations", "rollout")),
]


def run(*args):
    result = CliRunner().invoke(explain, [str(a) for a in args])
    return result


def lookup(obj, dotted):
    for part in dotted.split("."):
        assert isinstance(obj, dict) and part in obj, dotted
        obj = obj[part]
    return obj


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_json_has_the_issue_keys_for_every_variant(path):
    result = run(path, "--format", "json")
    assert result.exit_code == 0, result.output
    plans = json.loads(result.stdout)
    assert isinstance(plans, list) and plans
    variants = [p["variant"] for p in plans]
    assert len(set(variants)) == len(variants)
    for plan in plans:
        for key in REQUIRED:
            lookup(plan, key)
        memory = plan["memory_gib"]
        assert memory["peak"] == max(memory[p]["total"] for p in memory if isinstance(memory[p], dict))
        assert plan["dp"] * plan["layout"]["tp"] * plan["layout"]["pp"] * plan["layout"]["cp"] == plan["world"]


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_text_table(path):
    result = run(path)
    assert result.exit_code == 0, result.output
    assert "device memory per device, GiB" in result.output
    assert "checkpoint: weights" in result.output and "disk peak" in result.output


def test_30b_json_numbers_and_variant_selection():
    result = run(RECIPE_30B, "--format", "json", "--variant", "device=NPU,recompute=full")
    plans = json.loads(result.stdout)
    assert [p["variant"] for p in plans] == ["DEVICE=npu,RECOMPUTE=full"]
    plan = plans[0]
    assert (plan["world"], plan["dp"], plan["edp"]) == (16, 4, 1)
    assert plan["params"]["total"] == 30_532_122_624 and plan["params"]["per_rank"] == 2_206_808_064
    assert plan["hbm_gib"] == 60.96 and plan["memory_gib"]["peak"] < 60.96  # torch_npu total, devices.json
    assert plan["memory_gib"]["train"]["optimizer"] == 0  # Adam state on the host (fraction 1.0)
    assert plan["host_gib"]["train"]["optimizer_cpu_offload"] > 0
    assert plan["checkpoint"]["contents"] == ["model"] and plan["checkpoint_gib"]["weights"] == pytest.approx(56.87, abs=0.01)
    assert plan["findings"] == []
    npu = json.loads(run(RECIPE_30B, "--format", "json", "--variant", "DEVICE=npu").stdout)
    assert len(npu) == 3 and all(p["device"] == "npu" for p in npu)


def test_stated_limits_are_not_assumptions():
    plan = json.loads(run(RECIPE_30B, "--format", "json", "--variant", "DEVICE=gpu,RECOMPUTE=full",
                          "--write-gib-per-s", "1", "--disk-budget-gib", "100", "--host-ram-gib", "512").stdout)[0]
    assert plan["checkpoint"]["write_bw_assumed"] is False and plan["checkpoint"]["write_gib_per_s"] == 1
    assert plan["checkpoint"]["save_seconds"] == pytest.approx(56.9, abs=0.1)
    # two weight-only checkpoints of 56.9 GiB exceed a stated 100 GiB budget: CK002, as an error
    ck002 = [f for f in plan["findings"] if f["code"] == "CK002"]
    assert ck002 and ck002[0]["severity"] == "error"


def test_findings_for_the_8_device_variant(tmp_path):
    text = "\n".join(line for line in RECIPE_30B.read_text().splitlines() if "override_optimizer_config" not in line)
    path = tmp_path / "r.yaml"
    path.write_text(text.replace("trainer.nnodes: 2", "trainer.nnodes: 1") + "\n")
    plans = json.loads(run(path, "--format", "json", "--variant", "DEVICE=npu,RECOMPUTE=full").stdout)
    codes = [(f["code"], f["severity"]) for f in plans[0]["findings"]]
    assert ("MEM001", "error") in codes
    assert plans[0]["memory_gib"]["peak"] > plans[0]["hbm_gib"]
    result = run(path, "--variant", "DEVICE=npu,RECOMPUTE=full")
    assert "OVER 60.96 GiB HBM" in result.output and "MEM001 error" in result.output


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "plan.png"
    result = run(RECIPE_30B, "--variant", "DEVICE=npu", "--plot", out)
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_usage_errors(tmp_path):
    result = run(RECIPE_30B, "--variant", "DEVICE=tpu")
    assert result.exit_code == 2 and "no variant matches DEVICE=tpu" in result.output
    other = tmp_path / "other.yaml"
    other.write_text("name: not a recipe\n")
    result = run(other)
    assert result.exit_code == 2 and "not a recipe" in result.output


def test_unknown_accelerator_or_model_is_reported_per_variant(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("recipe: sapo-recipe/v1\nname: x\nconfig_name: ppo_megatron_trainer\nmodel: {path: Qwen/Qwen3-8B}\n"
                    "overrides: {}\n")
    result = run(path, "--format", "json")
    assert result.exit_code == 2
    assert "accelerator" in json.loads(result.stdout)[0]["error"]


def test_helpers():
    assert matches("DEVICE=npu,RECOMPUTE=full", ("recompute=full",))
    assert not matches("DEVICE=npu,RECOMPUTE=full", ("DEVICE=gpu", "RECOMPUTE=none"))
    assert matches(None, ())
