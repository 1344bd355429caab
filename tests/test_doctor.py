"""launcher/versions.py and launcher/doctor/: version parsing, the vLLM NPU patch variant, the compatibility
table (checked against the real verl wheels and the mbridge snapshots), every doctor check over fake inputs, and
the `doctor` command end to end on this machine's real state."""

import io
import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from sapo_toolkit.launcher import doctor as doctor_module
from sapo_toolkit.launcher.cli.doctor import doctor
from sapo_toolkit.launcher.device import DeviceProbe
from sapo_toolkit.launcher.doctor import (
    ADVISORY,
    BLOCKING,
    OK,
    DoctorError,
    RecipeFacts,
    VariantFacts,
    doctor_report,
    read_cann,
    read_recipe_facts,
    render_text,
)
from sapo_toolkit.launcher.doctor.checks import _gate_applies
from sapo_toolkit.launcher.versions import (
    PACKAGES,
    VersionError,
    installed_version,
    installed_versions,
    load_compatibility,
    mbridge_save_weights_params,
    parse_version,
    same_release,
    save_weights_params,
    spellings,
    version_tuple,
    vllm_patch_variant,
)
from sapo_toolkit.schemas import __file__ as schemas_init

from .helpers import REPO, fetch_wheel, recipe

TABLE = load_compatibility()
TOOLKIT = "/usr/local/Ascend/ascend-toolkit/latest"
INFO = f"{TOOLKIT}/aarch64-linux/ascend_toolkit_install.info"


# ------------------------------------------------------------------------------------------------ versions


def test_spellings_cover_dash_and_underscore():
    assert spellings("megatron-core") == ("megatron-core", "megatron_core")
    assert spellings("vllm_ascend") == ("vllm_ascend", "vllm-ascend")
    assert spellings("torch_npu") == ("torch_npu", "torch-npu")


def test_installed_versions_try_every_spelling():
    registry = {"megatron_core": "0.12.1", "vllm-ascend": "0.11.0rc1", "torch-npu": "2.7.1"}
    found = installed_versions(lookup=registry.get)
    assert list(found) == list(PACKAGES)
    assert found["megatron-core"] == "0.12.1"
    assert found["vllm-ascend"] == "0.11.0rc1"
    assert found["torch_npu"] == "2.7.1"
    assert found["torch"] is None


def test_installed_versions_from_real_metadata():
    assert installed_version("click")  # a dependency of this project
    assert installed_version("sapo-no-such-distribution") is None
    assert set(installed_versions()) == set(PACKAGES)


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("0.18.0+empty", (0, 18, 0)),
        ("0.13.0rc1", (0, 13, 0)),
        ("2.7.1.post1", (2, 7, 1)),
        ("0.11.1.dev3+g12ab", (0, 11, 1)),
        ("2.5.1.post1.dev20250619", (2, 5, 1)),
        ("8.3.RC1", (8, 3)),
        ("0.10.1.1", (0, 10, 1, 1)),
    ],
)
def test_version_tuple_is_the_release(text, release):
    assert version_tuple(text) == release


@pytest.mark.parametrize("text", ["git-main", "", "latest", "0.18.0+"])
def test_unparsable_versions_raise_a_clear_error(text):
    with pytest.raises(VersionError, match="not a version"):
        version_tuple(text)


def test_parse_version_orders_pre_and_local():
    assert parse_version("0.13.0rc1") < parse_version("0.13.0") < parse_version("0.13.0+empty")
    assert same_release("2.7.1.post1", "2.7.1") and not same_release("2.8.0", "2.7.1")


# ------------------------------------------------------------------------------------------------ patch variant


@pytest.mark.parametrize(
    ("vllm", "variant"),
    [
        ("0.18.0+empty", "v013"),  # incident 9: a local build of a vLLM newer than every closed interval
        ("0.18.0", "v013"),
        ("0.24.0", "v013"),  # open-ended
        ("1.0.0", "v013"),
        ("0.14.0.post1", "v013"),
        ("0.13.0", "v013"),
        ("0.13.0rc1", "v013"),  # a pre-release of 0.13.0 runs 0.13 code
        ("0.13.0+empty", "v013"),
        ("0.12.9", "v011"),
        ("0.12.0", "v011"),
        ("0.11.0", "v011"),
        ("0.11.0rc1", "v011"),
        ("0.10.2", None),
        ("0.9.2", None),
        (None, None),
    ],
)
def test_vllm_patch_variant(vllm, variant):
    assert vllm_patch_variant(vllm) == variant


