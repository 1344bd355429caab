"""`sapo-lint explain FILE`: the derived plan of each variant (`linter.explain`) as a table, JSON or a PNG."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from ..core.printable import printable
from ..explain import NothingToPlot, PlotUnavailable, explain_recipe, plot, render_text, to_json
from . import EXIT_OK, EXIT_USAGE, OneLineError
from .options import ACCELERATOR, OVERRIDES, VERL_VERSION


@click.command("explain")
@click.argument("recipe", metavar="FILE", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="AXIS=VALUE[,...]",
    help="Only variants with these values, e.g. DEVICE=npu or DEVICE=npu,RECOMPUTE=full (repeatable).",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write a PNG: a stacked bar of device memory per phase with the HBM line.",
)
@OVERRIDES
@ACCELERATOR
@VERL_VERSION
@click.option(
    "--write-gib-per-s",
    type=click.FloatRange(min=0, min_open=True),
    help="Checkpoint write bandwidth per writing rank, GiB/s (default: an assumption, see the output).",
)
@click.option("--host-ram-gib", type=click.FloatRange(min=0, min_open=True), help="Host RAM per node, GiB.")
@click.option(
    "--disk-budget-gib",
    type=click.FloatRange(min=0, min_open=True),
    help="Disk budget of the checkpoint directory, GiB.",
)
def explain(
    recipe,
    variants,
    fmt,
    plot_path,
    overrides,
    accelerator,
    verl_version,
    write_gib_per_s,
    host_ram_gib,
    disk_budget_gib,
):
    """Show the derived plan of FILE (a recipe or a run script, read as `sapo-lint` reads it): world, dp, edp,
    per-rank parameters, device memory by phase and term against HBM, host RAM, checkpoint size, estimated save
    time and peak disk. With several variants, JSON is a list with one object per variant."""
    import json

    resources = {"write_gib_per_s": write_gib_per_s, "host_ram_gib": host_ram_gib, "disk_budget_gib": disk_budget_gib}
    items, problems = explain_recipe(
        recipe,
        variants=tuple(variants),
        overrides=tuple(overrides),
        verl_version=verl_version,
        accelerator=accelerator,
        resources={k: v for k, v in resources.items() if v is not None},
    )
    if problems:
        for problem in problems:
            click.echo(printable(f"sapo-lint explain: {problem}"), err=True)
        sys.exit(EXIT_USAGE)
    if fmt == "json":
        click.echo(json.dumps([to_json(i, str(recipe)) for i in items], indent=2))
    else:
        # A terminal's lines are wrapped at its width; a pipe's never (a reader or a grep gets whole lines).
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
        click.echo(render_text(items, str(recipe), color=sys.stdout.isatty(), width=width), nl=False)
    if plot_path is not None:
        try:
            written = plot(items, plot_path, recipe.stem)
        except NothingToPlot as exc:
            raise click.UsageError(str(exc)) from None
        except PlotUnavailable as exc:
            raise OneLineError(str(exc)) from None
        except OSError as exc:
            raise click.ClickException(f"cannot write {plot_path}: {exc.strerror or exc}") from None
        click.echo(printable(f"wrote {written}"), err=True)
    if not any(i.estimate is not None for i in items):
        sys.exit(EXIT_USAGE)
    sys.exit(EXIT_OK)
