"""`sapo-launch rerun RUN_DIR`: the plan a run directory records, replayed in a new run directory, where it ran.

The argv, working directory and environment are taken as recorded, not re-planned from the recipe (which may have
changed since); variables that were redacted are read from the current environment, and a run the lint gate
refused is not replayed. Every path is absolute, whatever directory the rerun starts from (a relative RUN_DIR or
runs directory included). Where it ran: on this machine, or on the Ray cluster whose address, working directory,
excludes and interpreter job.json records (`where_it_ran`), with the Ray options plan.json records (runtime_env,
metadata, the entrypoint's resources; a new submission id).
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import yaml

from .executors.ray_jobs import DEFAULT_PYTHON, JOB_FILE
from .plan import FILE_LOGGER_ENV, METRICS_FILE, REDACTED, LintReport, Plan, RayOptions, run_dir_name
from .rundir import PLAN_FILE, SUMMARY_FILE, create, environment_facts, read_json, write_json
from .versions import installed_versions


class ReplayError(Exception):
    """The run directory cannot be replayed; the message says why, in one line."""


class RayTarget(NamedTuple):
    """The Ray cluster a run ran on and what its job was given besides the plan, as job.json records them."""

    address: str  # credentials redacted where the recorded one had some
    working_dir: Path | None = None  # absolute (a relative one recorded is taken from the run's cwd)
    excludes: tuple[str, ...] = ()
    python: str = DEFAULT_PYTHON  # the cluster's interpreter, the entrypoint's first word


def where_it_ran(run_dir: Path) -> RayTarget | None:
    """The Ray cluster RUN_DIR's run was submitted to; None for a run on the launching machine."""
    if not (run_dir / JOB_FILE).exists():
        return None
    try:
        job = json.loads((run_dir / JOB_FILE).read_text(encoding="utf-8"))
        working_dir = job.get("working_dir")
        cwd = read_json(run_dir / PLAN_FILE).get("cwd") or "/"
        return RayTarget(
            job["address"],
            Path(cwd, working_dir) if working_dir else None,
            tuple(job.get("excludes") or ()),
            shlex.split(job["entrypoint"])[0],
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ReplayError(
            f"{run_dir / JOB_FILE} does not say where the run ran ({type(exc).__name__}: {exc})"
        ) from None


def _unredacted(env: Mapping[str, str], environ: Mapping[str, str], run_dir: Path) -> dict[str, str]:
    """`env` with each redacted value taken from the current environment."""
    values = {}
    for name, value in env.items():
        if value == REDACTED:
            if name not in environ:
                raise ReplayError(f"{name} was redacted in {run_dir}; set it in the environment to rerun")
            value = environ[name]
        values[name] = value
    return values


def _ray_options(recorded: dict | None, environ: Mapping[str, str], run_dir: Path) -> RayOptions:
    """The Ray options plan.json records (none in run directories of older versions), secrets from the current
    environment; without the submission id, which Ray gives one job only."""
    if not recorded:
        return RayOptions()
    runtime_env = dict(recorded.get("runtime_env") or {})
    if "env_vars" in runtime_env:
        runtime_env["env_vars"] = _unredacted(runtime_env["env_vars"], environ, run_dir)
    return RayOptions(**{**recorded, "runtime_env": runtime_env, "submission_id": None})


def replay(run_dir: Path, runs_dir: Path, now: datetime, environ: Mapping[str, str]) -> tuple[Plan, Path]:
    try:
        recorded = json.loads((run_dir / PLAN_FILE).read_text(encoding="utf-8"))
        summary = json.loads((run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
        resolved_text = (run_dir / "recipe.resolved.yaml").read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise ReplayError(f"{run_dir} is not a complete run directory: {exc}") from None
    if summary.get("status") == "refused":
        raise ReplayError(f"{run_dir} was refused by the lint gate; fix the recipe and launch it again")
    env = _unredacted(recorded["env"], environ, run_dir)
    new_dir = Path(runs_dir).absolute() / run_dir_name(recorded["name"], now)
    env[FILE_LOGGER_ENV] = str(new_dir / METRICS_FILE)  # this run's metrics, not the recorded run's
    recipe = Path(recorded["cwd"], recorded["recipe"])  # relative in run directories of older versions
    plan = Plan(
        str(recipe),
        recorded["name"],
        recorded["variant"],
        recorded["device"],
        tuple(recorded["argv"]),
        tuple(env.items()),
        recorded["cwd"],
        str(new_dir),
        LintReport(()),
        yaml.safe_load(resolved_text),
        recorded["recipe_hash"],
        tuple(recorded["notes"]),
        nnodes=recorded.get("nnodes"),
        devices_per_node=recorded.get("devices_per_node"),
        total_steps=recorded.get("total_steps"),
        gates=tuple(recorded.get("gates") or ()),
        ray=_ray_options(recorded.get("ray"), environ, run_dir),
    )
    secret_env = recorded.get("secret_env", [])
    environment = environment_facts(recipe, recorded["device"], 0, installed_versions())
    created = create(plan, environment, secret_env)
    shutil.copyfile(run_dir / "lint.json", created / "lint.json")
    write_json(created / PLAN_FILE, {**read_json(created / PLAN_FILE), "rerun_of": str(run_dir.absolute())})
    return plan, created
