"""A recipe's `gates:` as the linter reads them: what each entry needs of a run to be judged at all.

Shared by the linter (RF013 asks whether a run can give a gate what it needs) and the launcher (`launcher/gates.py`
judges the gates on a run's metrics, with the same minimum).
"""

from __future__ import annotations

from typing import NamedTuple

from .diagnostics import Location

# Below ~8 readings Kendall's exact null distribution cannot reach a usual significance level with any margin.
MIN_TREND_READINGS = 8


class GateNeeds(NamedTuple):
    """One gate entry, reduced to what decides whether a run can judge it, and where it is written."""

    location: Location
    metric: str
    trend: str | None = None  # "rising" | "falling" | "flat"; None: a bound
    after_step: int = 0  # only readings of later steps count
    window: int | None = None  # trends: readings in each of the first and last windows
    last_n: int | None = None  # bounds over the last N readings

    @property
    def readings(self) -> int:
        """The fewest readings after `after_step` the gate can be decided on: a trend needs `MIN_TREND_READINGS`
        and two windows (the default window is a quarter of the readings, which fits in any 8), a `last N` bound
        N, any other bound one."""
        if self.trend:
            return max(MIN_TREND_READINGS, 2 * (self.window or 0))
        return self.last_n or 1


def gate_needs(entry: dict, location: Location) -> GateNeeds:
    """A gate entry the recipe schema accepted (`over` is `every`, `mean` or `last N`)."""
    over = entry.get("over", "every")
    return GateNeeds(
        location,
        entry["metric"],
        entry.get("trend"),
        entry.get("after_step", 0),
        entry.get("window"),
        int(over.split()[1]) if over.startswith("last ") else None,
    )