def test_vllm_patch_variant_rejects_garbage():
    with pytest.raises(VersionError):
        vllm_patch_variant("not-a-version")


def test_vllm_patch_variant_reads_the_table():
    table = {"variants": [{"variant": "vX", "min_release": "0.20"}]}
    assert vllm_patch_variant("0.20.0+empty", table) == "vX"
    assert vllm_patch_variant("0.19.9", table) is None


def gate(verl: str) -> dict:
    return next(g for g in TABLE["verl_npu_vllm_patch_gates"]["gates"] if g["verl"].startswith(verl))


@pytest.mark.parametrize(
    ("vllm", "applied"),
    [
        ("0.18.0+empty", ()),  # incident 9: nothing applies
        ("0.18.0", ()),
        ("0.14.0+empty", ()),  # the local version sorts after 0.14.0: outside the closed interval
        ("0.14.1", ()),
        ("0.14.0", ("v013", "v013")),
        ("0.13.0", ("v013", "v013")),
        ("0.13.0+empty", ("v013", "v013")),
        ("0.13.0rc1", ("v011",)),  # verl compares full versions: the rc is below 0.13.0
        ("0.12.9", ("v011",)),
        ("0.11.0", ("v011",)),
        ("0.10.2", ()),
    ],
)
def test_verl_080_gate_as_verl_evaluates_it(vllm, applied):
    got = _gate_applies(gate("0.8.0"), vllm)
    assert tuple(name.rsplit("[", 1)[1].rstrip("]") for name in got) == applied


@pytest.mark.network
def test_gate_table_matches_the_real_verl_080_wheel():
    with zipfile.ZipFile(fetch_wheel("verl==0.8.0")) as zf:
        source = zf.read("verl/utils/vllm/npu_vllm_patch.py").decode()
    for patch in gate("0.8.0")["patches"]:
        for iv in patch["intervals"]:
            upper = "<=" if iv["max_inclusive"] else "<"
            text = (
                f'_VLLM_VERSION >= version.parse("{iv["min"]}") and _VLLM_VERSION {upper} version.parse("{iv["max"]}")'
            )
            assert text in source, text
    for exact in gate("0.8.0")["exact"]["versions"]:
        assert f'vllm.__version__ == "{exact}"' in source


@pytest.mark.network
def test_verl_091_has_no_vllm_version_gate():
    with zipfile.ZipFile(fetch_wheel("verl==0.9.1")) as zf:
        source = zf.read("verl/utils/vllm/npu_vllm_patch.py").decode()
        third_party = zf.read("verl/third_party/vllm/__init__.py").decode()
    body = source[source.index("def apply_npu_vllm_patches") :]
    assert "version.parse" not in body and "__version__" not in body
    assert "patch_vllm013_rotary_emb()" in body
    assert gate("0.9.1")["compare"] is None
    row = next(r for r in TABLE["verl_vllm"]["rows"] if r["verl"] == "0.9.1")
    assert f'vs.parse(package_version) >= vs.parse("{row["min_vllm_off_npu"]}")' in third_party


# ------------------------------------------------------------------------------------------------ the table


def test_every_table_names_its_source():
    for key, section in TABLE.items():
        if isinstance(section, dict) and key != "vllm_npu_patch_variants":
            assert section.get("source") or section.get("gates") or section.get("rows"), key
    for g in TABLE["verl_npu_vllm_patch_gates"]["gates"]:
        assert g["source"]
    for row in TABLE["verl_vllm"]["rows"]:
        assert row["source"]
    assert TABLE["vllm_npu_patch_variants"]["source"]
    for stack in TABLE["reference_stacks"]:
        assert stack["source"]


