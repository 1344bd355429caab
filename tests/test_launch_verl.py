"""The smoke recipe's GPU variant, run through verl 0.9.1's real `verl.trainer.main_ppo` on a machine without a GPU:
Hydra composes the config from the recipe's overrides, verl's `validate_config` (and the dataclass checks it runs)
accept it, the tokenizer and the data load, and the run stops only where verl asks Ray for the GPUs it does not
have. A config error of any kind (composition, override, validation) fails the test.

Needs a separate Python with verl 0.9.1 on the CPU build of torch: set `SAPO_VERL_PYTHON` to it (a venv built by
`.ci/verl-venv.sh`, as `.ci/run` does: torch==2.13.0 CPU, `verl[verl-core]==0.9.1`, no CUDA package). Without it
the tests skip.

What the test changes in the recipe's argv, and why (each is a fact of this machine, not of the recipe):
- `actor_rollout_ref.model.path`, `data.train_files`, `data.val_files` point at a stand-in made here: Qwen3-0.6B's
  config (from the shipped model schema) with a tiny word-level tokenizer, and gsm8k-shaped parquet files; there is
  no network to fetch the real ones.
- `ray_kwargs.ray_init.num_cpus=16` is appended: main_ppo's TransferQueue starts a controller and 8 storage actors
  of one CPU each; with Ray's default (the 2 cores here) they wait forever for CPUs, before any GPU is asked for.
- `CUDA_VISIBLE_DEVICES` is empty, so Ray sees 0 GPUs on any machine and the stop is always the same one.
"""

import ast
import os
import signal
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from sapo_toolkit.linter import api
from sapo_toolkit.linter.settings import Settings

from .helpers import REPO

pytestmark = pytest.mark.verl

VERL_VERSION = "0.9.1"
RECIPE = REPO / "recipes" / "smoke-qwen3-0.6b-sapo.yaml"
MODEL_SCHEMA = REPO / "schemas" / "models" / "qwen3-0.6b.json"
TIMEOUT_S = 300
MACHINE_OVERRIDES = ("ray_kwargs.ray_init.num_cpus=16",)

# The markers, as verl 0.9.1 prints them (verl/utils/config.py, verl/single_controller/ray/base.py).
VALIDATED = "[validate_config] All configuration checks passed successfully!"
DATA_LOADED = "train and validate dataloader initialized, train dataset size: 64, val dataset size: 8"
NO_GPU = "ValueError: Total available GPUs 0 is less than total desired GPUs 8"
CONFIG_ERRORS = (
    "ConfigCompositionException",
    "ValidationError",
    "Could not override",
    "Could not append",
    "ConfigKeyError",
    "ConfigAttributeError",
    "MissingMandatoryValue",
    "InterpolationResolutionError",
    "InstantiationException",
    "AssertionError",
    "OverrideParseException",
    "GrammarParseError",
)

# Run by the verl Python (it has pandas, tokenizers and transformers): argv[1] out dir, argv[2] the model schema.
MAKE_STAND_IN = r"""
import json, sys
from pathlib import Path
import pandas as pd
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

out = Path(sys.argv[1])
model_dir = out / "model"
model_dir.mkdir(parents=True, exist_ok=True)
words = ["<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "user", "assistant", "system", "what", "is", "plus"]
vocab = {w: i for i, w in enumerate(words + [str(i) for i in range(10)])}
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<|im_end|>",
                               pad_token="<|endoftext|>", additional_special_tokens=["<|im_start|>", "<|im_end|>"])
fast.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                      "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
fast.save_pretrained(model_dir)
config = dict(json.loads(Path(sys.argv[2]).read_text())["config"])
config.update(architectures=["Qwen3ForCausalLM"], torch_dtype="bfloat16", bos_token_id=vocab["<|endoftext|>"],
              eos_token_id=vocab["<|im_end|>"], rms_norm_eps=1e-6, rope_theta=1000000, hidden_act="silu")
(model_dir / "config.json").write_text(json.dumps(config, indent=2))
rows = [{"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": f"what is {i % 10} plus {i % 7}"}],
         "ability": "math", "reward_model": {"style": "rule", "ground_truth": str(i % 10 + i % 7)},
         "extra_info": {"split": "train", "index": i}} for i in range(64)]
pd.DataFrame(rows).to_parquet(out / "train.parquet")
pd.DataFrame(rows[:8]).to_parquet(out / "test.parquet")
"""


