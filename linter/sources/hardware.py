"""Which accelerator each command (one variant of a recipe or script) is checked on.

In order: `--accelerator`; the recipe's `hardware.accelerator`; `[tool.sapo-lint] accelerator`; else the one assumed
for the command's device kind (`DeviceKind.assumed_accelerator`, the kind from `rulekit.device`), marked as assumed so
that every finding resting on it says so. Each level is one name for every variant, or a map from device kind to
name (`{npu: ascend-910b3, gpu: nvidia-h100}`) so that each device variant gets its own; a map without the
command's kind passes to the next level. A single name whose kind contradicts what the variant states
(`DEVICE=npu` on `nvidia-h100`) is RF010, and that variant is checked on its own kind's assumed accelerator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..catalog import UnknownAccelerator, assumed_accelerator, find_accelerator
from ..core.command import Command
from ..core.device import device_kind, device_of, stated_device
from ..core.diagnostics import Location
from ..core.model import Accelerator
from ..core.problems import (
    AcceleratorKindMismatch,
    ReadProblem,
    UnknownAcceleratorName,
    VariantDeviceMismatch,
)
from .options import ReadOptions


class AcceleratorLevel(NamedTuple):
    """One place that names accelerators."""

    source: str  # how messages name it: "--accelerator", "`hardware.accelerator`"
    fix_form: str  # how to write one per kind there, with `{npu}` and `{gpu}` to fill in
    location: Location | None  # where a finding about it goes; None: the command's origin
    single: Accelerator | None = None  # one accelerator for every variant
    named: bool = False  # a single name was given (`single` is None when it is unknown: RF006 was reported)
    by_kind: tuple[tuple[str, Accelerator | None], ...] = ()  # device kind -> accelerator (None: unknown name)


RECIPE_FORM = "`hardware: {{accelerator: {{npu: {npu}, gpu: {gpu}}}}}`"
SETTINGS_FORM = '`accelerator = {{npu = "{npu}", gpu = "{gpu}"}}` in [tool.sapo-lint]'


def level(
    spec, source: str, fix_form: str, locate: Callable[[str | None], Location | None]
) -> tuple[AcceleratorLevel | None, list[ReadProblem]]:
    """A level from its spec (a name, a {kind: name} mapping, or None for none); RF006 for each unknown name and
    RF010 for a mapping entry of the other kind (that entry is dropped). `locate(kind)`: where the name for `kind`
    (None: the single name) is written."""
    if spec is None:
        return None, []
    found: list[ReadProblem] = []

    def lookup(name: str, kind: str | None) -> Accelerator | None:
        try:
            return find_accelerator(name)
        except UnknownAccelerator as exc:
            found.append(
                UnknownAcceleratorName(location=locate(kind) or Location("<config>"), source=source, reason=str(exc))
            )
            return None

    if isinstance(spec, str):
        return AcceleratorLevel(source, fix_form, locate(None), lookup(spec, None), True), found
    entries = []
    for kind, name in spec.items():
        acc = lookup(str(name), kind)
        if acc is not None and acc.device != kind:
            found.append(
                AcceleratorKindMismatch(
                    location=locate(kind) or Location("<config>"),
                    source=source,
                    kind=kind,
                    accelerator=acc.name,
                    accelerator_kind=acc.device,
                    assumed=device_kind(kind).assumed_accelerator,
                )
            )
            continue
        entries.append((kind, acc))
    return AcceleratorLevel(source, fix_form, locate(None), by_kind=tuple(entries)), found


def accelerator_levels(
    path: str,
    options: ReadOptions,
    hardware_spec=None,
    locate_in_recipe: Callable[[str | None], Location] | None = None,
) -> tuple[list[AcceleratorLevel], list[ReadProblem]]:
    """The places that name accelerators for one file, in order: --accelerator, the recipe's `hardware.accelerator`
    (`locate_in_recipe(kind)`: where it names the one for `kind`, None: its single name), `[tool.sapo-lint]
    accelerator`."""
    levels, found = [], []
    for spec, source, form, locate in (
        (options.cli_accelerator, "--accelerator", SETTINGS_FORM, lambda kind: Location(path)),
        (hardware_spec, "`hardware.accelerator`", RECIPE_FORM, locate_in_recipe),
        (options.accelerator, "[tool.sapo-lint] accelerator", SETTINGS_FORM, lambda kind: Location(path)),
    ):
        lv, problems = level(spec, source, form, locate)
        found.extend(problems)
        if lv is not None:
            levels.append(lv)
    return levels, found


def choose(command: Command, levels: list[AcceleratorLevel]) -> tuple[Accelerator | None, ReadProblem | None]:
    """The accelerator to check `command` on (None: the name given for it is unknown), and RF010 when a single name
    contradicts the device the command states."""
    stated = stated_device(command)
    for lv in levels:
        if lv.named:
            acc = lv.single
            if acc is None or stated is None or acc.device == stated.kind:
                return acc, None
            instead = assumed_accelerator(
                stated.kind,
                f"assumed for {stated.kind} ({stated.evidence}; {lv.source} names {device_kind(acc.device).article})",
            )
            names = {acc.device: acc.name, stated.kind: instead.name}
            return instead, VariantDeviceMismatch(
                location=lv.location or command.origin or Location("<config>"),
                source=lv.source,
                kind=stated.kind,
                evidence=stated.evidence,
                accelerator=acc.name,
                accelerator_kind=acc.device,
                assumed=instead.name,
                fix_form=lv.fix_form.format(**names),
            )
        kind = (stated or device_of(command)).kind
        for entry_kind, acc in lv.by_kind:
            if entry_kind == kind:
                return acc, None
    evidence = device_of(command)
    return assumed_accelerator(evidence.kind, f"assumed for {evidence.kind} ({evidence.evidence})"), None


__all__ = ["RECIPE_FORM", "SETTINGS_FORM", "AcceleratorLevel", "accelerator_levels", "choose", "level"]
