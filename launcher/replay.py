"""`sapo-launch rerun RUN_DIR` and `resume RUN_DIR`: the plan a run directory records, replayed in a new run
directory, where it ran.

The argv, working directory and environment are taken as recorded, not re-planned from the recipe (which may have
changed since); variables that were redacted are read from the current environment, and a run the lint gate
refused is not replayed. `KEY=VALUE` overrides given to the rerun (Hydra's grammar) replace the recorded override
of the same key or follow the others (`set_overrides`); plan.json records them as `overrides`. The checkpoint
directory is the launcher's to set (`trainer.default_local_dir` is refused as an override).

A rerun is a new run: a checkpoint directory the launcher named after the run directory (`plan.Checkpoints`: under
`checkpoints:`, or the run directory's) is the new run's own, so it never resumes the recorded run's checkpoints; a
trainer.default_local_dir the recipe sets is kept, as the user wrote it. A resume (`resume_from`) continues the
recorded run: its checkpoint directory, and verl's resume mode set to the checkpoint found there (`lineage.Resume`,
linked both ways). A rerun of a resumed run continues the same run from the same step, as recorded.

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
import stat
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import yaml

from sapo_toolkit.atomicio import read_regular
from sapo_toolkit.linter.api import command_line_overrides
from sapo_toolkit.linter.core.diagnostics import COMMAND_LINE, Severity
from sapo_toolkit.linter.core.overrides import format_override

from .lineage import RESUME_KEY, Resume, link
from .plan import (
    CHECKPOINT_KEY,
    REDACTED,
    Checkpoints,
    LintReport,
    Plan,
    RayOptions,
    checkpoint_override,
    is_secret,
)
from .rundir import PLAN_FILE, SUMMARY_FILE, UNLABELLED, Labels, create, environment_facts, read_json, write_json
from .versions import installed_versions

# verl's resume settings (trainer.resume_mode: auto | disable | resume_path; resume_from_path: a `global_step_N`
# folder, which verl asserts), the same in every verl from 0.4.1 to 0.10.0.dev (ray_trainer.py `_load_checkpoint`)
RESUME_MODE_KEY = "trainer.resume_mode"
RESUME_PATH_KEY = "trainer.resume_from_path"
RESUME_SETTINGS = frozenset((RESUME_MODE_KEY, RESUME_PATH_KEY))
# verl's checkpoint tracker in trainer.default_local_dir: the last step saved (checkpoint_manager.py), and the
# folder of each step's checkpoint
TRACKER_FILE = "latest_checkpointed_iteration.txt"
STEP_FOLDER = "global_step_{}"
MAX_TRACKER_BYTES = 64
LINT_FILE = "lint.json"


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


def plan_checkpoints(recorded: dict) -> Checkpoints | None:
    """The checkpoint directory a plan.json (as read) records (none in run directories of older versions)."""
    checkpoints = recorded.get("checkpoints")
    try:
        return Checkpoints(**checkpoints) if isinstance(checkpoints, dict) else None
    except TypeError:
        raise ReplayError(f"plan.json's checkpoints is not what sapo-launch writes: {checkpoints}") from None


class Replay(NamedTuple):
    """What a rerun or a resume will run, before anything is written: the plan (its run directory not made yet),
    the names filled from the environment, the recorded run it came from (its checkpoint directory and labels),
    the overrides given to it, and what the new run continues (None: nothing)."""

    plan: Plan
    filled: list[str]
    secret_env: list[str]
    run_dir: Path
    checkpoints: Checkpoints | None = None
    labels: Labels = UNLABELLED
    overrides: tuple[str, ...] = ()
    resume: Resume | None = None
    lint: LintReport = LintReport(())  # the findings on the overrides (`linted`)


def check_overrides(texts: tuple[str, ...]) -> None:
    """Raise `ReplayError` for a `KEY=VALUE` of a rerun Hydra cannot read, and for the checkpoint directory, which
    is the launcher's to set."""
    for override in command_line_overrides(texts):
        if override.parsed is None:
            raise ReplayError(f"not a Hydra override: {override.syntax_error}")
        if override.parsed.key == CHECKPOINT_KEY:
            raise ReplayError(
                f"{CHECKPOINT_KEY} is not an override of a rerun or a resume: a rerun saves in its own directory, a "
                "resume in the resumed run's; launch the recipe with it (or with --checkpoints DIR) instead"
            )


