"""Which accelerator this machine has, and how many devices this process may use: pure and injectable.

Public:

* ``DeviceFacts(kind, count, how)``: ``kind`` "npu" | "gpu" | None, ``count`` the devices visible to a process
  started with this environment, ``how`` one line saying what decided it (or what was looked for).
* ``DeviceProbe``: the look-ups, as callables (tests pass fakes); ``DEFAULT_PROBE`` is the real, cheap one.
* ``detect_device(requested, env, probe=DEFAULT_PROBE) -> DeviceFacts``.
* ``visible_count(total, value, cuda=False) -> int``: devices left by ``ASCEND_RT_VISIBLE_DEVICES`` /
  ``CUDA_VISIBLE_DEVICES``.

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
import re
from collections.abc import Callable, Mapping
from typing import NamedTuple

SMI_TIMEOUT_S = 5.0
ASCEND_VISIBLE = "ASCEND_RT_VISIBLE_DEVICES"
CUDA_VISIBLE = "CUDA_VISIBLE_DEVICES"
KINDS = ("npu", "gpu")


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

# A chip row of `npu-smi info` carries the chip's PCI bus id (`| 0     0   | 0000:C1:00.0  | ...`); counting
# them counts the logical devices (on A3 one per die) that ASCEND_RT_VISIBLE_DEVICES indexes.
_BUS_ID = re.compile(r"\|\s*[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\s*\|")
_NVIDIA_GPU_LINE = re.compile(r"^GPU \d+:", re.MULTILINE)


def numbered_nodes(paths: list[str], prefix: str) -> list[str]:
    """The paths that are `prefix` + digits (`/dev/davinci3`, not `/dev/davinci_manager` or `/dev/nvidiactl`)."""
    return [p for p in paths if p.startswith(prefix) and p[len(prefix) :].isdigit()]


def npu_smi_count(output: str | None) -> int:
    """Devices listed by `npu-smi info`: its chip rows, each with a PCI bus id; 0 for None or no rows."""
    if not output:
        return 0
    return sum(1 for line in output.splitlines() if _BUS_ID.search(line))


def nvidia_smi_count(output: str | None) -> int:
    """GPUs listed by `nvidia-smi -L` (`GPU 0: NVIDIA H200 (UUID: ...)`; MIG lines below a GPU are not counted)."""
    return len(_NVIDIA_GPU_LINE.findall(output or ""))


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


def _ascend(probe: DeviceProbe) -> _Found:
    nodes = numbered_nodes(probe.device_nodes("/dev/davinci[0-9]*"), "/dev/davinci")
    if nodes:
        return _Found(len(nodes), f"{len(nodes)} device node(s) /dev/davinci<N>")
    listed = npu_smi_count(probe.run(["npu-smi", "info"]))
    if listed:
        return _Found(listed, f"{listed} device(s) in `npu-smi info`")
    return _Found(0, "")


def _nvidia(probe: DeviceProbe) -> _Found:
    nodes = numbered_nodes(probe.device_nodes("/dev/nvidia[0-9]*"), "/dev/nvidia")
    if nodes:
        return _Found(len(nodes), f"{len(nodes)} device node(s) /dev/nvidia<N>")
    listed = nvidia_smi_count(probe.run(["nvidia-smi", "-L"]))
    if listed:
        return _Found(listed, f"{listed} GPU(s) in `nvidia-smi -L`")
    return _Found(0, "")


def _facts(kind: str, found: _Found, env: Mapping[str, str], decided_by: str) -> DeviceFacts:
    variable = ASCEND_VISIBLE if kind == "npu" else CUDA_VISIBLE
    value = env.get(variable)
    count = visible_count(found.total, value, cuda=kind == "gpu")
    seen = found.source or (
        "no Ascend devices (/dev/davinci<N>, npu-smi info)"
        if kind == "npu"
        else "no NVIDIA devices (/dev/nvidia<N>, nvidia-smi -L)"
    )
    limited = f"; {variable}={value!r} leaves {count}" if value is not None else ""
    return DeviceFacts(kind, count, f"{decided_by}: {seen}{limited}")


def _from_env(value: str | None) -> str | None:
    """DEVICE's value as a kind: npu | gpu (cuda too), None for unset/empty/auto/anything else."""
    v = (value or "").strip().lower()
    return {"npu": "npu", "gpu": "gpu", "cuda": "gpu"}.get(v)


def detect_device(requested: str | None, env: Mapping[str, str], probe: DeviceProbe = DEFAULT_PROBE) -> DeviceFacts:
    """The device kind and visible count (module docstring: the order of decision). `requested` is "npu", "gpu",
    "auto" or None (both mean: the DEVICE variable, else the probe); anything else raises ValueError."""
    if requested not in (None, "auto", *KINDS):
        raise ValueError(f"--device must be auto, npu or gpu, not {requested!r}")
    if requested in KINDS:
        return _facts(requested, _ascend(probe) if requested == "npu" else _nvidia(probe), env, f"--device {requested}")
    note = ""
    device_env = env.get("DEVICE")
    kind = _from_env(device_env)
    if kind is not None:
        return _facts(kind, _ascend(probe) if kind == "npu" else _nvidia(probe), env, f"DEVICE={device_env}")
    if device_env and device_env.strip().lower() != "auto":
        note = f" (DEVICE={device_env!r} ignored: not npu, gpu or auto)"
    ascend = _ascend(probe)
    if ascend.total:
        return _facts("npu", ascend, env, "probe" + note)
    nvidia = _nvidia(probe)
    if nvidia.total:
        return _facts("gpu", nvidia, env, "probe" + note)
    if probe.module_findable("torch_npu"):
        return DeviceFacts(
            "npu",
            0,
            "probe" + note + ": torch_npu is installed but no Ascend device is visible "
            "(/dev/davinci<N>, npu-smi info) and no NVIDIA device either",
        )
    return DeviceFacts(
        None,
        0,
        "probe" + note + ": no Ascend device (/dev/davinci<N>, npu-smi info, torch_npu) and "
        "no NVIDIA device (/dev/nvidia<N>, nvidia-smi -L)",
    )


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
