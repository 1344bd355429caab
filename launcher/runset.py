"""Run directories read as a set, for `sapo-launch ls`, `compare` and `report --overlay`: what each one's records
say (plan.json, recipe.resolved.yaml, summary.json, the job record, the metrics), read and never written, and
nothing asked of a cluster: a run that has not ended shows as its summary.json records it (`status RUN_DIR` asks
where it runs).

A run directory is a directory holding plan.json (`read_run`); `find_runs` takes those in a root and in its
subdirectories one level down (a sweep's own runs directory), never going into a run directory (a root that is one
is listed alone). A resumed run's metrics are its whole curve, from the first run it continues (`Run.table`).
`differences` gives what the resolved recipes of runs set differently, a value naming the run's own directory (its
checkpoints, its metrics file) read as `<run dir>`, so that it differs only where the runs do.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from . import executors
from .gates import NOT_JUDGED, unmet
from .metrics import (
    READ_CHUNK,
    STEP_NEEDLE,
    LineSplitter,
    MetricTable,
    StepValues,
    console_metrics,
    parse_jsonl_line,
)
from .plan import METRICS_FILE
from .rundir import LOG_FILE, PLAN_FILE, SUMMARY_FILE, Labels, read_json

RESOLVED_FILE = "recipe.resolved.yaml"
# summary.json's statuses (executors/base.py); a run directory without summary.json shows `unknown`
STATUSES = ("refused", "running", "submitted", "succeeded", "failed", "interrupted", "lost")
OWN_DIRECTORY = "<run dir>"  # how `differences` writes a run's own directory in a value


class RunSetError(Exception):
    """A directory is not a run directory, or a run's files cannot be read; the message says why, in one line."""


def metric_files(run_dir: Path) -> list[Path]:
    """The files a run's metrics are read from: metrics.jsonl and train.log, those that exist."""
    return [run_dir / name for name in (METRICS_FILE, LOG_FILE) if (run_dir / name).is_file()]