def test_table_versions_parse():
    for row in TABLE["vllm_ascend"]["rows"]:
        for v in (row["vllm_ascend"], *row["vllm"], row["torch"], row["torch_npu"]):
            parse_version(v)
        assert same_release(row["torch"], row["torch_npu"])  # the torch_npu pairing rule holds in every row
    for row in TABLE["mindspeed"]["rows"]:
        parse_version(row["megatron_core"])


def test_mbridge_features_agree_with_the_consumer_snapshots():
    consumers = Path(schemas_init).parent / "consumers"  # the installed package's snapshots, as the doctor reads
    fields = {}
    for version, name in TABLE["mbridge"]["snapshots"].items():
        fields[version] = set(json.loads((consumers / name).read_text())["classes"]["save_weights"]["fields"])
    assert "memory_efficient" in fields["0.15.1"] and "memory_efficient" in fields["git-main"]
    assert "distributed_filesystem" not in fields["0.15.1"] and "distributed_filesystem" in fields["git-main"]
    assert "strict" in fields["git-main"]


PYPI_0151 = """
class Bridge:
    def save_weights(
        self, models: list, weights_path: str, memory_efficient: bool = False
    ) -> None:
        pass
"""
GIT_MAIN = """
class Bridge:
    def save_weights(self, models: list, weights_path: str, memory_efficient: bool = False,
                     distributed_filesystem: bool = False, strict: bool = True) -> None:
        pass
"""


def test_save_weights_params_from_source_text(tmp_path):
    assert save_weights_params(PYPI_0151) == {"models", "weights_path", "memory_efficient"}
    assert save_weights_params(GIT_MAIN) == {
        "models",
        "weights_path",
        "memory_efficient",
        "distributed_filesystem",
        "strict",
    }
    assert save_weights_params("def f(:") is None
    assert save_weights_params("class A:\n    pass\n") is None
    path = tmp_path / "bridge.py"
    path.write_text(GIT_MAIN)
    assert "distributed_filesystem" in mbridge_save_weights_params(lambda: path)
    assert mbridge_save_weights_params(lambda: None) is None
    assert mbridge_save_weights_params(lambda: tmp_path / "missing.py") is None


# ------------------------------------------------------------------------------------------------ fakes


def probe(npus=0, gpus=0, modules=()):
    nodes = [f"/dev/davinci{i}" for i in range(npus)] + [f"/dev/nvidia{i}" for i in range(gpus)]
    return DeviceProbe(
        lambda pattern: [p for p in nodes if p.startswith(pattern.split("[")[0])],
        lambda argv: None,
        lambda name: name in modules,
    )


def installed(**given):
    out = dict.fromkeys(PACKAGES)
    out.update({k.replace("__", "-"): v for k, v in given.items()})
    return out


NPU_STACK = installed(
    torch="2.7.1",
    torch_npu="2.7.1",
    vllm="0.11.0",
    vllm__ascend="0.11.0rc1",
    megatron__core="0.12.1",
    mindspeed="0.12.1",
    mbridge="0.15.1",
    verl="0.9.1",
    ray="2.49.0",
)
GPU_STACK = installed(
    torch="2.9.1", vllm="0.18.0", megatron__core="0.15.3", mbridge="0.15.1", verl="0.9.1", ray="2.49.0"
)
CANN_ENV = {"ASCEND_HOME_PATH": TOOLKIT, "ASCEND_TOOLKIT_HOME": TOOLKIT, "ASCEND_OPP_PATH": f"{TOOLKIT}/opp"}


def files(version="8.3.RC1"):
    texts = {INFO: f"package_name=Ascend-cann-toolkit\nversion={version}\ninnerversion=V100R001C23\n"}
    return texts.get


def variant(label="DEVICE=npu", device="npu", n=8, nnodes=2, rollout="vllm", engine="megatron", mbridge=()):
    return VariantFacts(label, device, n, nnodes, rollout, engine, tuple(mbridge))


def recipe_facts(*variants):
    return RecipeFacts("r.yaml", "0.9.1", "0.12.1", "0.15.1", tuple(variants or (variant(),)))


