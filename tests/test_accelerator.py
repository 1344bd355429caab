"""Which accelerator each command is checked on: names and aliases, the order of the places that name one, one
per device kind, the assumed default per kind, and RF010 when a device variant gets an accelerator of the other
kind (issue 14: the shipped recipes ran their `device: npu` variant on nvidia-h100)."""

import pytest

from sapo_toolkit.linter import api
from sapo_toolkit.linter.catalog import UnknownAccelerator, find_accelerator
from sapo_toolkit.linter.settings import Settings, SettingsError, load_settings

from .helpers import recipe

DEVICES = """variants:
  device:
    npu: {overrides: {trainer.device: npu}}
    gpu: {overrides: {trainer.device: cuda}}
"""

SCRIPT = """#!/usr/bin/env bash
DEVICE=${DEVICE:-$(python3 -c 'import torch_npu' 2>/dev/null && echo npu || echo gpu)}
case "$DEVICE" in
    npu) export HCCL_CONNECT_TIMEOUT=1800 ;;
    gpu) ;;
    *) exit 1 ;;
esac
python3 -m verl.trainer.main_ppo model_engine=megatron actor_rollout_ref.model.path=Qwen/Qwen3-8B
"""


@pytest.mark.parametrize(
    "name, expected",
    [
        ("ascend-910b3", "ascend-910b3"),
        ("910B3", "ascend-910b3"),
        ("Ascend910B3", "ascend-910b3"),
        ("ASCEND 910B2", "ascend-910b2"),
        ("A3", "ascend-a3"),
        ("H100", "nvidia-h100"),
        ("h100-80gb", "nvidia-h100"),
        ("NVIDIA-H100", "nvidia-h100"),
        ("A100-80G", "nvidia-a100-80gb"),
        ("a100 40GB", "nvidia-a100-40gb"),
        ("H20", "nvidia-h20"),
        ("h200", "nvidia-h200"),
        ("B200", "nvidia-b200"),
    ],
)
def test_names_and_aliases(name, expected):
    assert find_accelerator(name).name == expected


@pytest.mark.parametrize(
    "name, hint",
    [
        ("A100", "Did you mean `nvidia-a100-40gb` or `nvidia-a100-80gb`?"),  # names both: neither is meant
        ("910B", "Did you mean `ascend-910b1` or `ascend-910b2` or `ascend-910b3` or `ascend-910b4`?"),
        ("tpu-v5", "known: ascend-910b1, "),
    ],
)
def test_unknown_names_list_the_known_ones(name, hint):
    with pytest.raises(UnknownAccelerator) as exc:
        find_accelerator(name)
    assert f"unknown accelerator `{name}`; known: ascend-910b1" in str(exc.value) and hint in str(exc.value)


def load(tmp_path, text, name="r.yaml", settings=None, cli=None):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return api.load(path, api.read_options(settings or Settings(), cli_accelerator=cli))


def chosen(loaded):
    return {c.variant: (c.accelerator.name, bool(c.accelerator.assumed)) for c in loaded.commands}


def test_assumed_per_device_kind(tmp_path):
    loaded = load(tmp_path, recipe("overrides: {}\n" + DEVICES))
    assert chosen(loaded) == {"DEVICE=npu": ("ascend-910b3", True), "DEVICE=gpu": ("nvidia-h100", True)}
    assert loaded.commands[0].accelerator.assumed == "assumed for npu (`trainer.device=npu`)"
    # Ascend environment variables say NPU when nothing else does
    loaded = load(tmp_path, recipe("overrides: {}\nenv: {HCCL_BUFFSIZE: '400'}\n"))
    assert chosen(loaded) == {None: ("ascend-910b3", True)}
    assert loaded.commands[0].accelerator.assumed == "assumed for npu (it sets `HCCL_BUFFSIZE`)"


