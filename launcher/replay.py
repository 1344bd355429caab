"""`sapo-launch rerun RUN_DIR`: the plan a run directory records, replayed in a new run directory, where it ran.

The argv, working directory and environment are taken as recorded, not re-planned from the recipe (which may have
changed since); variables that were redacted are read from the current environment, and a run the lint gate
refused is not replayed. A rerun is a new run: a checkpoint directory the launcher named after the run directory
(`plan.Checkpoints`: under `checkpoints:`, or the run directory's) is the new run's own, so it never resumes the
recorded run's checkpoints; a trainer.default_local_dir the recipe sets is kept, as the user wrote it.

A run directory is trusted only when it is the user's own, as ssh's StrictModes decides: the directory and every file
the rerun reads must be owned by the user and writable by no one else (a `plan.json` another user rewrote would run
at once), and never a symbolic link. A value is filled from the environment only for a name the plan recorded as a
secret (a secret name, or one given with `--secret-env`).

Every path is absolute, whatever directory the rerun starts from (a relative RUN_DIR or runs directory included).
Where it ran is the executor's to say (`Executor.rerun_of`, reading the run directory with `trusted_text`: on the
Ray cluster whose address, working directory, excludes and interpreter job.json records), with the Ray options
plan.json records (runtime_env, metadata, the entrypoint's resources; a new submission id).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import yaml

from sapo_toolkit.atomicio import read_regular

from .plan import REDACTED, Checkpoints, LintReport, Plan, RayOptions, is_secret, run_dir_name
from .rundir import PLAN_FILE, SUMMARY_FILE, create, environment_facts, read_json, write_json
from .versions import installed_versions


class ReplayError(Exception):
    """The run directory cannot be replayed; the message says why, in one line."""


MAX_RECORD_BYTES = 64 * 2**20  # a plan.json, job.json or summary.json of a run directory


def check_owned(path: Path) -> None:
    """Raise `ReplayError` unless `path` is the user's own: owned by the user, writable by no one else, and not a
    symbolic link (ssh's StrictModes)."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise ReplayError(f"{path} cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise ReplayError(f"{path} is a symbolic link; a rerun reads only the run directory's own files")
    if info.st_uid != os.geteuid():
        raise ReplayError(f"{path} is owned by another user; a rerun runs only what the user recorded")
    if info.st_mode & 0o022:
        raise ReplayError(f"{path} is writable by others; a rerun runs only what no one else could have changed")


def trusted_text(path: Path) -> str:
    """The text of a run directory's file, after `check_owned` on it and its directory."""
    check_owned(path.parent)
    check_owned(path)
    try:
        return read_regular(path, MAX_RECORD_BYTES, follow_symlinks=False, owner=os.geteuid()).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReplayError(f"{path} cannot be read: {getattr(exc, 'strerror', None) or exc}") from None


def _unredacted(env: Mapping[str, str], environ: Mapping[str, str], run_dir: Path, secrets) -> dict[str, str]:
    """`env` with each redacted value taken from the current environment, for the names the plan recorded as
    secret (`is_secret` with its `secret_env`) only."""
    values = {}
    for name, value in env.items():
        if value == REDACTED:
            if not is_secret(name, secrets):
                raise ReplayError(
                    f"{run_dir} records {name} as redacted, which is no secret name of its plan; not filled from the "
                    "environment"
                )
            if name not in environ:
                raise ReplayError(f"{name} was redacted in {run_dir}; set it in the environment to rerun")
            value = environ[name]
        values[name] = value
    return values


def filled_names(plan: dict) -> list[str]:
    """The names whose values a rerun of plan.json's `plan` takes from the current environment."""
    ray = plan.get("ray") or {}
    env_vars = (ray.get("runtime_env") or {}).get("env_vars") or {}
    return sorted({n for n, v in [*plan.get("env", {}).items(), *env_vars.items()] if v == REDACTED})


def _ray_options(recorded: dict | None, environ: Mapping[str, str], run_dir: Path, secrets) -> RayOptions:
    """The Ray options plan.json records (none in run directories of older versions), secrets from the current
    environment; without the submission id, which Ray gives one job only."""
    if not recorded:
        return RayOptions()
    runtime_env = dict(recorded.get("runtime_env") or {})
    if "env_vars" in runtime_env:
        runtime_env["env_vars"] = _unredacted(runtime_env["env_vars"], environ, run_dir, secrets)
    return RayOptions(**{**recorded, "runtime_env": runtime_env, "submission_id": None})


def _checkpoints(recorded) -> Checkpoints | None:
    """The checkpoint directory plan.json records (none in run directories of older versions)."""
    try:
        return Checkpoints(**recorded) if isinstance(recorded, dict) else None
    except TypeError:
        raise ReplayError(f"plan.json's checkpoints is not what sapo-launch writes: {recorded}") from None


class Replay(NamedTuple):
    """What a rerun will run, before anything is written: the plan (its run directory not made yet), the names
    filled from the environment, and the plan.json it came from."""

    plan: Plan
    filled: list[str]
    secret_env: list[str]
    run_dir: Path


def load_replay(run_dir: Path, runs_dir: Path, now: datetime, environ: Mapping[str, str]) -> Replay:
    """The plan RUN_DIR records, to run again in a new run directory under `runs_dir`. Raises `ReplayError`."""
    try:
        recorded = json.loads(trusted_text(run_dir / PLAN_FILE))
        summary = json.loads(trusted_text(run_dir / SUMMARY_FILE))
        resolved_text = trusted_text(run_dir / "recipe.resolved.yaml")
        check_owned(run_dir / "lint.json")
    except ValueError as exc:
        raise ReplayError(f"{run_dir} is not a complete run directory: {exc}") from None
    if summary.get("status") == "refused":
        raise ReplayError(f"{run_dir} was refused by the lint gate; fix the recipe and launch it again")
    secrets = list(recorded.get("secret_env", []))
    env = _unredacted(recorded["env"], environ, run_dir, secrets)
    new_dir = Path(runs_dir).absolute() / run_dir_name(recorded["name"], now)
    recipe = Path(recorded["cwd"], recorded["recipe"])  # relative in run directories of older versions
    plan = Plan(
        str(recipe),
        recorded["name"],
        recorded["variant"],
        recorded["device"],
        tuple(recorded["argv"]),
        tuple(env.items()),
        recorded["cwd"],
        recorded.get("run_dir") or str(new_dir),
        LintReport(()),
        yaml.safe_load(resolved_text),
        recorded["recipe_hash"],
        tuple(recorded["notes"]),
        nnodes=recorded.get("nnodes"),
        devices_per_node=recorded.get("devices_per_node"),
        total_steps=recorded.get("total_steps"),
        gates=tuple(recorded.get("gates") or ()),
        ray=_ray_options(recorded.get("ray"), environ, run_dir, secrets),
        checkpoints=_checkpoints(recorded.get("checkpoints")),
    )
    plan.move_to(str(new_dir))  # this run's metrics, and its own checkpoint directory where the run names it
    return Replay(plan, filled_names(recorded), secrets, run_dir)


def record_replay(replay: Replay) -> Path:
    """Make the replay's run directory (`rundir.create`), with the recorded lint result and `rerun_of`."""
    plan, run_dir = replay.plan, replay.run_dir
    environment = environment_facts(Path(plan.recipe_path), plan.device, 0, installed_versions())
    created = create(plan, environment, replay.secret_env)
    shutil.copyfile(run_dir / "lint.json", created / "lint.json")
    write_json(created / PLAN_FILE, {**read_json(created / PLAN_FILE), "rerun_of": str(run_dir.absolute())})
    return created