def report(recipe=None, env=None, p=None, versions=None, **kw):
    kw.setdefault("read_text", files())
    kw.setdefault("machine", "aarch64")
    return doctor_report(recipe, CANN_ENV if env is None else env, p or probe(npus=8), versions or NPU_STACK, **kw)


def by(rep, check, severity=None):
    return [f for f in rep.findings if f.check == check and (severity is None or f.severity == severity)]


# ------------------------------------------------------------------------------------------------ doctor checks


def test_a_matching_npu_stack_is_not_blocking():
    rep = report(recipe_facts(variant(n=8)))
    assert rep.exit_code == 0, render_text(rep)
    assert by(rep, "devices", OK) and by(rep, "packages", OK) and by(rep, "torch_npu", OK)
    assert by(rep, "vllm-ascend", OK) and by(rep, "cann", OK)
    assert rep.cann.version == "8.3.rc1" and rep.cann.info_file == INFO
    assert rep.patch.variant == "v011" and rep.patch.npu
    assert by(rep, "vllm-patch", OK)  # verl 0.9.1 has no gate


def test_nothing_installed_and_no_device_without_recipe_is_advisory():
    rep = doctor_report(None, {}, probe(), installed(), read_text=lambda p: None, machine="x86_64")
    assert rep.exit_code == 0
    assert [f.severity for f in by(rep, "devices")] == [ADVISORY]
    assert "no accelerator device visible" in by(rep, "devices")[0].message
    assert "torch, ray, verl" in by(rep, "packages", ADVISORY)[0].message
    assert rep.cann is None and rep.device.kind is None


def test_no_device_with_a_recipe_is_blocking():
    rep = doctor_report(recipe_facts(variant(n=8)), {}, probe(), NPU_STACK, read_text=lambda p: None, machine="x86_64")
    found = by(rep, "devices", BLOCKING)
    assert found and "needs 8 devices on every node" in found[0].message
    assert "_check_resource_available" in found[0].source
    assert rep.exit_code == 1


def test_fewer_devices_than_the_recipe_needs_is_blocking_more_is_advisory():
    assert by(report(recipe_facts(variant(n=16)), p=probe(npus=8)), "devices", BLOCKING)
    more = report(recipe_facts(variant(n=8, nnodes=1)), p=probe(npus=16))
    assert by(more, "devices", ADVISORY) and not by(more, "devices", BLOCKING)
    visible = report(recipe_facts(variant(n=8)), env={**CANN_ENV, "ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3"})
    assert by(visible, "devices", BLOCKING)  # 4 of the 8 visible


def test_only_the_variants_for_this_device_count():
    rec = recipe_facts(variant("DEVICE=npu", "npu", n=8), variant("DEVICE=gpu", "gpu", n=16))
    assert by(report(rec), "devices", OK)
    gpu = report(rec, p=probe(gpus=16), versions=GPU_STACK, env={})
    assert by(gpu, "devices", OK) and gpu.device.kind == "gpu"


def test_a_recipe_without_a_variant_for_this_device_is_blocking():
    rep = report(recipe_facts(variant("DEVICE=npu", "npu")), p=probe(gpus=8), versions=GPU_STACK, env={})
    assert any("no variant for gpu" in f.message for f in by(rep, "devices", BLOCKING))


def test_torch_npu_must_match_torch():
    rep = report(versions={**NPU_STACK, "torch_npu": "2.8.0.post2"})
    assert "built for torch 2.8.0, but torch 2.7.1" in by(rep, "torch_npu", BLOCKING)[0].message


def test_vllm_ascend_row_pairing():
    wrong_vllm = report(versions={**NPU_STACK, "vllm": "0.13.0"})
    assert "vllm 0.13.0 (the row pairs vllm 0.11.0)" in by(wrong_vllm, "vllm-ascend", BLOCKING)[0].message
    local = report(versions={**NPU_STACK, "vllm": "0.11.0+empty"})
    assert by(local, "vllm-ascend", OK)  # a local build of the paired release
    post = report(versions={**NPU_STACK, "vllm-ascend": "0.11.0", "torch_npu": "2.7.1"})
    assert by(post, "vllm-ascend", ADVISORY) and not by(post, "vllm-ascend", BLOCKING)  # row wants 2.7.1.post1
    unknown = report(versions={**NPU_STACK, "vllm-ascend": "0.99.0"})
    assert "not in the compatibility table" in by(unknown, "vllm-ascend", ADVISORY)[0].message


