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
from sapo_toolkit.linter.core.words import counted

from ..rundir import EXIT_REFUSED, Labels
from .options import (
    DEVICE,
    FAIL_ON_GATES,
    FORMAT,
    HEADERS,
    MAX_RESTARTS,
    RUN_NAME,
    RUNS_DIR,
    TAGS,
    VERIFY,
    jobs_address,
)


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
    default=RUNS_DIR,
    show_default=True,
    help="Where run directories are created.",
)
@RUN_NAME
@TAGS
@click.option(
    "--secret-env",
    multiple=True,
    metavar="NAME",
    help="Redact this variable too (secret names such as HF_TOKEN or WANDB_API_KEY always are).",
)
@FAIL_ON_GATES
@MAX_RESTARTS
@click.option(
    "--checkpoints",
    metavar="DIR",
    help="Save the run's checkpoints under DIR/<run directory's name> (over the recipe's `checkpoints:`); on a Ray "
    "cluster, a directory its nodes share. Default: the run directory's checkpoints/ (on a cluster only with "
    "--shared-runs-dir). A trainer.default_local_dir the recipe sets wins.",
)
@click.option(
    "--shared-runs-dir",
    is_flag=True,
    help="With --address: the cluster's nodes reach the runs directory at the same path (shared storage), so a run's "
    "checkpoints can go to its run directory.",
)
@click.option(
    "--address",
    metavar="URL",
    callback=jobs_address,
    help="Submit to this Ray cluster's Jobs API (http://HEAD:8265) instead of running here; default "
    "$RAY_API_SERVER_ADDRESS, else $RAY_ADDRESS, when it is one (set for ray.init, `auto` or HOST:6379, it is not: "
    "the launch stays here). Each request waits at most $SAPO_LAUNCH_RAY_TIMEOUT seconds (30). Needs "
    "`pip install 'sapo-toolkit[ray]'`.",
)
@HEADERS
@VERIFY
@click.option("--detach", is_flag=True, help="With --address: return once the job is submitted.")
@click.option(
    "--working-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="With --address: upload this directory as the job's working directory (as Ray ships it: .gitignore and "
    ".rayignore honoured, the runtime_env's excludes left out; at most 100 MiB zipped).",
)
@click.option(
    "--runtime-env",
    "runtime_env_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    metavar="FILE",
    help="With --address: a YAML runtime_env, as `ray job submit --runtime-env` reads it (verl's "
    "verl/trainer/runtime_env.yaml, or any): pip, uv, conda, py_modules, excludes, working_dir, env_vars. Its "
    "fields replace the recipe's `ray.runtime_env` ones; the recipe's env wins over its env_vars.",
)
@click.option("--submission-id", metavar="ID", help="With --address: the job's submission id (default: Ray's).")
@click.option(
    "--metadata",
    multiple=True,
    metavar="KEY=VALUE",
    help="With --address: metadata Ray shows beside the job (repeatable), over the recipe's `ray.metadata`.",
)
@click.option(
    "--entrypoint-num-cpus", type=click.FloatRange(min=0), metavar="N", help="With --address: CPUs for the trainer."
)
@click.option(
    "--entrypoint-num-gpus", type=click.FloatRange(min=0), metavar="N", help="With --address: GPUs for the trainer."
)
@click.option(
    "--entrypoint-memory",
    type=click.IntRange(min=0),
    metavar="BYTES",
    help="With --address: memory for the trainer, in bytes (as `ray job submit --entrypoint-memory`).",
)
@click.option(
    "--entrypoint-resources",
    metavar="JSON",
    help='With --address: custom resources for the trainer, a JSON object ({"NPU": 1}).',
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
    run_name,
    tags,
    secret_env,
    fail_on_gates,
    max_restarts,
    checkpoints,
    shared_runs_dir,
    address,
    headers,
    verify,
    detach,
    working_dir,
    runtime_env_file,
    submission_id,
    metadata,
    entrypoint_num_cpus,
    entrypoint_num_gpus,
    entrypoint_memory,
    entrypoint_resources,
):
    """Lint RECIPE for the chosen variant with OVERRIDES (Hydra `key=value`), then run verl's trainer here, or on
    a Ray cluster with --address."""
    from sapo_toolkit.linter.api import UnreadableFile
    from sapo_toolkit.linter.settings import SettingsError, load_settings

    from .. import device as devices
    from ..plan import Facts, PlanError, RayOptions, plan

    if recipe.suffix == ".sh":
        raise click.UsageError(
            f"{recipe} is a run script: launch it by converting it first "
            f"(`sapo-lint convert {recipe} -o recipe.yaml`, then `sapo-launch recipe.yaml`)"
        )
    notes = []
    if address is None:
        address, notes = _environment_address(os.environ)
    ray_only = {
        "--detach": detach,
        "--shared-runs-dir": shared_runs_dir,
        "--working-dir": working_dir,
        "--runtime-env": runtime_env_file,
        "--submission-id": submission_id,
        "--metadata": metadata,
        "--entrypoint-num-cpus": entrypoint_num_cpus,
        "--entrypoint-num-gpus": entrypoint_num_gpus,
        "--entrypoint-memory": entrypoint_memory,
        "--entrypoint-resources": entrypoint_resources,
    }
    given = [flag for flag, value in ray_only.items() if value not in (None, False, ())]
    if detach and max_restarts:
        raise click.UsageError("--max-restarts needs the launcher to follow the run: not with --detach")
    source = click.get_current_context().get_parameter_source
    given += [f"--{name}" for name in ("headers", "verify") if source(name) == click.core.ParameterSource.COMMANDLINE]
    if not address and given:
        raise click.UsageError(f"{', '.join(given)} need{'s' if len(given) == 1 else ''} --address (a Ray cluster)")
    ray = RayOptions(
        _runtime_env(runtime_env_file, working_dir),
        _metadata(metadata),
        submission_id,
        entrypoint_num_cpus,
        entrypoint_num_gpus,
        _resources(entrypoint_resources),
        entrypoint_memory,
    )
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
            ray=ray,
            on_cluster=bool(address),
            checkpoints=checkpoints,
            shared_runs_dir=shared_runs_dir,
        )
    except (PlanError, SettingsError, UnreadableFile) as exc:
        hint = "" if detected.kind else f" (no device detected: {detected.how}; pass --device npu|gpu)"
        raise click.UsageError(f"{exc}{hint}") from None
    labels = Labels(run_name, tags)
    if run_name:  # the plan named its run directory after the recipe only
        launch.move_to(str(Path(launch.run_dir).with_name(labels.directory_name(launch.name, facts.now))))
    from .. import executors

    options = executors.Options(address, tuple(secret_env), headers, verify)
    executor = executors.create(executors.named(address), options)
    if dry_run:
        _print_plan(launch, fmt, secret_env, notes, executor)
        sys.exit(EXIT_REFUSED if launch.lint.refuses or launch.refusal else 0)
    if launch.refusal:  # before the run directory is made: nothing of this run exists
        click.echo(printable(f"sapo-launch: refused: {launch.refusal}"), err=True)
        sys.exit(EXIT_REFUSED)
    try:  # what the executor would be sent, checked before the run directory is made (metadata under our keys)
        executor.describe(launch)
    except executors.ExecutorError as exc:
        raise click.UsageError(exc.message) from None
    from .. import rundir
    from ..versions import installed_versions

    environment = rundir.environment_facts(recipe, detected.kind, detected.count, installed_versions())
    run_dir = rundir.create(launch, environment, secret_env, labels)
    _print_lint(launch)
    if launch.lint.refuses:
        rundir.write_json(
            run_dir / rundir.SUMMARY_FILE,
            {
                "status": "refused",
                "exit_code": EXIT_REFUSED,
                "errors": launch.lint.count(Severity.ERROR),
                executors.NAME_KEY: executor.NAME,
            },
        )
        click.echo(printable(f"sapo-launch: refused: the recipe has lint errors (run directory {run_dir})"), err=True)
        sys.exit(EXIT_REFUSED)
    click.echo(printable(f"sapo-launch: run directory {run_dir}"), err=True)
    for warning in launch.warnings:
        click.echo(printable(f"sapo-launch: warning: {warning}"), err=True)
    for note in notes:
        click.echo(printable(f"sapo-launch: {note}"), err=True)
    from .. import restarts

    sys.exit(
        restarts.run(
            executor,
            launch,
            run_dir,
            secret_env=secret_env,
            fail_on_gates=fail_on_gates,
            detach=detach,
            max_restarts=max_restarts,
        )
    )


