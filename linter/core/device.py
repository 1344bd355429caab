"""Which kind of device (`npu` or `gpu`) a command, or one of its overrides, runs on, judged from what the command
says. One decision for every reader of it: the sources pick an accelerator per variant from it, SL007 judges
MindSpeed fields by it, and the estimate takes Ascend's HCCL timeout and sleep level from it.

verl itself picks the engine from the device it detects at run time (verl main: verl/workers/engine/base.py
`EngineRegistry.get_engine_cls`, overridable by VERL_ENGINE_DEVICE; verl/utils/device.py `auto_set_device` even
overwrites `trainer.device` with the detected device), so many NPU scripts never set `trainer.device=npu`. The linter
can only read the evidence, and takes the first of these that speaks (`DeviceDecision.evidence` says which one did):

For one override (`device_of(..., override=...)`), first the branch of the script it is written in: the innermost
`if`/`elif`/`else`, `case` item or `&&`/`||` operand whose condition tests for a device (`[ "$device" == npu ]`,
`case $DEVICE in npu)`, `[[ $D == *ascend* ]]`, `if python3 -c 'import torch_npu'`; the `else` of such a test is the
other kind). The override takes effect only there, even in a variant evaluated as GPU (a condition the linter cannot
decide is taken both ways).

For the command (and an override outside such a branch):
1. `trainer.device` set to a plain value;
2. `VERL_ENGINE_DEVICE` in its environment;
3. the device variant (`DEVICE=npu`, any `NAME=npu|gpu|cuda` of the variant's label, when they name one kind);
4. the device branches its overrides are written in, when they name one kind (a script that sets `DEVICE=npu`
   itself and then switches on it);
5. the accelerator the user named (`--accelerator`, `hardware.accelerator`, `[tool.sapo-lint] accelerator`);
6. the recipe's `stack.mindspeed`;
7. an Ascend-only environment variable it sets (`ASCEND_*`, `HCCL_*`, `VLLM_ASCEND_*`, `PYTORCH_NPU_*`, or any name
   with `ASCEND` in it, as `RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES`);
8. what the run script does (`Command.device_signals`, recorded by the bash reader in this order): Ascend software
   that a command of the variant sources, installs or runs (`source /usr/local/Ascend/.../set_env.sh`, `torch_npu`,
   `vllm_ascend`, `npu-smi`), a field only MindSpeed reads set in `override_transformer_config`, then the script's
   own name or the two folders above it (`npu`, `ascend`: `tests/special_npu/`, `run_x_npu.sh`);
9. else GPU.
1-4 are stated by the command itself: they outrank a named accelerator, and one of the other kind contradicts them.

What each kind is (its collective library, visibility variable, probe, assumed accelerator, ...) is data:
`schemas/devices.json` `kinds`, read once into `DeviceKind` records (`device_kinds()`, `device_kind(name)`). Code
asks the record instead of comparing the kind's name; the names (`npu`, `gpu`) stay what users write and see.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path, PurePath
from typing import NamedTuple

from .command import Command, DeviceSignal, LocatedOverride
from .model import Accelerator
from .records import Record

# The device data, read as a file: the core imports nothing else of the project (pyproject's import contracts), and
# `sapo_toolkit/schemas/devices.json` lies two folders above this module, in the repository as in a wheel.
DEVICES_FILE = Path(__file__).resolve().parents[2] / "schemas" / "devices.json"
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")


class DeviceKind(Record):
    """One device kind (`schemas/devices.json` `kinds`, whose `kinds_source` says what each field means): a frozen
    record (`core.records`), made with keywords."""

    name: str  # what users write and see: "npu", "gpu"
    label: str  # "NPU"
    article: str  # how messages name one: "an NPU"
    vendor: str  # "Ascend"
    aliases: tuple[str, ...]  # other values read as the kind (DEVICE=cuda)
    words: tuple[str, ...]  # the words that name it in a script's tests, case patterns and file names
    other: str | None  # the kind the `else` of a test for this kind runs on
    collective: str  # "HCCL"
    collective_buffer_env: str | None  # "HCCL_BUFFSIZE": per-communicator buffers the memory estimate counts
    collective_timeout_env: str | None  # "HCCL_EXEC_TIMEOUT": bounds a collective besides verl's nccl_timeout
    visible_devices_env: str  # "ASCEND_RT_VISIBLE_DEVICES"
    visible_devices_stop_at_invalid: bool  # CUDA's rule; Ascend skips an invalid entry
    device_nodes: str  # the probe's device nodes, `<prefix><N>`: "/dev/davinci"
    list_command: tuple[str, ...]  # else the probe's listing command: ("npu-smi", "info")
    list_line: re.Pattern[str]  # a device's line in that listing
    listed: str  # what the listing counts, for messages: "device(s)"
    package: str | None  # a package whose presence alone implies the kind ("torch_npu")
    ray_resource: str  # Ray's resource name: "NPU"
    assumed_accelerator: str  # the accelerator assumed when none is named: "ascend-910b3"
    sleep_keeps_weights_on_host: bool  # the rollout's sleep keeps the weights in host memory
    env_prefixes: tuple[str, ...]  # environment variables only its software reads
    env_word: str | None  # ... or any variable with this in its name
    software: re.Pattern[str] | None  # its software in a command (packages, tools, install prefix), the flags in it
    mindspeed: bool  # verl's MindSpeed engine is registered for it
    default: bool  # the kind of a command that names none

    def reads_env(self, name: str) -> bool:
        """Whether only this kind's software reads the environment variable `name`."""
        return (
            bool(self.env_prefixes)
            and name.startswith(self.env_prefixes)
            or bool(self.env_word and self.env_word in name)
        )

    @property
    def looked_for(self) -> str:
        """Where the probe looks, for messages: `/dev/davinci<N>, npu-smi info`."""
        return f"{self.device_nodes}<N>, {' '.join(self.list_command)}"


