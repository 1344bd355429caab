"""launcher/device.py: device detection with fake probes for every branch, the visibility variables, the output
parsers, and the real (cheap, torch-free) default probe."""

import subprocess
import sys

import pytest

from sapo_toolkit.launcher import device
from sapo_toolkit.launcher.device import (
    DEFAULT_PROBE,
    DeviceFacts,
    DeviceProbe,
    detect_device,
    npu_smi_count,
    numbered_nodes,
    nvidia_smi_count,
    visible_count,
)

# `npu-smi info` as npu-smi 23.x lays it out on an Atlas 800T A2 (two of its eight 910B3 chips shown): one chip row
# per device, with its bus id. Reconstructed from the tool's documented layout, not captured on a machine here.
NPU_SMI_A2 = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.6                   Version: 23.0.6                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 93.1        40                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3160 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | OK            | 90.0        38                0    / 0             |
| 0                         | 0000:C2:00.0  | 0           0    / 0          3161 / 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| No running processes found in NPU 0                                                            |
+===========================+===============+====================================================+
"""
# An A3 card: two dies (chips) per NPU, each its own logical device.
NPU_SMI_A3 = """\
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     Ascend910           | OK            | 167.1       39                0    / 0             |
| 0     0                   | 0000:9D:00.0  | 0           0    / 0          3394 / 65536         |
| 1     1                   | 0000:9F:00.0  | 0           0    / 0          3169 / 65536         |
+===========================+===============+====================================================+
"""
NVIDIA_SMI = """\
GPU 0: NVIDIA H200 (UUID: GPU-6a2b3c4d-0000-1111-2222-333344445555)
GPU 1: NVIDIA H200 (UUID: GPU-7a2b3c4d-0000-1111-2222-333344445555)
  MIG 1g.18gb     Device  0: (UUID: MIG-11112222-3333-4444-5555-666677778888)