def test_cann_environment_and_version():
    unset = report(env={})
    assert "CANN toolkit environment is not set up" in by(unset, "cann", BLOCKING)[0].message
    no_devices = report(env={}, p=probe(modules={"torch_npu"}))
    assert by(no_devices, "cann", ADVISORY) and not by(no_devices, "cann", BLOCKING)
    other = report(read_text=files("8.5.0"))
    assert "stable CANN is 8.3.RC1" in by(other, "cann", ADVISORY)[0].message
    missing = report(read_text=lambda p: None)
    assert "no CANN toolkit version file" in by(missing, "cann", ADVISORY)[0].message


def test_read_cann_follows_verl():
    facts = read_cann({"ASCEND_HOME_PATH": TOOLKIT + "/"}, files("8.3.RC1"), "arm64")
    assert (facts.info_file, facts.version) == (INFO, "8.3.rc1")
    assert facts.env == (("ASCEND_HOME_PATH", TOOLKIT + "/"),)
    assert read_cann({}, files(), "aarch64").info_file == INFO  # the default install path
    assert read_cann({}, lambda p: None, "x86_64") == ((), None, None)
    assert read_cann({}, lambda p: "nothing here\n", "aarch64").version is None


def test_incident_9_verl_080_gate_misses_vllm_018_local_build():
    versions = {
        **NPU_STACK,
        "verl": "0.8.0",
        "vllm": "0.18.0+empty",
        "vllm-ascend": "0.18.0",
        "torch": "2.9.0",
        "torch_npu": "2.9.0.post1+git4c901a4",
    }
    rep = report(recipe_facts(variant()), versions=versions, read_text=files("8.5.1"))
    assert rep.patch.variant == "v013" and rep.patch.verl_applies == ()
    found = by(rep, "vllm-patch", BLOCKING)
    assert found and "applies none" in found[0].message and "0.8.0" in found[0].source
    assert rep.exit_code == 1
    data = rep.to_json()["vllm_patch"]
    assert data == {
        "vllm": "0.18.0+empty",
        "variant": "v013",
        "npu": True,
        "verl": "0.8.0",
        "verl_applies": [],
        "verl_gate": data["verl_gate"],
    }
    assert "[0.13.0, 0.14.0]" in data["verl_gate"] and "[0.11.0, 0.13.0)" in data["verl_gate"]


def test_verl_080_gate_on_a_pre_release_and_a_local_match():
    rc = report(versions={**NPU_STACK, "verl": "0.8.0", "vllm": "0.13.0rc1", "vllm-ascend": None})
    assert "runs v013 code" in by(rc, "vllm-patch", ADVISORY)[0].message
    local = report(versions={**NPU_STACK, "verl": "0.8.0", "vllm": "0.13.0+empty", "vllm-ascend": None})
    assert by(local, "vllm-patch", OK)
    assert any("compares vllm.__version__ as a string" in f.message for f in by(local, "vllm-patch", ADVISORY))


def test_patch_gate_is_advisory_when_the_rollout_is_not_vllm():
    versions = {**NPU_STACK, "verl": "0.8.0", "vllm": "0.18.0+empty", "vllm-ascend": None}
    rep = report(recipe_facts(variant(rollout="sglang")), versions=versions)
    assert by(rep, "vllm-patch", ADVISORY) and not by(rep, "vllm-patch", BLOCKING)


def test_no_patch_check_off_npu():
    rep = report(p=probe(gpus=8), versions=GPU_STACK, env={})
    assert not by(rep, "vllm-patch") and rep.patch.npu is False and rep.patch.variant == "v013"


