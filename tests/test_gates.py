"""Gates: names, reading a recipe's entries, bounds over every/mean/last-N readings after a warm-up, trends decided
by Mann-Kendall with the window means (flat by an equivalence test), the numbers each verdict reports, the live
check; the synthetic run's known truths in both of verl's forms."""

import math
import random
import sys

import pytest
import yaml

from sapo_toolkit.launcher.gates import Gate, GateError, LiveGates, evaluate, gate_exit_code, parse_gates
from sapo_toolkit.launcher.metrics import MetricTable, read_files

from . import synthetic_log
from .helpers import REPO

FLOOR = {"metric": "perf/throughput", "min": 100}
RISING = {"metric": "critic/rewards/mean", "trend": "rising"}


def table(values, metric="m", first_step=1) -> MetricTable:
    t = MetricTable()
    for step, value in enumerate(values, first_step):
        t.add(t.jsonl, (step, {metric: value}))
    return t


def verdict(entry, values, **kwargs):
    (gate,) = parse_gates([{"metric": "m", **entry}])
    (result,) = evaluate([gate], table(values, **kwargs))
    return result


@pytest.mark.parametrize(
    "entry,name",
    [
        (FLOOR, "perf/throughput >= 100 (every, after 0)"),
        ({**FLOOR, "after_step": 50, "over": "mean"}, "perf/throughput >= 100 (mean, after 50)"),
        ({"metric": "x", "max": 1e-06, "over": "last 10"}, "x <= 1e-06 (last 10, after 0)"),
        ({"metric": "x", "min": 0.5, "max": 2}, "0.5 <= x <= 2 (every, after 0)"),
        (RISING, "critic/rewards/mean rising (after 0)"),
        (
            {**RISING, "window": 10, "alpha": 0.01, "after_step": 5},
            "critic/rewards/mean rising (after 5, window 10, alpha 0.01)",
        ),
        ({"metric": "x", "trend": "flat", "tolerance": 0.05}, "x flat within 0.05 (after 0)"),
    ],
)
def test_gate_names_are_stable_and_say_what_is_checked(entry, name):
    assert parse_gates([entry])[0].name == name


def test_the_shipped_30b_recipe_carries_the_two_gates():
    recipe = yaml.safe_load((REPO / "recipes" / "qwen3-30b-a3b-sapo.yaml").read_text())
    assert [g.name for g in parse_gates(recipe["gates"])] == [
        "perf/throughput >= 100 (every, after 0)",
        "critic/rewards/mean rising (after 0)",
    ]


def test_the_same_gate_twice_counts_once():
    assert len(parse_gates([FLOOR, dict(FLOOR), {**FLOOR, "over": "every"}])) == 1


@pytest.mark.parametrize(
    "entry,message",
    [
        ({"metric": "x"}, "gates.0: "),
        ({"metric": "x", "min": 1, "over": "avg"}, "gates.0.over: 'avg' does not match"),
        ({"metric": "x", "trend": "flat"}, "'tolerance' is a required property"),
        ({"metric": "x", "trend": "rising", "min": 3}, "'min' should not be valid"),
        ({"metric": "x", "min": 3, "window": 4}, "'window' should not be valid"),
        ({"metric": "x", "minimum": 3, "min": 1}, "Additional properties are not allowed ('minimum' was unexpected)"),
        ("perf/throughput", "gates.0: 'perf/throughput' is not of type 'object'"),
    ],
)
def test_bad_entries_are_one_line_errors(entry, message):
    with pytest.raises(GateError) as caught:
        parse_gates([entry])
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_every_reading_after_the_warm_up():
    values = [50, 150, 150, 80, 150, 150]
    failed = verdict({"min": 100}, values)
    assert failed.status == "failed" and not failed.passed
    assert failed.number("violating_steps") == (1, 4) and failed.number("violations") == 2
    assert failed.number("lowest") == 50 and failed.number("lowest_step") == 1
    assert "first at step 1: 50" in failed.reason
    assert verdict({"min": 100, "after_step": 4}, values).passed
    assert verdict({"min": 100, "after_step": 4}, values).number("n") == 2


def test_mean_and_last_n():
    values = [10, 200, 200, 200, 90]
    assert verdict({"min": 100, "over": "mean"}, values).number("mean") == pytest.approx(140)
    assert verdict({"min": 100, "over": "mean"}, values).passed
    assert not verdict({"min": 100, "over": "last 2"}, values).passed
    assert verdict({"min": 100, "over": "last 3"}, values[:-1]).passed
    short = verdict({"min": 100, "over": "last 10"}, values)
    assert short.status == "no data" and "needs 10" in short.reason and not short.passed


def test_ceilings_and_both_bounds():
    assert verdict({"max": 5}, [1, 2, 6]).number("violating_steps") == (3,)
    assert verdict({"min": 1, "max": 5}, [1, 5, 3]).passed


def test_nan_meets_no_bound():
    assert verdict({"min": 0}, [1, math.nan, 2]).number("violating_steps") == (2,)
    assert not verdict({"min": 0, "over": "mean"}, [1, math.nan]).passed


def test_no_readings_is_no_data_not_a_pass():
    result = verdict({"min": 1}, [5, 5], metric="other")
    assert result.status == "no data" and result.as_json() == {
        "passed": False,
        "status": "no data",
        "reason": result.reason,
        "n": 0,
    }


def noisy(slope, n=60, sigma=1.0, seed=1):
    rng = random.Random(seed)
    return [slope * i + rng.gauss(0, sigma) for i in range(n)]