"""


def fake_probe(nodes=(), outputs=None, modules=()):
    """A probe over a fake /dev (paths), fake command outputs (argv[0] -> stdout) and findable modules; it records
    the commands it was asked to run."""
    calls = []

    def device_nodes(pattern: str) -> list[str]:
        prefix = pattern.split("[")[0]
        return sorted(p for p in nodes if p.startswith(prefix))

    def run(argv):
        calls.append(list(argv))
        return (outputs or {}).get(argv[0])

    probe = DeviceProbe(device_nodes, run, lambda name: name in modules)
    return probe, calls


ASCEND8 = [f"/dev/davinci{i}" for i in range(8)] + ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]
NVIDIA4 = [f"/dev/nvidia{i}" for i in range(4)] + ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-modeset"]


# ------------------------------------------------------------------------------------------------ parsers


def test_numbered_nodes_skip_control_nodes():
    assert numbered_nodes(ASCEND8, "/dev/davinci") == [f"/dev/davinci{i}" for i in range(8)]
    assert numbered_nodes(NVIDIA4, "/dev/nvidia") == [f"/dev/nvidia{i}" for i in range(4)]
    assert numbered_nodes(["/dev/davinci10", "/dev/davinci1x"], "/dev/davinci") == ["/dev/davinci10"]


@pytest.mark.parametrize(
    ("output", "count"), [(NPU_SMI_A2, 2), (NPU_SMI_A3, 2), ("", 0), (None, 0), ("npu-smi: command failed\n", 0)]
)
def test_npu_smi_count(output, count):
    assert npu_smi_count(output) == count


def test_nvidia_smi_count_ignores_mig_lines():
    assert nvidia_smi_count(NVIDIA_SMI) == 2
    assert nvidia_smi_count(None) == 0
    assert nvidia_smi_count("No devices found.\n") == 0


@pytest.mark.parametrize(
    ("total", "value", "cuda", "expected"),
    [
        (8, None, False, 8),  # unset: all
        (8, "0,1,2,3", False, 4),
        (8, "0, 1 ,1", False, 2),  # spaces, duplicates
        (8, "", False, 0),  # empty hides all
        (8, "6,7,8,9", False, 2),  # indices past the devices present do not count
        (8, "0,x,2", False, 2),  # Ascend: a bad entry is skipped
        (4, "0,1", True, 2),
        (4, "", True, 0),
        (4, "-1", True, 0),  # CUDA: the first invalid index ends the list
        (4, "0,1,-1,2", True, 2),
        (4, "0,7,1", True, 1),
        (4, "GPU-6a2b3c4d,GPU-7a2b3c4d", True, 2),  # UUIDs count one device each
        (1, "0,GPU-6a2b3c4d", True, 1),  # never more than present
    ],
)
def test_visible_count(total, value, cuda, expected):
    assert visible_count(total, value, cuda=cuda) == expected


# ------------------------------------------------------------------------------------------------ detect_device


def test_probe_finds_ascend_device_nodes_without_running_npu_smi():
    probe, calls = fake_probe(nodes=ASCEND8)
    facts = detect_device(None, {}, probe)
    assert facts == DeviceFacts("npu", 8, facts.how)
    assert facts.how.startswith("probe:") and "/dev/davinci<N>" in facts.how
    assert calls == []  # the device nodes were enough


def test_probe_falls_back_to_npu_smi():
    probe, calls = fake_probe(outputs={"npu-smi": NPU_SMI_A2})
    facts = detect_device(None, {}, probe)
    assert (facts.kind, facts.count) == ("npu", 2)
    assert "npu-smi info" in facts.how
    assert calls == [["npu-smi", "info"]]


def test_probe_ascend_first_when_both_are_present():
    probe, _ = fake_probe(nodes=ASCEND8 + NVIDIA4)
    assert detect_device(None, {}, probe).kind == "npu"


def test_probe_finds_nvidia_device_nodes():
    probe, calls = fake_probe(nodes=NVIDIA4)
    facts = detect_device(None, {}, probe)
    assert (facts.kind, facts.count) == ("gpu", 4)
    assert calls == [["npu-smi", "info"]]  # Ascend was looked for first


def test_probe_falls_back_to_nvidia_smi():
    probe, calls = fake_probe(outputs={"nvidia-smi": NVIDIA_SMI})
    facts = detect_device(None, {}, probe)
    assert (facts.kind, facts.count) == ("gpu", 2)
    assert calls == [["npu-smi", "info"], ["nvidia-smi", "-L"]]


def test_devices_beat_an_installed_torch_npu():
    probe, _ = fake_probe(nodes=NVIDIA4, modules={"torch_npu"})
    assert detect_device(None, {}, probe).kind == "gpu"


def test_torch_npu_findable_alone_is_npu_with_no_devices():
    probe, _ = fake_probe(modules={"torch_npu"})
    facts = detect_device(None, {}, probe)
    assert (facts.kind, facts.count) == ("npu", 0)
    assert "torch_npu is installed but no Ascend device is visible" in facts.how


def test_nothing_found_says_what_was_looked_for():
    probe, _ = fake_probe()
    facts = detect_device(None, {}, probe)
    assert (facts.kind, facts.count) == (None, 0)
    for looked_for in ("/dev/davinci<N>", "npu-smi info", "torch_npu", "/dev/nvidia<N>", "nvidia-smi -L"):
        assert looked_for in facts.how


@pytest.mark.parametrize("requested", [None, "auto"])
def test_auto_and_none_probe(requested):
    probe, _ = fake_probe(nodes=NVIDIA4)
    assert detect_device(requested, {}, probe).kind == "gpu"


def test_explicit_device_wins_over_env_and_probe():
    probe, _ = fake_probe(nodes=ASCEND8 + NVIDIA4)
    facts = detect_device("gpu", {"DEVICE": "npu"}, probe)
    assert (facts.kind, facts.count) == ("gpu", 4)
    assert facts.how.startswith("--device gpu")


def test_explicit_device_without_devices_counts_zero():
    probe, _ = fake_probe(nodes=NVIDIA4)
    facts = detect_device("npu", {}, probe)
    assert (facts.kind, facts.count) == ("npu", 0)
    assert "no Ascend devices" in facts.how


@pytest.mark.parametrize(("value", "kind"), [("npu", "npu"), ("gpu", "gpu"), ("cuda", "gpu"), (" NPU ", "npu")])
def test_device_env_wins_over_probe(value, kind):
    probe, _ = fake_probe(nodes=ASCEND8 + NVIDIA4)
    facts = detect_device(None, {"DEVICE": value}, probe)
    assert facts.kind == kind
    assert facts.how.startswith(f"DEVICE={value}")


@pytest.mark.parametrize("value", ["auto", "", "AUTO"])
def test_device_env_auto_or_empty_probes(value):
    probe, _ = fake_probe(nodes=NVIDIA4)
    facts = detect_device(None, {"DEVICE": value}, probe)
    assert facts.kind == "gpu" and facts.how.startswith("probe")
    assert "ignored" not in facts.how


def test_unknown_device_env_is_ignored_and_named():
    probe, _ = fake_probe(nodes=NVIDIA4)
    facts = detect_device(None, {"DEVICE": "/dev/sda"}, probe)
    assert facts.kind == "gpu"
    assert "DEVICE='/dev/sda' ignored" in facts.how


def test_visibility_variables_limit_the_count():
    probe, _ = fake_probe(nodes=ASCEND8 + NVIDIA4)
    npu = detect_device("npu", {"ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3"}, probe)
    assert npu.count == 4 and "ASCEND_RT_VISIBLE_DEVICES='0,1,2,3' leaves 4" in npu.how
    gpu = detect_device("gpu", {"CUDA_VISIBLE_DEVICES": "", "ASCEND_RT_VISIBLE_DEVICES": "0"}, probe)
    assert gpu.count == 0  # only the kind's own variable counts
    assert detect_device("npu", {"CUDA_VISIBLE_DEVICES": "0"}, probe).count == 8


def test_bad_requested_device_raises():
    probe, _ = fake_probe()
    with pytest.raises(ValueError, match="--device must be auto, npu or gpu"):
        detect_device("tpu", {}, probe)


# ------------------------------------------------------------------------------------------------ the real probe


def test_default_probe_runs_on_this_machine():
    facts = detect_device(None, {}, DEFAULT_PROBE)
    assert facts.kind in ("npu", "gpu", None)
    assert facts.count >= 0 and facts.how


def test_run_swallows_failures(monkeypatch):
    assert device._run(["sapo-no-such-binary-here"]) is None
    assert device._run([]) is None
    assert device._run([sys.executable, "-c", "import sys; sys.exit(3)"]) is None
    assert device._run([sys.executable, "-c", "print('GPU 0: x')"]) == "GPU 0: x\n"
    monkeypatch.setattr(device, "SMI_TIMEOUT_S", 0.2)
    assert device._run([sys.executable, "-c", "import time; time.sleep(5)"]) is None


def test_module_findable_does_not_import():
    assert device._module_findable("json") is True
    assert device._module_findable("sapo_no_such_module") is False


def test_device_and_versions_import_nothing_heavy():
    code = (
        "import sys, sapo_toolkit.launcher.device, sapo_toolkit.launcher.versions; "
        "from sapo_toolkit.launcher.device import DEFAULT_PROBE, detect_device; detect_device(None, {}, "
        "DEFAULT_PROBE); print(sorted(m for m in ('torch', 'torch_npu', 'rich', 'vllm', 'ray', 'megatron') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
