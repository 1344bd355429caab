"""`sapo-launch report`: a run's metrics and gate verdicts as `report.md` with PNG plots.

`report RUN_DIR` reads a run directory, finished, failed or still running: `metrics.jsonl` merged with the console
lines of `train.log` (the file logger's values win; a resumed run's whole curve: `lineage.read_curve`), the gates and
total steps from `plan.json`, the status from `summary.json` (a run whose launcher died is recorded there as `lost`:
`rundir.settle_lost`). `report --log FILE
[--recipe RECIPE]` reads a plain verl console log or a file-logger JSONL from a run not launched with sapo-launch,
judged against the recipe's gates. Only the metrics the report shows are held. Plots (matplotlib's Agg backend,
imported only here): throughput, reward, response length and device memory per step, each gate on its metric
(bounds as dashed lines, violating readings as crosses, a trend's Theil-Sen line), any other gated metric, and the
phase timings (`timing_s/*`) stacked. matplotlib is optional (the `report` extra): without it the report has the
verdicts and the metrics table, and says how to install it. Every file is written atomically.

`report --overlay RUN_DIR...` puts runs side by side as their records stand (`launcher.runset`: nothing is asked of
a cluster): a table of their status, last step and gates, then one plot per metric (the plots' and every run's
gated ones) with a line per run, labelled with the run's name (`--name`) or its directory's; matplotlib optional, as
for one run.

Exit code 0 whatever the verdicts, unless `--fail-on-gates` (then `gates.EXIT_GATES_FAILED` when a gate did not
pass); usage errors exit 2.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import NamedTuple, TypeVar

from sapo_toolkit.atomicio import write_atomically

from .gates import Gate, GateError, Verdict, parse_gates
from .lineage import read_curve
from .metrics import MetricTable, kept, read_files
from .plan import METRICS_FILE
from .rundir import LOG_FILE, PLAN_FILE, SUMMARY_FILE, settle_lost
from .runset import Run, RunSetError, metric_files, read_run

REPORT_FILE = "report.md"
TIMING_PREFIX = "timing_s/"
STEP_TIMING = "timing_s/step"  # the whole step; the phases are stacked under it
T = TypeVar("T")


class PlotSpec(NamedTuple):
    slug: str  # the PNG is <report stem>-<slug>.png
    title: str
    metrics: tuple[str, ...]
    unit: str


PLOTS = (
    PlotSpec("throughput", "Throughput", ("perf/throughput",), "tokens/s per device"),
    PlotSpec("reward", "Reward", ("critic/rewards/mean",), "mean reward"),
    PlotSpec("response-length", "Response length", ("response_length/mean",), "tokens"),
    PlotSpec("memory", "Device memory", ("perf/max_memory_allocated_gb", "perf/max_memory_reserved_gb"), "GB"),
)


class ReportError(Exception):
    """The run or the recipe cannot be read; the message says why, in one line."""


class ReportWriteError(Exception):
    """A report file could not be written (one line: the path and why)."""


@dataclass(slots=True)
class RunData:
    title: str
    sources: tuple[str, ...]  # file names, for the report
    table: MetricTable
    gates: tuple[Gate, ...]
    status: str | None  # summary.json's, with its exit code; None for a plain log
    total_steps: int | None


def load_run_dir(run_dir: Path, recipe: Path | None, record=None) -> RunData:
    """A run directory's metrics, gates (the recipe's, else plan.json's) and status; a run whose launcher died is
    recorded `lost` (through `record`, `executors.Record`, when given: with its gate verdicts, in one write)."""
    files = metric_files(run_dir)
    if not files:
        raise ReportError(f"{run_dir}: not a run directory (no {METRICS_FILE} or {LOG_FILE})")
    plan, summary = _json_file(run_dir / PLAN_FILE), _json_file(run_dir / SUMMARY_FILE)
    gates = _recipe_gates(recipe) if recipe else _parse(plan.get("gates") or (), run_dir / PLAN_FILE)
    curve = _read(gates, lambda keep: read_curve(run_dir, keep))  # a resumed run's: from the first run on
    table = curve.table
    if summary.get("status") == "running":  # unless its launcher died: then it is recorded as lost
        summary = settle_lost(run_dir, lambda: table.last_step, record)
    status = summary.get("status")
    if status and summary.get("exit_code") is not None:
        status = f"{status} (exit {summary['exit_code']})"
    total = plan.get("total_steps")
    return RunData(
        str(plan.get("name") or run_dir.name),
        (
            *(f"{p.run_dir.name}/{f.name}" for p in curve.parts[:-1] for f in metric_files(p.run_dir)),
            *(f.name for f in files),
        ),
        table,
        gates,
        status,
        total if isinstance(total, int) else None,
    )


def load_log(log: Path, recipe: Path | None) -> RunData:
    gates = _recipe_gates(recipe) if recipe else ()
    return RunData(log.name, (log.name,), _read(gates, lambda keep: read_files([log], keep)), gates, None, None)


def shown_metrics(gated: Iterable[str] = ()) -> list[str]:
    """The metrics a report shows (besides the phase timings): the plots', then the `gated` ones, each once."""
    return list(dict.fromkeys([*(m for spec in PLOTS for m in spec.metrics), *gated]))