def set_overrides(plan: Plan, texts: tuple[str, ...]) -> None:
    """Put each `KEY=VALUE` of `texts` (valid) in the plan's argv in place of its override of the same key, else
    after the others; the resolved recipe's overrides are the argv's."""
    keys = {_key(o) for o in command_line_overrides(texts)}
    start = plan.argv.index("--config-name") + 2  # `python -m MODULE --config-name NAME`, then the overrides
    recorded = plan.argv[start:]
    kept = [text for text, o in zip(recorded, command_line_overrides(recorded), strict=True) if _key(o) not in keys]
    plan.argv = (*plan.argv[:start], *kept, *texts)
    if "overrides" in plan.resolved:
        plan.resolved["overrides"] = [*kept, *texts]


def _key(override) -> tuple:
    """What makes two overrides set the same thing: the key and its package."""
    return (override.parsed.key, override.parsed.package) if override.parsed else (override.key_text, None)


def resume_from(
    plan: Plan,
    parent: Path,
    checkpoints: Checkpoints | None,
    *,
    visible: bool,
    restart: tuple[int, str] | None = None,
) -> Resume:
    """Make `plan` (moved to its own run directory) continue PARENT, whose checkpoint directory is `checkpoints`
    (as PARENT's plan.json records it): verl saves in that directory still (a curve's checkpoints stay in one),
    and resumes from what it holds:

    - a checkpoint there (verl's tracker names its step N): `resume_mode=resume_path`, `resume_from_path` the step's
      `global_step_N` folder (which must exist): the step is pinned and recorded;
    - nothing saved there (the directory holds no tracker, or it is missing where the trainer would see it here:
      `visible`, a run on this machine): `ReplayError`; a restart (`restart`: its attempt number and cluster
      reason, `restarts.py`) starts over in it instead (step 0, `resume_mode=auto`);
    - a directory missing here on a cluster (storage only its nodes see): `resume_mode=auto`, and verl resumes from
      the latest checkpoint it finds there (the step unknown until the run logs one).

    Returns what plan.json records; raises `ReplayError` when there is nothing to resume from."""
    directory = checkpoints.dir if checkpoints is not None else None
    if directory is None:
        raise ReplayError(
            f"{parent} records no checkpoint directory of its own (verl's relative default, or a run directory of "
            f"an older version): nothing to resume from; `sapo-launch rerun {parent}` starts it over"
        )
    here = Path(directory).is_dir()
    step = _saved_step(Path(directory)) if here else None
    if step is None and (here or visible):
        if restart is None:
            raise ReplayError(
                f"{directory} holds no checkpoint (no {TRACKER_FILE}: verl saves one every trainer.save_freq steps, "
                f"by default never): nothing to resume from; `sapo-launch rerun {parent}` starts it over"
            )
        step = 0
    mode = "resume_path" if step else "auto"
    settings = [checkpoint_override(directory), format_override("set", RESUME_MODE_KEY, mode)]
    if step:
        settings.append(format_override("set", RESUME_PATH_KEY, str(Path(directory, STEP_FOLDER.format(step)))))
    set_overrides(plan, tuple(settings))
    plan.checkpoints = Checkpoints(directory, "resume")
    attempt, reason = restart if restart is not None else (None, None)
    return Resume(str(Path(parent).absolute()), directory, step, mode, attempt, reason)


def _saved_step(directory: Path) -> int | None:
    """The last step verl saved in `directory` (its tracker file); None when it saved none. Raises `ReplayError`
    for a tracker that names no step, or a step whose folder is gone."""
    tracker = directory / TRACKER_FILE
    try:
        text = read_regular(tracker, MAX_TRACKER_BYTES).decode("ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReplayError(f"{tracker} cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if not text.isdigit():
        raise ReplayError(f"{tracker} names no step: {text[:20]!r}")
    step = int(text)
    if not (directory / STEP_FOLDER.format(step)).is_dir():
        raise ReplayError(f"{directory / STEP_FOLDER.format(step)} is missing, the step {TRACKER_FILE} names")
    return step


def load_replay(
    run_dir: Path, runs_dir: Path, now: datetime, environ: Mapping[str, str], overrides: Iterable[str] = ()
) -> Replay:
    """The plan RUN_DIR records, to run again in a new run directory under `runs_dir`, with `overrides`. Raises
    `ReplayError`."""
    try:
        recorded = json.loads(trusted_text(run_dir / PLAN_FILE))
        summary = json.loads(trusted_text(run_dir / SUMMARY_FILE))
        resolved_text = trusted_text(run_dir / "recipe.resolved.yaml")
        check_owned(run_dir / LINT_FILE)
    except ValueError as exc:
        raise ReplayError(f"{run_dir} is not a complete run directory: {exc}") from None
    if summary.get("status") == "refused":
        raise ReplayError(f"{run_dir} was refused by the lint gate; fix the recipe and launch it again")
    secrets = list(recorded.get("secret_env", []))
    env = _unredacted(recorded["env"], environ, run_dir, secrets)
    labels = Labels.recorded(recorded)
    new_dir = Path(runs_dir).absolute() / labels.directory_name(recorded["name"], now)
    recipe = Path(recorded["cwd"], recorded["recipe"])  # relative in run directories of older versions
    checkpoints = plan_checkpoints(recorded)
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
        checkpoints=checkpoints,
    )
    plan.move_to(str(new_dir))  # this run's metrics, and its own checkpoint directory where the run names it
    overrides = tuple(overrides)
    check_overrides(overrides)
    set_overrides(plan, overrides)
    # A resumed run, run again, continues the same run from the same checkpoint, as recorded.
    continued = Resume.recorded(run_dir)
    return Replay(plan, filled_names(recorded), secrets, run_dir, checkpoints, labels, overrides, continued)