def test_verl_vllm_floor_off_npu():
    old = report(
        recipe_facts(variant("DEVICE=gpu", "gpu")), p=probe(gpus=8), env={}, versions={**GPU_STACK, "vllm": "0.12.0"}
    )
    assert "needs vllm >= 0.18.0" in by(old, "verl-vllm", BLOCKING)[0].message
    rc = report(p=probe(gpus=8), env={}, versions={**GPU_STACK, "vllm": "0.18.0rc1"})
    assert by(rc, "verl-vllm", BLOCKING)  # verl compares full versions: 0.18.0rc1 < 0.18.0
    assert by(report(p=probe(gpus=8), env={}, versions=GPU_STACK), "verl-vllm", OK)


def test_missing_packages_the_recipe_needs():
    rep = report(recipe_facts(variant()), versions={**NPU_STACK, "mindspeed": None, "vllm-ascend": None})
    found = by(rep, "packages", BLOCKING)[0]
    assert "vllm-ascend, mindspeed" in found.message and "EngineRegistry" in found.source


def test_a_package_without_metadata_counts_as_present():
    rep = report(
        recipe_facts(variant()),
        versions={**NPU_STACK, "megatron-core": None, "mindspeed": None},
        p=probe(npus=8, modules={"megatron", "mindspeed"}),
    )
    assert not by(rep, "packages", BLOCKING)
    assert "megatron-core, mindspeed" in by(rep, "versions", ADVISORY)[0].message
    assert rep.to_json()["packages"]["megatron-core"] == {"version": None, "present": True}


def test_mindspeed_megatron_pairing():
    assert by(report(), "mindspeed", OK)
    assert (
        "not a release any MindSpeed branch targets"
        in by(report(versions={**NPU_STACK, "megatron-core": "0.14.0"}), "mindspeed", ADVISORY)[0].message
    )


def test_mbridge_config_key_the_installed_mbridge_drops():
    pypi = frozenset({"models", "weights_path", "memory_efficient"})
    rec = recipe_facts(variant(mbridge=("distributed_filesystem", "memory_efficient")))
    rep = report(rec, mbridge_params=pypi)
    found = by(rep, "mbridge", BLOCKING)[0]
    assert "sets distributed_filesystem" in found.message and "incident 5" in found.message
    ok = report(rec, mbridge_params=pypi | {"distributed_filesystem", "strict"})
    assert by(ok, "mbridge", OK)
    plain = report(mbridge_params=pypi)
    assert "no distributed_filesystem" in by(plain, "mbridge", OK)[0].message


def test_recipe_stack_versus_installed():
    rep = report(recipe_facts(variant()), versions={**NPU_STACK, "verl": "0.8.0"})
    assert any("verl 0.9.1 schema" in f.message for f in by(rep, "recipe-stack", ADVISORY))


def test_unparsable_installed_version_is_advisory():
    rep = report(versions={**NPU_STACK, "vllm": "weird"})
    assert any("'weird'" in f.message for f in by(rep, "versions", ADVISORY))
    assert rep.patch.variant is None


def test_json_document():
    rep = report(recipe_facts(variant()), mbridge_params=frozenset({"models", "weights_path", "memory_efficient"}))
    data = json.loads(json.dumps(rep.to_json()))
    assert set(data) == {
        "version",
        "device",
        "packages",
        "cann",
        "vllm_patch",
        "recipe",
        "mbridge_save_weights",
        "findings",
        "summary",
        "exit_code",
    }
    assert data["version"] == 1
    assert data["device"] == {"requested": "auto", "kind": "npu", "count": 8, "how": rep.device.how}
    assert list(data["packages"]) == list(PACKAGES)
    assert data["recipe"]["variants"][0]["n_gpus_per_node"] == 8
    assert data["summary"] == {s: sum(f["severity"] == s for f in data["findings"]) for s in (BLOCKING, ADVISORY, OK)}
    assert data["exit_code"] == rep.exit_code
    assert [f["severity"] for f in data["findings"]] == sorted(
        (f["severity"] for f in data["findings"]), key=[BLOCKING, ADVISORY, OK].index
    )


def test_requested_device_reaches_the_report():
    rep = report(p=probe(gpus=8), versions=GPU_STACK, env={}, requested="npu")
    assert rep.requested == "npu" and (rep.device.kind, rep.device.count) == ("npu", 0)


