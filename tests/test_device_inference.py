"""Which device a run script's variant, and each of its overrides, runs on (issue 20, item 2): every signal a script
carries, in `core.device`'s documented order, and the finding names the one that decided. verl picks its engine
from the device it detects, not from `trainer.device`, so many NPU scripts never set it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sapo_toolkit.linter.api import load, read_options
from sapo_toolkit.linter.core.device import device_of
from sapo_toolkit.linter.settings import Settings

TRAINER = "python3 -m verl.trainer.main_ppo model_engine=megatron actor_rollout_ref.model.path=Qwen/Qwen3-8B"
OTC = "+actor_rollout_ref.actor.megatron.override_transformer_config"
SOURCE_ASCEND = "source /usr/local/Ascend/ascend-toolkit/set_env.sh\n"


def _devices(path: Path) -> dict[str | None, tuple[str, str]]:
    """variant -> (device kind, evidence) of each command the script runs."""
    loaded = load(path, read_options(Settings(), cli_verl="0.9.1"))
    return {c.variant: device_of(c, c.accelerator)[:2] for c in loaded.commands}


def _write(tmp_path: Path, relative: str, text: str) -> Path:
    path = tmp_path / "work" / relative  # the folders above the script are the test's own, not pytest's
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("relative", "text", "kind", "evidence"),
    [
        # 1. `trainer.device` outranks every other signal
        ("a/b/run_x_npu.sh", f"{SOURCE_ASCEND}{TRAINER} trainer.device=cuda\n", "gpu", "`trainer.device=cuda`"),
        # 7. an Ascend-only environment variable, whatever its prefix
        (
            "a/b/run_x.sh",
            f"export RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1\n{SOURCE_ASCEND}{TRAINER}\n",
            "npu",
            "it sets `RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES`",
        ),
        ("a/b/run_x.sh", f"export ASCEND_RT_VISIBLE_DEVICES=0,1\n{TRAINER}\n", "npu", "it sets `ASCEND_RT_VISIBLE"),
        # 8. Ascend software the script sources or installs, before its file name
        (
            "a/b/run_x_gpu.sh",
            f"{SOURCE_ASCEND}{TRAINER}\n",
            "npu",
            "it sources `source /usr/local/Ascend/ascend-toolkit/set_env.sh` (line 1)",
        ),
        ("a/b/run_x.sh", f"pip install torch_npu==2.5.1\n{TRAINER}\n", "npu", "it runs `pip install torch_npu==2.5.1`"),
        ("a/b/run_x.sh", f"uv pip install vllm-ascend==0.9.1\n{TRAINER}\n", "npu", "it runs `uv pip install vllm-"),
        # a MindSpeed-only field: verl hands override_transformer_config to MindSpeed on Ascend only
        (
            "a/b/run_x.sh",
            f"{TRAINER} {OTC}.use_fused_rmsnorm=True\n",
            "npu",
            "it sets `use_fused_rmsnorm`, a field only MindSpeed reads (line 1)",
        ),
        # the script's path: the file name or one of the two folders above it
        ("tests/special_npu/run_x.sh", f"{TRAINER}\n", "npu", "its path names `npu`: `tests/special_npu/run_x.sh`"),
        ("ascend_extras/grpo/run_x.sh", f"{TRAINER}\n", "npu", "its path names `ascend`"),
        ("a/b/run_x_npu.sh", f"{TRAINER}\n", "npu", "its path names `npu`"),
        # 4. a script that sets its device itself and switches on it: the branch its overrides come from
        (
            "a/b/run_x.sh",
            f'DEVICE=npu\ncase "$DEVICE" in\n  npu) N=16; ARGS=(trainer.n_gpus_per_node=$N) ;;\n'
            f"  gpu) ARGS=(trainer.n_gpus_per_node=8) ;;\nesac\n{TRAINER} " + '"${ARGS[@]}"\n',
            "npu",
            'its overrides are written under `npu)` of `case "$DEVICE"` (line 3)',
        ),
    ],
)
def test_each_signal_decides_in_its_order(tmp_path, relative, text, kind, evidence):
    ((found_kind, found_evidence),) = _devices(_write(tmp_path, relative, text)).values()
    assert found_kind == kind and found_evidence.startswith(evidence), found_evidence


@pytest.mark.parametrize(
    "text",
    [
        # a probe runs on either device: its status is tested, or it is command substitution
        "D=$(python3 -c 'import torch_npu' 2>/dev/null && echo npu || echo gpu)\n",
        "python3 -c 'import torch_npu' 2>/dev/null && echo found\n",
        "if python3 -c 'import torch_npu'; then echo on npu; fi\n",
        # text it prints, a comment, a field megatron-core itself has
        'echo "install torch_npu and source /usr/local/Ascend/ascend-toolkit/set_env.sh on Ascend"\n',
        "# NPU: pip install vllm-ascend\n",
        f"{TRAINER} {OTC}.apply_rope_fusion=True\n",
    ],
)
def test_what_runs_on_either_device_names_none(tmp_path, text):
    path = _write(tmp_path, "a/b/run_x_npu_gpu.sh", text + f"{TRAINER}\n")  # a name with both kinds says nothing
    assert {kind for kind, _ in _devices(path).values()} == {"gpu"}


BRANCHED = f"""DEVICE=${{DEVICE:-gpu}}
OTC={OTC}
ARGS=()
if [ "$(cat /sys/class/accel/kind)" == npu ]; then
    ARGS+=(${{OTC}}.use_fused_rmsnorm=True ${{OTC}}.use_flash_atn=True)
