"""Issue 20, items 3 and 4, through the console script on scripts written here.

3. On NPU, MindSpeed sets every key of `override_transformer_config` on Megatron's parsed arguments, so Megatron-LM's
   argparse flags (megatron/training/arguments.py) are accepted there besides megatron-core's and MindSpeed's fields;
   a typo stays an error with a did-you-mean over all of them. The flag list is read from a Megatron-LM source tree.
4. A Megatron-LM commit is a pin wherever a script writes it (a requirements comment, `pip install git+...@<sha>`, a
   clone and checkout over several lines); a release tag is not. verl main pairs with megatron-core 0.18.0.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from sapo_toolkit.linter.sources.bash.megatron_pin import megatron_pin
from sapo_toolkit.schemas import build

from .helpers import recipe

SAPO_LINT = str(Path(sys.executable).with_name("sapo-lint"))
OTC = "actor_rollout_ref.actor.megatron.override_transformer_config"
SHA = "0f6fcb0c5778327868e6866447a58b5568059ae1"
NEW_FIELD = "field_of_a_dev_commit"  # in no committed megatron-core release snapshot


def lint(*args: str, cwd: Path) -> list[dict]:
    proc = subprocess.run(
        [SAPO_LINT, "--format", "json", "--no-shellcheck", "--select", "SL007", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)["diagnostics"]


def by_field(found: list[dict]) -> dict[tuple[str, str | None], dict]:
    return {(d["message"].split("`")[1], d["variant"]): d for d in found}


# A run script that switches on the device, as verl's examples do; each variant sets the same four keys.
DEVICE_SWITCH = f"""#!/bin/bash
DEVICE=${{DEVICE:-gpu}}
case "$DEVICE" in
  npu) DEVICE_ARGS="trainer.device=npu" ;;
  gpu) DEVICE_ARGS="trainer.device=cuda" ;;
esac
python3 -m verl.trainer.main_ppo model_engine=megatron $DEVICE_ARGS \\
  +{OTC}.swiglu=True \\
  +{OTC}.use_distributed_optimizer=True \\
  +{OTC}.use_distributed_optimzer=True \\
  +{OTC}.no_masked_softmax_fusion=True