@pytest.fixture(scope="module")
def verl_python() -> str:
    exe = os.environ.get("SAPO_VERL_PYTHON")
    if not exe:
        pytest.skip(
            f"SAPO_VERL_PYTHON is not set: point it at a Python with verl {VERL_VERSION} installed "
            "(CPU torch) to run the smoke recipe through verl's real main_ppo"
        )
    try:
        probe = subprocess.run(
            [exe, "-c", "import importlib.metadata as m; print(m.version('verl'))"],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except OSError as exc:
        pytest.skip(f"SAPO_VERL_PYTHON={exe} cannot be run: {exc}")
    found = probe.stdout.strip() if probe.returncode == 0 else None
    if found != VERL_VERSION:
        pytest.skip(f"SAPO_VERL_PYTHON={exe} has verl {found or '(not installed)'}, not {VERL_VERSION}")
    return exe


@pytest.fixture(scope="module")
def stand_in(verl_python, tmp_path_factory) -> dict[str, str]:
    """Overrides that point the model and the data at a local stand-in (no network here)."""
    out = tmp_path_factory.mktemp("verl-stand-in")
    subprocess.run(
        [verl_python, "-c", MAKE_STAND_IN, str(out), str(MODEL_SCHEMA)],
        check=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    return {
        "actor_rollout_ref.model.path": str(out / "model"),
        "data.train_files": str(out / "train.parquet"),
        "data.val_files": str(out / "test.parquet"),
    }


def with_stand_in(overrides, stand_in: dict[str, str]) -> list[str]:
    """The overrides with the stand-in's values put in place of the recipe's (same keys, same order)."""
    out = []
    for arg in overrides:
        key = arg.split("=", 1)[0]
        out.append(f"{key}='{stand_in[key]}'" if key in stand_in else arg)
    assert sum(a.split("=", 1)[0] in stand_in for a in out) == len(stand_in), overrides
    return out


def run_main_ppo(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """Run verl's main_ppo; on a hang (Ray waiting for resources) kill its whole process group (Ray included)."""
    full_env = {
        **os.environ,
        **env,
        "CUDA_VISIBLE_DEVICES": "",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(cwd / "hf-home"),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",
        "WANDB_MODE": "disabled",
        "HYDRA_FULL_ERROR": "1",
    }
    proc = subprocess.Popen(
        argv, cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"main_ppo still running after {TIMEOUT_S}s (Ray waiting for resources?):\n{out[-4000:]}")
    return proc.returncode, out


def check_stops_only_for_the_gpu(rc: int, out: str, overrides: list[str]) -> None:
    tail = out[-6000:]
    assert rc != 0, tail
    assert not [e for e in CONFIG_ERRORS if e in out], tail
    assert VALIDATED in out, tail
    # Hydra echoes the overrides it applied: exactly the argv's.
    echoed = [line for line in out.splitlines() if line.startswith("Error executing job with overrides: [")]
    assert echoed, tail
    assert ast.literal_eval(echoed[0].split(": ", 1)[1]) == overrides
    # The recipe's values reached the config that the TaskRunner prints, the stand-in's data loaded ...
    assert "'loss_mode': 'sapo'" in out and "'tau_neg': 1.05" in out and "'n_gpus_per_node': 8" in out, tail
    assert DATA_LOADED in out, tail
    # ... and the stop is verl asking Ray for 8 GPUs where there are none.
    assert NO_GPU in out, tail


def test_smoke_recipe_gpu_variant_composes_validates_and_stops_for_the_gpu(verl_python, stand_in, tmp_path):
    loaded = api.load(RECIPE, api.read_options(Settings()))
    (command,) = [c for c in loaded.commands if c.variant == "DEVICE=gpu"]
    overrides = [*with_stand_in(command.hydra_overrides(), stand_in), *MACHINE_OVERRIDES]
    argv = [verl_python, "-m", "verl.trainer.main_ppo", "--config-name", command.config_name, *overrides]
    rc, out = run_main_ppo(argv, {e.name: e.value for e in command.env}, tmp_path)
    check_stops_only_for_the_gpu(rc, out, overrides)


def test_launcher_plan_for_the_smoke_recipe_runs_in_verl_up_to_the_gpu(verl_python, stand_in, tmp_path):
    """The same, with what `sapo-launch` adds (verl's `file` logger and its environment)."""
    from sapo_toolkit.launcher.plan import Facts, plan

    facts = Facts("gpu", verl_python, str(tmp_path), os.cpu_count() or 1, datetime.now(timezone.utc), "runs")
    launch = plan(RECIPE, settings=Settings(), facts=facts, device="gpu")
    assert not launch.lint.refuses, launch.lint.diagnostics
    assert launch.argv[:3] == (verl_python, "-m", "verl.trainer.main_ppo"), launch.argv
    overrides = [*with_stand_in(launch.argv[5:], stand_in), *MACHINE_OVERRIDES]
    rc, out = run_main_ppo([*launch.argv[:5], *overrides], dict(launch.env), tmp_path)
    check_stops_only_for_the_gpu(rc, out, overrides)
    assert "'logger': ['console', 'file']" in out  # the launcher's logger reached verl's config