def _runtime_env(path: Path | None, working_dir: Path | None) -> dict:
    """The runtime_env of --runtime-env FILE (YAML, as Ray's CLI reads it), with --working-dir over its own."""
    from sapo_toolkit.linter import api

    from ..plan import runtime_env_problem

    runtime_env = {}
    if path is not None:
        try:
            runtime_env = api.read_yaml_data(path)
        except api.UnreadableFile as exc:
            raise click.UsageError(f"--runtime-env {path}: {exc}") from None
        problem = runtime_env_problem(runtime_env)
        if problem:
            raise click.UsageError(f"--runtime-env {path}: {problem}")
    return {**runtime_env, **({"working_dir": str(working_dir)} if working_dir is not None else {})}


def _metadata(pairs) -> dict[str, str]:
    metadata = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise click.UsageError(f"--metadata expects KEY=VALUE, got `{pair}`")
        metadata[key] = value
    return metadata


def _resources(text: str | None) -> dict[str, float]:
    if text is None:
        return {}
    try:
        resources = json.loads(text)
    except ValueError:
        resources = None
    if not isinstance(resources, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in resources.values()
    ):
        raise click.UsageError(f"--entrypoint-resources expects a JSON object of amounts, got `{text}`")
    return resources


def _environment_address(environ) -> tuple[str | None, list[str]]:
    """The default --address: $RAY_API_SERVER_ADDRESS (what `ray start` tells users to export for `ray job
    submit`), then $RAY_ADDRESS, as Ray's job client takes them, the first that is a Jobs API URL; otherwise None,
    with a note for each that was ignored: verl users set RAY_ADDRESS for `ray.init` (`auto`, `HOST:6379`), and a
    launch with it stays here."""
    from ..executors import RAY_ADDRESS_VARIABLES

    if not any(environ.get(name) for name in RAY_ADDRESS_VARIABLES):
        return None, []  # a local launch: Ray's client stays unimported
    from ..executors.ray_client import jobs_address, not_jobs_api, shown_address

    notes = []
    for name in RAY_ADDRESS_VARIABLES:
        text = environ.get(name)
        if not text:
            continue
        why = not_jobs_api(text)
        if why is None:
            return jobs_address(text), notes
        notes.append(f"{name}={shown_address(text)} ignored: not a Jobs API address ({why})")
    if notes:
        notes[-1] += "; the trainer runs here"
    return None, notes