@dataclass
class Run:
    """One run directory, as its records stand."""

    path: Path
    plan: dict
    summary: dict = field(default_factory=dict)

    @property
    def labels(self) -> Labels:
        return Labels.recorded(self.plan)

    @property
    def recipe(self) -> str:
        """The recipe's name (plan.json's `name`)."""
        return str(self.plan.get("name") or "")

    @property
    def status(self) -> str:
        return str(self.summary.get("status") or "unknown")

    @property
    def total_steps(self) -> int | None:
        total = self.plan.get("total_steps")
        return total if isinstance(total, int) and not isinstance(total, bool) else None

    @cached_property
    def executor(self) -> str:
        return executors.executor_for(self.path)

    @property
    def address(self) -> str | None:
        """The cluster's address (credentials redacted) as summary.json, else the executor's record, holds it."""
        address = self.summary.get("address")
        if not address and self.executor in executors.RECORD_FILES:
            address = read_json(self.path / executors.RECORD_FILES[self.executor]).get("address")
        return address if isinstance(address, str) else None

    @property
    def where(self) -> str:
        """The cluster's address, else the executor's name (`local`)."""
        return self.address or self.executor

    @cached_property
    def started(self) -> datetime:
        """When the run started (summary.json); for one that never did, when its plan.json was written."""
        try:
            return datetime.fromisoformat(self.summary["started"])
        except (KeyError, TypeError, ValueError):
            return datetime.fromtimestamp((self.path / PLAN_FILE).stat().st_mtime, timezone.utc)

    @cached_property
    def last_step(self) -> int | None:
        """The last step recorded (a lost run's as summary.json records it); None when there is none."""
        recorded = self.summary.get("last_step")
        if self.status == "lost" and isinstance(recorded, int):
            return recorded
        return last_step(self.path)

    @property
    def steps_text(self) -> str:
        """The last step, of the total when the plan knows it (`3/100`); `-` before the first."""
        if self.last_step is None:
            return "-"
        return f"{self.last_step}/{self.total_steps}" if self.total_steps else str(self.last_step)

    @property
    def started_text(self) -> str:
        """When the run started, in UTC to the second (`2026-12-03 20:20:06Z`)."""
        return self.started.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")

    @property
    def gates(self) -> dict[str, dict]:
        """The gate verdicts summary.json records, by gate name; {} before they are judged."""
        gates = self.summary.get("gates")
        return gates if isinstance(gates, dict) else {}

    @property
    def gated_metrics(self) -> list[str]:
        """The metrics the run's gates judge, as plan.json records the gates."""
        entries = self.plan.get("gates") or ()
        return [g["metric"] for g in entries if isinstance(g, dict) and isinstance(g.get("metric"), str)]

    @property
    def verdict(self) -> str:
        """The gates in a word: `passed 2/2`, `failed 1/2` (gates that hold against the run: `gates.unmet`),
        `not judged` (no verdicts recorded yet, or a run cut short before its gates were decided), `-` (the run has
        no gates)."""
        if not self.plan.get("gates"):
            return "-"
        if not self.gates:
            return "not judged"
        failed = unmet(self.gates)
        if failed:
            return f"failed {len(failed)}/{len(self.gates)}"
        if any(v.get("status") == NOT_JUDGED for v in self.gates.values()):
            return NOT_JUDGED
        return f"passed {sum(v.get('passed') is True for v in self.gates.values())}/{len(self.gates)}"

    def table(self, metrics: Iterable[str]) -> MetricTable:
        """The run's readings of `metrics` (metrics.jsonl merged with train.log's console lines), over its whole
        curve when it continues other runs (`resume`: `lineage.read_curve`)."""
        from .lineage import read_curve  # which reads run directories through this module

        try:
            return read_curve(self.path, frozenset(metrics).__contains__).table
        except OSError as exc:
            raise RunSetError(f"cannot read {exc.filename}: {exc.strerror}") from None

    def resolved(self) -> dict:
        """recipe.resolved.yaml; {} when it is missing or unreadable."""
        import yaml

        try:
            data = yaml.safe_load((self.path / RESOLVED_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError, yaml.YAMLError):
            return {}
        return data if isinstance(data, dict) else {}

    def as_json(self) -> dict:
        """The run as `ls --format json` gives it."""
        labels = self.labels
        return {
            "run_dir": str(self.path.absolute()),
            "name": labels.name,
            "tags": list(labels.tags),
            "recipe": self.recipe,
            "recipe_path": self.plan.get("recipe"),
            "status": self.status,
            "exit_code": self.summary.get("exit_code"),
            "steps": self.last_step,
            "total_steps": self.total_steps,
            "gates": {name: verdict.get("status") for name, verdict in self.gates.items()},
            "verdict": self.verdict,
            "executor": self.executor,
            "address": self.address,
            "started": self.started.isoformat(),
        }


def read_run(path: Path) -> Run:
    """The run directory `path`; `RunSetError` when it holds no plan.json, or one that cannot be read."""
    if not (path / PLAN_FILE).is_file():
        raise RunSetError(f"{path}: not a run directory (no {PLAN_FILE})")
    plan = read_json(path / PLAN_FILE)
    if not plan:
        raise RunSetError(f"{path / PLAN_FILE}: unreadable (not a JSON object)")
    return Run(path, plan, read_json(path / SUMMARY_FILE))


def find_runs(root: Path) -> list[Run]:
    """The run directories in `root` and one level down (`root` itself when it is one), oldest first; one whose
    plan.json cannot be read is left out."""
    found = []
    for path in [root] if (root / PLAN_FILE).is_file() else _subdirectories(root):
        inside = [path] if (path / PLAN_FILE).is_file() else _subdirectories(path)
        for candidate in inside:
            try:
                found.append(read_run(candidate))
            except RunSetError:
                continue
    return sorted(found, key=lambda run: (run.started, run.path.name))


def _subdirectories(path: Path) -> list[Path]:
    """The directories in `path` (not through symbolic links), by name; none when it cannot be read."""
    try:
        with os.scandir(path) as entries:
            return sorted(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


class Filters(NamedTuple):
    """What `ls` keeps: a run for which every given criterion holds."""

    statuses: tuple[str, ...] = ()
    recipe: str | None = None  # the recipe's name, or its file
    name: str | None = None  # a shell pattern (`lr-*`) of the run's name
    tags: tuple[str, ...] = ()  # each one a tag of the run's

    def keep(self, run: Run) -> bool:
        from fnmatch import fnmatchcase

        labels = run.labels
        return (
            (not self.statuses or run.status in self.statuses)
            and (self.recipe is None or self._same_recipe(run))
            and (self.name is None or (labels.name is not None and fnmatchcase(labels.name, self.name)))
            and set(self.tags) <= set(labels.tags)
        )

    def _same_recipe(self, run: Run) -> bool:
        """--recipe names the run's recipe, or the file plan.json records it was read from."""
        recorded = run.plan.get("recipe")
        return self.recipe == run.recipe or (
            isinstance(recorded, str)
            and Path(str(run.plan.get("cwd") or ""), recorded).absolute() == Path(self.recipe).absolute()
        )


def last_step(run_dir: Path) -> int | None:
    """The last step in the last `READ_CHUNK` bytes of the run's metrics.jsonl, else of its train.log: a run of any
    length is read no further (a run writes its steps in order, and the launcher appends the steps only the console
    showed after the file logger's). None when neither shows one."""
    for path in metric_files(run_dir):
        try:
            with open(path, "rb") as handle:
                start = max(0, handle.seek(0, os.SEEK_END) - READ_CHUNK)
                handle.seek(start)
                tail = handle.read(READ_CHUNK)
        except OSError:
            continue
        if start:  # its first line is cut
            tail = tail[tail.find(b"\n") + 1 :]
        lines = LineSplitter(STEP_NEEDLE)
        steps = [
            parsed[0] for line, whole in (*lines.feed(tail), lines.close()) if (parsed := _metric_line(line, whole))
        ]
        if steps:
            return max(steps)
    return None


def _metric_line(line: bytes, whole: bool) -> StepValues | None:
    """A file-logger record, else a console metric line, as `metrics.read_files` reads a line."""
    record = parse_jsonl_line(line) if whole and line.startswith(b"{") else None
    return record if record is not None else console_metrics(line, whole)


class Differences(NamedTuple):
    """What the runs' resolved recipes set differently, each value in the runs' order (None where a run does not set
    it): the recipe's own fields (`name`, `verl`, `entrypoint`, `config_name`, `variant`), the Hydra overrides by
    key, the environment by name."""

    fields: dict[str, list[str | None]]
    overrides: dict[str, list[str | None]]
    env: dict[str, list[str | None]]


def differences(runs: list[Run]) -> Differences:
    """What the runs set differently, each part in the order the runs first set its keys."""
    settings = [_settings(run) for run in runs]
    return Differences(
        *(_differing([setting[part] for setting in settings]) for part in range(len(Differences._fields)))
    )


def _settings(run: Run) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """A run's resolved recipe as `Differences`' three parts, each value as text with the run's own directory
    written `OWN_DIRECTORY`."""
    resolved, own = run.resolved(), str(run.plan.get("run_dir") or run.path.absolute())

    def text(value) -> str:
        return str(value).replace(own, OWN_DIRECTORY)

    fields = {key: text(value) for key, value in resolved.items() if key not in ("recipe", "overrides", "env")}
    overrides = {}
    for override in resolved.get("overrides") or ():
        key, _, value = str(override).partition("=")
        overrides[key.lstrip("+")] = text(value)
    env = resolved.get("env")
    return fields, overrides, {name: text(value) for name, value in (env.items() if isinstance(env, dict) else ())}


def _differing(settings: list[dict[str, str]]) -> dict[str, list[str | None]]:
    """The keys whose values are not the same in every one of `settings`, with each one's value."""
    keys = dict.fromkeys(key for setting in settings for key in setting)
    rows = {key: [setting.get(key) for setting in settings] for key in keys}
    return {key: row for key, row in rows.items() if len(set(row)) > 1}