def load_device_kinds(document: dict) -> dict[str, DeviceKind]:
    """The `kinds` of a devices document, in its order (the launcher's probe order)."""
    out = {}
    for name, k in document["kinds"].items():
        probe = k["probe"]
        out[name] = DeviceKind(
            name=name,
            label=k["label"],
            article=k["article"],
            vendor=k["vendor"],
            aliases=tuple(k.get("aliases", ())),
            words=tuple(k.get("words", (name,))),
            other=k.get("other"),
            collective=k["collective"],
            collective_buffer_env=k.get("collective_buffer_env"),
            collective_timeout_env=k.get("collective_timeout_env"),
            visible_devices_env=k["visible_devices_env"],
            visible_devices_stop_at_invalid=bool(k.get("visible_devices_stop_at_invalid", False)),
            device_nodes=probe["device_nodes"],
            list_command=tuple(probe["list_command"]),
            list_line=re.compile(probe["list_line"]),
            listed=probe["listed"],
            package=probe.get("package"),
            ray_resource=k["ray_resource"],
            assumed_accelerator=k["assumed_accelerator"],
            sleep_keeps_weights_on_host=bool(k.get("sleep_keeps_weights_on_host", False)),
            env_prefixes=tuple(k.get("env_prefixes", ())),
            env_word=k.get("env_word"),
            software=re.compile(k["software"]) if k.get("software") else None,
            mindspeed=bool(k.get("mindspeed", False)),
            default=bool(k.get("default", False)),
        )
    if sum(k.default for k in out.values()) != 1:
        raise ValueError("a devices document names exactly one default kind")
    return out


@cache
def device_kinds() -> dict[str, DeviceKind]:
    """Every device kind, by name, in the probe order: `schemas/devices.json` read once."""
    return load_device_kinds(json.loads(DEVICES_FILE.read_text(encoding="utf-8")))


def device_kind(name: str) -> DeviceKind:
    """The record of a kind's name ("npu"); KeyError for a name that is none."""
    return device_kinds()[name]


def kind_names() -> tuple[str, ...]:
    """The kinds' names, in the probe order: ("npu", "gpu")."""
    return tuple(device_kinds())


def kind_named(value: str | None) -> DeviceKind | None:
    """The kind a value such as DEVICE's or a variant's names: its name or an alias (`cuda`), any case; else None."""
    v = (value or "").strip().lower()
    return next((k for k in device_kinds().values() if v == k.name or v in k.aliases), None)


def default_kind() -> DeviceKind:
    """The kind of a command that names none (GPU)."""
    return next(k for k in device_kinds().values() if k.default)


def mindspeed_kind() -> DeviceKind | None:
    """The kind verl's MindSpeed engine runs on (NPU)."""
    return next((k for k in device_kinds().values() if k.mindspeed), None)


def software_kind(text: str) -> DeviceKind | None:
    """The first non-default kind whose software `text` names (`torch_npu`, `/usr/local/Ascend`), or None."""
    return next((k for k in device_kinds().values() if not k.default and k.software and k.software.search(text)), None)


def env_kind(names) -> tuple[DeviceKind, str] | None:
    """The first kind only whose software reads one of the environment variables `names`, and the first such name."""
    for k in device_kinds().values():
        read = sorted(n for n in names if k.reads_env(n))
        if read:
            return k, read[0]
    return None


def device_words() -> dict[str, str]:
    """Word -> kind name, for the words that name a device kind (`[ "$DEVICE" == npu ]`, a `case` pattern, a file
    name)."""
    return {w: k.name for k in device_kinds().values() for w in k.words}


class DeviceDecision(NamedTuple):
    """The device kind a command, or one of its overrides, runs on, and why (`device_of`)."""

    kind: str  # a kind's name (`DeviceKind.name`): "npu" | "gpu"
    evidence: str  # what said so, for messages: "variant `DEVICE=npu`"
    # The command states its device itself (`trainer.device`, VERL_ENGINE_DEVICE, a device variant or branch): that
    # outranks the accelerator a user names for the whole file, and a named accelerator of the other kind contradicts
    # it.
    stated: bool = False


def _kind(value: str) -> str:
    """The kind `trainer.device` or VERL_ENGINE_DEVICE names, as verl reads it: a kind's name or alias (any case),
    else the default kind (verl treats anything but `npu` as CUDA)."""
    named = kind_named(value)
    return named.name if named is not None else default_kind().name