def _read(gates: tuple[Gate, ...], read: Callable[[Callable[[str], bool]], T]) -> T:
    """What `read` gives of the metrics the report shows (the plots', the gates' and the phase timings), given
    which metrics to keep; a file it cannot read is a `ReportError`."""
    try:
        return read(kept(shown_metrics(g.metric for g in gates), (TIMING_PREFIX,)))
    except OSError as exc:
        raise ReportError(f"cannot read {exc.filename}: {exc.strerror}") from None


def _json_file(path: Path) -> dict:
    """A run directory's JSON record; {} when absent (a run directory copied without it)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: unreadable: {exc}") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path}: not a JSON object")
    return data


def _parse(entries, where: Path) -> tuple[Gate, ...]:
    try:
        return parse_gates(entries)
    except GateError as exc:
        raise ReportError(f"{where}: {exc}") from None


def _recipe_gates(recipe: Path) -> tuple[Gate, ...]:
    """The recipe's gates, read through the linter's door; a recipe the linter cannot read, or whose gates break the
    schema, is a usage error naming the first problem."""
    from sapo_toolkit.linter import api
    from sapo_toolkit.linter.api import UnreadableFile
    from sapo_toolkit.linter.settings import SettingsError, load_settings

    try:
        settings, _ = load_settings(recipe.resolve().parent)
        loaded = api.load(recipe, api.read_options(settings))
    except (UnreadableFile, SettingsError) as exc:
        raise ReportError(str(exc)) from None
    if loaded is None or loaded.kind != "recipe":
        raise ReportError(f"{recipe}: not a recipe (a YAML file with a top-level `recipe:` key)")
    problems = [d for d in loaded.diagnostics if loaded.recipe is None or d.message.startswith("gates")]
    if problems:
        raise ReportError(problems[0].text_line())
    return _parse(loaded.recipe.data.get("gates") or (), recipe)


def plot_pngs(run: RunData, verdicts: tuple[Verdict, ...]) -> dict[str, tuple[str, bytes]]:
    """(title, PNG bytes) by slug, for the plots whose metrics were logged."""
    gated = [v.gate.metric for v in verdicts]
    plotted = {m for spec in PLOTS for m in spec.metrics}
    specs = [*PLOTS, *(PlotSpec(_slug(m), f"`{m}`", (m,), m) for m in dict.fromkeys(gated) if m not in plotted)]
    pngs = {spec.slug: (spec.title, _line_plot(spec, run.table, verdicts)) for spec in specs}
    pngs["timings"] = ("Phase timings (`timing_s/*`)", _timings_plot(run.table))
    return {slug: (title, png) for slug, (title, png) in pngs.items() if png is not None}


def _slug(metric: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", metric).strip("-").lower()


def _axes(width: float = 8.0):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, 3.6), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _png(figure) -> bytes:
    buffer = BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _line_plot(spec: PlotSpec, table: MetricTable, verdicts: tuple[Verdict, ...]) -> bytes | None:
    series = {m: table.series(m) for m in spec.metrics}
    series = {m: points for m, points in series.items() if points}
    if not series:
        return None
    figure, ax = _axes()
    for metric, points in series.items():
        ax.plot(*zip(*points, strict=True), label=metric, linewidth=1.2, marker="." if len(points) <= 50 else None)
    for verdict in (v for v in verdicts if v.gate.metric in series):
        _draw_gate(ax, verdict, series[verdict.gate.metric])
    ax.set(title=spec.title.strip("`"), xlabel="step", ylabel=spec.unit)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return _png(figure)


def _draw_gate(ax, verdict: Verdict, points: list[tuple[int, float]]) -> None:
    gate, color = verdict.gate, "tab:green" if verdict.passed else "tab:red"
    label = f"{gate.name}: {verdict.status}"
    if gate.after_step > points[0][0]:
        ax.axvline(gate.after_step, color="grey", linestyle=":", linewidth=1)
    for bound in (gate.min, gate.max):
        if bound is not None:
            ax.axhline(bound, color=color, linestyle="--", linewidth=1, label=label)
            label = None  # one legend entry per gate
    steps = verdict.number("violating_steps") or ()
    if steps:
        ax.scatter(steps, verdict.number("violating_values"), marker="x", color="tab:red", zorder=3, label=None)
    slope, intercept = verdict.number("theil_sen_slope"), verdict.number("theil_sen_intercept")
    if slope is not None and math.isfinite(slope):
        first, last = max(gate.after_step + 1, points[0][0]), points[-1][0]
        ax.plot(
            [first, last],
            [intercept + slope * first, intercept + slope * last],
            color=color,
            linestyle="--",
            linewidth=1.5,
            label=f"{label} (Theil-Sen)",
        )


def _timings_plot(table: MetricTable) -> bytes | None:
    phases = [m for m in table.metrics() if m.startswith(TIMING_PREFIX) and m != STEP_TIMING]
    steps = [s for s in table.steps() if any(m.startswith(TIMING_PREFIX) for m in table.at(s))]
    if not phases or not steps:
        return None
    import matplotlib

    rows = {m: [_finite_or_zero(table.at(s).get(m)) for s in steps] for m in phases}
    phases.sort(key=lambda m: -sum(rows[m]))  # the longest phase at the bottom
    figure, ax = _axes(width=10.0)
    colors = matplotlib.colormaps["tab20"].colors
    ax.stackplot(steps, *(rows[m] for m in phases), labels=phases, colors=colors[: len(phases)], alpha=0.85)
    total = table.series(STEP_TIMING)
    if total:
        ax.plot(*zip(*total, strict=True), color="black", linewidth=1, label=f"{STEP_TIMING} (whole step)")
    ax.set(title="Phase timings", xlabel="step", ylabel="seconds")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(figure)


def _finite_or_zero(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else 0.0


def markdown(run: RunData, verdicts: tuple[Verdict, ...], images: list[tuple[str, str]]) -> str:
    """The report's text; `images`: each plot's title and file name beside the report."""
    last = run.table.steps()[-1] if run.table.steps() else 0
    lines = [
        f"# Run report: {run.title}",
        "",
        "| | |",
        "|---|---|",
        f"| source | {', '.join(f'`{s}`' for s in run.sources)} |",
    ]
    if run.status:
        lines.append(f"| status | {run.status} |")
    lines += [
        f"| last step | {last}{f' of {run.total_steps}' if run.total_steps else ''} |",
        f"| gates | {sum(v.passed for v in verdicts)} of {len(verdicts)} passed |",
        "",
    ]
    if verdicts:
        lines += ["## Gates", "", "| gate | verdict | why |", "|---|---|---|"]
        lines += [f"| `{v.gate.name}` | **{v.status}** | {_cell(v.reason)} |" for v in verdicts]
        lines += ["", "The numbers each verdict was decided on:", ""]
        lines += [f"- `{v.gate.name}`: " + ", ".join(f"{k} {number_text(x)}" for k, x in v.numbers) for v in verdicts]
        lines.append("")
    rows = [(m, [v for _, v in run.table.series(m)]) for spec in PLOTS for m in spec.metrics]
    rows = [(m, values) for m, values in rows if values]
    if rows:
        lines += [
            "## Metrics",
            "",
            "| metric | readings | first | last | min | mean | max |",
            "|---|---|---|---|---|---|---|",
        ]
        for metric, values in rows:
            finite = [v for v in values if math.isfinite(v)] or [math.nan]
            lines.append(
                f"| `{metric}` | {len(values)} | {number_text(values[0])} | {number_text(values[-1])} | "
                f"{number_text(min(finite))} | {number_text(sum(finite) / len(finite))} | {number_text(max(finite))} |"
            )
        lines.append("")
    lines += _plot_sections(images, bool(run.table.steps()))
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def number_text(value) -> str:
    """A reading as the report writes it: six significant digits; a tuple's as a list."""
    if isinstance(value, tuple):
        return "[" + ", ".join(map(number_text, value)) + "]"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


