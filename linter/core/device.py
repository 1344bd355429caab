"""Which kind of device (`npu` or `gpu`) a command, or one of its overrides, runs on, judged from what the command
says. One decision for every reader of it: the sources pick an accelerator per variant from it, SL007 judges
MindSpeed fields by it, and the estimate takes Ascend's HCCL timeout and sleep level from it.

verl itself picks the engine from the device it detects at run time (verl main: verl/workers/engine/base.py
`EngineRegistry.get_engine_cls`, overridable by VERL_ENGINE_DEVICE; verl/utils/device.py `auto_set_device` even
overwrites `trainer.device` with the detected device), so many NPU scripts never set `trainer.device=npu`. The linter
can only read the evidence, and takes the first of these that speaks (`DeviceKind.evidence` says which one did):

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
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import NamedTuple

from .command import Command, DeviceSignal, LocatedOverride
from .model import Accelerator

# Environment variables only Ascend software reads (CANN, HCCL, torch_npu, vllm-ascend).
ASCEND_ENV_PREFIXES = ("ASCEND_", "HCCL_", "VLLM_ASCEND_", "PYTORCH_NPU_")
KIND_NAMES = {"npu": "an NPU", "gpu": "a GPU"}  # how messages name a device kind
# The words that name a device kind, in a comparison (`[ "$DEVICE" == npu ]`), a `case` pattern or a file name.
DEVICE_WORDS = {"npu": "npu", "ascend": "npu", "gpu": "gpu", "cuda": "gpu", "nvidia": "gpu"}
# Ascend software in a command the script runs or tests: its packages, its tool, its install prefix.
ASCEND_SOFTWARE = re.compile(r"\b(?:torch[_-]npu|vllm[_-]ascend|npu-smi)\b|/Ascend\b", re.IGNORECASE)
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")


class DeviceKind(NamedTuple):
    kind: str  # "npu" | "gpu"
    evidence: str  # what said so, for messages: "variant `DEVICE=npu`"
    # The command states its device itself (`trainer.device`, VERL_ENGINE_DEVICE, a device variant or branch): that
    # outranks the accelerator a user names for the whole file, and a named accelerator of the other kind contradicts
    # it.
    stated: bool = False


def _kind(value: str) -> str:
    return "npu" if value.strip().lower() == "npu" else "gpu"


def device_word(text: str) -> str | None:
    """The device kind a literal names (`npu`, `"NPU"`, `*ascend*`, `cuda`), or None."""
    return DEVICE_WORDS.get(text.strip("\"'*").lower())


def named_device(path: str) -> DeviceSignal | None:
    """What a script's own name, or the two folders above it, says about its device: `npu` or `ascend` as a word of
    them (`examples/ascend_extras/...`, `tests/special_npu/...`, `run_qwen3_8b_npu.sh`). None when they name no kind,
    or both (`run_x_npu_gpu.sh` runs on either)."""
    p = PurePath(path)
    parts = [p.stem, *(parent.name for parent in list(p.parents)[:2])]
    found = {(DEVICE_WORDS[w], w) for part in parts for w in _WORD_SPLIT.split(part.lower()) if w in DEVICE_WORDS}
    kinds = {kind for kind, _ in found}
    if len(kinds) != 1:
        return None
    shown = "/".join(part for part in reversed(parts[1:]) if part) + "/" + p.name
    return DeviceSignal(kinds.pop(), f"its path names `{min(w for _, w in found)}`: `{shown}`")


def stated_device(command: Command) -> DeviceKind | None:
    """The device the command itself states, or None."""
    value = _trainer_device(command)
    if value is not None:
        return DeviceKind(_kind(value), f"`trainer.device={value}`", True)
    env = {e.name: e.value for e in command.env}
    engine_device = env.get("VERL_ENGINE_DEVICE")
    if engine_device:
        return DeviceKind(_kind(engine_device), f"`VERL_ENGINE_DEVICE={engine_device}`", True)
    named = {}  # device kind -> the first part of the variant's label that names it
    for part in (command.variant or "").split(","):
        value = part.partition("=")[2].lower()
        if value in ("npu", "gpu", "cuda"):
            named.setdefault(_kind(value), part)
    if len(named) == 1:  # two switch variables that name both kinds say nothing
        kind, part = named.popitem()
        return DeviceKind(kind, f"variant `{part}`", True)
    taken = _branches_taken(command)
    if taken is not None:
        return DeviceKind(taken.kind, f"its overrides are written under {taken.evidence}", True)
    return None


def device_of(
    command: Command, accelerator: Accelerator | None = None, override: LocatedOverride | None = None
) -> DeviceKind:
    """The device kind of the command, or of one of its overrides, and the evidence for it, strongest first (the
    module's docstring). `accelerator` counts only when the user named it (an assumed one was itself derived from
    this decision)."""
    if override is not None:
        branch = _branch(command, override)
        if branch is not None:
            return DeviceKind(branch.kind, f"it is written under {branch.evidence}", True)
    stated = stated_device(command)
    if stated is not None:
        return stated
    if accelerator is not None and not accelerator.assumed:
        return DeviceKind(accelerator.device, f"accelerator {accelerator.name}")
    if command.stack.mindspeed is not None:
        return DeviceKind("npu", f"the stack names mindspeed {command.stack.mindspeed}")
    ascend = sorted(e.name for e in command.env if e.name.startswith(ASCEND_ENV_PREFIXES) or "ASCEND" in e.name)
    if ascend:
        return DeviceKind("npu", f"it sets `{ascend[0]}`")
    if command.device_signals:
        return DeviceKind(command.device_signals[0].kind, command.device_signals[0].evidence)
    return DeviceKind("gpu", "nothing in the command names an NPU")


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
