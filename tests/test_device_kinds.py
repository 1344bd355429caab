"""core/device.py's `DeviceKind` records (schemas/devices.json `kinds`): the shipped kinds hold what the code used to
keep in per-kind tables, and a third kind is data: a devices document with a ROCm kind (not shipped) goes through the
code paths that only read records -- detection, the visibility variable, device words, tests in scripts, Ray's
resource name, the estimate's collective buffers."""

import json
from types import SimpleNamespace

import pytest

from sapo_toolkit.launcher.device import DeviceProbe, detect_device
from sapo_toolkit.launcher.executors.ray_submit import resource_shortfall
from sapo_toolkit.linter.catalog import accelerators, assumed_accelerator
from sapo_toolkit.linter.core import device as core
from sapo_toolkit.linter.sources.bash import conditions

ROCM = {
    "label": "GPU",
    "article": "an AMD GPU",
    "vendor": "AMD",
    "aliases": ["hip"],
    "words": ["rocm", "amd", "hip"],
    "other": None,
    "collective": "RCCL",
    "collective_buffer_env": None,
    "collective_timeout_env": None,
    "visible_devices_env": "HIP_VISIBLE_DEVICES",
    "visible_devices_stop_at_invalid": True,
    "probe": {
        "device_nodes": "/dev/dri/renderD",
        "list_command": ["rocm-smi", "--showid"],
        "list_line": r"^GPU\[\d+\]\s*: Device ID",
        "listed": "GPU(s)",
        "package": None,
    },
    "ray_resource": "GPU",
    "assumed_accelerator": "amd-mi300x",
    "sleep_keeps_weights_on_host": False,
    "software": r"\brocm-smi\b|/opt/rocm\b",
    "default": False,
}


def _clear_caches() -> None:
    core.device_kinds.cache_clear()
    conditions._device_text.cache_clear()


@pytest.fixture
def with_rocm(tmp_path, monkeypatch):
    """The shipped devices document with a third kind, ROCm, after the two shipped ones."""
    document = json.loads(core.DEVICES_FILE.read_text(encoding="utf-8"))
    document["kinds"]["rocm"] = ROCM
    path = tmp_path / "devices.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    monkeypatch.setattr(core, "DEVICES_FILE", path)
    _clear_caches()
    yield core.device_kind("rocm")
    monkeypatch.undo()
    _clear_caches()


def test_shipped_kinds_hold_what_the_code_branched_on():
    npu, gpu = core.device_kind("npu"), core.device_kind("gpu")
    assert core.kind_names() == ("npu", "gpu")  # the probe order: Ascend first
    assert (npu.collective, gpu.collective) == ("HCCL", "NCCL")
    assert (npu.visible_devices_env, gpu.visible_devices_env) == ("ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
    assert (npu.other, gpu.other) == ("gpu", "npu")
    assert (npu.assumed_accelerator, gpu.assumed_accelerator) == ("ascend-910b3", "nvidia-h100")
    assert npu.sleep_keeps_weights_on_host and not gpu.sleep_keeps_weights_on_host
    assert (npu.collective_buffer_env, gpu.collective_buffer_env) == ("HCCL_BUFFSIZE", None)
    assert (npu.package, gpu.package) == ("torch_npu", None)
    assert npu.mindspeed and not gpu.mindspeed and gpu.default and not npu.default
    assert (npu.article, gpu.article) == ("an NPU", "a GPU")
    assert (npu.ray_resource, gpu.ray_resource) == ("NPU", "GPU")
    assert core.kind_named("CUDA") is gpu and core.kind_named("auto") is None
    assert core.device_words() == {"npu": "npu", "ascend": "npu", "gpu": "gpu", "cuda": "gpu", "nvidia": "gpu"}
    for kind in (npu, gpu):  # each assumed accelerator is a device of its kind
        assert accelerators()[kind.assumed_accelerator].device == kind.name
        assert assumed_accelerator(kind.name, "assumed").name == kind.assumed_accelerator


def test_the_data_is_read_once():
    assert core.device_kinds() is core.device_kinds()


def test_a_document_names_exactly_one_default_kind():
    document = json.loads(core.DEVICES_FILE.read_text(encoding="utf-8"))
    document["kinds"]["npu"]["default"] = True
    with pytest.raises(ValueError, match="one default kind"):
        core.load_device_kinds(document)


def _probe(nodes: dict[str, int], listings: dict[str, str] | None = None) -> DeviceProbe:
    def device_nodes(pattern: str) -> list[str]:
        prefix = pattern.removesuffix("[0-9]*")
        return [f"{prefix}{i}" for i in range(nodes.get(prefix, 0))]

    return DeviceProbe(device_nodes, lambda argv: (listings or {}).get(argv[0]), lambda name: False)


def test_a_third_kind_is_detected_from_its_record(with_rocm):
    assert core.kind_names() == ("npu", "gpu", "rocm")
    probe = _probe({"/dev/dri/renderD": 8})
    facts = detect_device(None, {"HIP_VISIBLE_DEVICES": "0,1"}, probe)
    assert facts.kind == "rocm" and facts.count == 2
    assert "8 device node(s) /dev/dri/renderD<N>" in facts.how and "HIP_VISIBLE_DEVICES='0,1' leaves 2" in facts.how
    # asked for by name or alias, counted from its listing command
    listing = "GPU[0]\t\t: Device ID: 0x74a1\nGPU[1]\t\t: Device ID: 0x74a1\n"
    asked = detect_device("rocm", {}, _probe({}, {"rocm-smi": listing}))
    assert asked == ("rocm", 2, "--device rocm: 2 GPU(s) in `rocm-smi --showid`")
    assert detect_device(None, {"DEVICE": "hip"}, _probe({}, {"rocm-smi": listing}))[:2] == ("rocm", 2)
    # the shipped kinds are still probed first, and nothing found names all three
    assert detect_device(None, {}, _probe({"/dev/nvidia": 4, "/dev/dri/renderD": 8})).kind == "gpu"
    nothing = detect_device(None, {}, _probe({}))
    assert nothing.kind is None and "no AMD device (/dev/dri/renderD<N>, rocm-smi --showid)" in nothing.how
    with pytest.raises(ValueError, match="auto, npu, gpu or rocm"):
        detect_device("tpu", {}, probe)


def test_a_third_kind_in_scripts_and_messages(with_rocm):
    assert core.device_word("AMD") == "rocm" and core.device_word('"rocm"') == "rocm"
    assert core.named_device("/x/examples/rocm/run_qwen.sh").kind == "rocm"
    # a test for it says what its branch runs on; its else names no kind (the data gives it no other)
    assert conditions._compared("$DEVICE", "==", "rocm") == ("rocm", None)
    assert conditions._compared("$DEVICE", "!=", "npu") == ("gpu", "npu")
    assert conditions._device_text().search(b"if [ $D == hip ]")
    assert core.software_kind("source /opt/rocm/env.sh") is with_rocm
    assert core.software_kind("npu-smi info").name == "npu"
    assert core.default_kind().name == "gpu"  # a command that names no kind still runs on GPU


def test_a_third_kind_on_ray_and_in_the_estimate(with_rocm):
    plan = SimpleNamespace(nnodes=2, devices_per_node=8, device="rocm")
    assert resource_shortfall(plan, [{"GPU": 8.0}]) == "the cluster has 8 GPU, the recipe needs 16 (2 nodes x 8)"
    assert resource_shortfall(plan, [{"GPU": 8.0}, {"GPU": 8.0}]) is None
    assert with_rocm.collective_buffer_env is None and not with_rocm.sleep_keeps_weights_on_host
