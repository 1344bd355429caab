"""The field incidents 3 and 4 (README) as the verl-style bash scripts people run (tests/fixtures/incidents: the
device probe header, a `case` on DEVICE, Qwen3-30B-A3B), linted with nothing but the file name: MEM001 and CK001
on the NPU variant with the assumed accelerator, and clean with the knobs that fix them. The site's checkpoint
write bandwidth is the fixture folder's `[tool.sapo-lint]` (a site fact: the incidents' shared storage)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO

INCIDENTS = REPO / "tests" / "fixtures" / "incidents"
SAPO_LINT = str(Path(sys.executable).parent / "sapo-lint")


def sapo_lint(*args: str) -> subprocess.CompletedProcess:
    """The console script, run from the fixture folder as a user would."""
    return subprocess.run([SAPO_LINT, *args], check=False, cwd=INCIDENTS, capture_output=True, text=True)


def lint(name: str) -> tuple[int, list[dict]]:
    proc = sapo_lint(name, "--format", "json")
    return proc.returncode, json.loads(proc.stdout)["diagnostics"]


def test_incident_3_oom_at_the_first_optimizer_step():
    rc, found = lint("run_qwen3_30b_a3b_sapo_megatron.sh")
    mem = [d for d in found if d["code"] == "MEM001"]
    assert rc == 1 and len(mem) == 1, found
    d = mem[0]
    assert d["variant"] == "DEVICE=npu" and d["severity"] == "error"  # the GPU variant fits an (assumed) H100
    # 8 devices, TP4 EP8: Adam's moments appear at the first step and take the optimizer state to 42.7 GiB
    assert d["message"].startswith(
        "train phase, at the first optimizer step (Adam's moments are created): "
        "estimated 68.0 GiB per device exceeds the 60.96 GiB the runtime reports for "
        "ascend-910b3"
    ), d["message"]
    assert "biggest term: optimizer 42.7 GiB. Fix: Megatron's optimizer CPU offload" in d["message"]
    assert "ascend-910b3 is assumed (none is named)" in d["message"]
    assert not [d for d in found if d["code"] == "CK001"]


def test_incident_3_fixed_by_megatron_optimizer_cpu_offload():
    rc, found = lint("run_qwen3_30b_a3b_sapo_offload_megatron.sh")
    assert rc == 0 and not [d for d in found if d["code"].startswith(("MEM", "CK"))], found


def test_incident_4_save_outlasts_the_collective_timeout():
    rc, found = lint("run_qwen3_30b_a3b_sapo_2node_megatron.sh")
    ck = [d for d in found if d["code"] == "CK001"]
    assert rc == 1 and len(ck) == 1 and ck[0]["severity"] == "error", found
    # 16 devices: each rank's dist-checkpoint shard (fp32 master + moments, 12 B per sharded element, plus its share
    # of the bf16 weights) is 24.9 GiB; at the site's 0.01 GiB/s that is ~2491 s against nccl_timeout=1800
    assert ck[0]["message"].startswith(
        "checkpoint save: ~2491 s of each rank writing its 24.9 GiB (26.7 GB) "
        "dist-checkpoint shard at 0.01 GiB/s per writing rank exceeds the 1800 s "
        "actor_rollout_ref.nccl_timeout"
    ), ck[0]["message"]
    assert "Fix: save weights only (`actor_rollout_ref.actor.checkpoint.save_contents: [model]`)" in ck[0]["message"]
    assert not [d for d in found if d["code"] == "MEM001"]


def test_incident_4_fixed_by_weight_only_checkpoints():
    rc, found = lint("run_qwen3_30b_a3b_sapo_2node_weights_megatron.sh")
    assert rc == 0 and not [d for d in found if d["code"].startswith(("MEM", "CK"))], found


@pytest.mark.parametrize("name", ["run_qwen3_30b_a3b_sapo_megatron.sh", "run_qwen3_30b_a3b_sapo_2node_megatron.sh"])
def test_explain_json_on_the_incident_scripts(name):
    proc = sapo_lint("explain", name, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    plans = json.loads(proc.stdout)
    assert [p["variant"] for p in plans] == ["DEVICE=npu", "DEVICE=gpu"]
    assert [(p["accelerator"], p["accelerator_assumed"]) for p in plans] == [
        ("ascend-910b3", "assumed for npu (`trainer.device=npu`)"),
        ("nvidia-h100", "assumed for gpu (`trainer.device=cuda`)"),
    ]
    npu = json.loads(sapo_lint("explain", name, "--format", "json", "--variant", "DEVICE=npu").stdout)
    assert len(npu) == 1 and npu[0]["world"] == (8 if "2node" not in name else 16)
    codes = {f["code"] for f in npu[0]["findings"]}
    assert codes == ({"MEM001"} if "2node" not in name else {"CK001"})


def test_explain_reads_the_settings_beside_the_file_from_any_folder(tmp_path):
    # The site's write bandwidth is in the fixture folder's pyproject; explain run elsewhere still applies it.
    proc = subprocess.run(
        [
            SAPO_LINT,
            "explain",
            str(INCIDENTS / "run_qwen3_30b_a3b_sapo_2node_megatron.sh"),
            "--format",
            "json",
            "--variant",
            "DEVICE=npu",
        ],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert {f["code"] for f in json.loads(proc.stdout)[0]["findings"]} == {"CK001"}