def test_rich_rendering():
    from rich.console import Console

    console = Console(file=io.StringIO(), width=160, color_system=None)
    doctor_module.render_rich(report(recipe_facts(variant(n=16))), console)
    text = console.file.getvalue()
    assert "findings" in text and "blocking" in text and "packages" in text


# ------------------------------------------------------------------------------------------------ reading recipes


def test_read_recipe_facts_of_a_shipped_recipe():
    facts = read_recipe_facts(REPO / "recipes" / "qwen3-30b-a3b-sapo.yaml")
    assert facts.verl == "0.9.1" and (facts.megatron_core, facts.mbridge) == ("0.12.1", "0.15.1")
    assert len(facts.variants) == 6
    assert {v.device for v in facts.variants} == {"npu", "gpu"}
    assert {(v.n_gpus_per_node, v.nnodes, v.rollout, v.model_engine) for v in facts.variants} == {
        (8, 2, "vllm", "megatron")
    }


def test_read_recipe_facts_mbridge_config_and_defaults(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(
        recipe("""
overrides:
  trainer.n_gpus_per_node: 16
  +actor_rollout_ref.actor.checkpoint.mbridge_config.distributed_filesystem: true
  +actor_rollout_ref.actor.checkpoint.mbridge_config.memory_efficient: true
""")
    )
    (v,) = read_recipe_facts(path).variants
    assert v.n_gpus_per_node == 16 and v.nnodes == 1  # verl's default nnodes
    assert v.mbridge_config == ("distributed_filesystem", "memory_efficient")
    assert v.variant is None and v.device is None


def test_read_recipe_facts_errors(tmp_path):
    with pytest.raises(DoctorError, match="no such file"):
        read_recipe_facts(tmp_path / "missing.yaml")
    other = tmp_path / "other.yaml"
    other.write_text("a: 1\n")
    with pytest.raises(DoctorError, match="not a recipe"):
        read_recipe_facts(other)


# ------------------------------------------------------------------------------------------------ the command


def test_doctor_command_on_this_machine():
    result = CliRunner().invoke(doctor, ["--format", "json"])
    data = json.loads(result.stdout)
    assert result.exit_code == data["exit_code"] == (1 if data["summary"]["blocking"] else 0)
    assert data["recipe"] is None and set(data["packages"]) == set(PACKAGES)
    text = CliRunner().invoke(doctor, [])
    assert text.exit_code == result.exit_code
    assert text.stdout.startswith("sapo-launch doctor") and "findings" in text.stdout


def test_doctor_command_with_a_recipe():
    result = CliRunner().invoke(
        doctor, [str(REPO / "recipes" / "qwen3-30b-a3b-sapo.yaml"), "--format", "json", "--device", "gpu"]
    )
    data = json.loads(result.stdout)
    assert result.exit_code == data["exit_code"]
    assert data["device"]["requested"] == "gpu" and data["device"]["kind"] == "gpu"
    assert len(data["recipe"]["variants"]) == 6


@pytest.mark.parametrize("args", [["--format", "xml"], ["--device", "tpu"], ["missing.yaml"], ["a", "b"]])
def test_doctor_usage_errors_are_one_line(args, tmp_path):
    result = CliRunner().invoke(doctor, args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sapo-launch doctor: ")
    assert result.stdout == ""


def test_doctor_refuses_a_file_that_is_not_a_recipe(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    result = CliRunner().invoke(doctor, [str(path)])
    assert result.exit_code == 2 and "not a recipe" in result.stderr


def test_read_recipe_facts_takes_the_device_the_linter_decides(tmp_path):
    """A script that states its device only through `trainer.device` (no DEVICE switch) or only through the branch
    its overrides are written in: the doctor sees the device the linter's rules see (`core.device`)."""
    stated = tmp_path / "run_stated.sh"
    stated.write_text("python3 -m verl.trainer.main_ppo trainer.device=npu trainer.n_gpus_per_node=8\n")
    branch = tmp_path / "run_branch.sh"
    branch.write_text(
        'if python3 -c "import torch_npu"; then\n    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=16\nfi\n'
    )
    assert [v.device for v in read_recipe_facts(stated).variants] == ["npu"]
    assert [v.device for v in read_recipe_facts(branch).variants] == ["npu"]
