"""Which accelerator this machine has, and how many devices this process may use: pure and injectable.

Public:

* ``DeviceFacts(kind, count, how)``: ``kind`` "npu" | "gpu" | None, ``count`` the devices visible to a process
  started with this environment, ``how`` one line saying what decided it (or what was looked for).
* ``DeviceProbe``: the look-ups, as callables (tests pass fakes); ``DEFAULT_PROBE`` is the real, cheap one.
* ``detect_device(requested, env, probe=DEFAULT_PROBE) -> DeviceFacts``.
* ``visible_count(total, value, cuda=False) -> int``: devices left by ``ASCEND_RT_VISIBLE_DEVICES`` /
  ``CUDA_VISIBLE_DEVICES``.

What each kind is probed by, and which variable limits its devices, is its record (`core.device.DeviceKind`,
from schemas/devices.json `kinds`); the kinds are probed in the data's order.

Decision order: an explicit ``requested`` ("npu" | "gpu", the launcher's ``--device``) wins; then the ``DEVICE``
environment variable (as verl's example scripts use it: npu | gpu, ``cuda`` read as gpu; ``auto`` or empty means
probe; anything else is ignored and named in ``how``); then the probe. The probe looks for devices, Ascend first:
``/dev/davinci<N>`` device nodes, else ``npu-smi info``; then NVIDIA: ``/dev/nvidia<N>``, else ``nvidia-smi -L``.
Devices beat packages: a machine with NVIDIA GPUs and a stray ``torch_npu`` is "gpu". When no device of either kind
is found but ``torch_npu`` is findable (``importlib.util.find_spec``, which does not import it), the kind is "npu"
with count 0 -- an Ascend software stack without visible devices (verl's own platform detection picks NPU as soon
as ``torch_npu`` imports); otherwise the kind is None with count 0.

Nothing here imports torch or torch_npu; the commands run with argv lists, a short timeout, and any failure
(missing binary, non-zero exit, timeout) reads as "not found".
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Mapping
from typing import NamedTuple

from sapo_toolkit.linter.core.device import DeviceKind, device_kind, device_kinds, kind_named

SMI_TIMEOUT_S = 5.0
ASCEND_VISIBLE = device_kind("npu").visible_devices_env
CUDA_VISIBLE = device_kind("gpu").visible_devices_env


class DeviceFacts(NamedTuple):
    kind: str | None  # "npu" | "gpu" | None
    count: int  # devices visible to a process started with the given environment
    how: str  # what decided it, or what was looked for


class DeviceProbe(NamedTuple):
    """The machine look-ups `detect_device` makes, each cheap and side-effect free.

    * ``device_nodes(pattern) -> list[str]``: paths matching a glob (``/dev/davinci[0-9]*``).
    * ``run(argv) -> str | None``: a command's stdout, None when it is missing, fails or times out.
    * ``module_findable(name) -> bool``: whether a top-level module could be imported (not importing it).
    """

    device_nodes: Callable[[str], list[str]]
    run: Callable[[list[str]], str | None]
    module_findable: Callable[[str], bool]


def _device_nodes(pattern: str) -> list[str]:
    try:
        return sorted(glob.glob(pattern))
    except OSError:
        return []


def _run(argv: list[str]) -> str | None:
    """stdout of `argv` (no shell), or None: binary not on PATH, non-zero exit, timeout, any OS error."""
    import shutil
    import subprocess

    if not argv or shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=SMI_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.stdout if done.returncode == 0 else None


def _module_findable(name: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(name) is not None
    except (ImportError, ValueError):
        return False


DEFAULT_PROBE = DeviceProbe(_device_nodes, _run, _module_findable)

# ------------------------------------------------------------------------------------------------ parsing

# A device's line of its kind's listing (`DeviceKind.list_line`): a chip row of `npu-smi info` carries the chip's
# PCI bus id (`| 0     0   | 0000:C1:00.0  | ...`), counting them counts the logical devices (on A3 one per die) that
# ASCEND_RT_VISIBLE_DEVICES indexes; `nvidia-smi -L` lists `GPU 0: NVIDIA H200 (UUID: ...)`, with MIG lines below.


def listed_count(kind: DeviceKind, output: str | None) -> int:
    """Devices listed by the kind's listing command: the lines that match its `list_line`; 0 for None."""
    return sum(1 for line in (output or "").splitlines() if kind.list_line.search(line))


def numbered_nodes(paths: list[str], prefix: str) -> list[str]:
    """The paths that are `prefix` + digits (`/dev/davinci3`, not `/dev/davinci_manager` or `/dev/nvidiactl`)."""
    return [p for p in paths if p.startswith(prefix) and p[len(prefix) :].isdigit()]


def npu_smi_count(output: str | None) -> int:
    """Devices listed by `npu-smi info`: its chip rows, each with a PCI bus id; 0 for None or no rows."""
    return listed_count(device_kind("npu"), output)