class Written(NamedTuple):
    plots: int
    plots_skipped: str | None  # why there are none: matplotlib is missing (one line, with the install command)


def write_report(run: RunData, verdicts: tuple[Verdict, ...], output: Path) -> Written:
    """Write `output` (the markdown) and its plots beside it as <stem>-<plot>.png, each atomically, in its directory
    (made when missing, as `-o reports/run.md` asks); without matplotlib, the markdown alone. ReportWriteError when
    a file cannot be written."""
    return _write(output, lambda: plot_pngs(run, verdicts), lambda images: markdown(run, verdicts, images))


def write_overlay(runs: list[Overlaid], output: Path, title: str | None = None) -> Written:
    """`write_report` for runs overlaid: `output` (titled `title`, else with the runs' labels) and a plot per metric
    beside it."""
    return _write(output, lambda: overlay_pngs(runs), lambda images: overlay_markdown(runs, images, title))


def _write(
    output: Path, plots: Callable[[], dict[str, tuple[str, bytes]]], text: Callable[[list[tuple[str, str]]], str]
) -> Written:
    """Write the markdown `text` gives for the images (title, file name) of the `plots` (by slug: title, PNG)."""
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportWriteError(f"cannot make {output.parent}: {exc.strerror or exc}") from None
    skipped = _plots_unavailable()
    pngs = {} if skipped else plots()
    images = [(title, f"{output.stem}-{slug}.png") for slug, (title, _) in pngs.items()]
    files = [
        *((output.with_name(name), png) for (_, name), (_, png) in zip(images, pngs.values(), strict=True)),
        (output, text(images) + (f"\n{skipped}.\n" if skipped else "\n")),
    ]
    for path, content in files:
        try:
            write_atomically(path, content)
        except OSError as exc:
            raise ReportWriteError(f"cannot write {path}: {exc.strerror or exc}") from None
    return Written(len(pngs), skipped)


