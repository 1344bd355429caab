"""The run directory: everything needed to see what ran and to run it again, each file written atomically.

    recipe.resolved.yaml  the chosen variant: entrypoint, config, overrides, env (secrets redacted)
    plan.json             argv, env (redacted), cwd, variant, recipe hash, notes, the secret names
    environment.json      python, installed versions, device, host, git revision of the recipe's repository
    lint.json             the lint report that gated the launch
    train.log             the trainer's stdout and stderr (written by the executor)
    metrics.jsonl         per-step metrics: verl's `file` logger writes it while the trainer runs; at the end the
                          launcher appends the steps only the console showed (`"source": "console"`)
    summary.json          status (refused | running | submitted | succeeded | failed | interrupted), exit code,
                          duration, the last log lines, gate verdicts
    job.json              on a Ray cluster: its address (credentials redacted) and the job's submission id
"""

from __future__ import annotations

import json
import platform
import socket
from collections.abc import Iterable
from pathlib import Path

from sapo_toolkit.schemas.atomic import write_atomically

from . import git
from .plan import Plan, redact

LOG_FILE = "train.log"
SUMMARY_FILE = "summary.json"
PLAN_FILE = "plan.json"
TAIL_LINES = 20  # summary.json's `last_lines`
EXIT_REFUSED = 1  # the lint gate or the cluster's resources refused the run; nothing started


def exit_code_of(returncode: int) -> int:
    """A process's exit status as a shell reports it: 128 + N when signal N ended it."""
    return 128 - returncode if returncode < 0 else returncode


def write_json(path: Path, data: dict) -> None:
    write_atomically(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def plan_json(plan: Plan, secret_env: Iterable[str] = ()) -> dict:
    secret_env = tuple(secret_env)
    return {
        "recipe": plan.recipe_path, "name": plan.name, "variant": plan.variant, "device": plan.device,
        "argv": list(plan.argv), "env": redact(plan.env_dict(), secret_env), "cwd": plan.cwd,
        "run_dir": plan.run_dir, "recipe_hash": plan.recipe_hash, "notes": list(plan.notes),
        "secret_env": sorted(set(secret_env)), "nnodes": plan.nnodes, "devices_per_node": plan.devices_per_node,
        "total_steps": plan.total_steps, "gates": list(plan.gates),
    }


def create(plan: Plan, environment: dict, secret_env: Iterable[str] = ()) -> Path:
    """Make the run directory and write what is known before the trainer starts."""
    import yaml

    run_dir = Path(plan.run_dir)
    run_dir.mkdir(parents=True, exist_ok=False)
    resolved = dict(plan.resolved)
    if "env" in resolved:
        resolved["env"] = redact(resolved["env"], secret_env)
    write_atomically(run_dir / "recipe.resolved.yaml",
                     f"# recipe sha256 {plan.recipe_hash}\n" + yaml.safe_dump(resolved, sort_keys=False))
    write_json(run_dir / PLAN_FILE, plan_json(plan, secret_env))
    write_json(run_dir / "environment.json", environment)
    write_json(run_dir / "lint.json", plan.lint.to_json())
    return run_dir


def environment_facts(recipe_path: Path, device: str | None, device_count: int, versions: dict) -> dict:
    return {
        "python": platform.python_version(), "platform": platform.platform(), "host": socket.gethostname(),
        "versions": versions, "device": {"kind": device, "count": device_count},
        "git": git_state(recipe_path.resolve().parent),
    }


def git_state(directory: Path) -> dict | None:
    """The revision and dirty flag (None: unknown) of the repository holding `directory`; None outside a git
    repository, or where git cannot tell. Git runs hardened (`launcher/git.py`): the repository's config runs
    nothing."""
    revision = git.run(directory, "rev-parse", "--verify", "--quiet", "HEAD")
    if revision is None:
        return None
    # Like any command that compares files, status hashes some through the repository's filters: git.run switches
    # off the programs they name. Submodules are separate repositories, with configs git.run has not read.
    status = git.run(directory, "status", "--porcelain", "--ignore-submodules=all")
    return {"revision": revision.decode().strip(), "dirty": None if status is None else bool(status.strip())}