# How the dry run names who chose the checkpoint directory (`plan.Checkpoints.source`).
CHECKPOINT_SOURCES = {
    "recipe": "the recipe's trainer.default_local_dir",
    "checkpoints": "under `checkpoints:`, named after the run directory",
    "run_dir": "the run directory's",
    "verl": "verl's relative default",
}


def _print_lint(launch) -> None:
    for d in launch.lint.diagnostics:
        click.echo(printable(d.text_line()), err=True)


def _print_plan(launch, fmt: str, secret_env, notes: list[str], executor) -> None:
    from ..plan import redact

    env = redact(launch.env_dict(), secret_env)
    described = executor.describe(launch)
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
                    "warnings": list(launch.warnings),
                    "recipe_hash": launch.recipe_hash,
                    "lint": launch.lint.to_json(),
                    "checkpoints": launch.checkpoints._asdict() if launch.checkpoints else None,
                    "refused": launch.refusal,
                    "ray": None,  # null where the run does not go to a Ray cluster, as it always was
                    **({executor.NAME: described.data} if described else {}),
                },
                indent=2,
            )
        )
        return
    lines = [
        f"recipe   {launch.recipe_path}" + (f"  [{launch.variant}]" if launch.variant else ""),
        f"cwd      {launch.cwd}",
        f"run dir  {launch.run_dir}",
    ]
    if launch.checkpoints:
        where = launch.checkpoints.dir or "relative to the job's directory on the cluster"
        lines.append(f"ckpt     {where} ({CHECKPOINT_SOURCES[launch.checkpoints.source]})")
    lines.append("argv")
    head, overrides = launch.argv[:5], launch.argv[5:]
    lines.append("  " + " ".join(head))
    lines.extend(f"    {o}" for o in overrides)
    lines.append("env")
    lines.extend(f"  {k}={v}" for k, v in env.items())
    if described:
        lines.extend(described.lines)
    lines.extend(f"note     {n}" for n in (*launch.notes, *notes))
    lines.extend(f"warning  {w}" for w in launch.warnings)
    lines.extend(d.text_line() for d in launch.lint.diagnostics)
    errors, warnings = launch.lint.count(Severity.ERROR), launch.lint.count(Severity.WARNING)
    lines.append(
        f"lint     {counted(errors, 'error')}, {counted(warnings, 'warning')}: "
        + ("refused" if launch.lint.refuses else "would launch")
    )
    if launch.refusal:
        lines.append(f"refused  {launch.refusal}")
    click.echo("\n".join(map(printable, lines)))  # paths, values and messages from the recipe: escaped
