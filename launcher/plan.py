"""The launch plan: recipe + variant selection + launch-time overrides + facts about this machine -> the exact
argv, environment and working directory of the trainer, and the lint verdict that gates it.

Pure: everything it depends on comes in as arguments (`Facts` holds the clock, CPU count, interpreter and working
directory), nothing is written or started here; the executors take a `Plan`. Recipes are read and linted only
through the linter's public door (`sapo_toolkit.linter.api`) and its shared records (`core`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote

from sapo_toolkit.linter import api
from sapo_toolkit.linter.core.command import Command, locate_override, merge_overrides
from sapo_toolkit.linter.core.diagnostics import Diagnostic, Location, Severity
from sapo_toolkit.linter.core.overrides import format_override
from sapo_toolkit.linter.core.redaction import REDACTED, is_secret_name
from sapo_toolkit.linter.settings import Settings

DEFAULT_ENTRYPOINT = "verl.trainer.main_ppo"
METRICS_FILE = "metrics.jsonl"
# The environment variable verl's `file` logger writes its JSONL to (verl 0.9.1 verl/utils/tracking.py FileLogger).
FILE_LOGGER_ENV = "VERL_FILE_LOGGER_PATH"
# Where a value the launcher adds is reported in the lint output and the dry run.
LAUNCHER = "sapo-launch"
# verl's file logger opens VERL_FILE_LOGGER_PATH on the job's node without making its directory (verl 0.9.1
# verl/utils/tracking.py FileLogger: `open(self.filepath, "wb")`): a run directory the node cannot see fails the run.
UNSHARED_RUN_DIR = (
    f"verl's file logger writes the run directory's {METRICS_FILE} from the job's node, and the trainer fails at "
    "start where that directory does not exist there: put the runs directory on storage the cluster's nodes share "
    "and pass --shared-runs-dir (this warning then goes)"
)
CHECKPOINT_KEY = "trainer.default_local_dir"  # where verl's trainer saves checkpoints and resumes from
RUN_DIR_CHECKPOINTS = "checkpoints"  # the run directory's subdirectory, when checkpoints go there


class PlanError(Exception):
    """The recipe or the selection cannot be planned; the message says why, in one line."""


class Facts(NamedTuple):
    """What the plan needs to know about this machine and this moment (injected, so the plan stays pure)."""

    device: str | None  # "npu" | "gpu" | None (nothing detected)
    python: str  # the interpreter that runs the trainer
    cwd: str  # the trainer's working directory (absolute)
    cpu_count: int
    now: datetime  # UTC; names the run directory
    runs_dir: str  # where run directories are created (relative to `cwd` unless absolute)
    home: str | None = None  # what a leading `~` or `$HOME` in a path value stands for (`expand_home`); None: kept


class LintReport(NamedTuple):
    diagnostics: tuple[Diagnostic, ...]

    def count(self, severity: Severity) -> int:
        return sum(1 for d in self.diagnostics if d.severity == severity)

    @property
    def refuses(self) -> bool:
        """Any error refuses the launch; there is no switch to skip the gate (`# sapo-lint: noqa` in the recipe
        silences a finding the team has judged)."""
        return self.count(Severity.ERROR) > 0

    def to_json(self) -> dict:
        return {
            "diagnostics": [d.as_dict() for d in self.diagnostics],
            "summary": {s.value: self.count(s) for s in Severity},
        }


@dataclass(slots=True)
class RayOptions:
    """What a Ray job gets besides the plan's argv and environment (`executors/ray_submit.py`, `job_request`): Ray's
    runtime_env (a local working_dir or py_modules directory as an absolute path; its env_vars under the plan's
    environment), metadata of the user's, a submission id and the entrypoint's resources. The recipe's `ray:` block
    under the command line's (`ray_options`)."""

    runtime_env: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)  # str -> str
    submission_id: str | None = None
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_resources: dict = field(default_factory=dict)  # resource name -> amount
    entrypoint_memory: int | None = None  # bytes, as Ray's `memory` resource counts them


