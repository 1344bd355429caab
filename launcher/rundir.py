"""The run directory: everything needed to see what ran and to run it again, each file written atomically. Its name
is the recipe's, then the run's own when it has one (`--name`), and the UTC second of the launch; launches of one
recipe in the same second get `-2`, `-3`, ... (created with mkdir, which fails on an existing directory: no two
launches share one).

recipe.resolved.yaml  the chosen variant: entrypoint, config, overrides, env (secrets redacted)
plan.json             argv, env (redacted), cwd, variant, recipe hash, notes, the secret names, where the run's
                      checkpoints go (`checkpoints`: dir, source, root; `plan.Checkpoints`), what the user calls
                      the run (`run_name`, `tags`: `Labels`)
environment.json      python, installed versions, device, host, git revision of the recipe's repository; for a Ray
                      job, `cluster`: the versions the job itself saw (executors/ray_probe.py, the version probe)
lint.json             the lint report that gated the launch
train.log             the trainer's stdout and stderr (written by the executor)
metrics.jsonl         per-step metrics: verl's `file` logger writes it while the trainer runs; at the end the
                      launcher appends the steps only the console showed (`"source": "console"`)
summary.json          status (refused | running | submitted | succeeded | failed | interrupted | lost), exit
                      code, duration, the last log lines, gate verdicts (`execution.py`), whether
                      `--fail-on-gates` was given, the name of the executor that ran it (`executor`:
                      `executors.executor_for`); a local run's `launcher` identity; written once per change
                      of state (`executors/base.py`)
job.json              on a Ray cluster: its address (credentials redacted) and the job's submission id
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import socket
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from sapo_toolkit.atomicio import write_atomically

from . import git
from .plan import Plan, RayOptions, credential_names, redact, redact_keys, run_dir_name

LOG_FILE = "train.log"
SUMMARY_FILE = "summary.json"
PLAN_FILE = "plan.json"
TAIL_LINES = 20  # summary.json's `last_lines`
EXIT_REFUSED = 1  # the lint gate or the cluster's resources refused the run; nothing started
EXIT_LOST = 2  # `status` of a run whose launcher ended without recording an outcome


def exit_code_of(returncode: int) -> int:
    """A process's exit status as a shell reports it: 128 + N when signal N ended it."""
    return 128 - returncode if returncode < 0 else returncode


