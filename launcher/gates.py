"""Acceptance gates on a run's per-step metrics (a recipe's `gates:`): reading them, the live check, the verdicts.

A gate is a bound or a trend on one metric, over the readings of the steps after `after_step` (a warm-up):

- Bound: `min` and/or `max`, applied to `every` reading (the default), to their `mean`, or to each of the `last N`
  readings. A NaN reading meets no bound. While the run goes, an `every` bound broken after the warm-up is
  reported at once, once per gate.
- `rising` / `falling`: the Mann-Kendall test (Kendall's tau of the readings against the step, one-sided, at level
  `alpha`, default 0.05) must find the trend, and the mean of the last `window` readings must lie beyond the mean of
  the first `window` (default: a quarter of the readings each): the rank test alone also fires on a series that
  moved in the middle and came back. Rank-based, so a few outlier steps do not decide it. It assumes independent
  readings; RL metrics are autocorrelated, which makes it somewhat eager.
- `flat`: an equivalence test (two one-sided tests at level `alpha`): the Theil-Sen slope's 1 - 2 alpha confidence
  interval, times the span of the gated steps, and the change between the first and last window means must both
  lie within +-`tolerance` (the metric's units). A test that merely fails to find a trend is no evidence of
  flatness; this asks the data to show that any trend is small.

Trends drop non-finite readings (the verdict says how many) and need at least `MIN_TREND_READINGS` and two windows.
Each verdict carries the numbers it was decided on. scipy is imported only to decide a trend.

Cost: Kendall's tau takes O(n log n) time on every reading. The Theil-Sen slope takes the median of all pairwise
slopes (scipy builds them in n x n arrays: 9.7 GB at 20,000 readings), so it is computed on at most
`THEIL_SEN_POINTS` readings, evenly spaced over the series (every one when there are fewer): deterministic, about
100 MB and a third of a second, and its confidence interval is that of the readings it used, so wider than the
full series would give (the `flat` gate errs towards failing). The verdict states how many it used
(`theil_sen_points`).
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from statistics import fmean
from typing import Any, NamedTuple

from sapo_toolkit.linter.core.gates import MIN_TREND_READINGS  # RF013 lints gates against the same minimum

from .metrics import MetricTable

DEFAULT_ALPHA = 0.05
# A verdict lists at most this many violating steps (and counts them all).
LISTED_VIOLATIONS = 100
# `--fail-on-gates`: the trainer succeeded, a gate did not pass. Distinct from every code a trainer or its wrappers
# commonly exit with (Python's 1 and 2, a shell's 126 and 127, 128 + N for a signal, sysexits' 64-78, Ray's
# FAILED job without a code, 1), so that a script can tell "the run broke" from "the run was not good enough".
EXIT_GATES_FAILED = 8
THEIL_SEN_POINTS = 2000  # see the module docstring
NOT_JUDGED = "not judged"


class GateError(Exception):
    """A gate entry is not valid; the message says which and why, in one line."""


class Gate(NamedTuple):
    """One entry of a recipe's `gates:`, numbers as written (they name the gate)."""

    metric: str
    min: float | None = None
    max: float | None = None
    over: str = "every"  # "every" | "mean" | "last N"
    trend: str | None = None  # "rising" | "falling" | "flat"
    after_step: int = 0
    window: int | None = None
    alpha: float | None = None
    tolerance: float | None = None

    @property
    def name(self) -> str:
        """Stable: the same entry gives the same name, in summary.json, the report and `--format json`."""
        if self.trend:
            within = f" within {self.tolerance}" if self.tolerance is not None else ""
            extra = "".join(f", {k} {v}" for k, v in (("window", self.window), ("alpha", self.alpha)) if v is not None)
            return f"{self.metric} {self.trend}{within} (after {self.after_step}{extra})"
        return f"{self.bound_text()} ({self.over}, after {self.after_step})"

    def bound_text(self, subject: str | None = None) -> str:
        subject = subject or self.metric
        if self.min is not None and self.max is not None:
            return f"{self.min} <= {subject} <= {self.max}"
        return f"{subject} >= {self.min}" if self.min is not None else f"{subject} <= {self.max}"

    def meets(self, value: float) -> bool:
        """Whether a value meets the bounds; NaN meets none."""
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)

    @property
    def last_n(self) -> int | None:
        return int(self.over.split()[1]) if self.over.startswith("last ") else None

    @property
    def level(self) -> float:
        return DEFAULT_ALPHA if self.alpha is None else self.alpha


class Verdict(NamedTuple):
    gate: Gate
    # "passed" | "failed" | "no data" (too few readings to decide) | "not judged" (a run cut short, `judged`; or
    # `needs`): not passed
    status: str
    reason: str  # one line
    numbers: tuple[tuple[str, Any], ...]  # what the verdict was decided on, in a stable order
    needs: str | None = None  # the package this machine lacks to judge the gate: no fault of the run's

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def number(self, key: str) -> Any:
        return dict(self.numbers).get(key)

    def as_json(self) -> dict:
        return {
            "passed": self.passed,
            "status": self.status,
            "reason": self.reason,
            **({"needs": self.needs} if self.needs else {}),
            **{k: _json_number(v) for k, v in self.numbers},
        }