class Checkpoints(NamedTuple):
    """Where the run's checkpoints go (`trainer.default_local_dir`) and who chose it (`source`):
    - `recipe`: the recipe (or a launch-time override) sets trainer.default_local_dir; kept as written, by reruns
      too (the user named one directory for every run, and verl's resume_mode resumes from it);
    - `checkpoints`: the recipe's `checkpoints:` setting or `--checkpoints`, `root`; the run's own directory is
      `<root>/<run directory's name>`;
    - `run_dir`: the run directory's `checkpoints/` (a run here, or on a cluster with `--shared-runs-dir`);
    - `verl`: verl's relative default, which resolves in the job's working directory on the cluster (`dir` None);
    - `resume`: the directory of the run a resume continues (`replay.resume_from`), kept by its reruns.
    For `checkpoints` and `run_dir` the directory follows the run directory's name: a rerun's is its own."""

    dir: str | None  # absolute; None where it is relative to a directory on the cluster
    source: str
    root: str | None = None  # `checkpoints` only

    def for_run_dir(self, run_dir: str) -> Checkpoints:
        """The directory of a run whose run directory is `run_dir` (its own, for the sources the run names)."""
        if self.source == "checkpoints":
            return self._replace(dir=str(Path(self.root, Path(run_dir).name)))
        if self.source == "run_dir":
            return self._replace(dir=str(Path(run_dir, RUN_DIR_CHECKPOINTS)))
        return self


def checkpoint_override(directory: str) -> str:
    """The argument that sets verl's checkpoint directory, as Hydra reads it back."""
    return format_override("set", CHECKPOINT_KEY, directory)


@dataclass(slots=True)
class Plan:
    """Every path in it is absolute (the recipe, cwd, run_dir, the file logger's path): it is replayed and submitted
    from other working directories."""

    recipe_path: str
    name: str
    variant: str | None  # the chosen variant's label (`DEVICE=npu,INFER_BACKEND=vllm`), None without variants
    device: str | None
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]  # what the plan sets on top of the launching environment
    cwd: str
    run_dir: str
    lint: LintReport
    resolved: dict  # the resolved recipe (`recipe.resolved.yaml`): the chosen variant's overrides and env
    recipe_hash: str  # sha256 of the resolved recipe
    notes: tuple[str, ...]  # what the launcher changed or decided, for the dry run
    # What executors and the metrics watcher need from the resolved config (None when not a number).
    nnodes: int | None = None
    devices_per_node: int | None = None
    total_steps: int | None = None  # trainer.total_training_steps; None: verl derives it from the data
    gates: tuple = ()  # the recipe's `gates:` entries, as written
    ray: RayOptions = field(default_factory=RayOptions)  # for a Ray job
    checkpoints: Checkpoints | None = None  # None: not planned (a refused recipe, a run directory of older versions)
    refusal: str | None = None  # why the run cannot go where it is sent (one line with its hint); nothing starts
    warnings: tuple[str, ...] = ()  # what may fail where the run goes, shown before it starts (`sapo-launch: warning:`)

    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    def move_to(self, run_dir: str) -> None:
        """Make `run_dir` the plan's run directory (a launch in the same second got `-N`; a rerun its own): the file
        logger's path and a checkpoint directory named after the run directory follow it, in the argv and in the
        resolved recipe's overrides too."""
        self.run_dir = run_dir
        self.env = tuple((k, str(Path(run_dir, METRICS_FILE)) if k == FILE_LOGGER_ENV else v) for k, v in self.env)
        if self.checkpoints is None:
            return
        moved = self.checkpoints.for_run_dir(run_dir)
        if moved.dir != self.checkpoints.dir:
            old, new = checkpoint_override(self.checkpoints.dir), checkpoint_override(moved.dir)
            self.argv = tuple(new if a == old else a for a in self.argv)
            if "overrides" in self.resolved:
                self.resolved["overrides"] = [new if a == old else a for a in self.resolved["overrides"]]
        self.checkpoints = moved


def is_secret(name: str, extra: Iterable[str] = ()) -> bool:
    """Variables whose values never reach a file or the terminal: secret names (`is_secret_name`: `HF_TOKEN`,
    `WANDB_API_KEY`, ...), and those named with `--secret-env`."""
    return is_secret_name(name) or name in set(extra)