def device_word(text: str) -> str | None:
    """The device kind a literal names (`npu`, `"NPU"`, `*ascend*`, `cuda`), or None."""
    return device_words().get(text.strip("\"'*").lower())


def named_device(path: str) -> DeviceSignal | None:
    """What a script's own name, or the two folders above it, says about its device: `npu` or `ascend` as a word of
    them (`examples/ascend_extras/...`, `tests/special_npu/...`, `run_qwen3_8b_npu.sh`). None when they name no kind,
    or both (`run_x_npu_gpu.sh` runs on either)."""
    p = PurePath(path)
    parts = [p.stem, *(parent.name for parent in list(p.parents)[:2])]
    words = device_words()
    found = {(words[w], w) for part in parts for w in _WORD_SPLIT.split(part.lower()) if w in words}
    kinds = {kind for kind, _ in found}
    if len(kinds) != 1:
        return None
    shown = "/".join(part for part in reversed(parts[1:]) if part) + "/" + p.name
    return DeviceSignal(kinds.pop(), f"its path names `{min(w for _, w in found)}`: `{shown}`")


def stated_device(command: Command) -> DeviceDecision | None:
    """The device the command itself states, or None."""
    value = _trainer_device(command)
    if value is not None:
        return DeviceDecision(_kind(value), f"`trainer.device={value}`", True)
    env = {e.name: e.value for e in command.env}
    engine_device = env.get("VERL_ENGINE_DEVICE")
    if engine_device:
        return DeviceDecision(_kind(engine_device), f"`VERL_ENGINE_DEVICE={engine_device}`", True)
    named = variant_device(command.variant)
    if named is not None:
        return named
    taken = _branches_taken(command)
    if taken is not None:
        return DeviceDecision(taken.kind, f"its overrides are written under {taken.evidence}", True)
    return None


def variant_device(variant: str | None) -> DeviceDecision | None:
    """The device kind a variant's label names (`DEVICE=npu`, any `NAME=npu|gpu|cuda` of it), or None when it names
    none or both: all that a command's variant tells about it."""
    named = {}  # device kind -> the first part of the label that names it
    for part in (variant or "").split(","):
        kind = kind_named(part.partition("=")[2])
        if kind is not None:
            named.setdefault(kind.name, part)
    if len(named) != 1:  # two switch variables that name both kinds say nothing
        return None
    kind, part = named.popitem()
    return DeviceDecision(kind, f"variant `{part}`", True)


def device_of(
    command: Command, accelerator: Accelerator | None = None, override: LocatedOverride | None = None
) -> DeviceDecision:
    """The device kind of the command, or of one of its overrides, and the evidence for it, strongest first (the
    module's docstring). `accelerator` counts only when the user named it (an assumed one was itself derived from
    this decision)."""
    if override is not None:
        branch = _branch(command, override)
        if branch is not None:
            return DeviceDecision(branch.kind, f"it is written under {branch.evidence}", True)
    stated = stated_device(command)
    if stated is not None:
        return stated
    if accelerator is not None and not accelerator.assumed:
        return DeviceDecision(accelerator.device, f"accelerator {accelerator.name}")
    mindspeed = mindspeed_kind()
    if command.stack.mindspeed is not None and mindspeed is not None:
        return DeviceDecision(mindspeed.name, f"the stack names mindspeed {command.stack.mindspeed}")
    env = env_kind(e.name for e in command.env)
    if env is not None:
        return DeviceDecision(env[0].name, f"it sets `{env[1]}`")
    if command.device_signals:
        return DeviceDecision(command.device_signals[0].kind, command.device_signals[0].evidence)
    default = default_kind()
    others = " or ".join(k.article for k in device_kinds().values() if k is not default)
    return DeviceDecision(default.name, f"nothing in the command names {others}")


def _branch(command: Command, override: LocatedOverride) -> DeviceSignal | None:
    """The device branch an override is written in: the innermost region of its own that tests for a device."""
    if not override.branches or not command.device_regions:
        return None
    regions = dict(command.device_regions)
    return next((regions[b] for b in reversed(override.branches) if b in regions), None)


def _branches_taken(command: Command) -> DeviceSignal | None:
    """The device branch the command's overrides are written in, when every such branch is for one kind."""
    if not command.device_regions:
        return None
    regions = dict(command.device_regions)
    found: dict[str, DeviceSignal] = {}
    for lo in command.overrides:
        signal = next((regions[b] for b in reversed(lo.branches) if b in regions), None)
        if signal is not None:
            found.setdefault(signal.kind, signal)
    return next(iter(found.values())) if len(found) == 1 else None


def _trainer_device(command: Command) -> str | None:
    """The last `trainer.device` the command sets to a plain name (an interpolation or a value the script cannot
    evaluate says nothing)."""
    value = None
    for lo in command.overrides:
        p = lo.parsed
        if p is None or p.key != "trainer.device":
            continue
        if p.op == "delete":
            value = None
        elif isinstance(p.value, str) and p.value.strip() and "${" not in p.value and not lo.unresolved:
            value = p.value.strip()
        else:
            value = None
    return value