def test_rising_and_falling():
    up = verdict({"trend": "rising"}, noisy(0.1))
    assert up.passed
    assert up.number("p_value") < 0.05 and up.number("kendall_tau") > 0 and up.number("n") == 60
    assert up.number("slope_ci_low") < up.number("theil_sen_slope") < up.number("slope_ci_high")
    assert up.number("theil_sen_slope") == pytest.approx(0.1, abs=0.03)
    assert up.number("window") == 15 and up.number("last_window_mean") > up.number("first_window_mean")
    assert not verdict({"trend": "falling"}, noisy(0.1)).passed
    assert verdict({"trend": "falling"}, noisy(-0.1)).passed


def test_noise_is_not_a_trend():
    result = verdict({"trend": "rising"}, noisy(0.0, seed=3))
    assert not result.passed and result.number("p_value") >= 0.05


def test_a_bump_in_the_middle_is_not_a_rise():
    # Ranks rise over the first half more than they fall over the second, but the run ends where it began.
    values = [0.0] * 10 + [5.0 + i * 0.01 for i in range(30)] + [0.0] * 10
    result = verdict({"trend": "rising", "window": 10}, values)
    assert not result.passed and result.number("last_window_mean") == result.number("first_window_mean")


def test_flat_is_an_equivalence_test():
    flat = verdict({"trend": "flat", "tolerance": 2.0}, noisy(0.0, sigma=0.5))
    assert flat.passed and flat.number("change_bound") <= 2.0
    drift = verdict({"trend": "flat", "tolerance": 2.0}, noisy(0.1, sigma=0.5))
    assert not drift.passed and drift.number("change_bound") > 2.0
    # Too noisy to show flatness: no evidence of a trend, but no evidence of its absence either.
    assert not verdict({"trend": "flat", "tolerance": 0.1}, noisy(0.0, sigma=5.0)).passed
    assert verdict({"trend": "flat", "tolerance": 0.1}, [3.0] * 20).passed


def test_a_constant_series_does_not_rise():
    result = verdict({"trend": "rising"}, [1.0] * 20)
    assert not result.passed and result.as_json()["p_value"] is None  # NaN as null


def test_trends_drop_non_finite_readings_and_need_enough():
    values = noisy(0.1, n=20)
    values[3] = math.nan
    assert verdict({"trend": "rising"}, values).number("dropped_non_finite") == 1
    few = verdict({"trend": "rising"}, [1, 2, 3, 4, 5])
    assert few.status == "no data" and "a trend needs 8" in few.reason
    assert verdict({"trend": "rising", "window": 10}, noisy(0.1, n=15)).status == "no data"


def test_alpha_sets_the_test_level_and_the_interval():
    result = verdict({"trend": "rising", "alpha": 0.01}, noisy(0.1))
    assert result.number("alpha") == 0.01 and result.number("ci_level") == pytest.approx(0.98)


def test_without_scipy_a_trend_is_not_judged_and_does_not_fail_the_run(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy", None)
    result = verdict({"trend": "rising"}, noisy(0.1))
    assert (result.status, result.needs) == ("not judged", "scipy") and "need scipy" in result.reason
    assert result.as_json()["needs"] == "scipy" and not result.passed
    assert gate_exit_code(0, [result], fail_on_gates=True) == 0


def test_live_check_reports_each_broken_every_bound_once():
    gates = parse_gates([{**FLOOR, "after_step": 2}, {**FLOOR, "over": "mean"}, RISING, {"metric": "x", "max": 1}])
    live = LiveGates(gates)
    assert live.check(1, {"perf/throughput": 5.0}) == []  # warm-up
    assert live.check(3, {"perf/throughput": 150.0, "x": 0.5}) == []
    assert live.check(4, {"perf/throughput": 60.0}) == [
        "gate failed at step 4: perf/throughput >= 100 (every, after 2): perf/throughput = 60"
    ]
    assert live.check(5, {"perf/throughput": 50.0, "x": 2.0}) == [
        "gate failed at step 5: x <= 1 (every, after 0): x = 2"
    ]
    assert live.check(6, {"perf/throughput": 40.0, "x": 3.0}) == []


@pytest.mark.parametrize("form", ["console", "jsonl"])
def test_the_synthetic_run_in_both_forms(tmp_path, form):
    path = tmp_path / form
    path.write_text(synthetic_log.console_log() if form == "console" else synthetic_log.jsonl_log())
    gates = parse_gates(
        [
            FLOOR,
            RISING,
            {**FLOOR, "after_step": synthetic_log.DIP_STEP},
            {"metric": "critic/rewards/mean", "trend": "falling"},
            {"metric": "perf/max_memory_reserved_gb", "trend": "flat", "tolerance": 5},
        ]
    )
    floor, rising, after_dip, falling, memory = evaluate(gates, read_files([path]))
    assert not floor.passed and floor.number("violating_steps") == (synthetic_log.DIP_STEP,)
    assert floor.number("violating_values") == (synthetic_log.DIP_THROUGHPUT,) and floor.number("n") == 100
    assert rising.passed and rising.number("p_value") < 1e-6
    assert rising.number("theil_sen_slope") == pytest.approx(0.005, rel=0.2)
    assert after_dip.passed and after_dip.number("n") == synthetic_log.STEPS - synthetic_log.DIP_STEP
    assert not falling.passed
    assert memory.passed


def test_verdict_json_is_strict_json():
    import json

    result = verdict({"trend": "rising"}, [1.0] * 20)
    json.loads(json.dumps(result.as_json(), allow_nan=False))
    assert isinstance(Gate("m").name, str)