def redact(env: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """`env` as files and the terminal show it: the values of secret variables (`is_secret`) and of those holding
    a URL's credentials (`holds_credentials`: `https://user:token@host`, under any name) are `REDACTED`."""
    extra = tuple(extra)
    return {k: (REDACTED if is_secret(k, extra) or holds_credentials(v) else v) for k, v in env.items()}


def credential_names(env: Mapping[str, str]) -> set[str]:
    """The variables of `env` whose values hold a URL's credentials: redacted as secrets are, and recorded as secret
    in plan.json so that `rerun` takes them from the environment."""
    return {name for name, value in env.items() if holds_credentials(value)}


def holds_credentials(value) -> bool:
    """Whether text holds a URL with credentials (`redact_urls` would change it)."""
    return isinstance(value, str) and redact_urls(value) != value


def redact_keys(value, extra: Iterable[str] = ()):
    """JSON-like `value` (a runtime_env, Ray metadata, a job request) with the value under every secret-named key
    redacted at any depth: `env_vars`, a conda environment's `variables`, metadata, whatever a plugin nests. (Its
    sources, recipes and `--runtime-env` files, nest at most 64 levels: `linter.api.read_yaml_data`.)"""
    extra = tuple(extra)
    if isinstance(value, dict):
        return {
            k: REDACTED if isinstance(k, str) and is_secret(k, extra) else redact_keys(v, extra)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_keys(v, extra) for v in value]
    return value


# A URL in free text: a scheme, then its authority (which may hold `user:password@`), path, and query.
# A password is often a generated token with `/`, `?` or `#` written as it is (RFC 3986 would have them
# percent-encoded): a `user:` before the first of those, then up to an `@`, is taken for user info with such a
# password. (A path holding `:` before the host's first `/` and an `@` after it reads so too: over-redacted.)
_URL = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)"
    r"(?P<authority>[^/?#@\s\"':]*:[^@\s\"']*@[^/?#\s\"']*|[^/?#\s\"']*)(?P<path>[^?#\s\"']*)"
    r"(?:\?(?P<query>[^#\s\"']*))?"
)


def redact_urls(text: str) -> str:
    """`text` with the credentials of every URL in it redacted: the password of its user info (the whole user info
    when it has no password: a token often stands there), and the values of query parameters whose names read as
    secret (`is_secret`): `http://me:pw@head:8265/?token=t` -> `http://me:<redacted>@head:8265/?token=<redacted>`."""
    return _URL.sub(_redact_url, text)


def _redact_url(match: re.Match) -> str:
    userinfo, at, host = match["authority"].rpartition("@")
    if at:
        user, colon, _ = userinfo.partition(":")
        userinfo = f"{user}:{REDACTED}" if colon else REDACTED
    query = match["query"]
    if query is not None:
        query = "?" + "&".join(_redact_parameter(p) for p in query.split("&"))
    return f"{match['scheme']}{userinfo}{at}{host}{match['path']}{query or ''}"


def _redact_parameter(parameter: str) -> str:
    name, equals, _ = parameter.partition("=")
    return f"{name}={REDACTED}" if equals and is_secret(unquote(name)) else parameter


def selection_tokens(device: str | None, infer_backend: str | None, variants: Iterable[str]) -> list[str]:
    """`--device npu --infer-backend vllm --variant recompute=full` -> ["DEVICE=npu", "INFER_BACKEND=vllm",
    "RECOMPUTE=full"] (axis names upper-case, as variant labels write them)."""
    tokens = []
    if device:
        tokens.append(f"DEVICE={device}")
    if infer_backend:
        tokens.append(f"INFER_BACKEND={infer_backend}")
    for text in variants:
        axis, sep, value = text.partition("=")
        if not sep or not axis or not value:
            raise PlanError(f"--variant expects AXIS=VALUE, got `{text}`")
        tokens.append(f"{axis.strip().upper()}={value.strip()}")
    return tokens