"""


def test_megatron_flags_pass_on_npu_and_typos_do_not(tmp_path):
    (tmp_path / "run_qwen3_8b_megatron.sh").write_text(DEVICE_SWITCH)
    found = by_field(lint("--verl-version", "0.10.0.dev", ".", cwd=tmp_path))
    npu = {field for field, variant in found if variant == "DEVICE=npu"}
    assert npu == {"use_distributed_optimzer", "no_masked_softmax_fusion"}  # swiglu, use_distributed_optimizer read
    typo = found["use_distributed_optimzer", "DEVICE=npu"]
    assert typo["severity"] == "error" and "Did you mean `use_distributed_optimizer`?" in typo["message"]
    assert "megatron-core 0.18.0 `TransformerConfig`, nor by Megatron-LM 0.18.0's argument parser" in typo["message"]
    option = found["no_masked_softmax_fusion", "DEVICE=npu"]["message"]
    assert "`--no-masked-softmax-fusion` in `masked_softmax_fusion`" in option
    assert "write `masked_softmax_fusion=False`" in option
    # on GPU the flag goes to megatron-core's TransformerConfig, which has no such field
    gpu = found["swiglu", "DEVICE=gpu"]
    assert gpu["severity"] == "error" and "is a flag of Megatron-LM 0.18.0's argument parser" in gpu["message"]
    assert ("use_distributed_optimizer", "DEVICE=gpu") in found


def test_release_without_megatron_training_uses_the_nearest_argument_list(tmp_path):
    (tmp_path / "run_qwen3_8b_megatron.sh").write_text(DEVICE_SWITCH)
    found = by_field(lint("--verl-version", "0.9.1", ".", cwd=tmp_path))
    assert ("swiglu", "DEVICE=npu") not in found
    message = found["use_distributed_optimzer", "DEVICE=npu"]["message"]
    assert "megatron-core 0.16.1 `TransformerConfig`" in message
    assert "Megatron-LM 0.18.0's argument parser (megatron/training/arguments.py, the nearest to 0.16.1" in message


def test_megatron_core_pairs_with_the_verl_version_unless_named(tmp_path):
    call = f"python3 -m verl.trainer.main_ppo model_engine=megatron +{OTC}.apply_rope_fusoin=True\n"
    (tmp_path / "run_x_megatron.sh").write_text(call)
    snapshot = {}
    for verl in ("0.10.0.dev", "0.9.1"):
        (found,) = lint("--verl-version", verl, "run_x_megatron.sh", cwd=tmp_path)
        snapshot[verl] = found["message"].split(" `TransformerConfig`")[0].split("by ")[-1]
    assert snapshot == {"0.10.0.dev": "megatron-core 0.18.0", "0.9.1": "megatron-core 0.16.1"}
    (tmp_path / "pyproject.toml").write_text('[tool.sapo-lint]\nmegatron-core-version = "0.12.1"\n')
    (found,) = lint("--verl-version", "0.10.0.dev", "run_x_megatron.sh", cwd=tmp_path)
    assert "megatron-core 0.12.1 `TransformerConfig`" in found["message"]
    # a recipe is checked with the megatron-core of the verl it names
    (tmp_path / "pyproject.toml").unlink()
    body = f'verl: "0.10.0.dev"\noverrides:\n  model_engine: megatron\n  +{OTC}.apply_rope_fusoin: true\n'
    (tmp_path / "recipe.yaml").write_text(recipe(body))
    (found,) = lint("recipe.yaml", cwd=tmp_path)
    assert "megatron-core 0.18.0 `TransformerConfig`" in found["message"]


# How scripts say which Megatron-LM they need, each followed by the same trainer call.
PINS = {
    "run_comment_url_megatron.sh": f"# Requirements:\n#   - Megatron-LM: https://github.com/NVIDIA/Megatron-LM/commit/{SHA}\n",
    "run_comment_pin_megatron.sh": f"#   - Megatron-LM=={SHA[:8]}\n",
    "run_pip_megatron.sh": f"pip install --no-deps git+https://github.com/nvidia/megatron-lm.git@{SHA}\n",
    "run_checkout_megatron.sh": (
        f"git clone https://github.com/NVIDIA/Megatron-LM.git\ncd Megatron-LM\ngit checkout {SHA}\ncd ..\n"
    ),
}
NOT_PINS = {
    "run_release_tag_megatron.sh": "pip install git+https://github.com/NVIDIA/Megatron-LM.git@core_v0.12.1\n",
    "run_other_checkout_megatron.sh": f"git clone https://github.com/NVIDIA/Megatron-LM\ncd vllm\ngit checkout {SHA}\n",
    "run_no_pin_megatron.sh": "",
}


def test_a_megatron_commit_is_a_pin_wherever_the_script_writes_it(tmp_path):
    call = f"python3 -m verl.trainer.main_ppo model_engine=megatron +{OTC}.{NEW_FIELD}=True\n"
    for name, setup in {**PINS, **NOT_PINS}.items():
        (tmp_path / name).write_text(setup + call)
    found = {Path(d["path"]).name: d for d in lint("--verl-version", "0.10.0.dev", ".", cwd=tmp_path)}
    assert set(found) == set(PINS) | set(NOT_PINS)
    for name in PINS:
        assert found[name]["severity"] == "warning", name
        assert f"this script installs Megatron-LM commit {SHA[:8]}, which may have it" in found[name]["message"]
    for name in NOT_PINS:
        assert found[name]["severity"] == "error", name


def test_pins_read_from_the_text():
    assert (
        megatron_pin("pip install git+https://github.com/NVIDIA/Megatron-LM.git@dev#egg=megatron-core\n") == "ref dev"
    )
    assert megatron_pin("pip install git+https://github.com/NVIDIA/Megatron-LM.git@23.05#egg=megatron-core\n") is None
    assert megatron_pin("# https://github.com/NVIDIA/Megatron-LM/tree/dev/experimental/lite\n") is None  # a link
    assert megatron_pin(f"# see https://github.com/NVIDIA/Megatron-LM/tree/{SHA}\n") == f"commit {SHA[:8]}"
    assert megatron_pin("#   - Megatron-LM==core_v0.18.0\n") is None


# --- the flag list, read from a Megatron-LM source tree -----------------------------------------------------------

PACKAGE_INFO = 'MAJOR = 0\nMINOR = 21\nPATCH = 0\nPRE_RELEASE = "rc1"\n__version__ = "ignored"\n'
CONFIG = """from dataclasses import dataclass

@dataclass
class TransformerConfig:
    num_layers: int = 0
    swiglu_fusion: bool = False

