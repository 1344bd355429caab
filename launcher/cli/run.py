"""`sapo-launch run RECIPE [KEY=VALUE ...]` (what plain `sapo-launch RECIPE ...` runs): lint, plan and run
here, or on a Ray cluster with --address."""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from sapo_toolkit.linter.core.diagnostics import Severity
from sapo_toolkit.linter.core.printable import printable

from ..executors.ray_jobs import TIMEOUT_ENV
from ..rundir import EXIT_REFUSED
from .options import DEVICE, FAIL_ON_GATES, FORMAT, jobs_address


@click.command("run", context_settings={"ignore_unknown_options": False})
@click.argument("recipe", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("overrides", nargs=-1)
@DEVICE
@click.option("--infer-backend", help="The recipe's INFER_BACKEND variant (vllm, sglang, ...).")
@click.option("--variant", "variants", multiple=True, metavar="AXIS=VALUE", help="Choose a value of another axis.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the plan (argv, env, lint summary) and exit: 0, or 1 when the lint gate would refuse.",
)
@FORMAT
@click.option(
    "--runs-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Where run directories are created.",
)
@click.option(
    "--secret-env",
    multiple=True,
    metavar="NAME",
    help="Redact this variable too (names containing KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL always are).",
)
@FAIL_ON_GATES
@click.option(
    "--address",
    metavar="URL",
    callback=jobs_address,
    help="Submit to this Ray cluster's Jobs API (http://HEAD:8265) instead of running here; default $RAY_ADDRESS "
    "when it is one (set for ray.init, `auto` or HOST:6379, it is not: the launch stays here). Each request waits "
    f"at most ${TIMEOUT_ENV} seconds (30). Needs `pip install 'sapo-toolkit[ray]'`.",
)
@click.option("--detach", is_flag=True, help="With --address: return once the job is submitted.")
@click.option(
    "--working-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="With --address: upload this directory as the job's working directory.",
)
def run(
    recipe,
    overrides,
    device,
    infer_backend,
    variants,
    dry_run,
    fmt,
    runs_dir,
    secret_env,
    fail_on_gates,
    address,
    detach,
    working_dir,
):
    """Lint RECIPE for the chosen variant with OVERRIDES (Hydra `key=value`), then run verl's trainer here, or on
    a Ray cluster with --address."""
    from sapo_toolkit.linter.api import UnreadableFile
    from sapo_toolkit.linter.settings import SettingsError, load_settings

    from .. import device as devices
    from ..plan import Facts, PlanError, plan

    if recipe.suffix == ".sh":
        raise click.UsageError(
            f"{recipe} is a run script: launch it by converting it first "
            f"(`sapo-lint convert {recipe} -o recipe.yaml`, then `sapo-launch recipe.yaml`)"
        )
    notes = []
    if address is None:
        address, notes = _environment_address(os.environ)
    if not address and (detach or working_dir):
        raise click.UsageError("--detach and --working-dir need --address (a Ray cluster)")
    detected = devices.detect_device(None if device == "auto" else device, os.environ, devices.DEFAULT_PROBE)
    facts = Facts(
        detected.kind,
        sys.executable,
        os.getcwd(),
        os.cpu_count() or 1,
        datetime.now(timezone.utc),
        str(runs_dir),
        os.path.expanduser("~"),
    )
    try:
        settings, _ = load_settings(recipe.resolve().parent)
        launch = plan(
            recipe,
            settings=settings,
            facts=facts,
            device=detected.kind,
            infer_backend=infer_backend,
            variants=variants,
            overrides=overrides,
        )
    except (PlanError, SettingsError, UnreadableFile) as exc:
        hint = "" if detected.kind else f" (no device detected: {detected.how}; pass --device npu|gpu)"
        raise click.UsageError(f"{exc}{hint}") from None
    if dry_run:
        _print_plan(launch, fmt, secret_env, notes)
        sys.exit(EXIT_REFUSED if launch.lint.refuses else 0)
    from .. import rundir
    from ..versions import installed_versions

    environment = rundir.environment_facts(recipe, detected.kind, detected.count, installed_versions())
    run_dir = rundir.create(launch, environment, secret_env)
    _print_lint(launch)
    if launch.lint.refuses:
        rundir.write_json(
            run_dir / rundir.SUMMARY_FILE,
            {"status": "refused", "exit_code": EXIT_REFUSED, "errors": launch.lint.count(Severity.ERROR)},
        )
        click.echo(printable(f"sapo-launch: refused: the recipe has lint errors (run directory {run_dir})"), err=True)
        sys.exit(EXIT_REFUSED)
    click.echo(printable(f"sapo-launch: run directory {run_dir}"), err=True)
    for note in notes:
        click.echo(printable(f"sapo-launch: {note}"), err=True)
    from ..execution import run as run_plan

    if address:
        from ..executors.ray_jobs import RayExecutor

        sys.exit(
            run_plan(
                RayExecutor(address, working_dir=working_dir),
                launch,
                run_dir,
                fail_on_gates=fail_on_gates,
                detach=detach,
            )
        )
    from ..executors.local import LocalExecutor

    sys.exit(run_plan(LocalExecutor(), launch, run_dir, fail_on_gates=fail_on_gates))


def _environment_address(environ) -> tuple[str | None, list[str]]:
    """$RAY_ADDRESS as the default --address when it is a Jobs API URL; otherwise None, with a note that it was
    ignored: verl users set it for `ray.init` (`auto`, `HOST:6379`), and a launch with it stays here."""
    from ..executors.ray_jobs import jobs_address, not_jobs_api, shown_address

    text = environ.get("RAY_ADDRESS")
    if not text:
        return None, []
    why = not_jobs_api(text)
    if why is None:
        return jobs_address(text), []
    return None, [f"RAY_ADDRESS={shown_address(text)} ignored: not a Jobs API address ({why}); the trainer runs here"]


def _print_lint(launch) -> None:
    for d in launch.lint.diagnostics:
        click.echo(printable(d.text_line()), err=True)


def _print_plan(launch, fmt: str, secret_env, notes: list[str]) -> None:
    from ..plan import redact

    env = redact(launch.env_dict(), secret_env)
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "argv": list(launch.argv),
                    "env": env,
                    "cwd": launch.cwd,
                    "run_dir": launch.run_dir,
                    "variant": launch.variant,
                    "device": launch.device,
                    "notes": [*launch.notes, *notes],
                    "recipe_hash": launch.recipe_hash,
                    "lint": launch.lint.to_json(),
                },
                indent=2,
            )
        )
        return
    lines = [
        f"recipe   {launch.recipe_path}" + (f"  [{launch.variant}]" if launch.variant else ""),
        f"cwd      {launch.cwd}",
        f"run dir  {launch.run_dir}",
        "argv",
    ]
    head, overrides = launch.argv[:5], launch.argv[5:]
    lines.append("  " + " ".join(head))
    lines.extend(f"    {o}" for o in overrides)
    lines.append("env")
    lines.extend(f"  {k}={v}" for k, v in env.items())
    lines.extend(f"note     {n}" for n in (*launch.notes, *notes))
    lines.extend(d.text_line() for d in launch.lint.diagnostics)
    errors, warnings = launch.lint.count(Severity.ERROR), launch.lint.count(Severity.WARNING)
    lines.append(
        f"lint     {errors} error(s), {warnings} warning(s): " + ("refused" if launch.lint.refuses else "would launch")
    )
    click.echo("\n".join(map(printable, lines)))  # paths, values and messages from the recipe: escaped