def choose_command(
    commands: list[Command], tokens: list[str], defaults: Iterable[str] = ()
) -> tuple[Command, list[str]]:
    """The one variant the selection names, with the recipe's `variant_defaults` (label tokens) for the axes the
    selection leaves open; and the default tokens it took. A token for an axis the recipe does not have is ignored
    (a device for a recipe without device variants); a value the axis does not have, or an axis left open without
    a default, is an error."""
    axes: dict[str, set[str]] = {}
    for c in commands:
        for t in (c.variant or "").split(","):
            if "=" in t:
                axis, value = t.split("=", 1)
                axes.setdefault(axis, set()).add(value)
    wanted: dict[str, str] = {}
    for t in tokens:
        axis, value = t.split("=", 1)
        if axis not in axes:
            continue
        match = next((v for v in axes[axis] if v.lower() == value.lower()), None)
        if match is None:
            raise PlanError(
                f"the recipe has no {axis}={value} variant; {axis} is one of {', '.join(sorted(axes[axis]))}"
            )
        wanted[axis] = f"{axis}={match}"
    defaulted = [d for d in defaults if d.split("=", 1)[0] not in wanted]
    selection = [*wanted.values(), *defaulted]
    chosen = api.select(commands, [",".join(selection)] if selection else [])
    if len(chosen) != 1:
        open_axes = sorted(a for a in axes if not any(s.startswith(a + "=") for s in selection))
        raise PlanError(
            "choose a variant: "
            + "; ".join(_option(a, sorted(axes[a])) for a in open_axes)
            + " (or name a default for the axis in the recipe's `variant_defaults:`)"
        )
    return chosen[0], defaulted


def _option(axis: str, values: list[str]) -> str:
    """How the command line chooses a value of `axis`: `--device gpu|npu`, `--variant recompute=full|none`."""
    flag = {"DEVICE": "--device", "INFER_BACKEND": "--infer-backend"}.get(axis)
    return f"{flag} {'|'.join(values)}" if flag else f"--variant {axis.lower()}={'|'.join(values)}"


MAX_RUN_NAME = 160  # of a run directory's name, before its time: well within a file name's 255 bytes with `-N`


