"""`sapo-launch doctor [RECIPE]`: is this environment able to run the recipe?

It reports the installed versions of the training stack (`versions.PACKAGES`), checks them against the compatibility
table (`compatibility.json`, every fact with its source), counts the visible devices against the recipe's devices
per node, checks the CANN toolkit environment on Ascend, and resolves the vLLM NPU patch variant -- both the
open-ended resolution (`versions.vllm_patch_variant`) and what the installed verl's own gate applies.

Public:

* ``read_recipe_facts(path, settings=None) -> RecipeFacts``: what the doctor needs from a recipe or run script, read
  through `sapo_toolkit.linter.api` only; raises ``DoctorError`` (one line) when it cannot be read.
* ``doctor_report(recipe, env, probe, versions, *, requested=None, mbridge_params=None, read_text=None,
  machine=None) -> Report``: pure given its inputs (the probe, `read_text` and `machine` are the only look-ups).
* ``render_text(report) -> str``, ``Report.to_json() -> dict``; the click command ``doctor``.

Severities: ``blocking`` (the run cannot work, or silently runs wrong), ``advisory`` (worth a look; the run may
work), ``ok`` (a check that passed). Exit 1 when any finding is blocking, else 0; a usage error (an unreadable or
unknown RECIPE, a bad option) is one line on stderr and exit 2.

No device at all: without a recipe that is advisory (the machine can still lint, plan and dry-run); with a recipe it
is blocking, because the recipe needs `trainer.n_gpus_per_node` devices on every node and verl refuses to start with
fewer (verl 0.9.1 verl/single_controller/ray/base.py `_check_resource_available`: "Total available GPUs ... is
less than total desired GPUs ..."). Fewer visible devices than the recipe's per-node count is blocking; more is
advisory. Only this node is counted. Likewise a package the recipe needs (torch, ray, verl; vllm for a vLLM
rollout; megatron-core for the Megatron engine; torch_npu, plus vllm-ascend / mindspeed when used, on NPU) is
blocking when missing with a recipe, advisory without one. Checks that depend on the rollout engine (verl's vLLM
version floor, the NPU patch gate) are blocking when the recipe's rollout is vLLM, or when there is no recipe and
vLLM is installed (an installed vLLM is taken to be the rollout engine).

JSON (`--format json`), version 1::

    {"version": 1,
     "device": {"requested": "auto"|"npu"|"gpu", "kind": "npu"|"gpu"|null, "count": int, "how": str},
     "packages": {NAME: {"version": str|null, "present": bool}, ...},   # present: metadata, or importable without
     "cann": null | {"env": {VAR: value, ...}, "info_file": str|null, "version": str|null},
     "vllm_patch": {"vllm": str|null, "variant": "v013"|"v011"|null, "npu": bool, "verl": str|null,
                    "verl_applies": [str, ...]|null, "verl_gate": str},
     "recipe": null | {"path": str, "verl": str, "stack": {"megatron_core": str|null, "mbridge": str|null},
                       "variants": [{"variant": str|null, "device": "npu"|"gpu"|null, "n_gpus_per_node": int|null,
                                     "nnodes": int|null, "rollout": str|null, "model_engine": str|null,
                                     "mbridge_config": [str, ...]}]},
     "mbridge_save_weights": [str, ...]|null,
     "findings": [{"check": str, "severity": "blocking"|"advisory"|"ok", "message": str, "source": str|null}],
     "summary": {"blocking": int, "advisory": int, "ok": int},
     "exit_code": 0|1}
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

import click

from .device import DEFAULT_PROBE, DeviceFacts, DeviceProbe, detect_device
from .versions import (
    PACKAGES,
    VersionError,
    load_compatibility,
    parse_version,
    same_release,
    version_tuple,
    vllm_patch_variant,
)

EXIT_OK, EXIT_BLOCKING, EXIT_USAGE = 0, 1, 2
BLOCKING, ADVISORY, OK = "blocking", "advisory", "ok"
SEVERITIES = (BLOCKING, ADVISORY, OK)
# The module each distribution is imported as: a package installed without metadata (PYTHONPATH, a copied tree --
# common for Megatron-LM and MindSpeed on Ascend) is still found, version unknown.
IMPORT_NAMES = {"torch": "torch", "torch_npu": "torch_npu", "vllm": "vllm", "vllm-ascend": "vllm_ascend",
                "megatron-core": "megatron", "mindspeed": "mindspeed", "mbridge": "mbridge", "verl": "verl",
                "ray": "ray"}
CANN_VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH")
CANN_DEFAULT_HOME = "/usr/local/Ascend/ascend-toolkit/latest"
MBRIDGE_CONFIG_PREFIXES = ("actor_rollout_ref.actor.checkpoint.mbridge_config", "critic.checkpoint.mbridge_config")
RESOURCE_CHECK_SOURCE = ("verl 0.9.1 verl/single_controller/ray/base.py _check_resource_available (ValueError: "
                         "'Total available GPUs ... is less than total desired GPUs ...'); the resource pool is "
                         "[n_gpus_per_node] * nnodes")


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
        return {"path": self.path, "verl": self.verl,
                "stack": {"megatron_core": self.megatron_core, "mbridge": self.mbridge},
                "variants": [{**v._asdict(), "mbridge_config": list(v.mbridge_config)} for v in self.variants]}


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
        return {"vllm": self.vllm, "variant": self.variant, "npu": self.npu, "verl": self.verl,
                "verl_applies": None if self.verl_applies is None else list(self.verl_applies),
                "verl_gate": self.verl_gate}


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
            "device": {"requested": self.requested, "kind": self.device.kind, "count": self.device.count,
                       "how": self.device.how},
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


def _device_of(variant: str | None, accelerator) -> str | None:
    for token in (variant or "").split(","):
        axis, _, value = token.partition("=")
        if axis.strip().upper() == "DEVICE":
            return {"npu": "npu", "gpu": "gpu", "cuda": "gpu"}.get(value.strip().lower())
    device = getattr(accelerator, "device", None)
    return device if device in ("npu", "gpu") else None


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
                sub = p.key[len(prefix) + 1:].split(".")[0]
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
            n_gpus, nnodes = _last_override(command, "trainer.n_gpus_per_node"), _last_override(command,
                                                                                                 "trainer.nnodes")
            rollout, engine = _last_override(command, "actor_rollout_ref.rollout.name"), _last_override(
                command, "model_engine")
        else:
            n_gpus, nnodes = ctx.config.value("trainer.n_gpus_per_node"), ctx.config.value("trainer.nnodes")
            rollout, engine = ctx.config.value("actor_rollout_ref.rollout.name"), ctx.model_engine
        variants.append(VariantFacts(command.variant, _device_of(command.variant, command.accelerator),
                                     _int_or_none(n_gpus), _int_or_none(nnodes),
                                     rollout if isinstance(rollout, str) else None,
                                     engine if isinstance(engine, str) else None, _mbridge_config_keys(command)))
    stack = loaded.commands[0].stack
    return RecipeFacts(str(path), loaded.verl_version, stack.megatron_core, stack.mbridge, tuple(variants))


# ------------------------------------------------------------------------------------------------ helpers


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


def _parse(text: str | None):
    try:
        return None if text is None else parse_version(text)
    except VersionError:
        return None


def _release_ok(text: str | None) -> bool:
    return _parse(text) is not None


def _gate_applies(gate: dict, vllm: str) -> tuple[str, ...]:
    """The names of the patches a verl gate applies to `vllm`, compared as verl compares (full PEP 440 versions,
    closed or half-open intervals as written in verl)."""
    v = _parse(vllm)
    if v is None:
        return ()
    applied = []
    for patch in gate.get("patches", ()):
        for iv in patch["intervals"]:
            low, high = parse_version(iv["min"]), parse_version(iv["max"])
            if low <= v and (v <= high if iv["max_inclusive"] else v < high):
                applied.append(f"{patch['name']} [{patch['variant']}]")
                break
    return tuple(applied)


def _find_verl(rows: list[dict], verl: str | None) -> dict | None:
    v = _parse(verl)
    if v is None:
        return None
    for row in rows:
        key = row["verl"].split(" ")[0]
        r = _parse(key)
        if r is not None and r.public == v.public:
            return row
    return None


def _find_vllm_ascend_row(rows: list[dict], installed: str) -> dict | None:
    v = _parse(installed)
    if v is None:
        return None
    for row in rows:  # exact public version first, then the same release and pre-release (dev/post/local ignored)
        if parse_version(row["vllm_ascend"]).public == v.public:
            return row
    for row in rows:
        r = parse_version(row["vllm_ascend"])
        if r.release == v.release and r.pre == v.pre:
            return row
    return None


def _join(items) -> str:
    return ", ".join(items)


# ------------------------------------------------------------------------------------------------ the report


def doctor_report(recipe: RecipeFacts | None, env: Mapping[str, str], probe: DeviceProbe,
                  versions: Mapping[str, str | None], *, requested: str | None = None,
                  mbridge_params: frozenset[str] | None = None,
                  read_text: Callable[[str], str | None] | None = None, machine: str | None = None) -> Report:
    """Every check of the doctor over injected facts: `versions` (name -> installed version or None, as
    `versions.installed_versions()` gives), `env` (the environment a run would get), `probe` (devices and module
    look-ups), `mbridge_params` (`versions.mbridge_save_weights_params()`; None: not known), `read_text` (reads
    the CANN info file; None for a missing file) and `machine` (`platform.machine()`)."""
    import platform

    read_text = read_text or _read_text
    machine = machine or platform.machine()
    table = load_compatibility()
    facts = detect_device(requested, env, probe)
    findings: list[Finding] = []
    add = findings.append

    # -- what is installed (metadata, else importable without metadata)
    present = {}
    packages = []
    for name in PACKAGES:
        version = versions.get(name)
        here = version is not None or probe.module_findable(IMPORT_NAMES.get(name, name.replace("-", "_")))
        present[name] = here
        packages.append((name, version, here))
    for name, version, here in packages:
        if version is not None and not _release_ok(version):
            add(Finding("versions", ADVISORY, f"{name} reports version {version!r}, which is not a PEP 440 "
                                              "version: its compatibility is not checked"))
    bare = [n for n, v, here in packages if here and v is None]
    if bare:
        add(Finding("versions", ADVISORY, f"installed without distribution metadata (importable, version unknown): "
                                          f"{_join(bare)}; their compatibility is not checked"))

    # -- the recipe's variants for this device
    relevant: tuple[VariantFacts, ...] = ()
    if recipe is not None:
        labelled = [v for v in recipe.variants if v.device is not None]
        relevant = tuple(v for v in recipe.variants if facts.kind is None or v.device in (None, facts.kind))
        if facts.kind is not None and labelled and not relevant:
            kinds = sorted({v.device for v in labelled})
            add(Finding("devices", BLOCKING, f"the recipe has no variant for {facts.kind} (its variants are for "
                                             f"{_join(kinds)}); the device here: {facts.how}"))
        if not relevant:
            relevant = recipe.variants
    npu = facts.kind == "npu" or present["torch_npu"]
    uses_vllm = (any(v.rollout == "vllm" for v in relevant) if recipe is not None else present["vllm"])
    uses_megatron = any(v.model_engine == "megatron" for v in relevant)

    # -- devices
    _check_devices(recipe, relevant, facts, add)

    # -- packages the run needs
    needed = ["torch", "ray", "verl"]
    if recipe is not None:
        if uses_vllm:
            needed.append("vllm")
        if uses_megatron:
            needed.append("megatron-core")
    if facts.kind == "npu":
        needed.append("torch_npu")
        if uses_vllm and (recipe is not None or present["vllm"]):
            needed.append("vllm-ascend")
        if uses_megatron:
            needed.append("mindspeed")
    missing = [n for n in dict.fromkeys(needed) if not present[n]]
    if missing:
        if recipe is not None:
            src = table["verl_megatron_npu"]["source"] if "mindspeed" in missing else None
            add(Finding("packages", BLOCKING, f"not installed, and the recipe needs them here: {_join(missing)}", src))
        else:
            add(Finding("packages", ADVISORY, f"not installed: {_join(missing)} (needed to train here)"))
    elif recipe is not None:
        add(Finding("packages", OK, f"installed: {_join(dict.fromkeys(needed))}"))

    # -- pairings
    _check_torch_npu(versions, table, add)
    _check_vllm_ascend(versions, table, add)
    cann = None
    if npu:
        cann = read_cann(env, read_text, machine)
        _check_cann(cann, facts, versions, table, add)
    _check_mindspeed(versions, table, add)
    _check_verl_vllm(versions, table, facts, uses_vllm, add)
    patch = _patch_facts(versions, table, npu)
    _check_patch(patch, table, uses_vllm, add)
    _check_mbridge(mbridge_params, versions, relevant, table, add)
    if recipe is not None:
        _check_recipe_stack(recipe, versions, add)

    order = {s: i for i, s in enumerate(SEVERITIES)}
    ordered = tuple(sorted(findings, key=lambda f: order[f.severity]))
    return Report(requested or "auto", facts, tuple(packages), cann, patch, recipe, mbridge_params, ordered)


def _check_devices(recipe, relevant, facts: DeviceFacts, add) -> None:
    what = f"{facts.count} {facts.kind or 'accelerator'} device(s) visible ({facts.how})"
    if recipe is None:
        if facts.kind is None or facts.count == 0:
            add(Finding("devices", ADVISORY, f"no accelerator device visible: training cannot run on this machine "
                                             f"(linting, planning and --dry-run can) -- {facts.how}"))
        else:
            add(Finding("devices", OK, what))
        return
    wanted = sorted({v.n_gpus_per_node for v in relevant if v.n_gpus_per_node is not None})
    if not wanted:
        add(Finding("devices", ADVISORY, "trainer.n_gpus_per_node is not a number in the recipe: devices not "
                                         f"compared; {what}"))
        return
    need = wanted[-1]
    nodes = sorted({v.nnodes for v in relevant if v.nnodes is not None})
    per = f"trainer.n_gpus_per_node={need}" + (f" (variants ask {', '.join(map(str, wanted))})" if len(wanted) > 1
                                                else "")
    other = f"; the other {nodes[-1] - 1} node(s) are not checked from here" if nodes and nodes[-1] > 1 else ""
    if facts.count < need:
        add(Finding("devices", BLOCKING, f"the recipe needs {need} devices on every node ({per}); {what}{other}",
                    RESOURCE_CHECK_SOURCE))
    elif facts.count > need:
        add(Finding("devices", ADVISORY, f"{what}; the recipe uses {need} per node ({per}): the rest stay idle"
                                         f"{other}"))
    else:
        add(Finding("devices", OK, f"{what}, as the recipe needs ({per}){other}"))


def _check_torch_npu(versions, table, add) -> None:
    torch, torch_npu = versions.get("torch"), versions.get("torch_npu")
    if not (_release_ok(torch) and _release_ok(torch_npu)):
        return
    src = table["torch_npu"]["source"]
    if same_release(torch, torch_npu):
        add(Finding("torch_npu", OK, f"torch_npu {torch_npu} is built for torch {torch}", src))
    else:
        add(Finding("torch_npu", BLOCKING, f"torch_npu {torch_npu} is built for torch "
                                           f"{'.'.join(map(str, version_tuple(torch_npu)[:3]))}, but torch {torch} "
                                           "is installed", src))


def _check_vllm_ascend(versions, table, add) -> None:
    installed = versions.get("vllm-ascend")
    if not _release_ok(installed):
        return
    section = table["vllm_ascend"]
    row = _find_vllm_ascend_row(section["rows"], installed)
    src = section["source"]
    if row is None:
        add(Finding("vllm-ascend", ADVISORY, f"vllm-ascend {installed} is not in the compatibility table: its vLLM, "
                                             "torch, torch_npu and CANN pairing is not checked", src))
        return
    label = f"vllm-ascend {installed} (table row {row['vllm_ascend']})"
    if row.get("uncertain"):
        label += f" [uncertain: {row['uncertain']}]"
    problems, notes = [], []
    vllm = versions.get("vllm")
    if _release_ok(vllm) and not any(version_tuple(vllm) == version_tuple(v) for v in row["vllm"]):
        problems.append(f"vllm {vllm} (the row pairs vllm {_join(row['vllm'])})")
    torch = versions.get("torch")
    if _release_ok(torch) and not same_release(torch, row["torch"]):
        problems.append(f"torch {torch} (the row pairs torch {row['torch']})")
    torch_npu = versions.get("torch_npu")
    if _release_ok(torch_npu):
        if not same_release(torch_npu, row["torch_npu"]):
            problems.append(f"torch_npu {torch_npu} (the row pairs torch_npu {row['torch_npu']})")
        elif parse_version(torch_npu).public != parse_version(row["torch_npu"]).public:
            notes.append(f"torch_npu {torch_npu} (the row pairs torch_npu {row['torch_npu']})")
    if problems:
        add(Finding("vllm-ascend", BLOCKING, f"{label} does not pair with {_join(problems)}", src))
    if notes:
        add(Finding("vllm-ascend", ADVISORY, f"{label}: {_join(notes)}", src))
    if not problems and not notes:
        add(Finding("vllm-ascend", OK, f"{label} pairs with the installed vllm, torch and torch_npu", src))


def _check_cann(cann: CannFacts, facts: DeviceFacts, versions, table, add) -> None:
    section = table["cann_toolkit"]
    src = section["source"]
    if not cann.env:
        where = f" (a toolkit is installed: {cann.info_file})" if cann.info_file else ""
        severity = BLOCKING if facts.kind == "npu" and facts.count > 0 else ADVISORY
        add(Finding("cann", severity, f"the CANN toolkit environment is not set up: none of {_join(CANN_VARIABLES)} "
                                      f"is set{where}; source the toolkit's set_env.sh (e.g. "
                                      "/usr/local/Ascend/ascend-toolkit/set_env.sh) before launching",
                    section["environment_source"]))
    if cann.info_file is None:
        add(Finding("cann", ADVISORY, "no CANN toolkit version file (<toolkit>/<arch>-linux/"
                                      "ascend_toolkit_install.info) under ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME or "
                                      f"{CANN_DEFAULT_HOME}: the CANN version is unknown", src))
        return
    if cann.version is None:
        add(Finding("cann", ADVISORY, f"{cann.info_file} has no `version=` line: the CANN version is unknown", src))
        return
    installed = versions.get("vllm-ascend")
    row = _find_vllm_ascend_row(table["vllm_ascend"]["rows"], installed) if _release_ok(installed) else None
    if row is not None and cann.version != row["cann"].lower():
        add(Finding("cann", ADVISORY, f"CANN {cann.version} ({cann.info_file}); vllm-ascend {installed}'s stable "
                                      f"CANN is {row['cann']}", table["vllm_ascend"]["source"]))
    elif cann.env:
        add(Finding("cann", OK, f"CANN {cann.version} ({cann.info_file}), environment set "
                                f"({_join(k for k, _ in cann.env)})", src))


def _check_mindspeed(versions, table, add) -> None:
    mindspeed, mcore = versions.get("mindspeed"), versions.get("megatron-core")
    if mindspeed is None or not _release_ok(mcore):
        return
    section = table["mindspeed"]
    targets = sorted({r["megatron_core"] for r in section["rows"]}, key=version_tuple)
    if any(same_release(mcore, t) for t in targets):
        add(Finding("mindspeed", OK, f"megatron-core {mcore} is a release MindSpeed branches target "
                                     "(the installed mindspeed's own branch is not known)", section["source"]))
    else:
        add(Finding("mindspeed", ADVISORY, f"megatron-core {mcore} is not a release any MindSpeed branch targets "
                                           f"({_join(targets)}); MindSpeed does not check it at import, mismatches "
                                           "surface as patch or attribute errors", section["source"]))


def _check_verl_vllm(versions, table, facts, uses_vllm, add) -> None:
    verl, vllm = versions.get("verl"), versions.get("vllm")
    if facts.kind == "npu" or vllm is None or not uses_vllm:
        return
    row = _find_verl(table["verl_vllm"]["rows"], verl)
    if row is None or _parse(vllm) is None:
        return
    floor = row["min_vllm_off_npu"]
    if _parse(vllm) >= parse_version(floor):  # verl's own comparison: full PEP 440 (0.18.0rc1 < 0.18.0)
        add(Finding("verl-vllm", OK, f"vllm {vllm} meets verl {verl}'s floor {floor}", row["source"]))
    else:
        add(Finding("verl-vllm", BLOCKING, f"verl {verl} refuses vllm {vllm} off NPU: it needs vllm >= {floor} "
                                           "(unless SGLang is installed)", row["source"]))


def _patch_facts(versions, table, npu: bool) -> PatchFacts:
    vllm, verl = versions.get("vllm"), versions.get("verl")
    try:
        variant = vllm_patch_variant(vllm)
    except VersionError:
        variant = None
    gate = _find_verl(table["verl_npu_vllm_patch_gates"]["gates"], verl)
    if verl is None:
        return PatchFacts(vllm, variant, npu, None, None, "verl is not installed")
    if gate is None:
        return PatchFacts(vllm, variant, npu, verl, None, f"verl {verl}: its NPU vLLM patch gate is not in the table")
    if gate.get("compare") is None:
        return PatchFacts(vllm, variant, npu, verl, ("every NPU patch (no version gate)",),
                          f"verl {verl}: no vLLM version gate ({gate['note']})")
    applies = _gate_applies(gate, vllm) if vllm else ()
    bounds = "; ".join(
        f"{p['variant']} {p['name']}: " + ", ".join(
            f"[{iv['min']}, {iv['max']}{']' if iv['max_inclusive'] else ')'}" for iv in p["intervals"])
        for p in gate["patches"])
    return PatchFacts(vllm, variant, npu, verl, applies, f"verl {verl} gate ({gate['compare']}): {bounds}")


def _check_patch(patch: PatchFacts, table, uses_vllm: bool, add) -> None:
    if not patch.npu or patch.vllm is None:
        return
    gates = table["verl_npu_vllm_patch_gates"]
    gate = _find_verl(gates["gates"], patch.verl)
    src = gate["source"] if gate else table["vllm_npu_patch_variants"]["source"]
    if _parse(patch.vllm) is None:
        add(Finding("vllm-patch", ADVISORY, f"vllm {patch.vllm!r} is not a version: the NPU patch variant is unknown"))
        return
    if patch.variant is None:
        add(Finding("vllm-patch", ADVISORY, f"vllm {patch.vllm} is older than every NPU patch variant (0.11.0): "
                                            "verl has no NPU patches for it", src))
        return
    if patch.verl_applies is None:
        add(Finding("vllm-patch", ADVISORY, f"vllm {patch.vllm} needs the {patch.variant} NPU patches; "
                                            f"{patch.verl_gate}: not checked", src))
        return
    if gate is not None and gate.get("compare") is None:
        add(Finding("vllm-patch", OK, f"vllm {patch.vllm} -> {patch.variant}; {patch.verl_gate}", src))
        return
    severity = BLOCKING if uses_vllm else ADVISORY
    own = [a for a in patch.verl_applies if a.endswith(f"[{patch.variant}]")]
    if not patch.verl_applies:
        add(Finding("vllm-patch", severity,
                    f"vllm {patch.vllm} needs the {patch.variant} NPU patches, but verl {patch.verl}'s gate applies "
                    f"none to it ({patch.verl_gate}): the rotary, MoE weight-loader and MoE-comm patches never "
                    "apply (field incident 9)", src))
    elif not own:
        add(Finding("vllm-patch", ADVISORY,
                    f"vllm {patch.vllm} runs {patch.variant} code, but verl {patch.verl}'s gate applies "
                    f"{_join(patch.verl_applies)} ({patch.verl_gate})", src))
    else:
        add(Finding("vllm-patch", OK, f"vllm {patch.vllm} -> {patch.variant}; verl {patch.verl} applies "
                                      f"{_join(patch.verl_applies)}", src))
    exact = gate.get("exact") if gate else None
    if exact and patch.vllm not in exact["versions"] and any(
            version_tuple(patch.vllm) == version_tuple(v) for v in exact["versions"]):
        add(Finding("vllm-patch", ADVISORY,
                    f"verl {patch.verl}'s {exact['name']} compares vllm.__version__ as a string with "
                    f"{_join(exact['versions'])}: {patch.vllm!r} matches neither, so the check is skipped", src))


def _check_mbridge(params, versions, relevant, table, add) -> None:
    section = table["mbridge"]
    if params is None:
        return
    accepts_all = any(p.startswith("**") for p in params)
    options = sorted(p for p in params if p not in ("models", "weights_path") and not p.startswith("**"))
    features = ", ".join(options) or "no options"
    missing_fs = "" if "distributed_filesystem" in params or accepts_all else (
        " (no distributed_filesystem: the PyPI 0.15.1 signature)")
    asked = sorted({k for v in relevant for k in v.mbridge_config})
    dropped = [k for k in asked if k not in params and not accepts_all]
    src = section["verl_use"] + "; " + section["source"]
    if dropped:
        add(Finding("mbridge", BLOCKING, f"the installed mbridge {versions.get('mbridge') or ''} save_weights accepts "
                                         f"{features}; the recipe's mbridge_config sets {_join(dropped)}, which verl "
                                         "drops without a word (field incident 5)", src))
    else:
        add(Finding("mbridge", OK, f"mbridge save_weights accepts {features}{missing_fs}", section["source"]))


def _check_recipe_stack(recipe: RecipeFacts, versions, add) -> None:
    pairs = (("verl", recipe.verl, "the recipe is checked against the verl {want} schema"),
             ("megatron-core", recipe.megatron_core, "the recipe's stack names megatron-core {want}"),
             ("mbridge", recipe.mbridge, "the recipe's stack names mbridge {want}"))
    for name, want, text in pairs:
        have = versions.get(name)
        if not (want and have) or _parse(want) is None or _parse(have) is None:
            continue
        if _parse(want).public != _parse(have).public:
            add(Finding("recipe-stack", ADVISORY, f"{text.format(want=want)}, but {name} {have} is installed: "
                                                  "lint and run may disagree"))


# ------------------------------------------------------------------------------------------------ output


def _package_rows(report: Report) -> list[tuple[str, str]]:
    rows = []
    for name, version, present in report.packages:
        rows.append((name, version if version else ("installed (no version metadata)" if present else "-")))
    return rows


def _summary_lines(report: Report) -> list[tuple[str, str]]:
    d = report.device
    lines = [("device", f"{d.kind or 'none'} x {d.count} visible (--device {report.requested}; {d.how})")]
    if report.cann is not None:
        c = report.cann
        lines.append(("CANN", f"{c.version or 'unknown'}" + (f" ({c.info_file})" if c.info_file else "")
                      + f"; env {_join(k for k, _ in c.env) or 'not set'}"))
    p = report.patch
    applies = "unknown" if p.verl_applies is None else (_join(p.verl_applies) or "nothing")
    lines.append(("vLLM NPU patch", f"vllm {p.vllm or '-'} -> {p.variant or 'none'}"
                  + (f"; verl {p.verl} applies: {applies}" if p.verl else "")
                  + ("" if p.npu else " (not NPU: verl applies no NPU patches here)")))
    if report.mbridge_params is not None:
        lines.append(("mbridge save_weights", _join(sorted(report.mbridge_params))))
    if report.recipe is not None:
        r = report.recipe
        lines.append(("recipe", f"{r.path} (verl {r.verl})"))
        for v in r.variants:
            shape = (f"{v.variant or '(single variant)'}: {v.n_gpus_per_node} device(s)/node x {v.nnodes} node(s), "
                     f"rollout {v.rollout}, engine {v.model_engine}")
            lines.append(("", shape))
    return lines


def render_text(report: Report) -> str:
    """Plain text (for pipes and files)."""
    out = ["sapo-launch doctor", ""]
    out.extend(f"{k:<22}{v}" for k, v in _summary_lines(report))
    out.append("")
    out.append("packages")
    out.extend(f"  {name:<20}{version}" for name, version in _package_rows(report))
    out.append("")
    out.append("findings")
    for f in report.findings:
        out.append(f"  {f.severity.upper() if f.severity == BLOCKING else f.severity:<10}{f.check}: {f.message}")
        if f.source and f.severity != OK:
            out.append(f"  {'':<10}source: {f.source}")
    out.append("")
    out.append(_verdict(report))
    return "\n".join(out) + "\n"


def _verdict(report: Report) -> str:
    counts = f"{report.count(BLOCKING)} blocking, {report.count(ADVISORY)} advisory, {report.count(OK)} ok"
    return f"{counts}: " + ("blocking incompatibilities found (exit 1)" if report.blocking else "nothing blocking")


def render_rich(report: Report, console) -> None:
    """Tables on a terminal (rich is imported by the caller, only here)."""
    from rich.table import Table

    head = Table(show_header=False, box=None, pad_edge=False)
    for k, v in _summary_lines(report):
        head.add_row(f"[bold]{k}[/bold]", v)
    console.print(head)
    packages = Table(title="packages", title_justify="left")
    packages.add_column("package")
    packages.add_column("installed")
    for name, version in _package_rows(report):
        packages.add_row(name, version if version != "-" else "[dim]-[/dim]")
    console.print(packages)
    style = {BLOCKING: "bold red", ADVISORY: "yellow", OK: "green"}
    findings = Table(title="findings", title_justify="left")
    findings.add_column("severity")
    findings.add_column("check")
    findings.add_column("finding", overflow="fold")
    for f in report.findings:
        text = f.message + (f"\n[dim]source: {f.source}[/dim]" if f.source and f.severity != OK else "")
        findings.add_row(f"[{style[f.severity]}]{f.severity}[/]", f.check, text)
    console.print(findings)
    console.print(f"[{'bold red' if report.blocking else 'green'}]{_verdict(report)}[/]")


# ------------------------------------------------------------------------------------------------ command


class _OneLineUsage(click.Command):
    """Usage errors as one line on stderr and exit 2, inside a group or alone."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            click.echo(f"sapo-launch doctor: {exc.format_message()}", err=True)
            ctx.exit(EXIT_USAGE)


