"""`sapo-lint convert SCRIPT.sh`: a run script -> a `sapo-recipe/v1` recipe (`linter.convert`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..convert import ConversionError, LaunchNote, recipe_yaml, script_to_recipe


@click.command("convert")
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the recipe here (atomically) instead of to stdout.",
)
@click.option("--verl-version", help="verl version the recipe names (default: as for `sapo-lint check`).")
def convert(script: Path, output: Path | None, verl_version: str | None) -> None:
    """Turn a verl-style bash run script into a sapo-recipe/v1 recipe (overrides, env exports, variants)."""
    from ..api import read_options
    from ..settings import load_settings
    from ..sources.files import UnreadableFile, read_text, write_atomically

    settings, _ = load_settings(script.resolve().parent)
    options = read_options(settings, cli_verl=verl_version)
    try:
        source = read_text(script)
    except UnreadableFile as exc:
        raise click.ClickException(f"{script}: {exc}") from None
    try:
        recipe, notes = script_to_recipe(source, options)
    except ConversionError as exc:
        raise click.ClickException(str(exc)) from None
    for note in notes:
        if isinstance(note, LaunchNote):
            click.echo(f"warning: {note}", err=True)
    text = recipe_yaml(recipe, notes, script)
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            write_atomically(output, text)
        except OSError as exc:
            raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
        click.echo(f"wrote {output}", err=True)
