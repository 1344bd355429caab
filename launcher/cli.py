"""`sapo-launch`: lint, plan and run a recipe (`sapo-launch RECIPE [KEY=VALUE ...]`) here or on a Ray cluster;
`doctor`, `rerun`, `report`, and `logs`/`stop`/`status` for Ray jobs.

Exit codes: the trainer's own exit code when it ran (128 + N when signal N ended it; 130 for a stopped Ray job);
1 when the lint gate refuses the recipe (or `doctor` finds a blocking incompatibility); 2 for a usage error or a
recipe that cannot be planned; 3 with `--fail-on-gates` when the trainer succeeded but a gate failed. Errors are
one line on stderr, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import ClassVar

import click

from sapo_toolkit.linter.clikit import DefaultCommandGroup
from sapo_toolkit.linter.core.diagnostics import Severity
from sapo_toolkit.linter.core.printable import printable

from .executors import ExecutorError
from .rundir import EXIT_REFUSED, SUMMARY_FILE

EXIT_USAGE = 2


class DefaultToRun(DefaultCommandGroup):
    """`sapo-launch RECIPE ...` means `sapo-launch run RECIPE ...`. `doctor` and `report` are imported only when
    asked for, to keep planning fast."""

    default = "run"
    lazy: ClassVar[dict[str, tuple[str, str]]] = {
        "doctor": ("sapo_toolkit.launcher.doctor", "doctor"),
        "report": ("sapo_toolkit.launcher.report", "report"),
    }


@click.group(cls=DefaultToRun, context_settings={"help_option_names": ["-h", "--help"]})
def cli():
    """Lint-gated, device-aware launcher for verl SAPO recipes."""


@cli.command("run", context_settings={"ignore_unknown_options": False})
@click.argument("recipe", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("overrides", nargs=-1)
@click.option("--device", type=click.Choice(["auto", "npu", "gpu"]), default="auto", show_default=True,
              help="Device kind; auto: the DEVICE environment variable, else what this machine has (Ascend first).")
@click.option("--infer-backend", help="The recipe's INFER_BACKEND variant (vllm, sglang, ...).")
@click.option("--variant", "variants", multiple=True, metavar="AXIS=VALUE", help="Choose a value of another axis.")
@click.option("--dry-run", is_flag=True, help="Print the plan (argv, env, lint summary) and exit: 0, or 1 when the "
                                              "lint gate would refuse.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True,
              help="Where run directories are created.")
@click.option("--secret-env", multiple=True, metavar="NAME",
              help="Redact this variable too (names containing KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL always are).")
@click.option("--fail-on-gates", is_flag=True, help="Exit 3 when the trainer succeeded but a recipe gate failed.")
@click.option("--address", envvar="RAY_ADDRESS", metavar="URL",
              help="Submit to this Ray cluster's Jobs API (http://head:8265; default $RAY_ADDRESS) instead of running "
                   "here. Needs `pip install 'sapo-toolkit[ray]'`.")
@click.option("--detach", is_flag=True, help="With --address: return once the job is submitted.")
@click.option("--working-dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="With --address: upload this directory as the job's working directory.")
def run(recipe, overrides, device, infer_backend, variants, dry_run, fmt, runs_dir, secret_env, fail_on_gates,
        address, detach, working_dir):
    """Lint RECIPE for the chosen variant with OVERRIDES (Hydra `key=value`), then run verl's trainer here, or on
    a Ray cluster with --address."""
    from sapo_toolkit.linter.api import UnreadableFile
    from sapo_toolkit.linter.settings import SettingsError, load_settings

    from . import device as devices
    from .plan import Facts, PlanError, plan

    if recipe.suffix == ".sh":
        raise click.UsageError(f"{recipe} is a run script: launch it by converting it first "
                               f"(`sapo-lint convert {recipe} -o recipe.yaml`, then `sapo-launch recipe.yaml`)")
    detected = devices.detect_device(None if device == "auto" else device, os.environ, devices.DEFAULT_PROBE)
    facts = Facts(detected.kind, sys.executable, os.getcwd(), os.cpu_count() or 1, datetime.now(timezone.utc),
                  str(runs_dir))
    try:
        settings, _ = load_settings(recipe.resolve().parent)
        launch = plan(recipe, settings=settings, facts=facts, device=detected.kind, infer_backend=infer_backend,
                      variants=variants, overrides=overrides)
    except (PlanError, SettingsError, UnreadableFile) as exc:
        hint = "" if detected.kind else f" (no device detected: {detected.how}; pass --device npu|gpu)"
        raise click.UsageError(f"{exc}{hint}") from None
    if dry_run:
        _print_plan(launch, fmt, secret_env)
        sys.exit(EXIT_REFUSED if launch.lint.refuses else 0)
    from . import rundir
    from .versions import installed_versions

    environment = rundir.environment_facts(recipe, detected.kind, detected.count, installed_versions())
    run_dir = rundir.create(launch, environment, secret_env)
    _print_lint(launch)
    if launch.lint.refuses:
        rundir.write_json(run_dir / rundir.SUMMARY_FILE, {"status": "refused", "exit_code": EXIT_REFUSED,
                                                          "errors": launch.lint.count(Severity.ERROR)})
        click.echo(printable(f"sapo-launch: refused: the recipe has lint errors (run directory {run_dir})"), err=True)
        sys.exit(EXIT_REFUSED)
    click.echo(printable(f"sapo-launch: run directory {run_dir}"), err=True)
    from .execution import run as run_plan

    if address:
        from .executors.ray_jobs import RayExecutor

        sys.exit(run_plan(RayExecutor(address, working_dir=working_dir), launch, run_dir, fail_on_gates=fail_on_gates,
                          detach=detach))
    if detach or working_dir:
        raise click.UsageError("--detach and --working-dir need --address (a Ray cluster)")
    from .executors.local import LocalExecutor

    sys.exit(run_plan(LocalExecutor(), launch, run_dir, fail_on_gates=fail_on_gates))


@cli.command("rerun")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the new run directory goes (default: beside RUN_DIR).")
@click.option("--fail-on-gates", is_flag=True, help="Exit 3 when the trainer succeeded but a recipe gate failed.")
def rerun(run_dir, runs_dir, fail_on_gates):
    """Run again exactly what RUN_DIR ran (same argv, environment and working directory) in a new run directory.
    Redacted variables are taken from the current environment."""
    from .execution import run as run_plan
    from .executors.local import LocalExecutor
    from .replay import ReplayError, replay

    try:
        launch, new_dir = replay(run_dir, runs_dir or run_dir.parent, datetime.now(timezone.utc), os.environ)
    except ReplayError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(printable(f"sapo-launch: rerun of {run_dir} in {new_dir}"), err=True)
    sys.exit(run_plan(LocalExecutor(), launch, new_dir, fail_on_gates=fail_on_gates))


RUN_DIR = click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
ADDRESS = click.option("--address", default=None, metavar="URL",
                       help="The Ray dashboard address (default: the one job.json records).")


@cli.command("logs")
@RUN_DIR
@click.option("--follow", "-f", is_flag=True, help="Stream until the job ends; exit with its exit code.")
@ADDRESS
def logs_command(run_dir, follow, address):
    """Print the log of the Ray job RUN_DIR submitted (re-attach with --follow)."""
    from .executors import ray_jobs

    if follow:
        from .execution import follow_again

        sys.exit(follow_again(ray_jobs.RayExecutor(address), ray_jobs.attach(run_dir, address=address), run_dir))
    sys.exit(ray_jobs.logs(run_dir, address=address))


@cli.command("stop")
@RUN_DIR
@ADDRESS
def stop_command(run_dir, address):
    """Stop the Ray job RUN_DIR submitted and wait until it has ended."""
    from .executors import ray_jobs

    sys.exit(ray_jobs.stop(run_dir, address=address))


@cli.command("status")
@RUN_DIR
@ADDRESS
def status_command(run_dir, address):
    """Print the status of the run RUN_DIR holds (a Ray job, or a run on this machine); exit 0 while it runs, its
    exit code once it ended (2 for a local run whose launcher died: it is marked lost)."""
    from .executors import local, ray_jobs

    on_ray = (run_dir / ray_jobs.JOB_FILE).exists() or not (run_dir / SUMMARY_FILE).exists()
    executor = ray_jobs.RayExecutor(address) if on_ray else local.LocalExecutor()
    sys.exit(executor.status(run_dir))


def _print_lint(launch) -> None:
    for d in launch.lint.diagnostics:
        click.echo(printable(d.text_line()), err=True)


def _print_plan(launch, fmt: str, secret_env) -> None:
    from .plan import redact

    env = redact(launch.env_dict(), secret_env)
    if fmt == "json":
        click.echo(json.dumps({"argv": list(launch.argv), "env": env, "cwd": launch.cwd, "run_dir": launch.run_dir,
                               "variant": launch.variant, "device": launch.device, "notes": list(launch.notes),
                               "recipe_hash": launch.recipe_hash, "lint": launch.lint.to_json()}, indent=2))
        return
    lines = [f"recipe   {launch.recipe_path}" + (f"  [{launch.variant}]" if launch.variant else ""),
             f"cwd      {launch.cwd}", f"run dir  {launch.run_dir}", "argv"]
    head, overrides = launch.argv[:5], launch.argv[5:]
    lines.append("  " + " ".join(head))
    lines.extend(f"    {o}" for o in overrides)
    lines.append("env")
    lines.extend(f"  {k}={v}" for k, v in env.items())
    lines.extend(f"note     {n}" for n in launch.notes)
    lines.extend(d.text_line() for d in launch.lint.diagnostics)
    errors, warnings = launch.lint.count(Severity.ERROR), launch.lint.count(Severity.WARNING)
    lines.append(f"lint     {errors} error(s), {warnings} warning(s): "
                 + ("refused" if launch.lint.refuses else "would launch"))
    click.echo("\n".join(map(printable, lines)))  # paths, values and messages from the recipe: escaped


def main() -> None:
    """Console entry point: click's own errors exit 2; anything unexpected is one line, never a traceback."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        click.echo(printable(f"sapo-launch: {exc.format_message()}"), err=True)
        sys.exit(EXIT_USAGE)
    except ExecutorError as exc:
        click.echo(printable(f"sapo-launch: {exc.message}"), err=True)
        sys.exit(EXIT_USAGE)
    except Exception as exc:  # noqa: BLE001 - one line for the user, not a traceback
        click.echo(printable(f"sapo-launch: internal error: {type(exc).__name__}: {exc}"), err=True)
        sys.exit(EXIT_USAGE)