@click.command("doctor", cls=_OneLineUsage)
@click.argument("recipe", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--device", type=click.Choice(["auto", "npu", "gpu"]), default="auto", show_default=True,
              help="Device kind; auto: the DEVICE environment variable, else what this machine has (Ascend first).")
def doctor(recipe, fmt, device):
    """Check this environment: installed versions of the training stack and their known compatibility, visible
    devices against RECIPE's devices per node, the CANN toolkit on Ascend, and the vLLM NPU patch variant. Exit 1
    when something blocking is found, else 0."""
    import json
    import os

    from .versions import installed_versions, mbridge_save_weights_params

    facts = None
    if recipe is not None:
        try:
            facts = read_recipe_facts(recipe)
        except DoctorError as exc:
            click.echo(f"sapo-launch doctor: {exc}", err=True)
            sys.exit(EXIT_USAGE)
    versions = installed_versions()
    report = doctor_report(facts, os.environ, DEFAULT_PROBE, versions,
                           requested=None if device == "auto" else device,
                           mbridge_params=mbridge_save_weights_params())
    if fmt == "json":
        click.echo(json.dumps(report.to_json(), indent=2))
    elif sys.stdout.isatty():
        from rich.console import Console

        render_rich(report, Console())
    else:
        click.echo(render_text(report), nl=False)
    sys.exit(report.exit_code)


__all__ = [
    "DoctorError", "Finding", "RecipeFacts", "Report", "VariantFacts", "doctor", "doctor_report", "read_cann",
    "read_recipe_facts", "render_text",
]