def write_json(path: Path, data: dict) -> None:
    write_atomically(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


class Labels(NamedTuple):
    """What the user calls a run (`--name`, `--tag`), as plan.json records them (`run_name`, `tags`)."""

    name: str | None = None
    tags: tuple[str, ...] = ()

    @classmethod
    def recorded(cls, plan: dict) -> Labels:
        """The labels a plan.json (as read) records; none in run directories of older versions."""
        name, tags = plan.get("run_name"), plan.get("tags")
        return cls(
            name if isinstance(name, str) else None,
            tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else (),
        )

    def directory_name(self, recipe_name: str, now: datetime) -> str:
        """The name of the run's directory: the recipe's name, then the run's own when it has one, then the UTC
        time of the launch (`plan.run_dir_name`)."""
        return run_dir_name(f"{recipe_name}-{self.name}" if self.name else recipe_name, now)


UNLABELLED = Labels()


def plan_json(plan: Plan, secret_env: Iterable[str] = (), labels: Labels = UNLABELLED) -> dict:
    """plan.json: the plan, its environment redacted (`plan.redact`); `secret_env` records the names `--secret-env`
    gave and those whose values hold a URL's credentials, which `rerun` takes from the environment."""
    secret_env = (*secret_env, *credential_names(plan.env_dict()))
    return {
        "run_name": labels.name,
        "tags": list(labels.tags),
        "recipe": plan.recipe_path,
        "name": plan.name,
        "variant": plan.variant,
        "device": plan.device,
        "argv": list(plan.argv),
        "env": redact(plan.env_dict(), secret_env),
        "cwd": plan.cwd,
        "run_dir": plan.run_dir,
        "recipe_hash": plan.recipe_hash,
        "notes": list(plan.notes),
        "secret_env": sorted(set(secret_env)),
        "nnodes": plan.nnodes,
        "devices_per_node": plan.devices_per_node,
        "total_steps": plan.total_steps,
        "gates": list(plan.gates),
        "ray": ray_options_json(plan.ray, secret_env),
        "checkpoints": plan.checkpoints._asdict() if plan.checkpoints else None,
    }


def ray_options_json(options: RayOptions, secret_env: Iterable[str] = ()) -> dict:
    """The plan's Ray options as plan.json records them (for `rerun`): the values of secret-named keys redacted at
    any depth (env_vars, a conda environment's variables, metadata)."""
    return redact_keys(dataclasses.asdict(options), secret_env)


def create(plan: Plan, environment: dict, secret_env: Iterable[str] = (), labels: Labels = UNLABELLED) -> Path:
    """Make the run directory and write what is known before the trainer starts (`labels`: the run's name and
    tags). When `plan.run_dir` exists (a launch of the same recipe in the same second), the first free
    `<run_dir>-N` is made instead, and the plan's run_dir, file logger path and checkpoint directory (when named
    after the run directory) are changed to it."""
    import yaml

    run_dir = _make_unique(Path(plan.run_dir))
    if str(run_dir) != plan.run_dir:
        plan.move_to(str(run_dir))
    resolved = dict(plan.resolved)
    if "env" in resolved:
        resolved["env"] = redact(resolved["env"], secret_env)
    write_atomically(
        run_dir / "recipe.resolved.yaml",
        f"# recipe sha256 {plan.recipe_hash}\n" + yaml.safe_dump(resolved, sort_keys=False),
    )
    write_json(run_dir / PLAN_FILE, plan_json(plan, secret_env, labels))
    write_json(run_dir / "environment.json", environment)
    write_json(run_dir / "lint.json", plan.lint.to_json())
    return run_dir


def _make_unique(wanted: Path) -> Path:
    """`wanted`, or the first `<wanted>-N` (N = 2, 3, ...) that does not exist, made by this call: mkdir fails on
    an existing directory, so processes launching at once each get their own."""
    wanted.parent.mkdir(parents=True, exist_ok=True)
    candidate, n = wanted, 1
    while True:
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            n += 1
            candidate = wanted.with_name(f"{wanted.name}-{n}")


def environment_facts(recipe_path: Path, device: str | None, device_count: int, versions: dict) -> dict:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "versions": versions,
        "device": {"kind": device, "count": device_count},
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


def launcher_identity() -> dict:
    """This process, as summary.json's `launcher` records it: pid, host, and on Linux the boot id and the process's
    start time (clock ticks after boot), so that a reused pid or a rebooted machine is not taken for it."""
    pid = os.getpid()
    return {"pid": pid, "host": socket.gethostname(), "boot_id": _boot_id(), "start_ticks": _process_stat(pid)[1]}


def launcher_gone(identity: dict) -> bool:
    """Whether the launcher `identity` names has certainly ended: its machine rebooted, or its pid is gone, a
    zombie or another process. From another host it cannot be told: False."""
    if identity.get("host") != socket.gethostname():
        return False
    boot_id = _boot_id()
    if boot_id and identity.get("boot_id") and boot_id != identity["boot_id"]:
        return True
    pid = identity.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        pass
    state, start_ticks = _process_stat(pid)
    return state == "Z" or (start_ticks is not None and identity.get("start_ticks") not in (None, start_ticks))


def settle_lost(run_dir: Path, last_step: Callable[[], int | None], record: Callable[..., dict] | None = None) -> dict:
    """summary.json, after recording a run that says `running` while its launcher has ended (killed, crashed, its
    machine rebooted) as `lost`, with its last step; {} when there is none. The summary is read again once the
    launcher is known gone: its last write, if it made one, came before it ended. Recorded through `record`
    (`executors.Record`: with the gate verdicts, in one write) when given."""
    summary = read_json(run_dir / SUMMARY_FILE)
    identity = summary.get("launcher")
    if summary.get("status") != "running" or not isinstance(identity, dict) or not launcher_gone(identity):
        return summary
    summary = read_json(run_dir / SUMMARY_FILE)
    if summary.get("status") == "running" and summary.get("launcher") == identity:
        lost = {
            "status": "lost",
            "exit_code": None,
            "last_step": last_step(),
            "reason": f"the launcher (pid {identity['pid']} on {identity['host']}) ended without recording "
            "the outcome; the trainer's process group ends with it",
        }
        if record is not None:
            return record(**lost)
        summary.update(lost)
        write_json(run_dir / SUMMARY_FILE, summary)
    return summary


def read_summary(run_dir: Path) -> dict:
    """summary.json; {} when there is none (or it is unreadable)."""
    return read_json(run_dir / SUMMARY_FILE)


def read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:  # not Linux
        return None


def _process_stat(pid: int) -> tuple[str | None, int | None]:
    """A process's state letter and start time from /proc (Linux); (None, None) where unknown."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        fields = text[text.rindex(")") + 2 :].split()  # after `pid (comm)`: comm may hold spaces and parentheses
        return fields[0], int(fields[19])
    except (OSError, ValueError, IndexError):
        return None, None