class Overlaid(NamedTuple):
    """A run of an overlay: its records, its legend label and its readings of the overlay's metrics."""

    run: Run
    label: str
    table: MetricTable


def load_overlay(run_dirs: list[Path]) -> list[Overlaid]:
    """The run directories' records and readings of the report's metrics (`shown_metrics`: the plots' and every
    run's gated ones), as recorded: nothing is asked of a cluster. Each run is labelled with its name (`--name`),
    or its directory's name where it has none or another run has the same. ReportError for a directory that is
    not a run directory."""
    try:
        runs = [read_run(path) for path in run_dirs]
        metrics = shown_metrics(m for run in runs for m in run.gated_metrics)
        tables = [run.table(metrics) for run in runs]
    except RunSetError as exc:
        raise ReportError(str(exc)) from None
    names = [run.labels.name for run in runs]
    labels = [name if name and names.count(name) == 1 else run.path.name for name, run in zip(names, runs, strict=True)]
    return [Overlaid(*parts) for parts in zip(runs, labels, tables, strict=True)]


def overlay_pngs(runs: list[Overlaid]) -> dict[str, tuple[str, bytes]]:
    """(title, PNG bytes) by slug: one plot per metric that some run logged, a line per run."""
    units = {m: spec.unit for spec in PLOTS for m in spec.metrics}
    metrics = shown_metrics(m for overlaid in runs for m in overlaid.run.gated_metrics)
    pngs = {}
    for metric in metrics:
        lines = [(overlaid.label, overlaid.table.series(metric)) for overlaid in runs]
        lines = [(label, points) for label, points in lines if points]
        if not lines:
            continue
        figure, ax = _axes()
        for label, points in lines:
            ax.plot(*zip(*points, strict=True), label=label, linewidth=1.2, marker="." if len(points) <= 50 else None)
        ax.set(title=metric, xlabel="step", ylabel=units.get(metric, metric))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        pngs[_slug(metric)] = (f"`{metric}`", _png(figure))
    return pngs


def overlay_markdown(runs: list[Overlaid], images: list[tuple[str, str]], title: str | None = None) -> str:
    """The overlay's text: the runs (status, the steps plotted, gates, as recorded), then each metric's plot."""
    lines = [
        f"# Runs overlaid: {title or ', '.join(o.label for o in runs)}",
        "",
        "| run | directory | status | steps | gates |",
        "|---|---|---|---|---|",
    ]
    for overlaid in runs:
        run, steps = overlaid.run, overlaid.table.steps()
        lines.append(
            f"| {_cell(overlaid.label)} | `{_cell(str(run.path))}` | {run.status} | "
            f"{f'{steps[0]}-{steps[-1]}' if steps else '-'} | {_cell(run.verdict)} |"
        )
    lines.append("")
    lines += _plot_sections(images, any(o.table.steps() for o in runs))
    return "\n".join(lines)


def _plot_sections(images: list[tuple[str, str]], any_steps: bool) -> list[str]:
    """A report's plots, a section each (`images`: title and file name), and a line when there were no readings."""
    lines = []
    for title, name in images:
        lines += [f"## {title}", "", f"![{title.replace('`', '')}]({name})", ""]
    if not any_steps:
        lines += ["No metric lines or file-logger records yet.", ""]
    return lines


def _plots_unavailable() -> str | None:
    """Why no plots can be drawn here, or None."""
    try:
        import matplotlib  # noqa: F401 - only whether it imports
    except ImportError:
        from sapo_toolkit.linter.core.extras import install_command

        return f"plots skipped: they need matplotlib ({install_command('report')})"
    return None
