"""`sapo-launch report`: a run directory (finished, failed, still running) or a plain log, report.md and non-trivial
PNGs, `--format json`, `--fail-on-gates`, and one-line usage errors with exit 2."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.image import imread

from sapo_toolkit.launcher.cli.report import report
from sapo_toolkit.launcher.gates import EXIT_GATES_FAILED

from . import synthetic_log
from .helpers import REPO, sapo_launch

FLOOR_GATE = {"metric": "perf/throughput", "min": 100}
RISING_GATE = {"metric": "critic/rewards/mean", "trend": "rising"}
FLOOR = "perf/throughput >= 100 (every, after 0)"
RISING = "critic/rewards/mean rising (after 0)"
PLOTS = {"throughput", "reward", "response-length", "memory", "timings"}
RECIPE = REPO / "recipes" / "qwen3-30b-a3b-sapo.yaml"


def run_report(*args):
    return CliRunner().invoke(report, [str(a) for a in args], catch_exceptions=False)


def as_json(*args) -> dict:
    result = run_report(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def assert_real_png(path):
    pixels = imread(path)
    assert pixels.shape[0] >= 300 and pixels.shape[1] >= 700, path.name
    colours = np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)
    assert len(colours) > 20, path.name  # lines, text and fills, not a blank canvas


def test_a_finished_run_directory(tmp_path):
    run_dir = synthetic_log.write_run_dir(tmp_path / "run", [FLOOR_GATE, RISING_GATE])
    result = run_report(run_dir)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == f"report: {run_dir / 'report.md'} (last step 100, 5 plots)"
    assert f"gate failed: {FLOOR}: 1 of 100 readings break perf/throughput >= 100, first at step 40: 60" in (
        result.output
    )
    assert {p.name for p in run_dir.glob("report-*.png")} == {f"report-{slug}.png" for slug in PLOTS}
    for png in run_dir.glob("report-*.png"):
        assert_real_png(png)
    text = (run_dir / "report.md").read_text()
    assert "# Run report: synthetic" in text and "| status | succeeded (exit 0) |" in text
    assert "| last step | 100 of 100 |" in text and "| gates | 1 of 2 passed |" in text
    assert f"| `{FLOOR}` | **failed** |" in text and f"| `{RISING}` | **passed** |" in text
    assert "violating_steps [40]" in text and "p_value " in text and "slope_ci_low " in text
    for slug in PLOTS:
        assert f"(report-{slug}.png)" in text


@pytest.mark.parametrize("form", ["console", "jsonl"])
def test_json_verdicts_from_either_form_of_a_plain_log(tmp_path, form):
    log = tmp_path / ("train.log" if form == "console" else "metrics.jsonl")
    log.write_text(synthetic_log.console_log() if form == "console" else synthetic_log.jsonl_log())
    out = as_json("--log", log, "--recipe", RECIPE)
    assert out["steps"] == synthetic_log.STEPS and set(out["gates"]) == {FLOOR, RISING}
    floor, rising = out["gates"][FLOOR], out["gates"][RISING]
    assert floor["passed"] is False and floor["violating_steps"] == [40] and floor["violating_values"] == [60.0]
    assert rising["passed"] is True and rising["p_value"] < 1e-6 and rising["n"] == 100
    assert rising["slope_ci_low"] < rising["theil_sen_slope"] < rising["slope_ci_high"]
    assert {"first_window_mean", "last_window_mean", "kendall_tau", "window"} <= rising.keys()
    assert (tmp_path / "report.md").exists()  # beside the log


def test_fail_on_gates(tmp_path):
    run_dir = synthetic_log.write_run_dir(tmp_path / "run", [FLOOR_GATE, RISING_GATE])
    assert run_report(run_dir, "--fail-on-gates").exit_code == EXIT_GATES_FAILED
    assert run_report(run_dir).exit_code == 0
    passing = synthetic_log.write_run_dir(tmp_path / "ok", [{**FLOOR_GATE, "after_step": 40}, RISING_GATE])
    assert run_report(passing, "--fail-on-gates").exit_code == 0


def test_recipe_gates_replace_the_run_directorys(tmp_path):
    run_dir = synthetic_log.write_run_dir(tmp_path / "run", [{"metric": "actor/entropy", "trend": "falling"}])
    assert set(as_json(run_dir)["gates"]) == {"actor/entropy falling (after 0)"}
    assert set(as_json(run_dir, "--recipe", RECIPE)["gates"]) == {FLOOR, RISING}


def test_a_gate_on_another_metric_gets_its_own_plot(tmp_path):
    run_dir = synthetic_log.write_run_dir(tmp_path / "run", [{"metric": "actor/entropy", "trend": "falling"}])
    (tmp_path / "out").mkdir()
    assert run_report(run_dir, "-o", tmp_path / "out" / "r.md").exit_code == 0
    assert_real_png(tmp_path / "out" / "r-actor-entropy.png")
    assert "![actor/entropy](r-actor-entropy.png)" in (tmp_path / "out" / "r.md").read_text()


def test_a_run_still_running(tmp_path):
    run_dir = synthetic_log.write_run_dir(tmp_path / "run", [FLOOR_GATE], jsonl=False, status="running")
    (run_dir / "summary.json").write_text(json.dumps({"status": "running", "pid": 123}))
    log = synthetic_log.console_log()
    cut = log.index("step:61 - ") + 200  # mid-line, as the trainer is printing it
    (run_dir / "train.log").write_text(log[:cut])
    (run_dir / "metrics.jsonl").write_text(synthetic_log.jsonl_log()[:5000])  # a record half written
    out = as_json(run_dir)
    assert out["steps"] == 61 and out["gates"][FLOOR]["violating_steps"] == [40]
    assert "| status | running |" in (run_dir / "report.md").read_text()


def test_a_failed_run_that_logged_nothing(tmp_path):
    run_dir = synthetic_log.write_run_dir(tmp_path / "run", [FLOOR_GATE], console=False, jsonl=False, status="failed")
    (run_dir / "train.log").write_text("Traceback (most recent call last):\nRuntimeError: out of memory\n")
    result = run_report(run_dir, "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.output) == {
        "steps": 0,
        "gates": {
            FLOOR: {
                "passed": False,
                "status": "not judged",  # a failed run's: its readings stop where it failed
                "reason": "the run failed; on its readings so far: 0 readings of perf/throughput after step 0; "
                "the gate needs 1",
                "n": 0,
            }
        },
    }
    text = (run_dir / "report.md").read_text()
    assert "| status | failed (exit 1) |" in text and "No metric lines" in text
    assert not list(run_dir.glob("*.png"))


@pytest.mark.parametrize(
    "case", ["neither", "both", "missing", "not a run", "bad plan", "bad recipe", "not a recipe", "unwritable"]
)
def test_usage_errors_are_one_line_and_exit_2(tmp_path, case):
    run_dir = synthetic_log.write_run_dir(tmp_path / "run", [FLOOR_GATE])
    log = run_dir / "train.log"
    bad_recipe = tmp_path / "bad.yaml"
    bad_recipe.write_text(
        "recipe: sapo-recipe/v1\nname: b\noverrides: {}\ngates:\n  - {metric: x, min: 1, over: avg}\n"
    )
    args = {
        "neither": [],
        "both": [run_dir, "--log", log],
        "missing": [tmp_path / "nope"],
        "not a run": [tmp_path],
        "bad plan": [run_dir],
        "bad recipe": ["--log", log, "--recipe", bad_recipe],
        "not a recipe": ["--log", log, "--recipe", log],
        "unwritable": [run_dir, "-o", tmp_path / "a-file" / "r.md"],  # a missing directory is made; a file is not one
    }[case]
    if case == "bad plan":
        (run_dir / "plan.json").write_text(json.dumps({"gates": [{"metric": "x", "trend": "up"}]}))
    (tmp_path / "a-file").write_text("")
    proc = sapo_launch("report", *args)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("sapo-launch: "), proc.stderr
    assert "Traceback" not in proc.stderr and not proc.stdout
    expected = {
        "neither": "give a RUN_DIR or --log FILE",
        "both": "give a RUN_DIR or --log FILE",
        "missing": "does not exist",
        "not a run": "not a run directory",
        "bad plan": "plan.json: gates.0.trend",
        "bad recipe": "gates.0.over",
        "not a recipe": "not a recipe",
        "unwritable": "cannot make",
    }[case]
    assert expected in proc.stderr
