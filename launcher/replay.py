"""`sapo-launch rerun RUN_DIR`: the plan a run directory records, replayed in a new run directory.

The argv, working directory and environment are taken as recorded, not re-planned from the recipe (which may have
changed since); variables that were redacted are read from the current environment, and a run the lint gate
refused is not replayed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

import yaml

from .plan import FILE_LOGGER_ENV, METRICS_FILE, REDACTED, LintReport, Plan, run_dir_name
from .rundir import PLAN_FILE, SUMMARY_FILE, create, environment_facts, write_json
from .versions import installed_versions


class ReplayError(Exception):
    """The run directory cannot be replayed; the message says why, in one line."""


def replay(run_dir: Path, runs_dir: Path, now: datetime, environ: Mapping[str, str]) -> tuple[Plan, Path]:
    try:
        recorded = json.loads((run_dir / PLAN_FILE).read_text(encoding="utf-8"))
        summary = json.loads((run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
        resolved_text = (run_dir / "recipe.resolved.yaml").read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise ReplayError(f"{run_dir} is not a complete run directory: {exc}") from None
    if summary.get("status") == "refused":
        raise ReplayError(f"{run_dir} was refused by the lint gate; fix the recipe and launch it again")
    env = {}
    for name, value in recorded["env"].items():
        if value == REDACTED:
            if name not in environ:
                raise ReplayError(f"{name} was redacted in {run_dir}; set it in the environment to rerun")
            value = environ[name]
        env[name] = value
    new_dir = Path(runs_dir) / run_dir_name(recorded["name"], now)
    env[FILE_LOGGER_ENV] = str(new_dir / METRICS_FILE)  # this run's metrics, not the recorded run's
    plan = Plan(
        recorded["recipe"],
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
    )
    secret_env = recorded.get("secret_env", [])
    environment = environment_facts(Path(recorded["recipe"]), recorded["device"], 0, installed_versions())
    created = create(plan, environment, secret_env)
    shutil.copyfile(run_dir / "lint.json", created / "lint.json")
    write_json(
        created / PLAN_FILE, {**json.loads((created / PLAN_FILE).read_text(encoding="utf-8")), "rerun_of": str(run_dir)}
    )
    return plan, created