def test_the_order_command_line_recipe_settings(tmp_path):
    settings = Settings(accelerator={"npu": "ascend-a3", "gpu": "nvidia-b200"})
    text = recipe("hardware: {accelerator: {npu: 910B2}}\noverrides: {}\n" + DEVICES)
    # the recipe names the NPU; its map has no GPU, so the settings' GPU applies
    assert chosen(load(tmp_path, text, settings=settings)) == {
        "DEVICE=npu": ("ascend-910b2", False),
        "DEVICE=gpu": ("nvidia-b200", False),
    }
    # the command line wins for its kind; the NPU variant on a GPU is RF010, checked on the assumed NPU
    loaded = load(tmp_path, text, settings=settings, cli="H200")
    assert chosen(loaded) == {"DEVICE=npu": ("ascend-910b3", True), "DEVICE=gpu": ("nvidia-h200", False)}
    rf010 = [d for d in loaded.diagnostics if d.code == "RF010"]
    assert len(rf010) == 1 and rf010[0].variant == "DEVICE=npu" and rf010[0].severity.value == "warning"
    assert "--accelerator names nvidia-h200, a GPU" in rf010[0].message


def test_rf010_single_accelerator_for_both_device_variants(tmp_path):
    # issue 14: the shipped qwen3-8b and smoke recipes, as they were
    loaded = load(tmp_path, recipe("hardware: {accelerator: nvidia-h100}\noverrides: {}\n" + DEVICES))
    rf010 = [d for d in loaded.diagnostics if d.code == "RF010"]
    assert len(rf010) == 1 and rf010[0].variant == "DEVICE=npu", loaded.diagnostics
    assert rf010[0].location.line == 5  # the `hardware.accelerator` value
    assert rf010[0].message == (
        "this variant runs on an NPU (`trainer.device=npu`) but `hardware.accelerator` names nvidia-h100, a GPU: its "
        "memory is checked on ascend-910b3 (assumed for npu) instead. Name one accelerator per device kind: "
        "`hardware: {accelerator: {npu: ascend-910b3, gpu: nvidia-h100}}`"
    )
    assert chosen(loaded) == {"DEVICE=npu": ("ascend-910b3", True), "DEVICE=gpu": ("nvidia-h100", False)}
    fixed = load(
        tmp_path, recipe("hardware: {accelerator: {npu: ascend-910b3, gpu: nvidia-h100}}\noverrides: {}\n" + DEVICES)
    )
    assert not [d for d in fixed.diagnostics if d.code == "RF010"]
    assert chosen(fixed) == {"DEVICE=npu": ("ascend-910b3", False), "DEVICE=gpu": ("nvidia-h100", False)}


def test_rf010_a_map_entry_of_the_other_kind(tmp_path):
    loaded = load(tmp_path, recipe("hardware: {accelerator: {npu: H100}}\noverrides: {}\n" + DEVICES))
    rf010 = [d for d in loaded.diagnostics if d.code == "RF010"]
    assert len(rf010) == 1 and "`hardware.accelerator` names nvidia-h100, a GPU, for npu" in rf010[0].message
    assert chosen(loaded)["DEVICE=npu"] == ("ascend-910b3", True)


def test_a_single_name_decides_the_kind_when_the_command_states_none(tmp_path):
    loaded = load(tmp_path, recipe("hardware: {accelerator: 910B3}\noverrides: {}\n"))
    assert chosen(loaded) == {None: ("ascend-910b3", False)} and not loaded.diagnostics


def test_script_device_variants_get_one_each_from_settings(tmp_path):
    settings = Settings(accelerator={"npu": "ascend-910b2", "gpu": "a100-80g"})
    loaded = load(tmp_path, SCRIPT, "run_qwen3_8b_megatron.sh", settings=settings)
    assert chosen(loaded) == {"DEVICE=npu": ("ascend-910b2", False), "DEVICE=gpu": ("nvidia-a100-80gb", False)}
    assumed = load(tmp_path, SCRIPT, "run_qwen3_8b_megatron.sh")
    assert chosen(assumed) == {"DEVICE=npu": ("ascend-910b3", True), "DEVICE=gpu": ("nvidia-h100", True)}
    unknown = load(tmp_path, SCRIPT, "run_qwen3_8b_megatron.sh", cli="tpu")
    assert [d.code for d in unknown.diagnostics if d.code.startswith("RF")] == ["RF006"]
    assert all(c.accelerator is None for c in unknown.commands)  # not replaced by an assumption: MEM001 skipped


