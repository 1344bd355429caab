"""Which kind of device (`npu` or `gpu`) a command runs on, judged from what the command says. One decision for
every reader of it: the sources pick an accelerator per variant from it, SL007 judges MindSpeed fields by it, and
the estimate takes Ascend's HCCL timeout and sleep level from it.

verl itself picks the engine from the device it detects at run time (verl/workers/engine/base.py
EngineRegistry.get_engine_cls, overridable by VERL_ENGINE_DEVICE); the linter can only read the evidence, strongest
first: `trainer.device`, VERL_ENGINE_DEVICE, a device variant (`DEVICE=npu`, any `NAME=npu|gpu|cuda`), the
accelerator the user named, the recipe's `stack.mindspeed`, Ascend-only environment variables; else GPU.
"""

from __future__ import annotations

from typing import NamedTuple

from .command import Command
from .model import Accelerator

# Environment variables only Ascend software reads (CANN, HCCL, torch_npu, vllm-ascend).
ASCEND_ENV_PREFIXES = ("ASCEND_", "HCCL_", "VLLM_ASCEND_", "PYTORCH_NPU_")
KIND_NAMES = {"npu": "an NPU", "gpu": "a GPU"}  # how messages name a device kind


class DeviceKind(NamedTuple):
    kind: str  # "npu" | "gpu"
    evidence: str  # what said so, for messages: "variant `DEVICE=npu`"
    # The command states its device itself (`trainer.device`, VERL_ENGINE_DEVICE, a device variant): that outranks
    # the accelerator a user names for the whole file, and a named accelerator of the other kind contradicts it.
    stated: bool = False


def _kind(value: str) -> str:
    return "npu" if value.strip().lower() == "npu" else "gpu"


def stated_device(command: Command) -> DeviceKind | None:
    """The device the command itself states, or None."""
    value = _trainer_device(command)
    if value is not None:
        return DeviceKind(_kind(value), f"`trainer.device={value}`", True)
    env = {e.name: e.value for e in command.env}
    engine_device = env.get("VERL_ENGINE_DEVICE")
    if engine_device:
        return DeviceKind(_kind(engine_device), f"`VERL_ENGINE_DEVICE={engine_device}`", True)
    for part in (command.variant or "").split(","):
        value = part.partition("=")[2].lower()
        if value in ("npu", "gpu", "cuda"):
            return DeviceKind(_kind(value), f"variant `{part}`", True)
    return None


def device_of(command: Command, accelerator: Accelerator | None = None) -> DeviceKind:
    """The command's device kind and the evidence for it, strongest first. `accelerator` counts only when the user
    named it (an assumed one was itself derived from this decision)."""
    stated = stated_device(command)
    if stated is not None:
        return stated
    if accelerator is not None and not accelerator.assumed:
        return DeviceKind(accelerator.device, f"accelerator {accelerator.name}")
    if command.stack.mindspeed is not None:
        return DeviceKind("npu", f"the stack names mindspeed {command.stack.mindspeed}")
    ascend = sorted(e.name for e in command.env if e.name.startswith(ASCEND_ENV_PREFIXES))
    if ascend:
        return DeviceKind("npu", f"it sets `{ascend[0]}`")
    return DeviceKind("gpu", "nothing in the command names an NPU")


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
