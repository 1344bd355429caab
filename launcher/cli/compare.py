"""`sapo-launch compare RUN_DIR...`: runs side by side, as their records say (`launcher.runset`): what their
resolved recipes set differently, their last readings of the report's metrics, and their gate verdicts."""

from __future__ import annotations

import json
import math

import click

from ..runset import RunSetError, differences, read_run
from .options import FORMAT, RUN_DIRS


@click.command("compare")
@RUN_DIRS
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="NAME",
    help="Show this metric's last reading too (repeatable), besides the report's and the gated ones.",
)
@FORMAT
def compare(run_dirs, metrics, fmt):
    """Show two or more runs side by side: their name, status, steps and where they ran; the recipe fields, Hydra
    overrides and environment variables their resolved recipes set differently (a run's own directory written
    `<run dir>`: its checkpoint directory and metrics file differ in every run); the last reading of throughput,
    reward, response length, memory and each gated metric; and each gate's verdict. Only the run directories'
    records are read (a run that has not ended shows what it recorded so far). --format json: the same, with
    every run's `ls` fields."""
    from ..report import shown_metrics

    if len(run_dirs) < 2:
        raise click.UsageError("compare takes two or more run directories")
    try:
        runs = [read_run(path) for path in run_dirs]
        differ = differences(runs)
        shown = shown_metrics([*(m for run in runs for m in run.gated_metrics), *metrics])
        tables = [run.table(shown) for run in runs]
    except RunSetError as exc:
        raise click.UsageError(str(exc)) from None
    last = {metric: [_last_reading(table, metric) for table in tables] for metric in shown}
    last = {metric: row for metric, row in last.items() if any(row)}
    gates = dict.fromkeys(name for run in runs for name in run.gates)
    verdicts = {name: [run.gates.get(name, {}).get("status") for run in runs] for name in gates}
    if fmt == "json":
        readings = {m: [r and {"step": r[0], "value": _json_value(r[1])} for r in row] for m, row in last.items()}
        click.echo(
            json.dumps(
                {
                    "runs": [run.as_json() for run in runs],
                    "differences": differ._asdict(),
                    "metrics": readings,
                    "gates": verdicts,
                },
                indent=2,
            )
        )
        return
    from rich.table import Table
    from rich.text import Text

    from ..report import number_text
    from .ls import cell, print_table

    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("")
    for run in runs:
        table.add_column(cell(run.path.name), overflow="fold")

    def section(title: str, rows: dict) -> None:
        table.add_row()
        table.add_row(Text(title, style="bold"))
        if not rows:
            table.add_row(cell("(none)"))
        for label, values in rows.items():
            table.add_row(cell(label), *(cell("-" if v is None else v) for v in values))

    section(
        "run",
        {
            "name": [run.labels.name for run in runs],
            "tags": [",".join(run.labels.tags) for run in runs],
            "recipe": [run.recipe for run in runs],
            "status": [run.status for run in runs],
            "steps": [run.steps_text for run in runs],
            "gates": [run.verdict for run in runs],
            "where": [run.where for run in runs],
            "started": [run.started_text for run in runs],
        },
    )
    section(
        "settings that differ",
        {**differ.fields, **differ.overrides, **{f"env {name}": values for name, values in differ.env.items()}},
    )
    section("last readings", {m: [r and number_text(r[1]) for r in row] for m, row in last.items()})
    section("gates", verdicts)
    print_table(table)


def _last_reading(table, metric: str) -> tuple[int, float] | None:
    series = table.series(metric)
    return series[-1] if series else None


def _json_value(value: float) -> float | None:
    """Strict JSON, as summary.json's verdicts: a non-finite reading as null."""
    return value if math.isfinite(value) else None
