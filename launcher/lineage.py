"""Runs that continue one another (`sapo-launch resume`, a restart after a cluster failure: `restarts.py`): the links
between their run directories, and the one training curve they make.

The links, both ways: a resumed run's plan.json records `resume` (`Resume`: the run it continues, the checkpoint
directory verl resumes from, the checkpoint's step, verl's resume mode, and for a restart its attempt and why),
and the run it continues lists the new run's directory in its summary.json's `resumed_by` (a run may be resumed more
than once: a resume that failed, then another). Paths are absolute; a parent that is not at its recorded path is
looked for beside its child (a runs directory moved or copied whole).

The curve of a run (`read_curve`): the runs it continues, first to last, each with its own metrics (metrics.jsonl
and train.log, as `metrics.read_files` merges them) up to the step its successor resumed from, then the run's own.
The resume step is the one plan.json records (the launcher read verl's checkpoint tracker before the resume); when
it could not (a checkpoint directory only the cluster sees), the step before the successor's first logged step.
A step two runs logged (verl validates at the resume step before training on) keeps the later run's value of each
metric it logged, and the earlier run's of the others. Gates of a resumed run are judged on its curve, whoever
judges them (`judged_over_curve`: the launcher that follows it, `status`, `logs`, `stop`, `report`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from .gates import Gate, Verdict, evaluate, judged
from .metrics import MetricTable, kept, read_files
from .rundir import PLAN_FILE, SUMMARY_FILE, read_json, read_summary, write_json
from .runset import metric_files

RESUME_KEY = "resume"  # plan.json: what the run continues (`Resume`)
RESUMED_BY_KEY = "resumed_by"  # summary.json: the run directories that continue this run


class Resume(NamedTuple):
    """What plan.json records of the run a resumed run continues (`RESUME_KEY`)."""

    of: str  # the run directory it continues (absolute)
    checkpoint_dir: str  # verl's trainer.default_local_dir: the continued run's, where this run saves too
    step: int | None  # the checkpoint's step (verl's tracker file); None: verl finds the latest (resume_mode auto)
    mode: str  # verl's trainer.resume_mode: `resume_path` (the step's folder) or `auto`
    attempt: int | None = None  # a restart's attempt number (the first run is attempt 1); None: the user's resume
    reason: str | None = None  # why a restart was made: the cluster reason the run it continues failed for

    @classmethod
    def recorded(cls, run_dir: Path) -> Resume | None:
        """What RUN_DIR's plan.json records; None for a run that continues none (or a record it cannot be)."""
        recorded = read_json(Path(run_dir) / PLAN_FILE).get(RESUME_KEY)
        try:
            return cls(**recorded) if isinstance(recorded, dict) else None
        except TypeError:
            return None


class Part(NamedTuple):
    """One run's steps in a curve: its directory and the first and last step it gives the curve (None: none)."""

    run_dir: Path
    first: int | None
    last: int | None


class Curve(NamedTuple):
    """The metrics of a curve (`read_curve`), and which steps each of its runs gives it."""

    table: MetricTable
    parts: tuple[Part, ...]  # first run first; one part for a run that continues none


def parent_of(run_dir: Path) -> Path | None:
    """The run directory RUN_DIR continues, where it is found; None when it continues none, or it is not found."""
    resume = Resume.recorded(run_dir)
    if resume is None:
        return None
    recorded = Path(resume.of)
    for candidate in (recorded, Path(run_dir).absolute().parent / recorded.name):
        if (candidate / PLAN_FILE).is_file():
            return candidate
    return None


def lineage(run_dir: Path) -> list[Path]:
    """RUN_DIR and the runs it continues, the first run first (a loop of links, which no launcher writes, ends it)."""
    runs = [Path(run_dir)]
    seen = {Path(run_dir).resolve()}
    while (parent := parent_of(runs[0])) is not None and parent.resolve() not in seen:
        seen.add(parent.resolve())
        runs.insert(0, parent)
    return runs


def read_curve(run_dir: Path, keep: Callable[[str], bool] | None = None) -> Curve:
    """The metrics (those `keep` accepts) of the whole curve RUN_DIR ends (module docstring). Raises `OSError`
    when a run's file cannot be read."""
    runs = lineage(run_dir)
    tables = [read_files(metric_files(run), keep) for run in runs]
    if len(runs) == 1:
        table = tables[0]
        return Curve(table, (Part(runs[0], _first(table.steps()), table.last_step),))
    curve, parts = MetricTable(keep=keep), []
    for i, (run, table) in enumerate(zip(runs, tables, strict=True)):
        cut = _resume_step(runs[i + 1], tables[i + 1]) if i + 1 < len(runs) else None
        steps = [step for step in table.steps() if cut is None or step <= cut]
        for step in steps:
            curve.add(curve.jsonl, (step, table.at(step)))
        parts.append(Part(run, _first(steps), steps[-1] if steps else None))
    return Curve(curve, tuple(parts))


def _resume_step(run_dir: Path, table: MetricTable) -> int | None:
    """The step RUN_DIR resumed from: as recorded, else the step before its first (None: it logged none)."""
    resume = Resume.recorded(run_dir)
    if resume is not None and resume.step is not None:
        return resume.step
    steps = table.steps()
    return steps[0] - 1 if steps else None


def _first(steps: list[int]) -> int | None:
    return steps[0] if steps else None


def judged_over_curve(
    run_dir: Path, gates: tuple[Gate, ...], status: str | None, own: tuple[Verdict, ...]
) -> tuple[Verdict, ...]:
    """The gate verdicts of RUN_DIR: `own` (judged on its own metrics) for a run that continues none; for a resumed
    run, the gates judged on its whole curve, as its status (`gates.judged`) leaves them."""
    if parent_of(run_dir) is None:
        return own
    return judged(evaluate(gates, read_curve(run_dir, kept(g.metric for g in gates)).table), status)


def link(parent: Path, child: Path) -> None:
    """Record in PARENT's summary.json that CHILD continues it (`RESUMED_BY_KEY`), one write."""
    summary = read_summary(parent)
    children = [c for c in summary.get(RESUMED_BY_KEY) or [] if c != str(child)]
    summary[RESUMED_BY_KEY] = [*children, str(child)]
    write_json(Path(parent) / SUMMARY_FILE, summary)


def described(run_dir: Path) -> list[str]:
    """What `status` says of RUN_DIR's links and curve, a line each: the run it continues (from which step), the
    curve's steps over its runs, and the runs that continue it. [] for a run linked to none."""
    lines = []
    resume = Resume.recorded(run_dir)
    if resume is not None:
        step = f"step {resume.step}" if resume.step is not None else "its latest checkpoint"
        lines.append(f"resumes {resume.of} from {step}")
        parts = read_curve(run_dir, lambda _: False).parts
        shown = [p for p in parts if p.first is not None]
        if shown:
            each = ", ".join(f"{p.run_dir.name} {_span(p.first, p.last)}" for p in shown)
            lines.append(f"curve: steps {_span(shown[0].first, shown[-1].last)} over {len(parts)} runs ({each})")
    lines.extend(f"resumed by {child}" for child in read_summary(run_dir).get(RESUMED_BY_KEY) or [])
    return lines


def _span(first: int, last: int) -> str:
    return f"{first}-{last}" if last != first else str(first)