fi
case "$DEVICE" in
    gpu) N=8 ;;
    npu) N=16 ;;
esac
{TRAINER} trainer.n_gpus_per_node=$N ${{OTC}}.use_fused_swiglu=True "${{ARGS[@]}}"
"""


def test_an_override_in_the_npu_branch_is_an_npu_override_in_a_gpu_variant(tmp_path):
    """The undecidable `if` is taken both ways, so the NPU branch's overrides are also evaluated in the DEVICE=gpu
    variant; they take effect on NPU only, and SL007 judges them there (naming the branch). The MindSpeed field
    written outside the branch stays an error in the GPU variant, naming the variant."""
    path = _write(tmp_path, "a/b/run_branch_megatron.sh", BRANCHED)
    proc = subprocess.run(
        [sys.executable, "-m", "sapo_toolkit.linter", "--no-shellcheck", "--format", "json", "--select", "SL007"]
        + ["--verl-version", "0.9.1", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    found = {(d["message"].split("`")[1], d["variant"]): d["message"] for d in json.loads(proc.stdout)["diagnostics"]}
    assert set(found) == {("use_flash_atn", "cond@4:4=true"), ("use_fused_swiglu", "DEVICE=gpu")}
    assert (
        'runs on NPU: it is written under `if [ "$(cat /sys/class/accel/kind)" == npu ]` (line 4)'
        in found["use_flash_atn", "cond@4:4=true"]
    )
    assert "checked as GPU (variant `DEVICE=gpu`)" in found["use_fused_swiglu", "DEVICE=gpu"]


def test_explain_says_which_signal_chose_the_assumed_accelerator(tmp_path):
    path = _write(tmp_path, "tests/special_npu/run_qwen3_8b.sh", f"{TRAINER} trainer.n_gpus_per_node=8\n")
    proc = subprocess.run(
        [sys.executable, "-m", "sapo_toolkit.linter", "explain", "--format", "json", "--verl-version", "0.9.1"]
        + [path.name],  # linted from its own folder: the folders above it still count
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=path.parent,
    )
    (plan,) = json.loads(proc.stdout)
    assert plan["accelerator"] == "ascend-910b3" and plan["device"] == "npu"
    assert plan["accelerator_assumed"] == "assumed for npu (its path names `npu`: `tests/special_npu/run_qwen3_8b.sh`)"


@pytest.mark.parametrize(
    ("condition", "then_kind", "else_kind"),
    [
        ('[ "$device" == npu ]', "npu", "gpu"),
        ('[[ "$D" != "NPU" ]]', "gpu", "npu"),
        ('test "$D" = cuda', "gpu", "npu"),
        ('[[ $D == *ascend* ]] && [ -n "$X" ]', "npu", None),  # `&&` failing says nothing
        ('[ "$D" = npu ] || [ "$D" = ascend ]', "npu", "gpu"),
        ("python3 -c 'import torch_npu' 2>/dev/null", "npu", "gpu"),
        ("! [ -d /usr/local/Ascend ]", "gpu", "npu"),
        ('[ "$BACKEND" = vllm ]', None, None),
    ],
)
def test_the_branches_of_a_device_test(tmp_path, condition, then_kind, else_kind):
    """The device the `then` and the `else` of each form of device test are for."""
    from sapo_toolkit.linter.sources.bash.conditions import device_regions
    from sapo_toolkit.linter.sources.bash.interpreter import Interpreter
    from sapo_toolkit.linter.sources.bash.markers import Marks
    from sapo_toolkit.linter.sources.bash.parse import parse

    src = f"if {condition}; then\n  A=1\nelse\n  B=1\nfi\n".encode()
    ev = Interpreter("x.sh", src, src.split(b"\n"), {}, Marks())
    regions = device_regions(ev, parse(src).root_node)
    else_at = src.index(b"else")
    assert (regions[0].kind if 0 in regions else None) == then_kind
    assert (regions[else_at].kind if else_at in regions else None) == else_kind
