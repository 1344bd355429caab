"""The doctor's records and the facts it reads: what a recipe asks for (through `sapo_toolkit.linter.api` only)
and the CANN toolkit as verl finds it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from sapo_toolkit.linter.core.device import device_kinds

from ..device import DeviceFacts

EXIT_OK, EXIT_BLOCKING, EXIT_USAGE = 0, 1, 2
BLOCKING, ADVISORY, OK = "blocking", "advisory", "ok"
SEVERITIES = (BLOCKING, ADVISORY, OK)
CANN_VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH")
CANN_DEFAULT_HOME = "/usr/local/Ascend/ascend-toolkit/latest"
MBRIDGE_CONFIG_PREFIXES = ("actor_rollout_ref.actor.checkpoint.mbridge_config", "critic.checkpoint.mbridge_config")


class DoctorError(Exception):
    """The recipe cannot be read for the doctor; the message says why, in one line."""


class Finding(NamedTuple):
    check: str
    severity: str  # blocking | advisory | ok
    message: str
    source: str | None = None

    def to_json(self) -> dict:
        return {"check": self.check, "severity": self.severity, "message": self.message, "source": self.source}


class VariantFacts(NamedTuple):
    """One command (variant) of the recipe, resolved against its verl snapshot."""

    variant: str | None  # the label, `DEVICE=npu,RECOMPUTE=full`; None without variants
    device: str | None  # npu | gpu from the DEVICE axis or the recipe's accelerator; None: not said
    n_gpus_per_node: int | None
    nnodes: int | None
    rollout: str | None  # actor_rollout_ref.rollout.name
    model_engine: str | None
    mbridge_config: tuple[str, ...]  # keys the recipe sets under *.checkpoint.mbridge_config


class RecipeFacts(NamedTuple):
    path: str
    verl: str  # the verl version the recipe is checked against
    megatron_core: str | None  # the recipe's stack
    mbridge: str | None
    variants: tuple[VariantFacts, ...]

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "verl": self.verl,
            "stack": {"megatron_core": self.megatron_core, "mbridge": self.mbridge},
            "variants": [{**v._asdict(), "mbridge_config": list(v.mbridge_config)} for v in self.variants],
        }


class CannFacts(NamedTuple):
    env: tuple[tuple[str, str], ...]  # the CANN variables that are set
    info_file: str | None  # the ascend_toolkit_install.info that was read
    version: str | None  # its `version=` value, lower-case (as verl reads it)

    def to_json(self) -> dict:
        return {"env": dict(self.env), "info_file": self.info_file, "version": self.version}


class PatchFacts(NamedTuple):
    vllm: str | None
    variant: str | None  # the open-ended resolution
    npu: bool  # whether verl applies NPU patches here at all (an NPU device or torch_npu installed)
    verl: str | None
    verl_applies: tuple[str, ...] | None  # what the installed verl's gate applies; None: gate unknown
    verl_gate: str  # one line on the installed verl's gate

    def to_json(self) -> dict:
        return {
            "vllm": self.vllm,
            "variant": self.variant,
            "npu": self.npu,
            "verl": self.verl,
            "verl_applies": None if self.verl_applies is None else list(self.verl_applies),
            "verl_gate": self.verl_gate,
        }


class Report(NamedTuple):
    requested: str  # auto | npu | gpu
    device: DeviceFacts
    packages: tuple[tuple[str, str | None, bool], ...]  # (name, version, present)
    cann: CannFacts | None
    patch: PatchFacts
    recipe: RecipeFacts | None
    mbridge_params: frozenset[str] | None
    findings: tuple[Finding, ...]

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def blocking(self) -> bool:
        return self.count(BLOCKING) > 0

    @property
    def exit_code(self) -> int:
        return EXIT_BLOCKING if self.blocking else EXIT_OK

    def to_json(self) -> dict:
        return {
            "version": 1,
            "device": {
                "requested": self.requested,
                "kind": self.device.kind,
                "count": self.device.count,
                "how": self.device.how,
            },
            "packages": {name: {"version": version, "present": present} for name, version, present in self.packages},
            "cann": None if self.cann is None else self.cann.to_json(),
            "vllm_patch": self.patch.to_json(),
            "recipe": None if self.recipe is None else self.recipe.to_json(),
            "mbridge_save_weights": None if self.mbridge_params is None else sorted(self.mbridge_params),
            "findings": [f.to_json() for f in self.findings],
            "summary": {s: self.count(s) for s in SEVERITIES},
            "exit_code": self.exit_code,
        }


# ------------------------------------------------------------------------------------------------ the recipe


def _device_of(command) -> str | None:
    """The device a variant states, by the linter's own decision (`core.device.stated_device`: `trainer.device`,
    `VERL_ENGINE_DEVICE`, the variant's label, the device branch its overrides are written in), else the
    accelerator the user named; None when neither says (an assumed accelerator was itself derived from this)."""
    from sapo_toolkit.linter.core.device import stated_device

    stated = stated_device(command)
    if stated is not None:
        return stated.kind
    accelerator = command.accelerator
    if accelerator is None or accelerator.assumed:
        return None
    return accelerator.device if accelerator.device in device_kinds() else None


def _int_or_none(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _last_override(command, key: str):
    value = None
    for o in command.overrides:
        if o.parsed is not None and o.parsed.key == key:
            value = None if o.parsed.op == "delete" else o.parsed.value
    return value


def _mbridge_config_keys(command) -> tuple[str, ...]:
    keys: dict[str, None] = {}
    for o in command.overrides:
        p = o.parsed
        if p is None:
            continue
        for prefix in MBRIDGE_CONFIG_PREFIXES:
            if p.key == prefix:
                if p.op == "delete":
                    keys.clear()
                elif isinstance(p.value, dict):
                    keys.update(dict.fromkeys(str(k) for k in p.value))
            elif p.key.startswith(prefix + "."):
                sub = p.key[len(prefix) + 1 :].split(".")[0]
                if p.op == "delete":
                    keys.pop(sub, None)
                else:
                    keys[sub] = None
    return tuple(keys)


def read_recipe_facts(path: Path, settings=None) -> RecipeFacts:
    """A recipe's (or run script's) commands as `RecipeFacts`, read through the linter's api. `settings`: the
    `[tool.sapo-lint]` settings (default: found from the recipe's directory). Raises `DoctorError`."""
    from sapo_toolkit.linter import api
    from sapo_toolkit.linter.settings import SettingsError, load_settings

    if not path.is_file():
        raise DoctorError(f"{path}: no such file")
    try:
        if settings is None:
            settings, _ = load_settings(path.resolve().parent)
        loaded = api.load(path, api.read_options(settings))
    except (SettingsError, api.UnreadableFile) as exc:
        raise DoctorError(str(exc)) from None
    if loaded is None:
        raise DoctorError(f"{path}: not a recipe (a YAML file with a top-level `recipe:` key) or a run script (*.sh)")
    if not loaded.commands:
        first = loaded.diagnostics[0].message if loaded.diagnostics else "no trainer command found"
        raise DoctorError(f"{path}: {first}")
    variants = []
    for command in loaded.commands:
        try:
            ctx = api.resolve(command, loaded.verl_version)
        except LookupError:  # no snapshot of that verl version: the overrides as written
            n_gpus, nnodes = (
                _last_override(command, "trainer.n_gpus_per_node"),
                _last_override(command, "trainer.nnodes"),
            )
            rollout, engine = (
                _last_override(command, "actor_rollout_ref.rollout.name"),
                _last_override(command, "model_engine"),
            )
        else:
            n_gpus, nnodes = ctx.config.value("trainer.n_gpus_per_node"), ctx.config.value("trainer.nnodes")
            rollout, engine = ctx.config.value("actor_rollout_ref.rollout.name"), ctx.model_engine
        variants.append(
            VariantFacts(
                command.variant,
                _device_of(command),
                _int_or_none(n_gpus),
                _int_or_none(nnodes),
                rollout if isinstance(rollout, str) else None,
                engine if isinstance(engine, str) else None,
                _mbridge_config_keys(command),
            )
        )
    stack = loaded.commands[0].stack
    return RecipeFacts(str(path), loaded.verl_version, stack.megatron_core, stack.mbridge, tuple(variants))


# ------------------------------------------------------------------------------------------------ the CANN toolkit


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return None


def read_cann(env: Mapping[str, str], read_text: Callable[[str], str | None], machine: str) -> CannFacts:
    """The CANN toolkit as verl 0.9.1 `get_npu_versions()` finds it: `$ASCEND_HOME_PATH/<arch>-linux/
    ascend_toolkit_install.info`, its `version=` line (ASCEND_TOOLKIT_HOME and the default install path are tried
    after ASCEND_HOME_PATH)."""
    set_vars = tuple((k, env[k]) for k in CANN_VARIABLES if env.get(k))
    homes = [env.get("ASCEND_HOME_PATH"), env.get("ASCEND_TOOLKIT_HOME"), CANN_DEFAULT_HOME]
    arch = {"arm64": "aarch64"}.get(machine, machine)
    for home in dict.fromkeys(h.rstrip("/") for h in homes if h):
        info = f"{home}/{arch}-linux/ascend_toolkit_install.info"
        text = read_text(info)
        if text is None:
            continue
        for line in text.splitlines():
            if line.startswith("version="):
                return CannFacts(set_vars, info, line.split("=", 1)[1].strip().lower() or None)
        return CannFacts(set_vars, info, None)
    return CannFacts(set_vars, None, None)


def _join(items) -> str:
    return ", ".join(items)