def run_dir_name(name: str, now: datetime) -> str:
    """`<name>-<UTC time>`, the name's other characters as `-`; a name over `MAX_RUN_NAME` characters is cut and
    ends in a hash of the whole, so that different long names stay different."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name)
    if len(safe) > MAX_RUN_NAME:
        import hashlib

        safe = f"{safe[: MAX_RUN_NAME - 13]}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"
    return f"{safe}-{now.strftime('%Y%m%dT%H%M%SZ')}"


def plan(
    recipe_path: Path,
    *,
    settings: Settings,
    facts: Facts,
    device: str | None = None,
    infer_backend: str | None = None,
    variants: Iterable[str] = (),
    overrides: Iterable[str] = (),
    ray: RayOptions | None = None,
    on_cluster: bool = False,
    checkpoints: str | None = None,
    shared_runs_dir: bool = False,
) -> Plan:
    """Read, choose, complete and lint one variant of a recipe; `ray`: the command line's Ray options;
    `on_cluster`: the trainer runs on a Ray cluster, not here; `checkpoints`: the command line's `--checkpoints`
    (over the recipe's `checkpoints:`); `shared_runs_dir`: the cluster's nodes reach the run directory at its path
    (`checkpoint_plan` decides where checkpoints go from them). Raises
    `PlanError` (and the linter's `UnreadableFile`) for what cannot be planned; lint errors do not raise:
    `Plan.lint.refuses` says so.

    The chosen command is resolved twice, as few times as the data allows: once before the launcher's additions
    (`_complete` reads it; the plan's nnodes, devices per node and total steps come from it, since the additions
    set only trainer.logger, data.filter_overlong_prompts_workers and trainer.default_local_dir, on which none of
    them depends), and once by
    the lint check, which must judge the command with the additions and resolves inside the linter."""
    overrides = tuple(overrides)
    loaded = api.load(recipe_path, api.read_options(settings, overrides))
    if loaded is None or loaded.kind != "recipe":
        raise PlanError(f"{recipe_path}: not a recipe (a YAML file with a top-level `recipe:` key)")
    if loaded.recipe is None:  # the file could not be read as a recipe: the lint report says why
        return _refused(recipe_path, loaded, facts)
    data = loaded.recipe.data
    command, defaulted = choose_command(
        loaded.commands, selection_tokens(device, infer_backend, variants), loaded.variant_defaults
    )
    run_dir = str(Path(facts.cwd, facts.runs_dir) / run_dir_name(str(data.get("name") or recipe_path.stem), facts.now))
    command, expansions = _expand_home(command, facts.home)
    context = api.resolve(command, loaded.verl_version)
    options = ray_options(data.get("ray"), ray or RayOptions(), facts.cwd)
    root = checkpoints if checkpoints is not None else data.get("checkpoints")
    where, refusal, checkpoint_notes = checkpoint_plan(
        context, root if isinstance(root, str) else None, run_dir, facts, on_cluster, shared_runs_dir, options
    )
    added = [] if where.source in ("recipe", "verl") else [checkpoint_override(where.dir)]
    command, notes = _complete(command, context, facts, added)
    notes.extend(checkpoint_notes)
    notes[:0] = [*(f"{token}: the recipe's default (`variant_defaults:`)" for token in defaulted), *expansions]
    config = context.config
    chosen = replace(loaded, commands=[command])
    lint = LintReport(tuple(api.reported(api.check(chosen, settings), settings)))
    entrypoint = str(data.get("entrypoint") or DEFAULT_ENTRYPOINT)
    argv = (facts.python, "-m", entrypoint, "--config-name", command.config_name, *command.hydra_overrides())
    env = {e.name: e.value for e in command.env}
    env[FILE_LOGGER_ENV] = str(Path(run_dir) / METRICS_FILE)
    resolved = {
        "recipe": data.get("recipe"),
        "name": data.get("name"),
        "verl": loaded.verl_version,
        "entrypoint": entrypoint,
        "config_name": command.config_name,
        "variant": command.variant,
        "overrides": list(argv[5:]),
        "env": {e.name: e.value for e in command.env},
    }
    return Plan(
        str(Path(facts.cwd, recipe_path)),
        str(data.get("name") or recipe_path.stem),
        command.variant,
        device,
        argv,
        tuple(env.items()),
        facts.cwd,
        run_dir,
        lint,
        resolved,
        _hash(resolved),
        tuple(notes),
        nnodes=_int(config.value("trainer.nnodes")),
        devices_per_node=_int(config.value("trainer.n_gpus_per_node")),
        total_steps=_int(config.value("trainer.total_training_steps")),
        gates=tuple(data.get("gates") or ()),
        ray=options,
        checkpoints=where,
        refusal=refusal,
        warnings=(UNSHARED_RUN_DIR,) if on_cluster and not shared_runs_dir else (),
    )


def checkpoint_plan(
    ctx: api.LintContext,
    root: str | None,
    run_dir: str,
    facts: Facts,
    on_cluster: bool,
    shared_runs_dir: bool,
    options: RayOptions,
) -> tuple[Checkpoints, str | None, list[str]]:
    """Where the run's checkpoints go (`Checkpoints`), why the run cannot go (None when it can) and notes for the
    dry run. verl's default trainer.default_local_dir is relative (`checkpoints/<project>/<experiment>`), resolved
    in the trainer's working directory: on a Ray cluster with a working_dir, that is Ray's per-job copy of it, so a
    rerun would start from scratch, and one of an unchanged tree would resume another run's checkpoint, silently.
    In order: the recipe's own trainer.default_local_dir (a relative one refused under a Ray working_dir); a
    `checkpoints:` directory (`root`, absolute against the launching directory); the run directory, where the
    trainer reaches it (here, or with `shared_runs_dir`); else verl's default, refused under a working_dir."""
    working_dir = options.runtime_env.get("working_dir") if on_cluster else None
    hint = (
        "set `checkpoints: DIR` in the recipe (or --checkpoints DIR) to a directory the cluster's nodes share, or "
        "pass --shared-runs-dir when the runs directory is on such storage"
    )
    notes = []
    if ctx.explicit(CHECKPOINT_KEY) is not None:
        written = ctx.config.value(CHECKPOINT_KEY)
        if root is not None:
            notes.append(f"`checkpoints: {root}` unused: the recipe sets {CHECKPOINT_KEY} itself")
        if not isinstance(written, str) or written.startswith("/"):
            return Checkpoints(written if isinstance(written, str) else None, "recipe"), None, notes
        if working_dir:
            why = (
                f"{CHECKPOINT_KEY}={written} is relative: checkpoints would land in Ray's per-job copy of the working "
                f"directory, lost to every other run; make it absolute, on storage the cluster's nodes share"
            )
            return Checkpoints(None, "recipe"), why, notes
        if on_cluster:
            notes.append(f"{CHECKPOINT_KEY}={written} is relative: it lands in the job's directory on the cluster")
            return Checkpoints(None, "recipe"), None, notes
        return Checkpoints(str(Path(facts.cwd, written)), "recipe"), None, notes
    if root is not None:
        root = str(Path(facts.cwd, expand_home(root, facts.home) if facts.home else root))
        return Checkpoints(None, "checkpoints", root).for_run_dir(run_dir), None, notes
    if not on_cluster or shared_runs_dir:
        return Checkpoints(None, "run_dir").for_run_dir(run_dir), None, notes
    default = ctx.config.value(CHECKPOINT_KEY)
    if working_dir:
        why = (
            f"verl's default {CHECKPOINT_KEY} ({default}) is relative: checkpoints would land in Ray's per-job copy "
            f"of the working directory, lost to every other run; {hint}"
        )
        return Checkpoints(None, "verl"), why, notes
    notes.append(f"checkpoints go to verl's relative default ({default}) in the job's directory on the cluster; {hint}")
    return Checkpoints(None, "verl"), None, notes


def runtime_env_problem(runtime_env) -> str | None:
    """What keeps `runtime_env` from being a runtime_env the launcher can read (the fields it reads itself); None
    when nothing does. Ray checks the rest when the job is submitted."""
    if not isinstance(runtime_env, dict):
        return "not a mapping"
    env_vars = runtime_env.get("env_vars", {})
    if not isinstance(env_vars, dict) or not all(
        isinstance(k, str) and isinstance(v, (str, int, float, bool)) for k, v in env_vars.items()
    ):
        return "env_vars: not a mapping of names to values"
    for key in ("excludes", "py_modules"):
        value = runtime_env.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            return f"{key}: not a list of strings"
    if not isinstance(runtime_env.get("working_dir", ""), str):
        return "working_dir: not a string"
    return None


def ray_options(block, given: RayOptions, cwd: str) -> RayOptions:
    """The recipe's `ray:` block under the command line's `given`: each runtime_env field, metadata key and
    entrypoint option the command line gives replaces the recipe's; env_vars come from the command line only (the
    recipe's are its `env:`); a local working_dir or py_modules directory (no `://`) becomes absolute against
    `cwd`, where `ray job submit` would read it. A block that violates the schema counts for nothing (the lint gate
    refuses the recipe with RF001)."""
    block = block if isinstance(block, dict) else {}
    recipe_env = block.get("runtime_env", {})
    runtime_env = {**(recipe_env if runtime_env_problem(recipe_env) is None else {}), **given.runtime_env}
    if _is_local(runtime_env.get("working_dir")):
        runtime_env["working_dir"] = str(Path(cwd, runtime_env["working_dir"]))
    if "py_modules" in runtime_env:
        runtime_env["py_modules"] = [str(Path(cwd, m)) if _is_local(m) else m for m in runtime_env["py_modules"]]
    recipe_metadata = block.get("metadata") if isinstance(block.get("metadata"), dict) else {}
    return RayOptions(
        runtime_env,
        {**{str(k): str(v) for k, v in recipe_metadata.items()}, **given.metadata},
        given.submission_id,
        *(_given_or(given, block, key) for key in ("entrypoint_num_cpus", "entrypoint_num_gpus")),
        given.entrypoint_resources or dict(block.get("entrypoint_resources") or {}),
        _given_or(given, block, "entrypoint_memory"),
    )


def _is_local(path) -> bool:
    return isinstance(path, str) and "://" not in path


def _given_or(given: RayOptions, block: dict, key: str):
    value = getattr(given, key)
    return value if value is not None else block.get(key)


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _complete(command: Command, ctx: api.LintContext, facts: Facts, added: list[str]) -> tuple[Command, list[str]]:
    """What the launcher adds to every run, as located overrides so that they are linted like the recipe's: `added`
    (the checkpoint directory, `checkpoint_plan`), verl's `file` logger (metrics as JSONL for the run directory),
    and prompt-filter workers when the recipe filters overlong prompts with verl's single-worker default (incident
    6). `ctx`: the command resolved (`api.resolve`), read, not resolved again."""
    added, notes = list(added), []
    if added:
        notes.append(f"set {CHECKPOINT_KEY}: this run's checkpoints go to its own directory")
    logger = ctx.config.value("trainer.logger")
    loggers = [logger] if isinstance(logger, str) else list(logger or [])
    if "file" not in loggers:
        added.append(f"trainer.logger={_flat_list([*loggers, 'file'])}")
        notes.append(f"added verl's `file` logger: per-step metrics go to the run directory's {METRICS_FILE}")
    if (
        ctx.config.value("data.filter_overlong_prompts")
        and ctx.explicit("data.filter_overlong_prompts_workers") is None
    ):
        workers = max(1, facts.cpu_count // 4)
        added.append(f"data.filter_overlong_prompts_workers={workers}")
        notes.append(
            f"set data.filter_overlong_prompts_workers={workers} (a quarter of {facts.cpu_count} CPUs): "
            "verl's default filters overlong prompts in one process (incident 6)"
        )
    if not added:
        return command, notes
    extra = [locate_override(text, Location(LAUNCHER, i, 1)) for i, text in enumerate(added, 1)]
    return command._replace(overrides=merge_overrides(command.overrides, extra)), notes


# verl's path keys: the key's last part is `path`, `dir`, `file` or `files`, or ends in one after `_`
# (`data.train_files`, `actor_rollout_ref.model.path`, `trainer.default_local_dir`, `ray_kwargs.timeline_json_file`)
PATH_KEY = re.compile(r"(?:^|[._])(?:path|dir|file|files)$")
# What bash expands to $HOME at the start of a word or an assignment's value: `~` (not `~user`), `$HOME`, `${HOME}`
_HOME_PREFIX = re.compile(r"^(?:~|\$HOME|\$\{HOME\})(?=/|$)")


def expand_home(value, home: str):
    """A path value with a leading `~`, `$HOME` or `${HOME}` (alone or before a `/`) replaced by `home`, as bash
    expands them; a list item by item; anything else as it is."""
    if isinstance(value, str):
        return _HOME_PREFIX.sub(lambda _: home, value, count=1)
    if isinstance(value, list):
        return [expand_home(item, home) for item in value]
    return value


def _expand_home(command: Command, home: str | None) -> tuple[Command, list[str]]:
    """The command with `~`/`$HOME` expanded in the values of verl's path keys (`PATH_KEY`) and of every
    environment variable (bash expands them in an assignment whatever its name), and notes on what was expanded and
    what was left as written (another key's value). Hydra and verl take `~/data` literally (a directory named `~`);
    a run script's bash expands it on the launching machine, and so does the plan, for a Ray job too."""
    if home is None:
        return command, []
    overrides, env, expanded, kept = [], [], [], []
    for lo in command.overrides:
        value = expand_home(lo.parsed.value, home) if lo.parsed is not None and lo.parsed.op != "delete" else None
        if value is not None and value != lo.parsed.value and PATH_KEY.search(lo.parsed.key):
            lo = lo._replace(parsed=lo.parsed._replace(value=value))
            expanded.append(lo.parsed.key)
        elif value is not None and value != lo.parsed.value:
            kept.append(lo.parsed.key)
        overrides.append(lo)
    for var in command.env:
        value = expand_home(var.value, home)
        if value != var.value:
            var = var._replace(value=value)
            expanded.append(f"${var.name}")
        env.append(var)
    notes = [f"expanded a leading ~ or $HOME to {home} in {', '.join(expanded)}, as bash would"] if expanded else []
    if kept:
        notes.append(
            f"left a leading ~ or $HOME as written in {', '.join(kept)}: not path keys (their last part is not "
            "path, dir, file or files), so verl gets the text"
        )
    return command._replace(overrides=tuple(overrides), env=tuple(env)), notes


def _flat_list(items: list[str]) -> str:
    return "[" + ",".join(items) + "]"


def _refused(recipe_path: Path, loaded: api.Loaded, facts: Facts) -> Plan:
    name = recipe_path.stem
    run_dir = str(Path(facts.cwd, facts.runs_dir) / run_dir_name(name, facts.now))
    lint = LintReport(tuple(sorted(loaded.diagnostics, key=Diagnostic.sort_key)))
    return Plan(
        str(Path(facts.cwd, recipe_path)), name, None, None, (), (), facts.cwd, run_dir, lint, {}, _hash({}), ()
    )


def _hash(resolved: dict) -> str:
    return hashlib.sha256(json.dumps(resolved, sort_keys=True, default=str).encode()).hexdigest()
