"""`sapo-lint schema build`: schema snapshots from verl, megatron-core and mbridge distributions."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("schema")
def schema():
    """Schema snapshots generated from verl, megatron-core and mbridge distributions."""


@schema.command("facts")
@click.argument("version")
@click.argument("other", required=False)
@click.option(
    "--package",
    type=click.Choice(["verl", "megatron-core"]),
    default="verl",
    show_default=True,
    help="Whose facts: verl's or megatron-core's (schemas/facts.json).",
)
def schema_facts(version, other, package):
    """The version facts of VERSION, or those that differ between VERSION and OTHER.

    Facts are what changed from release to release that no config snapshot holds (which workers run by default,
    which megatron-core a verl runs with, which recompute modules megatron-core allows); the rules read them."""
    from ..schema import fact, fact_names

    for name in fact_names(package):
        value = fact(package, name, version)
        if other is None:
            click.echo(f"{name}: {value!r}")
        elif value != (then := fact(package, name, other)):
            click.echo(f"{name}: {value!r} in {version}, {then!r} in {other}")


@schema.command("export")
@click.option("--verl-version", "verl_version", default="0.9.1", show_default=True, help="The verl whose keys.")
@click.option("--config-name", default="ppo_trainer", show_default=True, help="The trainer config whose keys.")
@click.option(
    "-o",
    "--output-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the schema here (atomically) instead of standard output.",
)
def schema_export(verl_version, config_name, output_file):
    """The recipe format's JSON Schema with the override keys of one verl, for yaml-language-server.

    \b
    Point a recipe at it with a first line such as
      # yaml-language-server: $schema=recipe-verl-0.9.1.schema.json
    and editors with a YAML language server complete and check its keys, types and choices."""
    from ..schema import SnapshotNotFound
    from ..schema_export import recipe_schema, write_recipe_schema

    try:
        if output_file is None:
            import json

            click.echo(json.dumps(recipe_schema(verl_version, config_name), indent=1, sort_keys=True))
            return
        keys = write_recipe_schema(output_file, verl_version, config_name)
    except SnapshotNotFound as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot write {output_file}: {exc.strerror or exc}") from None
    click.echo(f"Wrote {output_file}: the recipe format and {keys} override keys.", err=True)


@schema.command("build")
@click.option(
    "--wheel",
    "wheels",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A verl wheel, as `pip download --no-deps verl==X` gives (repeatable).",
)
@click.option(
    "--verl-root",
    type=click.Path(exists=True, path_type=Path),
    help="A verl source checkout, or a `git archive` tarball of one (its commit goes into the snapshot).",
)
@click.option(
    "--consumer-wheel",
    "consumer_wheels",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="A megatron-core, mbridge or ray wheel, or a Megatron-LM source archive or checkout, to snapshot too "
    "(repeatable).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Schema directory to write into (default: the installed sapo-lint's schemas/).",
)
@click.option(
    "--docs-only",
    is_flag=True,
    help="Write only the comments of each verl's config YAML (schemas/verl-docs/), which hover and "
    "`schema export` show; not the snapshots.",
)
def schema_build(wheels, verl_root, consumer_wheels, out, docs_only):
    """Build schema snapshots, without importing verl, torch or megatron.

    With neither --wheel nor --verl-root, the installed verl distribution is read from disk. Each verl's snapshot
    comes with the comments its config YAML carries for its keys (schemas/verl-docs/)."""
    from sapo_toolkit.schemas import build

    from ..schema import SCHEMA_DIR

    try:
        sources = [{"wheel": w} for w in wheels] + ([{"verl_root": verl_root}] if verl_root else [])
        located = [build.locate_verl(**src) for src in sources or [{}]]
        if docs_only:
            written = build.write_verl_docs(out or SCHEMA_DIR, located)
        else:
            written = build.build_all(out or SCHEMA_DIR, located, list(consumer_wheels))
        for path in written:
            click.echo(f"wrote {path}")
    except build.SchemaBuildError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:  # an unwritable --out directory
        raise click.ClickException(f"cannot write the snapshots: {exc.strerror or exc}: {exc.filename}") from None