def linted(replay: Replay) -> Replay:
    """The replay with the lint gate's findings on its overrides: the recorded recipe read again with them, as
    `sapo-launch RECIPE KEY=VALUE` lints them, for the recorded variant; only the findings on the command line count
    (the recipe's own were judged when it launched, and it may have changed since). Raises `ReplayError` when the
    recipe or its variant cannot be read again."""
    from dataclasses import replace

    from sapo_toolkit.linter import api
    from sapo_toolkit.linter.settings import SettingsError, load_settings

    if not replay.overrides:
        return replay
    recipe, variant = Path(replay.plan.recipe_path), replay.plan.variant
    why = f"overrides are linted with the recipe {replay.run_dir} ran, {recipe}"
    try:
        settings, _ = load_settings(recipe.parent)
        loaded = api.load(recipe, api.read_options(settings, replay.overrides))
    except (OSError, api.UnreadableFile, SettingsError) as exc:
        raise ReplayError(f"{why}, which cannot be read: {exc}") from None
    commands = [c for c in loaded.commands if c.variant == variant] if loaded is not None else []
    if not commands:
        raise ReplayError(f"{why}, which has no {'variant ' + variant if variant else 'command'} now")
    found = api.reported(api.check(replace(loaded, commands=commands[:1]), settings), settings)
    return replay._replace(lint=LintReport(tuple(d for d in found if d.location.path == COMMAND_LINE)))


def resumed(replay: Replay, visible: bool) -> Replay:
    """The replay continuing the run it replays from its checkpoint (`resume_from`, `visible` as it takes it),
    rather than running it again. Raises `ReplayError` when there is nothing to resume from, and for overrides of
    verl's resume mode, which the resume sets."""
    own = sorted({o.parsed.key for o in command_line_overrides(replay.overrides) if o.parsed} & RESUME_SETTINGS)
    if own:
        raise ReplayError(f"{', '.join(own)}: a resume sets verl's resume mode itself; rerun takes your own")
    return replay._replace(resume=resume_from(replay.plan, replay.run_dir, replay.checkpoints, visible=visible))


def record_replay(replay: Replay) -> Path:
    """Make the replay's run directory (`rundir.create`), with the recorded lint result and the findings on the
    overrides, the overrides given, and what it is: `rerun_of` the recorded run, and `resume` (linked from the run it
    continues) when it continues one."""
    plan, run_dir = replay.plan, replay.run_dir
    environment = environment_facts(Path(plan.recipe_path), plan.device, 0, installed_versions())
    created = create(plan, environment, replay.secret_env, replay.labels)
    recorded, added = read_json(run_dir / LINT_FILE), replay.lint
    counts = recorded.get("summary") if isinstance(recorded.get("summary"), dict) else {}
    lint = {
        "diagnostics": [*(recorded.get("diagnostics") or []), *(d.as_dict() for d in added.diagnostics)],
        "summary": {s.value: counts.get(s.value, 0) + added.count(s) for s in Severity},
    }
    write_json(created / LINT_FILE, lint)
    record = read_json(created / PLAN_FILE)
    if replay.overrides:
        record["overrides"] = list(replay.overrides)
    if replay.resume is None or Path(replay.resume.of) != run_dir.absolute():
        record["rerun_of"] = str(run_dir.absolute())
    if replay.resume is not None:
        record[RESUME_KEY] = replay.resume._asdict()
    write_json(created / PLAN_FILE, record)
    if replay.resume is not None:
        link(Path(replay.resume.of), created)
    return created
