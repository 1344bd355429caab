"""The options and arguments more than one command takes, declared once."""

from __future__ import annotations

from pathlib import Path

import click

from sapo_toolkit.linter.core.device import kind_names

DEVICE = click.option(
    "--device",
    type=click.Choice(["auto", *kind_names()]),
    default="auto",
    show_default=True,
    help="Device kind; auto: the DEVICE environment variable, else what this machine has (Ascend first).",
)
FORMAT = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
FAIL_ON_GATES = click.option(
    "--fail-on-gates", is_flag=True, help="Exit 8 when the trainer succeeded but a recipe gate failed."
)
RUN_DIR = click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
MAX_RESTARTS = click.option(
    "--max-restarts",
    type=click.IntRange(min=0),
    default=0,
    metavar="N",
    help="When the run fails for a cluster reason (its Ray job lost, failed by Ray itself, the trainer killed by a "
    "SIGKILL the launcher did not send; never the trainer's own error), resume it from its last checkpoint, at most "
    "N times, each attempt in a run directory of its own. Not with --detach.",
)
RUN_DIRS = click.argument(
    "run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
RUNS_DIR = Path("runs")  # where a launch makes its run directory, and `ls` looks, unless told otherwise


def _run_name(ctx, param, value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise click.BadParameter("empty: name the run, or leave --name out")
    return value


def _tags(ctx, param, value: tuple[str, ...]) -> tuple[str, ...]:
    for tag in value:
        if not tag.strip() or "," in tag:
            raise click.BadParameter(f"`{tag}`: a tag is a non-empty word without commas (one --tag per tag)")
    return tuple(dict.fromkeys(value))


RUN_NAME = click.option(
    "--name",
    "run_name",
    metavar="NAME",
    callback=_run_name,
    help="Call the run NAME (a point of a sweep: lr-1e-6), in its run directory's name and in plan.json; "
    "`ls --name` finds it.",
)
TAGS = click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="TAG",
    callback=_tags,
    help="Tag the run (repeatable), in plan.json; `ls --tag` finds it.",
)


def jobs_address(ctx, param, value: str | None) -> str | None:
    """An --address checked as a Ray Jobs API URL (`http://` added where it has no scheme): what verl users give
    `ray.init` (`auto`, `ray://`, a GCS port) is a usage error with a hint."""
    if value is None:
        return None
    from ..executors.ray_client import RayJobError
    from ..executors.ray_client import jobs_address as checked

    try:
        return checked(value)
    except RayJobError as exc:
        raise click.BadParameter(exc.message) from None


ADDRESS = click.option(
    "--address",
    default=None,
    metavar="URL",
    callback=jobs_address,
    help="The Ray dashboard address (default: the one job.json records).",
)


def dashboard_headers(ctx, param, value: str | None) -> dict[str, str] | None:
    """--headers (or $RAY_JOB_HEADERS) as `ray job submit` takes it: a JSON object, checked here (a usage error that
    never quotes the text: it holds credentials)."""
    if value is None:
        return None
    from ..executors.ray_client import HEADERS_ENV, parse_headers

    try:
        return parse_headers(value)
    except ValueError as exc:
        from_environment = ctx.get_parameter_source(param.name) == click.core.ParameterSource.ENVIRONMENT
        raise click.BadParameter(str(exc), param_hint=f"${HEADERS_ENV}" if from_environment else "--headers") from None


def dashboard_verify(ctx, param, value: str | None) -> bool | str | None:
    """--verify as `ray job submit` takes it: true, false, or a CA bundle's path (absolute); None when not given."""
    if value is None:
        return None
    from ..executors.ray_client import parse_verify

    try:
        return parse_verify(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--verify") from None


HEADERS = click.option(
    "--headers",
    metavar="JSON",
    envvar="RAY_JOB_HEADERS",
    callback=dashboard_headers,
    help='Headers sent with every request to the Ray dashboard, a JSON object ({"Authorization": "Bearer TOKEN"}), '
    "as `ray job submit --headers` takes them (default $RAY_JOB_HEADERS). Run records keep their names, values "
    "redacted: a later command on the run needs them again.",
)
VERIFY = click.option(
    "--verify",
    metavar="true|false|CA_FILE",
    callback=dashboard_verify,
    help="Check the Ray dashboard's TLS certificate (true, Ray's default), not (false), or against this CA bundle "
    "(a file or directory), as `ray job submit --verify` does; a recorded run's by default.",
)
