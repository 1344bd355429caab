"""`sapo-launch report [RUN_DIR | --log FILE | --overlay RUN_DIR...]`: report.md with plots and gate verdicts, or
runs overlaid (`launcher.report`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from sapo_toolkit.linter.core.printable import printable

from .. import executors
from ..execution import conclude, recorder, settle
from ..gates import EXIT_GATES_FAILED, evaluate, gate_exit_code, gates_json, judged
from ..report import (
    REPORT_FILE,
    ReportError,
    ReportWriteError,
    Written,
    load_log,
    load_overlay,
    load_run_dir,
    write_overlay,
    write_report,
)
from ..rundir import SUMMARY_FILE
from .options import HEADERS, VERIFY

OVERLAY_FILE = "overlay.md"  # `--overlay`'s report, by default in the runs' common parent directory


@click.command("report")
@click.argument(
    "run_dirs",
    nargs=-1,
    metavar="[RUN_DIR | --overlay RUN_DIR...]",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option(
    "--log",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A verl console log or file-logger JSONL of a run not launched with sapo-launch.",
)
@click.option(
    "--recipe",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Judge this recipe's gates (default: the run directory's plan.json; none for --log).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The report's path (default: report.md in RUN_DIR, or beside the log); plots go beside it as "
    "<name>-<plot>.png.",
)
@click.option("--title", help="The report's title (default: the run's name, or the log's file name).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help='json: {"steps": last step, "gates": {name: {"passed": ..., numbers}}} on stdout.',
)
@click.option("--fail-on-gates", is_flag=True, help=f"Exit {EXIT_GATES_FAILED} when a gate did not pass.")
@click.option(
    "--overlay",
    is_flag=True,
    help="Overlay the runs RUN_DIR...: one plot per metric (the report's and the gated ones), one line per run, "
    "beside a table of their status, last step and gates, as their records stand (nothing is asked of a cluster). "
    "Default output: overlay.md in their common parent directory. json: the report, its plots, and the runs as "
    "`ls --format json` gives them.",
)
@HEADERS
@VERIFY
def report(run_dirs, log, recipe, output, title, fmt, fail_on_gates, overlay, headers, verify):
    """Write report.md and plots for RUN_DIR (finished, failed or still running) or for --log FILE; with --overlay,
    one report of several runs."""
    if overlay:
        with_overlay = (("--log", log), ("--recipe", recipe), ("--fail-on-gates", fail_on_gates))
        given = [flag for flag, value in with_overlay if value]
        if given:
            raise click.UsageError(f"--overlay reads run directories as recorded: not with {', '.join(given)}")
        _overlay(run_dirs, output, title, fmt)
        return
    if len(run_dirs) > 1:
        raise click.UsageError("give one RUN_DIR (several with --overlay)")
    run_dir = run_dirs[0] if run_dirs else None
    if (run_dir is None) == (log is None):
        raise click.UsageError("give a RUN_DIR or --log FILE (one of them)")
    if run_dir and (run_dir / SUMMARY_FILE).is_file():  # the first to look at a detached run asks where it runs
        settle(executors.for_run(run_dir, executors.Options(headers=headers, verify=verify)), run_dir)
    try:
        run = load_run_dir(run_dir, recipe, recorder(run_dir)) if run_dir else load_log(log, recipe)
    except ReportError as exc:
        raise click.UsageError(str(exc)) from None
    run.title = title or run.title
    outcome = None  # a plain log's: unknown, its verdicts as they are
    if run_dir:  # an ended run that nobody judged gets its metrics.jsonl and verdicts, as every way of following
        outcome = conclude(run_dir).get("status")
    verdicts = judged(evaluate(run.gates, run.table), outcome)
    output = output or (run_dir or log.parent) / REPORT_FILE
    try:
        written = write_report(run, verdicts, output)
    except ReportWriteError as exc:
        raise click.ClickException(str(exc)) from None
    _say_skipped(written)
    last = run.table.steps()[-1] if run.table.steps() else 0
    if fmt == "json":
        click.echo(json.dumps({"steps": last, "gates": gates_json(verdicts)}, indent=2, allow_nan=False))
    else:
        click.echo(printable(f"report: {output} (last step {last}, {written.plots} plots)"))
        for verdict in verdicts:  # metric names from the recipe or the log: escaped
            click.echo(printable(f"gate {verdict.status}: {verdict.gate.name}: {verdict.reason}"))
    click.get_current_context().exit(gate_exit_code(0, verdicts, fail_on_gates))


def _overlay(run_dirs, output: Path | None, title: str | None, fmt: str) -> None:
    """`report --overlay RUN_DIR...`: the runs' records overlaid (`report.write_overlay`)."""
    if not run_dirs:
        raise click.UsageError("--overlay takes one or more run directories")
    try:
        runs = load_overlay(list(run_dirs))
    except ReportError as exc:
        raise click.UsageError(str(exc)) from None
    output = output or Path(os.path.commonpath([path.absolute() for path in run_dirs])) / OVERLAY_FILE
    try:
        written = write_overlay(runs, output, title)
    except ReportWriteError as exc:
        raise click.ClickException(str(exc)) from None
    _say_skipped(written)
    if fmt == "json":
        shown = {"report": str(output), "plots": written.plots, "runs": [o.run.as_json() for o in runs]}
        click.echo(json.dumps(shown, indent=2))
    else:
        click.echo(printable(f"report: {output} ({len(runs)} runs overlaid, {written.plots} plots)"))


def _say_skipped(written: Written) -> None:
    if written.plots_skipped:
        click.echo(printable(f"sapo-launch: {written.plots_skipped}"), err=True)
