"""What a run script writes about the device it runs on, besides its variant and environment: the signals the bash
reader records on each command (`Command.device_signals`) for `core.device` to rank. The device each branch of the
script is for (`Command.device_regions`) is read with the other tests, in `conditions.device_regions`."""

from __future__ import annotations

import os
from functools import cache

from ...core.command import DeviceSignal, LocatedOverride
from ...core.device import mindspeed_kind, named_device, software_kind
from .conditions import brief

_OUTPUT_ONLY = ("echo", "printf")  # commands whose words are text for the reader, not software run
_PASSTHROUGH_DICT = "override_transformer_config."


def ascend_command(ev, n) -> DeviceSignal | None:
    """A simple command the variant runs that sources, installs or runs Ascend software (`source
    /usr/local/Ascend/ascend-toolkit/set_env.sh`, `pip install torch_npu`, `npu-smi info`): not one whose status the
    script tests, which is a probe that runs on either device (`if python3 -c 'import torch_npu'`, `... && echo
    npu`), and not text it prints."""
    name = n.child_by_field_name("name")
    if name is None or ev.text(name) in _OUTPUT_ONLY or _tested(n):
        return None
    kind = software_kind(ev.text(n))
    if kind is None:
        return None
    verb = "sources" if ev.text(name) in ("source", ".") else "runs"
    return DeviceSignal(kind.name, f"it {verb} `{brief(ev, n)}` (line {n.start_point[0] + 1})")


def _tested(n) -> bool:
    """Whether the script tests the command's status: it is in the condition of an `if`, `elif` or loop, or left of
    `&&`/`||`, at any depth."""
    while n.parent is not None:
        parent = n.parent
        if parent.type in ("if_statement", "elif_clause", "while_statement"):
            body = next((c for c in parent.children if c.type in ("then", "do_group")), None)
            if body is None or n.start_byte < body.start_byte:
                return True
        if parent.type == "list" and n.end_byte < parent.end_byte:
            return True
        n = parent
    return False


def script_signals(
    ascend: DeviceSignal | None, overrides: list[LocatedOverride], path: str
) -> tuple[DeviceSignal, ...]:
    """A variant's signals, in `core.device`'s order: the Ascend software it runs, a field only MindSpeed reads among
    its overrides, the script's own name (the folders above it as well when it is linted as `./run.sh`)."""
    named = named_device(os.path.abspath(path))
    return tuple(s for s in (ascend, _mindspeed_field(overrides), named) if s is not None)


def _mindspeed_field(overrides: list[LocatedOverride]) -> DeviceSignal | None:
    """The first override of a field that MindSpeed reads in `override_transformer_config` and no megatron-core
    release has (`use_flash_attn`, `use_fused_rmsnorm`): verl hands that dict to MindSpeed on Ascend only (verl main
    verl/workers/engine/mindspeed/transformer_impl.py, registered for device="npu")."""
    for lo in overrides:
        key = lo.parsed.key if lo.parsed is not None else ""
        if _PASSTHROUGH_DICT in key and lo.parsed.op != "delete":
            name = key.split(_PASSTHROUGH_DICT, 1)[1].split(".")[0]
            if _only_mindspeed_reads(name) and (kind := mindspeed_kind()) is not None:
                return DeviceSignal(
                    kind.name,
                    f"it sets `{name}`, a field only MindSpeed reads (line {lo.location.line})",
                )
    return None


def _only_mindspeed_reads(name: str) -> bool:
    """Whether `name` is a `TransformerConfig` field MindSpeed adds that no committed megatron-core release accepts.
    The releases are asked newest first, each read only when the newer ones lack the field: most fields are
    megatron-core's own, which the newest release answers."""
    from ...schema import consumer_versions  # only for a script that sets one

    return name in _mindspeed_fields() and not any(
        name in _megatron_fields(version) for version in reversed(consumer_versions("megatron-core"))
    )


@cache
def _mindspeed_fields() -> frozenset[str]:
    from ...schema import DEFAULT_MINDSPEED, load_consumer

    return load_consumer("mindspeed", DEFAULT_MINDSPEED).accepts("TransformerConfig")


@cache
def _megatron_fields(version: str) -> frozenset[str]:
    """The fields of megatron-core `version`'s `TransformerConfig` and `MLATransformerConfig`."""
    from ...schema import load_consumer

    consumer = load_consumer("megatron-core", version)
    return consumer.accepts("TransformerConfig") | consumer.accepts("MLATransformerConfig")