@cache
def _gate_validator():
    import jsonschema  # the reference validator: its messages name the key

    from sapo_toolkit import schemas

    schema = json.loads((Path(schemas.__file__).parent / "recipe.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema["properties"]["gates"]["items"])


def parse_gates(entries: Iterable) -> tuple[Gate, ...]:
    """Gates from a recipe's `gates:` entries (checked against the recipe schema's gate definition); entries that
    name the same gate count once. Raises `GateError`."""
    gates: dict[str, Gate] = {}
    for index, entry in enumerate(entries):
        from jsonschema.exceptions import best_match  # only for a recipe with gates

        error = best_match(_gate_validator().iter_errors(entry))
        if error is not None:
            where = ".".join(map(str, error.absolute_path))
            raise GateError(f"gates.{index}{'.' + where if where else ''}: {error.message}")
        gate = Gate(**entry)
        gates.setdefault(gate.name, gate)
    return tuple(gates.values())


def readings(gate: Gate, table: MetricTable) -> list[tuple[int, float]]:
    """The (step, value) pairs a gate judges: its metric's, after the warm-up."""
    return [(step, value) for step, value in table.series(gate.metric) if step > gate.after_step]


def evaluate(gates: Iterable[Gate], table: MetricTable) -> tuple[Verdict, ...]:
    return tuple((_trend if g.trend else _bound)(g, readings(g, table)) for g in gates)


@dataclass(slots=True)
class LiveGates:
    """The `every` bounds, checked as readings arrive: the first reading after the warm-up that breaks one is
    reported at once, each gate once."""

    gates: tuple[Gate, ...]
    reported: set[str] = field(default_factory=set)

    def check(self, step: int, values: Mapping[str, float]) -> list[str]:
        broken = []
        for gate in self.gates:
            value = values.get(gate.metric)
            if (
                gate.trend
                or gate.over != "every"
                or gate.name in self.reported
                or value is None
                or step <= gate.after_step
                or gate.meets(value)
            ):
                continue
            self.reported.add(gate.name)
            broken.append(f"gate failed at step {step}: {gate.name}: {gate.metric} = {value:.6g}")
        return broken


def _bound(gate: Gate, found: list[tuple[int, float]]) -> Verdict:
    n, needed = len(found), gate.last_n or 1
    if n < needed:
        return _no_data(gate, f"{n} readings of {gate.metric} after step {gate.after_step}; the gate needs {needed}", n)
    if gate.over == "mean":
        mean = fmean(v for _, v in found)
        status = "passed" if gate.meets(mean) else "failed"
        verb = "meets" if status == "passed" else "breaks"
        return Verdict(
            gate,
            status,
            f"mean {mean:.6g} of {n} readings {verb} {gate.bound_text('mean')}",
            (("n", n), ("mean", mean)),
        )
    checked = found[-needed:] if gate.last_n else found
    bad = [(s, v) for s, v in checked if not gate.meets(v)]
    low, high = min(checked, key=lambda r: r[1]), max(checked, key=lambda r: r[1])
    numbers = (
        ("n", len(checked)),
        ("lowest", low[1]),
        ("lowest_step", low[0]),
        ("highest", high[1]),
        ("highest_step", high[0]),
        ("violations", len(bad)),
        ("violating_steps", tuple(s for s, _ in bad[:LISTED_VIOLATIONS])),
        ("violating_values", tuple(v for _, v in bad[:LISTED_VIOLATIONS])),
    )
    if not bad:
        return Verdict(
            gate,
            "passed",
            f"all {len(checked)} readings meet {gate.bound_text()} "
            f"(lowest {low[1]:.6g} at step {low[0]}, highest {high[1]:.6g} at step "
            f"{high[0]})",
            numbers,
        )
    first_step, first_value = bad[0]
    return Verdict(
        gate,
        "failed",
        f"{len(bad)} of {len(checked)} readings break {gate.bound_text()}, first at "
        f"step {first_step}: {first_value:.6g}",
        numbers,
    )


def _trend(gate: Gate, found: list[tuple[int, float]]) -> Verdict:
    finite = [(s, v) for s, v in found if math.isfinite(v)]
    n, dropped = len(finite), len(found) - len(finite)
    window = gate.window or max(2, n // 4)
    needed = max(MIN_TREND_READINGS, 2 * window)
    if n < needed:
        return _no_data(
            gate, f"{n} finite readings of {gate.metric} after step {gate.after_step}; a trend needs {needed}", n
        )
    try:
        from scipy import stats
    except ImportError:
        from sapo_toolkit.linter.core.extras import install_command

        reason = f"not decided: trends need scipy ({install_command('report')})"
        return Verdict(gate, NOT_JUDGED, reason, (("n", n),), needs="scipy")
    steps, values = [s for s, _ in finite], [v for _, v in finite]
    alpha = gate.level
    with warnings.catch_warnings():  # a constant series: tau and p are NaN, which decide below as "no trend"
        warnings.simplefilter("ignore")
        alternative = {"rising": "greater", "falling": "less"}.get(gate.trend, "two-sided")
        tau, p_value = stats.kendalltau(steps, values, alternative=alternative)
        sample = evenly_spaced(n, THEIL_SEN_POINTS)
        slope, intercept, low, high = stats.theilslopes(
            [values[i] for i in sample], [steps[i] for i in sample], alpha=1 - 2 * alpha
        )
    first, last = fmean(values[:window]), fmean(values[-window:])
    span = steps[-1] - steps[0]
    numbers = [
        ("n", n),
        ("dropped_non_finite", dropped),
        ("window", window),
        ("alpha", alpha),
        ("kendall_tau", float(tau)),
        ("p_value", float(p_value)),
        ("alternative", alternative),
        ("theil_sen_slope", float(slope)),
        ("theil_sen_intercept", float(intercept)),
        ("slope_ci_low", float(low)),
        ("slope_ci_high", float(high)),
        ("ci_level", 1 - 2 * alpha),
        ("theil_sen_points", len(sample)),
        ("first_window_mean", first),
        ("last_window_mean", last),
    ]
    means = f"last-{window} mean {last:.6g} vs first-{window} mean {first:.6g}"
    theil_sen = (
        f"Theil-Sen slope {slope:.3g}/step"
        + (f" (on {len(sample)} of the {n} readings, evenly spaced)" if len(sample) < n else "")
        + f", {1 - 2 * alpha:.0%} CI [{low:.3g}, {high:.3g}]"
    )
    if gate.trend == "flat":
        bound = max(abs(low), abs(high)) * span
        numbers += [("tolerance", gate.tolerance), ("change_bound", bound)]
        passed = bound <= gate.tolerance and abs(last - first) <= gate.tolerance
        reason = (
            f"{theil_sen} over {span} steps bounds the change by {bound:.3g} "
            f"({'<=' if bound <= gate.tolerance else '>'} {gate.tolerance}); {means}"
        )
    else:
        direction = 1 if gate.trend == "rising" else -1
        passed = bool(p_value < alpha) and direction * (last - first) > 0
        reason = (
            f"Mann-Kendall tau {tau:.3f}, one-sided p {p_value:.3g} ({'<' if p_value < alpha else 'not <'} "
            f"{alpha}); {means}; {theil_sen}"
        )
    return Verdict(gate, "passed" if passed else "failed", reason, tuple(numbers))


def evenly_spaced(n: int, k: int) -> list[int]:
    """k indices spread evenly over range(n), the first and the last included; all n when n <= k."""
    if n <= k:
        return list(range(n))
    return [round(i * (n - 1) / (k - 1)) for i in range(k)]


def _no_data(gate: Gate, reason: str, n: int) -> Verdict:
    return Verdict(gate, "no data", reason, (("n", n),))


def _json_number(value: Any) -> Any:
    """Non-finite floats as null (strict JSON); tuples as lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, tuple):
        return [_json_number(v) for v in value]
    return value


def gates_json(verdicts: Iterable[Verdict]) -> dict:
    """summary.json's `gates` and `report --format json`'s: each verdict under its gate's name."""
    return {v.gate.name: v.as_json() for v in verdicts}


# How a run that did not succeed ended, as a verdict's reason says it (summary.json's status).
_CUT_SHORT = {"failed": "the run failed", "interrupted": "the run was stopped", "lost": "the run's launcher was lost"}


def judged(verdicts: Iterable[Verdict], run_status: str | None) -> tuple[Verdict, ...]:
    """The verdicts as they stand for a run whose summary.json status is `run_status` (None: a log of unknown
    outcome, judged as it is). A run that did not succeed was cut short: only a reading that broke an `every` bound
    decides a gate on it; a gate it met so far, or had no readings for (a warm-up not reached), is `not judged`
    (not passed): its readings end where the run did."""
    verdicts = tuple(verdicts)
    if run_status in (None, "succeeded"):
        return verdicts
    how = _CUT_SHORT.get(run_status, "the run has not ended")
    return tuple(
        v
        if v.status == "failed" and v.gate.over == "every" and not v.gate.trend
        else v._replace(status=NOT_JUDGED, reason=f"{how}; on its readings so far: {v.reason}")
        for v in verdicts
    )


def unmet(verdicts_json: Mapping[str, dict]) -> list[str]:
    """The names of the gates that hold against the run, from `gates_json`'s form (summary.json's `gates`): those
    that did not pass, except one not judged (a run cut short, `judged`) or one this machine could not judge
    (`needs` a package): its verdict says so, but the run is no worse for it."""
    return [
        name
        for name, verdict in verdicts_json.items()
        if not verdict["passed"] and verdict.get("status") != NOT_JUDGED and not verdict.get("needs")
    ]


def gate_exit_code(exit_code: int, verdicts: Iterable[Verdict], fail_on_gates: bool) -> int:
    """`--fail-on-gates`: a gate that holds against the run (`unmet`) turns a success into `EXIT_GATES_FAILED`; a
    failure keeps its own code."""
    if fail_on_gates and exit_code == 0 and unmet(gates_json(verdicts)):
        return EXIT_GATES_FAILED
    return exit_code