def nvidia_smi_count(output: str | None) -> int:
    """GPUs listed by `nvidia-smi -L` (`GPU 0: NVIDIA H200 (UUID: ...)`; MIG lines below a GPU are not counted)."""
    return listed_count(device_kind("gpu"), output)


def visible_count(total: int, value: str | None, cuda: bool = False) -> int:
    """Devices a process sees out of `total` when the visibility variable is `value` (None: unset, all of them).

    The variable lists logical device indices (0..total-1), comma-separated; an empty value hides every device.
    CUDA (`cuda=True`) stops at the first invalid entry, as CUDA documents for CUDA_VISIBLE_DEVICES (so `-1` hides
    all); `GPU-<uuid>` / `MIG-<uuid>` entries count as one device each. For ASCEND_RT_VISIBLE_DEVICES an entry
    that is not an index of an existing device is skipped. Duplicates count once.
    """
    if value is None:
        return total
    seen: set[str] = set()
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            if cuda:
                break
            continue
        if entry.isdigit() and int(entry) < total:
            seen.add(str(int(entry)))
        elif cuda and entry.upper().startswith(("GPU-", "MIG-")):
            seen.add(entry)
        elif cuda:
            break
    return min(len(seen), total)


# ------------------------------------------------------------------------------------------------ probing


class _Found(NamedTuple):
    total: int
    source: str  # where the devices were seen


def _found(kind: DeviceKind, probe: DeviceProbe) -> _Found:
    """The kind's devices: its device nodes `<prefix><N>`, else the device lines of its listing command."""
    prefix = kind.device_nodes
    nodes = numbered_nodes(probe.device_nodes(prefix + "[0-9]*"), prefix)
    if nodes:
        return _Found(len(nodes), f"{len(nodes)} device node(s) {prefix}<N>")
    listed = listed_count(kind, probe.run(list(kind.list_command)))
    if listed:
        return _Found(listed, f"{listed} {kind.listed} in `{' '.join(kind.list_command)}`")
    return _Found(0, "")


def _facts(kind: DeviceKind, found: _Found, env: Mapping[str, str], decided_by: str) -> DeviceFacts:
    variable = kind.visible_devices_env
    value = env.get(variable)
    count = visible_count(found.total, value, cuda=kind.visible_devices_stop_at_invalid)
    seen = found.source or f"no {kind.vendor} devices ({kind.looked_for})"
    limited = f"; {variable}={value!r} leaves {count}" if value is not None else ""
    return DeviceFacts(kind.name, count, f"{decided_by}: {seen}{limited}")


def _from_env(value: str | None) -> DeviceKind | None:
    """DEVICE's value as a kind: a kind's name or alias (npu | gpu, cuda too), None for unset/empty/auto/anything
    else."""
    return kind_named(value)


def detect_device(requested: str | None, env: Mapping[str, str], probe: DeviceProbe = DEFAULT_PROBE) -> DeviceFacts:
    """The device kind and visible count (module docstring: the order of decision). `requested` is "npu", "gpu",
    "auto" or None (both mean: the DEVICE variable, else the probe); anything else raises ValueError."""
    kinds = device_kinds()
    if requested not in (None, "auto", *kinds):
        raise ValueError(f"--device must be {_either(['auto', *kinds])}, not {requested!r}")
    if requested in kinds:
        kind = kinds[requested]
        return _facts(kind, _found(kind, probe), env, f"--device {requested}")
    note = ""
    device_env = env.get("DEVICE")
    kind = _from_env(device_env)
    if kind is not None:
        return _facts(kind, _found(kind, probe), env, f"DEVICE={device_env}")
    if device_env and device_env.strip().lower() != "auto":
        note = f" (DEVICE={device_env!r} ignored: not {_either([*kinds, 'auto'])})"
    for kind in kinds.values():  # devices beat packages: every kind's devices are looked for first
        found = _found(kind, probe)
        if found.total:
            return _facts(kind, found, env, "probe" + note)
    for kind in kinds.values():
        if kind.package is not None and probe.module_findable(kind.package):
            others = " or ".join(k.vendor for k in kinds.values() if k is not kind)
            return DeviceFacts(
                kind.name,
                0,
                "probe" + note + f": {kind.package} is installed but no {kind.vendor} device is visible "
                f"({kind.looked_for}) and no {others} device either",
            )
    looked = " and ".join(
        f"no {k.vendor} device ({k.looked_for}{', ' + k.package if k.package else ''})" for k in kinds.values()
    )
    return DeviceFacts(None, 0, "probe" + note + ": " + looked)


def _either(names: list[str]) -> str:
    """`auto, npu or gpu`."""
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else "".join(names)


__all__ = [
    "ASCEND_VISIBLE",
    "CUDA_VISIBLE",
    "DEFAULT_PROBE",
    "DeviceFacts",
    "DeviceProbe",
    "detect_device",
    "npu_smi_count",
    "numbered_nodes",
    "nvidia_smi_count",
    "visible_count",
]