@dataclass
class MLATransformerConfig(TransformerConfig):
    q_lora_rank: int = 512
"""
ARGUMENTS = """import argparse
from megatron.core.transformer import TransformerConfig
from megatron.training.argument_utils import ArgumentGroupFactory

def _add_network_size_args(parser):
    ArgumentGroupFactory(TransformerConfig, exclude=["num_layers"]).build_group(parser, "transformer")
    group = parser.add_argument_group(title='network size')
    group.add_argument('--swiglu', action='store_true', help='Use gated linear units and SiLU activation.')
    group.add_argument('--no-masked-softmax-fusion', action='store_false', dest='masked_softmax_fusion')
    group.add_argument('--hidden-dropout', type=float, default=0.1)
    group.add_argument('--attention-backend', choices=['flash', 'local'], default='flash')
    group.add_argument('--cuda-graph-modules', nargs='+', type=str, default=[])
    group.add_argument('--overlap-grad-reduce', action=argparse.BooleanOptionalAction)
    group.add_argument('--swiglu', action='store_false')  # a second definition: argparse's first one wins
    return parser

def _add_training_args(parser):
    from megatron.training.config import TrainingConfig
    ArgumentGroupFactory(TrainingConfig).build_group(parser, "training")
    return parser
"""


def _megatron_tree(root: Path) -> Path:
    files = {
        "megatron/core/package_info.py": PACKAGE_INFO,
        "megatron/core/transformer/__init__.py": "from .transformer_config import TransformerConfig\n",
        "megatron/core/transformer/transformer_config.py": CONFIG,
        "megatron/core/optimizer/optimizer_config.py": "from dataclasses import dataclass\n\n@dataclass\n"
        "class OptimizerConfig:\n    lr: float = 1e-4\n",
        "megatron/core/distributed/distributed_data_parallel_config.py": "from dataclasses import dataclass\n\n"
        "@dataclass\nclass DistributedDataParallelConfig:\n    bucket_size: int = 0\n",
        "megatron/training/arguments.py": ARGUMENTS,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_argparse_flags_read_from_a_megatron_source_archive(tmp_path):
    tree = _megatron_tree(tmp_path / "megatron-lm")
    archive = tmp_path / "mlm-core_v0.21.0rc1.tar.gz"
    with tarfile.open(archive, "w:gz", format=tarfile.PAX_FORMAT, pax_headers={"comment": SHA}) as tf:
        tf.add(tree, arcname="megatron-lm")
    snapshot = build.build_consumer_snapshot(archive)
    assert (snapshot["package"], snapshot["version"]) == ("megatron-core", "0.21.0rc1")
    assert snapshot["source"] == f"git archive {archive.name} of commit {SHA}"
    assert set(snapshot["classes"]["MLATransformerConfig"]["fields"]) == {"num_layers", "swiglu_fusion", "q_lora_rank"}
    arguments = snapshot["classes"]["arguments"]
    assert arguments["fields"] == {
        "swiglu": {"type": "bool", "default": "False"},
        "masked_softmax_fusion": {"type": "bool", "default": "True", "flag": "--no-masked-softmax-fusion"},
        "hidden_dropout": {"type": "float", "default": "0.1"},
        "attention_backend": {"type": "str", "default": "'flash'", "choices": ["flash", "local"]},
        "cuda_graph_modules": {"type": "list", "default": "[]"},
        "overlap_grad_reduce": {"type": "bool", "nullable": True},
    }
    assert arguments["dataclass_groups"] == {
        "TransformerConfig": {"module": "megatron.core.transformer", "read": True},
        "TrainingConfig": {"module": "megatron.training.config", "read": False},  # not in the archive
    }
    # a checkout reads the same; only the source differs
    assert build.build_consumer_snapshot(tree)["classes"] == snapshot["classes"]


@pytest.mark.parametrize("broken", ["megatron/core/package_info.py", "megatron/training/arguments.py"])
def test_a_tree_the_builder_cannot_read_is_a_one_line_error(tmp_path, broken):
    tree = _megatron_tree(tmp_path / "megatron-lm")
    (tree / broken).write_text("MAJOR = (\n" if broken.endswith("package_info.py") else "def f(:\n")
    with pytest.raises((build.SchemaBuildError,)) as err:
        build.build_consumer_snapshot(tree)
    assert "\n" not in str(err.value)