def write_settings(tmp_path, line):
    (tmp_path / "pyproject.toml").write_text(f"[tool.sapo-lint]\n{line}\n", encoding="utf-8")
    return load_settings(tmp_path)


def test_settings_accelerator(tmp_path):
    found = write_settings(tmp_path, 'accelerator = {npu = "910B3", gpu = "H100"}')
    settings = found[0] if isinstance(found, tuple) else found
    assert settings.accelerator == {"npu": "910B3", "gpu": "H100"}
    for line, error in [
        ('accelerator = "tpu"', "accelerator: unknown accelerator `tpu`; known: ascend-910b1"),
        ('accelerator = {npu = "H100"}', "accelerator: nvidia-h100 is not an NPU (given for npu)"),
        ('accelerator = {tpu = "H100"}', "accelerator maps device kinds (npu, gpu) to accelerator names"),
        ("accelerator = 3", "accelerator must be a name or a table of device kind -> name"),
    ]:
        with pytest.raises(SettingsError) as exc:
            write_settings(tmp_path, line)
        assert error in str(exc.value), str(exc.value)


def test_rf005_names_the_estimate_rules_it_skips(tmp_path):
    loaded = load(tmp_path, recipe("model: {path: my-org/private}\noverrides: {}\n"))
    rf005 = [d for d in loaded.diagnostics if d.code == "RF005"]
    assert len(rf005) == 1 and "(MEM001, MEM002, CK001, CK002)" in rf005[0].message


def test_convert_writes_model_and_the_named_accelerators(tmp_path):
    import shutil

    import yaml
    from click.testing import CliRunner

    from sapo_toolkit.linter.cli.convert import convert
    from sapo_toolkit.linter.lint import lint_paths

    from .helpers import REPO

    script = tmp_path / "run_qwen3_30b_a3b_sapo_megatron.sh"
    shutil.copy(REPO / "tests" / "fixtures" / "incidents" / script.name, script)
    out = tmp_path / "recipe.yaml"
    assert CliRunner().invoke(convert, [str(script), "-o", str(out)]).exit_code == 0
    converted = yaml.safe_load(out.read_text())
    assert converted["model"] == {"path": "Qwen/Qwen3-30B-A3B"} and "hardware" not in converted  # assumed: not told
    (tmp_path / "pyproject.toml").write_text('[tool.sapo-lint]\naccelerator = {npu = "910B2", gpu = "H200"}\n')
    assert CliRunner().invoke(convert, [str(script), "-o", str(out)]).exit_code == 0
    converted = yaml.safe_load(out.read_text())
    assert converted["hardware"] == {"accelerator": {"npu": "ascend-910b2", "gpu": "nvidia-h200"}}
    found = lint_paths([out], Settings(shellcheck=False)).diagnostics
    assert [(d.code, d.variant) for d in found if d.code.startswith(("MEM", "RF"))] == [("MEM001", "DEVICE=npu")]


def test_what_users_read_names_the_setting_not_the_data_file():
    """Users know --accelerator and `hardware.accelerator`, not the toolkit's schemas/devices.json."""
    import subprocess

    from .helpers import REPO, SCRIPTS

    def shown(*args: str) -> str:
        proc = subprocess.run([str(SCRIPTS / "sapo-lint"), *args], cwd=REPO, capture_output=True, text=True)
        return proc.stdout + proc.stderr

    unknown = shown("--accelerator", "tpu9", "recipes/smoke-qwen3-0.6b-sapo.yaml")
    assert "unknown accelerator `tpu9`; known: ascend-910b1" in unknown
    for text in (unknown, shown("rules"), shown("rule", "RF006"), shown("check", "--help"), shown("explain", "--help")):
        assert "devices.json" not in text
