"""`sapo-launch ls [ROOT]`: the runs in a runs directory, one line each, as their records say (`launcher.runset`).

The tables of `ls` and `compare` are printed here (`print_table`): rich, without borders; on a terminal as wide as it
is, otherwise as wide as the table needs, so that a pipe gets every line whole.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from sapo_toolkit.linter.core.printable import printable

from ..runset import STATUSES, Filters, find_runs
from .options import FORMAT, RUNS_DIR

# How each status looks on a terminal.
STATUS_STYLES = {"succeeded": "green", "failed": "red", "lost": "red", "interrupted": "yellow", "running": "cyan"}
COLUMNS = ("RUN", "NAME", "TAGS", "STATUS", "STEPS", "GATES", "WHERE", "WHEN")


@click.command("ls")
@click.argument("root", required=False, default=RUNS_DIR, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--status", "statuses", multiple=True, type=click.Choice(STATUSES), help="Runs with this status.")
@click.option("--recipe", metavar="RECIPE", help="Runs of this recipe (its name, or its file).")
@click.option("--name", metavar="PATTERN", help="Runs whose name (--name at launch) matches PATTERN (`lr-*`).")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="Runs with this tag (repeatable: each of them).")
@FORMAT
def ls_command(root, statuses, recipe, name, tags, fmt):
    """List the runs in ROOT (default ./runs, where launches make them) and one directory down, oldest first: the
    run directory, its name and tags, status, last step (of the total), gates, where it ran (local, or the Ray
    cluster's address) and when it started. Only the run directories' records are read, nothing is asked of a
    cluster: a run that has not ended shows the status it last recorded (`sapo-launch status RUN_DIR` asks where it
    runs). Options filter; --format json gives every field."""
    runs = [run for run in find_runs(root) if Filters(statuses, recipe, name, tags).keep(run)]
    if fmt == "json":
        click.echo(json.dumps([run.as_json() for run in runs], indent=2))
        return
    if not runs:
        filtered = statuses or recipe or name or tags
        click.echo(printable(f"sapo-launch: no runs in {root}{' match' if filtered else ''}"), err=True)
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in COLUMNS:
        table.add_column(column, no_wrap=True)
    for run in runs:
        table.add_row(
            cell(str(run.path.relative_to(root)) if run.path != root else run.path.name),
            cell(run.labels.name or ""),
            cell(",".join(run.labels.tags)),
            Text(run.status, style=STATUS_STYLES.get(run.status, "")),
            cell(run.steps_text),
            cell(run.verdict),
            cell(run.where),
            cell(run.started_text),
        )
    print_table(table)


def cell(text: str):
    """A table cell showing `text` as it is (no rich markup, controls escaped)."""
    from rich.text import Text

    return Text(printable(text))


def print_table(table) -> None:
    """Print a rich table on stdout: as wide as the terminal, or for a pipe as wide as the table needs."""
    from rich.console import Console

    Console(width=None if sys.stdout.isatty() else sys.maxsize).print(table)
