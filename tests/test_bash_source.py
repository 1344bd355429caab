"""The bash run-script source: exact overrides per variant for each fixture, diagnostics, SAPO tau bug."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from sapo_toolkit.linter.api import read_options
from sapo_toolkit.linter.engine import lint_command
from sapo_toolkit.linter.rules import all_rules, findings, without_superseded
from sapo_toolkit.linter.schema import entrypoints, load_snapshot
from sapo_toolkit.linter.settings import Settings
from sapo_toolkit.linter.sources.bash import UNRESOLVED_VALUE
from sapo_toolkit.linter.sources.files import TextFile, read_text

from .helpers import REPO, fetch_wheel, read_script_findings

FIXTURES = Path(__file__).parent / "fixtures" / "scripts"
OPTIONS = read_options(Settings(verl_version="0.9.1"))


def read(name: str):
    return read_script_findings(read_text(FIXTURES / name), OPTIONS)


def read_text_script(text: str, path: str = "run_x_fsdp.sh"):
    return read_script_findings(TextFile(path, text), OPTIONS)


def pinned(result) -> dict:
    out = {}
    for c in result.commands:
        out[c.variant] = [
            (lo.key_text, repr(lo.parsed.value) if lo.parsed else repr(("SYNTAX",)), lo.location.line)
            for lo in c.overrides
        ]
    return out


# (key as written, repr of the parsed value, line) for each variant, in command order.
PINS = {
    "run_deepseek_v3_megatron.sh": {
        "INFER_BACKEND=sglang": [
            ("actor_rollout_ref.model.path", "'deepseek-ai/DeepSeek-V3'", 17),
            ("actor_rollout_ref.rollout.name", "'sglang'", 18),
            ("actor_rollout_ref.rollout.tensor_model_parallel_size", "16", 19),
            ("actor_rollout_ref.actor.megatron.expert_model_parallel_size", "64", 20),
            ("trainer.nnodes", "32", 21),
        ],
        "INFER_BACKEND=vllm": [
            ("actor_rollout_ref.model.path", "'deepseek-ai/DeepSeek-V3'", 17),
            ("actor_rollout_ref.rollout.name", "'vllm'", 18),
            ("actor_rollout_ref.rollout.tensor_model_parallel_size", "32", 19),
            ("actor_rollout_ref.actor.megatron.expert_model_parallel_size", "64", 20),
            ("trainer.nnodes", "32", 21),
        ],
    },
    "run_gemma3_12b_fsdp.sh": {
        None: [
            ("actor_rollout_ref.model.path", "'google/gemma-3-12b-it'", 5),
            ("actor_rollout_ref.actor.ppo_mini_batch_size", "16", 6),
            ("trainer.n_gpus_per_node", "3", 7),
            ("~actor_rollout_ref.actor.checkpoint", "MISSING", 8),
            ("++trainer.extra_flag", "True", 9),
        ],
    },
    "run_llama3_8b_megatron.sh": {
        "DEVICE=npu,INFER_BACKEND=sglang": [
            ("actor_rollout_ref.model.path", "'meta-llama/Meta-Llama-3-8B-Instruct'", 21),
            ("actor_rollout_ref.actor.megatron.param_offload", "True", 8),
            ("actor_rollout_ref.rollout.name", "'sglang'", 16),
        ],
        "DEVICE=npu,INFER_BACKEND=vllm": [
            ("actor_rollout_ref.model.path", "'meta-llama/Meta-Llama-3-8B-Instruct'", 21),
            ("actor_rollout_ref.actor.megatron.param_offload", "True", 8),
            ("actor_rollout_ref.rollout.name", "'vllm'", 18),
        ],
        "DEVICE=ascend,INFER_BACKEND=sglang": [
            ("actor_rollout_ref.model.path", "'meta-llama/Meta-Llama-3-8B-Instruct'", 21),
            ("actor_rollout_ref.actor.megatron.param_offload", "True", 8),
            ("actor_rollout_ref.rollout.name", "'sglang'", 16),
        ],
        "DEVICE=ascend,INFER_BACKEND=vllm": [
            ("actor_rollout_ref.model.path", "'meta-llama/Meta-Llama-3-8B-Instruct'", 21),
            ("actor_rollout_ref.actor.megatron.param_offload", "True", 8),
            ("actor_rollout_ref.rollout.name", "'vllm'", 18),
        ],
        "DEVICE=gpu,INFER_BACKEND=sglang": [
            ("actor_rollout_ref.model.path", "'meta-llama/Meta-Llama-3-8B-Instruct'", 21),
            ("actor_rollout_ref.actor.megatron.param_offload", "False", 12),
            ("actor_rollout_ref.rollout.name", "'sglang'", 16),
        ],
        "DEVICE=gpu,INFER_BACKEND=vllm": [
            ("actor_rollout_ref.model.path", "'meta-llama/Meta-Llama-3-8B-Instruct'", 21),
            ("actor_rollout_ref.actor.megatron.param_offload", "False", 12),
            ("actor_rollout_ref.rollout.name", "'vllm'", 18),
        ],
    },
    "run_qwen2_5_3b_fsdp.sh": {
        None: [
            ("data.max_length", "2048", 8),
            ("model.path", "'Qwen/Qwen2.5-3B-Instruct'", 9),
            ("trainer.total_epochs", "2", 10),
        ],
    },
    "run_qwen2_5_7b_fsdp.sh": {
        None: [
            ("algorithm.adv_estimator", "'grpo'", 11),
            ("data.train_files", "['/data/gsm8k/train.parquet']", 12),
            ("data.val_files", "['/data/gsm8k/test.parquet']", 13),
            ("data.train_batch_size", "1024", 14),
            ("data.max_prompt_length", "512", 15),
            ("data.max_response_length", "1024", 16),
            ("actor_rollout_ref.model.path", "'Qwen/Qwen2.5-7B-Instruct'", 17),
            ("actor_rollout_ref.actor.optim.lr", "1e-06", 18),
            ("actor_rollout_ref.actor.ppo_mini_batch_size", "256", 19),
            ("actor_rollout_ref.actor.use_kl_loss", "True", 20),
            ("actor_rollout_ref.rollout.name", "'vllm'", 21),
            ("actor_rollout_ref.rollout.n", "5", 22),
            ("trainer.logger", "['console', 'wandb']", 23),
            ("trainer.project_name", "'verl_grpo_example_gsm8k'", 24),
            ("trainer.n_gpus_per_node", "8", 25),
            ("trainer.nnodes", "1", 26),
            ("trainer.total_epochs", "15", 27),
        ],
    },
    "run_qwen2_5_vl_7b_fsdp.sh": {
        None: [
            ("data.image_key", "'images'", 5),
            ("data.prompt_key", "'prompt_text'", 6),
            ("data.val_files", "['/data/a.parquet', '/data/b.parquet']", 7),
            ("trainer.experiment_name", "'vlA'", 8),
            ("actor_rollout_ref.model.path", "'Qwen/Qwen2.5-VL-7B-Instruct'", 9),
            ("trainer.logger", "['console']", 10),
        ],
    },
    "run_qwen3_0_6b_fsdp.sh": {
        None: [
            ("trainer.nnodes", "1", 7),
            ("trainer.experiment_name", "'qwen3_06b'", 7),
            ("trainer.project_name", "'sapo tests'", 8),
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-0.6B'", 10),
            ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "2", 11),
            ("actor_rollout_ref.actor.ppo_mini_batch_size", "16", 12),
            ("actor_rollout_ref.actor.ppo_max_token_len_per_gpu", "18432", 13),
        ],
    },
    "run_qwen3_14b_megatron.sh": {
        None: [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-14B'", 6),
            ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "4", 4),
            ("actor_rollout_ref.actor.megatron.sequence_parallel", "True", 4),
            ("trainer.nnodes", "2", 8),
            ("trainer.n_gpus_per_node", "8", 8),
        ],
    },
    "run_qwen3_1_7b_fsdp.sh": {
        "DEVICE=npu": [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-1.7B'", 14),
            ("actor_rollout_ref.actor.strategy", "'fsdp'", 15),
            ("critic.strategy", "'fsdp'", 16),
        ],
        "DEVICE=gpu": [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-1.7B'", 14),
            ("actor_rollout_ref.actor.strategy", "'fsdp2'", 15),
            ("critic.strategy", "'fsdp2'", 16),
        ],
    },
    "run_qwen3_30b_a3b_megatron.sh": {
        "USE_UV=1,DEVICE=npu": [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-30B-A3B'", 38),
            ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "4", 18),
            ("actor_rollout_ref.actor.megatron.expert_model_parallel_size", "8", 19),
            ("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size", "2", 20),
            ("actor_rollout_ref.actor.megatron.override_transformer_config.use_flash_attn", "True", 27),
            ("actor_rollout_ref.rollout.tensor_model_parallel_size", "8", 22),
            ("actor_rollout_ref.rollout.enforce_eager", "True", 29),
            ("trainer.n_gpus_per_node", "8", 41),
            ("trainer.nnodes", "2", 41),
        ],
        "USE_UV=1,DEVICE=cuda": [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-30B-A3B'", 38),
            ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "4", 18),
            ("actor_rollout_ref.actor.megatron.expert_model_parallel_size", "8", 19),
            ("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size", "2", 20),
            ("actor_rollout_ref.rollout.tensor_model_parallel_size", "8", 22),
            ("actor_rollout_ref.rollout.enforce_eager", "False", 33),
            ("trainer.n_gpus_per_node", "8", 41),
            ("trainer.nnodes", "2", 41),
        ],
        "USE_UV=0,DEVICE=npu": [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-30B-A3B'", 38),
            ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "4", 18),
            ("actor_rollout_ref.actor.megatron.expert_model_parallel_size", "8", 19),
            ("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size", "2", 20),
            ("actor_rollout_ref.actor.megatron.override_transformer_config.use_flash_attn", "True", 27),
            ("actor_rollout_ref.rollout.tensor_model_parallel_size", "8", 22),
            ("actor_rollout_ref.rollout.enforce_eager", "True", 29),
            ("trainer.n_gpus_per_node", "8", 41),
            ("trainer.nnodes", "2", 41),
        ],
        "USE_UV=0,DEVICE=cuda": [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-30B-A3B'", 38),
            ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "4", 18),
            ("actor_rollout_ref.actor.megatron.expert_model_parallel_size", "8", 19),
            ("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size", "2", 20),
            ("actor_rollout_ref.rollout.tensor_model_parallel_size", "8", 22),
            ("actor_rollout_ref.rollout.enforce_eager", "False", 33),
            ("trainer.n_gpus_per_node", "8", 41),
            ("trainer.nnodes", "2", 41),
        ],
    },
    "run_qwen3_32b_megatron.sh": {
        None: [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-32B'", 12),
            ("actor_rollout_ref.actor.policy_loss.loss_mode", "'sapo'", 6),
            ("actor_rollout_ref.actor.policy_loss.tau_pos", "1.0", 7),
            ("actor_rollout_ref.actor.policy_loss.tau_neg", "1.05", 8),
        ],
    },
    "run_qwen3_4b_fsdp.sh": {
        None: [
            ("actor_rollout_ref.rollout.n", "4", 11),
            ("actor_rollout_ref.actor.optim.lr", "3e-06", 12),
            ("trainer.experiment_name", "'qwen3-4b'", 13),
            ("actor_rollout_ref.actor.use_kl_loss", "False", 14),
            ("trainer.project_name", "'sapo demo'", 15),
            ("trainer.logger", "['console']", 16),
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-4B'", 17),
        ],
    },
    "run_qwen3_8b_device_probe_fsdp.sh": {
        "DEVICE=gpu": [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-8B'", 29),
            ("actor_rollout_ref.rollout.name", "'vllm'", 16),
            ("trainer.n_gpus_per_node", "8", 10),
            ("trainer.nnodes", "1", 11),
        ],
        "DEVICE=npu": [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-8B'", 29),
            ("actor_rollout_ref.rollout.name", "'vllm'", 19),
            ("actor_rollout_ref.rollout.enforce_eager", "True", 19),
            ("trainer.n_gpus_per_node", "8", 10),
            ("trainer.nnodes", "1", 11),
            ("trainer.n_gpus_per_node", "16", 20),
        ],
    },
    "run_qwen3_8b_fsdp2.sh": {
        None: [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-8B'", 9),
            ("actor_rollout_ref.actor.strategy", "'fsdp2'", 10),
            ("trainer.experiment_name", "'${oc.env:SAPO_LINT_UNRESOLVED}'", 11),
            ("trainer.default_local_dir", "'/ckpt/qwen3_8b'", 12),
            ("trainer.n_gpus_per_node", "8", 13),
            ("trainer.val_before_train", "False", 14),
        ],
    },
    "run_qwen3_8b_megatron.sh": {
        "DEVICE=npu,INFER_BACKEND=sglang": [
            ("data.train_files", "['/data/gsm8k/train.parquet']", 15),
            ("data.train_batch_size", "128", 16),
            ("data.max_prompt_length", "1024", 17),
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-8B'", 20),
            ("actor_rollout_ref.actor.policy_loss.loss_mode", "'sapo'", 23),
            ("+actor_rollout_ref.actor.policy_loss.tau_pos", "1.0", 24),
            ("+actor_rollout_ref.actor.policy_loss.tau_neg", "1.05", 25),
            ("actor_rollout_ref.actor.ppo_mini_batch_size", "32", 26),
            ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "2", 27),
            ("actor_rollout_ref.actor.megatron.use_mbridge", "True", 41),
            ("actor_rollout_ref.rollout.name", "'sglang'", 30),
            ("actor_rollout_ref.rollout.tensor_model_parallel_size", "2", 31),
            ("actor_rollout_ref.rollout.gpu_memory_utilization", "0.5", 50),
            ("trainer.nnodes", "1", 34),
            ("trainer.n_gpus_per_node", "8", 35),
            ("trainer.logger", "['console']", 36),
        ],
        "DEVICE=npu,INFER_BACKEND=vllm": [
            ("data.train_files", "['/data/gsm8k/train.parquet']", 15),
            ("data.train_batch_size", "128", 16),
            ("data.max_prompt_length", "1024", 17),
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-8B'", 20),
            ("actor_rollout_ref.actor.policy_loss.loss_mode", "'sapo'", 23),
            ("+actor_rollout_ref.actor.policy_loss.tau_pos", "1.0", 24),
            ("+actor_rollout_ref.actor.policy_loss.tau_neg", "1.05", 25),
            ("actor_rollout_ref.actor.ppo_mini_batch_size", "32", 26),
            ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "2", 27),
            ("actor_rollout_ref.actor.megatron.use_mbridge", "True", 41),
            ("actor_rollout_ref.rollout.name", "'vllm'", 30),
            ("actor_rollout_ref.rollout.tensor_model_parallel_size", "2", 31),
            ("trainer.nnodes", "1", 34),
            ("trainer.n_gpus_per_node", "8", 35),
            ("trainer.logger", "['console']", 36),
        ],
        "DEVICE=gpu,INFER_BACKEND=sglang": [
            ("data.train_files", "['/data/gsm8k/train.parquet']", 15),
            ("data.train_batch_size", "128", 16),
            ("data.max_prompt_length", "1024", 17),
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-8B'", 20),
            ("actor_rollout_ref.actor.policy_loss.loss_mode", "'sapo'", 23),
            ("+actor_rollout_ref.actor.policy_loss.tau_pos", "1.0", 24),
            ("+actor_rollout_ref.actor.policy_loss.tau_neg", "1.05", 25),
            ("actor_rollout_ref.actor.ppo_mini_batch_size", "32", 26),
            ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "2", 27),
            ("actor_rollout_ref.rollout.name", "'sglang'", 30),
            ("actor_rollout_ref.rollout.tensor_model_parallel_size", "2", 31),
            ("actor_rollout_ref.rollout.gpu_memory_utilization", "0.5", 50),
            ("trainer.nnodes", "1", 34),
            ("trainer.n_gpus_per_node", "8", 35),
            ("trainer.logger", "['console']", 36),
        ],
        "DEVICE=gpu,INFER_BACKEND=vllm": [
            ("data.train_files", "['/data/gsm8k/train.parquet']", 15),
            ("data.train_batch_size", "128", 16),
            ("data.max_prompt_length", "1024", 17),
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-8B'", 20),
            ("actor_rollout_ref.actor.policy_loss.loss_mode", "'sapo'", 23),
            ("+actor_rollout_ref.actor.policy_loss.tau_pos", "1.0", 24),
            ("+actor_rollout_ref.actor.policy_loss.tau_neg", "1.05", 25),
            ("actor_rollout_ref.actor.ppo_mini_batch_size", "32", 26),
            ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "2", 27),
            ("actor_rollout_ref.rollout.name", "'vllm'", 30),
            ("actor_rollout_ref.rollout.tensor_model_parallel_size", "2", 31),
            ("trainer.nnodes", "1", 34),
            ("trainer.n_gpus_per_node", "8", 35),
            ("trainer.logger", "['console']", 36),
        ],
    },
    "run_qwen3_8b_megatron_lite.sh": {
        "INFER_BACKEND=vllm": [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-8B'", 10),
            ("actor_rollout_ref.rollout.name", "'vllm'", 11),
            ("actor_rollout_ref.rollout.mode", "'async'", 12),
        ],
        "INFER_BACKEND=sglang": [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-8B'", 10),
            ("actor_rollout_ref.rollout.name", "'sglang'", 11),
            ("actor_rollout_ref.rollout.mode", "'sync'", 12),
        ],
    },
    "run_qwen3_8b_mindspeed.sh": {
        None: [
            ("actor_rollout_ref.model.path", "'Qwen/Qwen3-8B'", 4),
            ("trainer.logger", "('SYNTAX',)", 5),
            ("trainer.nnodes", "1", 6),
        ],
    },
}


def test_at_least_fifteen_fixtures():
    names = sorted(p.name for p in FIXTURES.glob("*.sh"))
    assert len(names) >= 15
    assert set(names) == set(PINS)
    assert all(n.startswith("run_") for n in names)


@pytest.mark.parametrize("name", sorted(PINS))
def test_fixture_overrides_per_variant(name):
    assert pinned(read(name)) == PINS[name]


@pytest.mark.parametrize("name", sorted(PINS))
def test_fixture_never_raises_and_has_no_syntax_error(name):
    result = read(name)
    assert not [d for d in result.diagnostics if d.code == "SH002"]


def test_sapo_tau_bug_flagged_on_element_line_in_every_variant():
    result = read("run_qwen3_8b_megatron.sh")
    assert [c.variant for c in result.commands] == [
        "DEVICE=npu,INFER_BACKEND=sglang",
        "DEVICE=npu,INFER_BACKEND=vllm",
        "DEVICE=gpu,INFER_BACKEND=sglang",
        "DEVICE=gpu,INFER_BACKEND=vllm",
    ]
    lines = (FIXTURES / "run_qwen3_8b_megatron.sh").read_text().splitlines()
    tau_line = next(
        i for i, line in enumerate(lines, 1) if "+actor_rollout_ref.actor.policy_loss.tau_pos=${tau_pos}" in line
    )
    for command in result.commands:
        found = lint_command(command, load_snapshot("0.9.1", command.config_name), all_rules().values())
        sp001 = {(d.location.line, d.location.column) for d in found if d.code == "SP001"}
        assert (tau_line, 5) in sp001, command.variant


def test_variants_env_and_config_names():
    result = read("run_qwen3_8b_megatron.sh")
    by_variant = {c.variant: c for c in result.commands}
    npu = by_variant["DEVICE=npu,INFER_BACKEND=vllm"]
    assert {e.name: e.value for e in npu.env} == {"HCCL_CONNECT_TIMEOUT": "1800", "HCCL_EXEC_TIMEOUT": "3600"}
    assert by_variant["DEVICE=gpu,INFER_BACKEND=vllm"].env == ()
    assert {c.config_name for c in result.commands} == {"ppo_megatron_trainer"}
    assert result.switches == {"DEVICE": ["npu", "gpu"], "INFER_BACKEND": ["sglang", "vllm"]}
    assert npu.origin.line == 53 and npu.model is not None and npu.model.num_layers == 36


def test_entry_module_default_config_from_verl_source():
    assert {c.config_name for c in read("run_qwen2_5_3b_fsdp.sh").commands} == {"sft_trainer_engine"}
    assert {c.config_name for c in read("run_qwen3_8b_megatron_lite.sh").commands} == {"fully_async_ppo_trainer"}
    assert {c.config_name for c in read("run_qwen2_5_7b_fsdp.sh").commands} == {"ppo_trainer"}
    env = {e.name: e.value for e in read("run_qwen2_5_3b_fsdp.sh").commands[0].env}
    assert env == {"VLLM_USE_V1": "1", "WANDB_MODE": "offline", "CUDA_DEVICE_MAX_CONNECTIONS": "1"}


def test_entrypoints_json_matches_verl_source(tmp_path):
    """The committed entry-module defaults are what the generator reads from the real verl wheels."""
    from sapo_toolkit.schemas.build import entrypoint_defaults

    for version in ("0.9.1", "0.8.0"):
        committed = json.loads((REPO / "schemas" / "verl" / f"{version}.json").read_text())["entrypoints"]
        assert committed["verl.trainer.main_ppo"] == "ppo_trainer"
        assert entrypoints(version) == committed
        with zipfile.ZipFile(fetch_wheel(f"verl=={version}")) as zf:
            zf.extractall(tmp_path / version, [n for n in zf.namelist() if n.startswith("verl/")])
        assert entrypoint_defaults(tmp_path / version / "verl") == committed


def codes(result):
    return [(d.code, d.location.line, d.location.column) for d in result.diagnostics]


def test_command_substitution_in_a_free_form_value_is_an_environment_input_and_passthrough_sh003():
    result = read("run_qwen3_8b_fsdp2.sh")
    assert ("SH004", 11, 5) in codes(result) and ("SH003", 15, 5) in codes(result)
    assert "SH001" not in {d.code for d in result.diagnostics}  # the reader leaves values to SH001's rule
    msg = next(d.message for d in result.diagnostics if d.code == "SH004")
    assert "$(date +%Y%m%d_%H%M%S)" in msg
    lo = next(lo for lo in result.commands[0].overrides if lo.key_text == "trainer.experiment_name")
    assert lo.parsed.value == UNRESOLVED_VALUE and lo.unresolved == ("$(date +%Y%m%d_%H%M%S)",)


def test_unknown_variable_in_key_is_sh001_and_dropped():
    result = read("run_deepseek_v3_megatron.sh")
    sh = [d for d in result.diagnostics if d.code == "SH001"]
    assert len(sh) == 1 and sh[0].variant is None and "$PREFIX_KEY" in sh[0].message and sh[0].location.line == 22
    assert all(not lo.key_text.endswith(".enable") for c in result.commands for lo in c.overrides)


def test_syntax_error_is_sh002_with_position():
    result = read_text_script('ACTOR=(a=1\npython3 -m verl.trainer.main_ppo "${ACTOR[@]}"\n')
    assert result.commands == []
    assert [d.code for d in result.diagnostics] and {d.code for d in result.diagnostics} == {"SH002"}
    assert result.diagnostics[0].location.line >= 1


def test_unparseable_override_keeps_syntax_error():
    result = read("run_qwen3_8b_mindspeed.sh")
    lo = next(lo for lo in result.commands[0].overrides if lo.key_text == "trainer.logger")
    assert lo.parsed is None and lo.syntax_error


def test_undecidable_if_condition_is_taken_both_ways():
    text = "if [ -f /etc/x ]; then\n  N=2\nfi\npython3 -m verl.trainer.main_ppo trainer.nnodes=${N:-1}\n"
    result = read_text_script(text)
    assert "SH001" not in {d.code for d in result.diagnostics}
    assert pinned(result) == {
        "cond@1:4=false": [("trainer.nnodes", "1", 4)],
        "cond@1:4=true": [("trainer.nnodes", "2", 4)],
    }


def test_undecidable_condition_guarding_nothing_is_not_a_variant():
    text = 'if [ ! -f "$CKPT/config.json" ]; then echo "missing" >&2; fi\npython3 -m verl.trainer.main_ppo a.b=1\n'
    assert list(pinned(read_text_script(text))) == [None]


def test_cli_overrides_merged_last():
    from sapo_toolkit.linter.api import command_line_overrides

    options = OPTIONS._replace(cli_overrides=command_line_overrides(["trainer.nnodes=4"]))
    result = read_script_findings(read_text(FIXTURES / "run_qwen3_14b_megatron.sh"), options)
    last = result.commands[0].overrides[-1]
    assert last.key_text == "trainer.nnodes" and last.parsed.value == 4
    assert [lo.key_text for lo in result.commands[0].overrides].count("trainer.nnodes") == 1


@pytest.mark.parametrize(
    "text",
    [
        "",
        "#!/bin/bash\necho hi\n",
        "for i in 1 2; do echo $i; done\n",
        "x=$(( 1 / 0 ))\n",
        "f() { f; }\nf\n",
        "A=(1 2)\nA[5]=x\necho ${A[@]}\n",
        "while true; do break; done\n",
        "case $X in a) ;; esac\npython3 -m verl.trainer.main_ppo a.b=${X}\n",
        "cat <<EOF\nhello $X\nEOF\n",
        "echo ${X/a/b} ${X#p} ${X%%s} ${!X} ${X^^}\n",
    ],
)
def test_odd_valid_bash_never_raises(text):
    read_text_script(text)


def _runs(command) -> frozenset:
    """What a command runs the trainer with: a script's and a recipe's command alike, whatever their labels (convert
    merges the script's variants that run the same); a key set twice has its last value, one the script takes from
    where it runs is the recipe's `???`."""
    overrides = {
        lo.parsed.key: repr("???" if lo.unresolved else lo.parsed.value) for lo in command.overrides if lo.parsed
    }
    return frozenset([*overrides.items(), *((e.name, e.value) for e in command.env)])


def _findings(commands, version="0.9.1"):
    """Each command's findings against verl's config alone: the code of the repository a file lies in (this
    checkout, for the fixtures; none for a converted recipe in a temporary directory) aside."""
    out = set()
    for c in (c._replace(stack=c.stack._replace(repository=None, verl_package=None)) for c in commands):
        for d in without_superseded(lint_command(c, load_snapshot(version, c.config_name), all_rules().values())):
            out.add((d.code, _runs(c)))
    return out


@pytest.mark.parametrize("name", sorted(PINS))
def test_convert_lints_with_the_same_findings(name, tmp_path):
    import yaml
    from click.testing import CliRunner

    from sapo_toolkit.linter.cli.convert import convert
    from sapo_toolkit.linter.sources.recipe import read_recipe

    script = read(name)
    if not script.commands or script.commands[0].config_name not in ("ppo_trainer", "ppo_megatron_trainer"):
        pytest.skip("not a ppo_trainer script")
    out = tmp_path / "recipe.yaml"
    result = CliRunner().invoke(convert, [str(FIXTURES / name), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert yaml.safe_load(text)["recipe"] == "sapo-recipe/v1"
    recipe = read_recipe(TextFile(str(out), text), OPTIONS)
    found = findings(recipe.problems)
    assert not [d for d in found if d.code == "RF001"], found
    assert {_runs(c) for c in recipe.recipe.commands} == {_runs(c) for c in script.commands}
    assert len(recipe.recipe.commands) == len({_runs(c) for c in script.commands})  # no two variants run the same
    # unparseable overrides are not carried over (the convert notes say so); a value the script takes from where it
    # runs is `???` in the recipe, which RF014 reports until it is set
    expected = {f for f in _findings(script.commands) if f[0] != "SL009"}
    assert {f for f in _findings(recipe.recipe.commands) if f[0] != "RF014"} == expected
    unresolved = any(lo.unresolved for c in script.commands for lo in c.overrides)
    assert any(f[0] == "RF014" for f in _findings(recipe.recipe.commands)) == unresolved


def test_convert_to_stdout():
    from click.testing import CliRunner

    from sapo_toolkit.linter.cli.convert import convert

    result = CliRunner().invoke(convert, [str(FIXTURES / "run_qwen3_8b_fsdp2.sh")])
    assert result.exit_code == 0
    assert result.output.startswith("# Converted from run_qwen3_8b_fsdp2.sh")
    assert "SH003" in result.output and "trainer.experiment_name: ???" in result.output
    assert "# note: trainer.experiment_name: `???`, to be set before a launch: the script's value uses" in result.output


# --- real run scripts: device probes, compound conditions, exits, unresolved values, branch regions ---------------

MARKERS = range(0xF0000, 0x110000)


def _no_marker(text) -> bool:
    return not any(ord(ch) in MARKERS for ch in str(text))


def test_device_probe_header_enumerates_the_devices_the_branches_name():
    result = read("run_qwen3_8b_device_probe_fsdp.sh")
    assert [c.variant for c in result.commands] == ["DEVICE=gpu", "DEVICE=npu"]
    assert result.switches == {"DEVICE": ["gpu", "npu"]}
    assert not [d for d in result.diagnostics if d.code == "SH001"], result.diagnostics
    npu = next(c for c in result.commands if c.variant == "DEVICE=npu")
    eager = next(lo for lo in npu.overrides if lo.key_text == "actor_rollout_ref.rollout.enforce_eager")
    assert (eager.location.line, eager.location.column) == (19, 54)
    assert all(_no_marker(c.variant) for c in result.commands)
    assert all(_no_marker(d.message) and _no_marker(d.variant) for d in result.diagnostics)


def test_device_probe_without_default_and_literal_defaults_elsewhere():
    text = (
        "DEVICE=$(detect_device)\n"
        'if [ "${DEVICE:-gpu}" = npu ]; then N=16; fi\n'
        'case "$DEVICE" in ascend) N=32 ;; esac\n'
        "python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=${N:-8}\n"
    )
    result = read_text_script(text)
    got = {c.variant: c.overrides[0].parsed.value for c in result.commands}
    assert got == {"DEVICE=npu": 16, "DEVICE=ascend": 32, "DEVICE=gpu": 8}
    assert result.switches == {"DEVICE": ["npu", "ascend", "gpu"]}  # the script's own `${DEVICE:-gpu}` too


def test_switch_on_a_copy_of_a_callers_variable_enumerates_the_callers_variable():
    # verl's mtp script: `rollout_backend=${ROLLOUT_BACKEND:-sglang}`, then `if [ "${rollout_backend}" = vllm ]`.
    # Setting rollout_backend before the script runs is overwritten, so the vllm branch is reached only through
    # ROLLOUT_BACKEND; unset runs as sglang, which is no variant of its own.
    text = (
        "rollout_backend=${ROLLOUT_BACKEND:-sglang}\n"
        'if [ "${rollout_backend}" = vllm ]; then EAGER=True; else EAGER=False; fi\n'
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=${rollout_backend} "
        "actor_rollout_ref.rollout.enforce_eager=${EAGER}\n"
    )
    result = read_text_script(text)
    got = {c.variant: [lo.parsed.value for lo in c.overrides] for c in result.commands}
    assert got == {"ROLLOUT_BACKEND=vllm": ["vllm", True], "ROLLOUT_BACKEND=sglang": ["sglang", False]}


def test_a_variable_assigned_twice_is_no_copy_of_the_callers_variable():
    text = (
        "backend=${BACKEND:-sglang}\n"
        "backend=vllm\n"
        'if [ "$backend" = vllm ]; then EAGER=True; else EAGER=False; fi\n'
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.enforce_eager=${EAGER}\n"
    )
    result = read_text_script(text)
    assert {c.variant: c.overrides[0].parsed.value for c in result.commands} == {None: True}


def test_a_probe_no_branch_names_a_value_for_stays_sh001():
    text = 'MODE=$(uname -m)\ncase "$MODE" in x86*) N=2 ;; esac\npython3 -m verl.trainer.main_ppo a.n=${N:-1}\n'
    result = read_text_script(text)
    assert ("SH001", 2, 1) in codes(result)


@pytest.mark.parametrize(
    "condition",
    [
        '[ "${A:-1}" != 0 ] && [ "${B:-gpu}" = gpu ] && { [ "$C" = x ] || [ "$C" = y ]; }',
        '[[ "${A:-1}" != 0 && "${B:-gpu}" == gpu && ( "$C" == x || "$C" == y ) ]]',
        '! [ "${A:-1}" = 0 ] && test "${B:-gpu}" = gpu && { test "$C" = x || [ "$C" = y ]; }',
    ],
)
def test_compound_conditions_are_evaluated(condition, tmp_path):
    text = f"if {condition}; then\n  N=2\nfi\npython3 -m verl.trainer.main_ppo a.n=${{N:-1}}\n"
    result = read_text_script(text)
    assert not [d for d in result.diagnostics if d.code == "SH001"], result.diagnostics
    got = {c.variant: c.overrides[0].parsed.value for c in result.commands}
    # A in {0, 1}, B in {gpu} (its default), C in {x, y, unset}; where `&&` stops early, B and C are no input
    assert set(got.values()) == {1, 2} and 4 <= len(got) <= 6
    for variant, n in got.items():
        env = dict(t.split("=", 1) for t in variant.split(","))
        bash_env = {k: v for k, v in env.items() if v != "unset"}
        assert n == _bash_n(text, bash_env, tmp_path), variant


def _bash_n(text: str, env: dict, tmp_path) -> int:
    """What bash itself gives `a.n` for this environment (a stub python3 prints its arguments)."""
    import os
    import shutil
    import subprocess

    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    stub = tmp_path / "python3"
    stub.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    stub.chmod(0o755)
    script = tmp_path / "run.sh"
    script.write_text(text)
    out = subprocess.run(
        ["bash", str(script)],
        env={"PATH": f"{tmp_path}:{os.environ['PATH']}", **env},
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    ).stdout.split()
    return int(next(a for a in out if a.startswith("a.n=")).split("=", 1)[1])


def test_undecidable_part_of_a_compound_condition_makes_it_a_free_boolean():
    text = (
        'if [ -d "$CKPT_DIR" ] && [ "${RESUME:-1}" = 1 ]; then N=2; fi\npython3 -m verl.trainer.main_ppo a.n=${N:-1}\n'
    )
    got = {c.variant: c.overrides[0].parsed.value for c in read_text_script(text).commands}
    # RESUME=1 leaves the directory test undecided: both ways; RESUME unset/other decides it false
    assert got == {"RESUME=1,cond@1:4=false": 1, "RESUME=1,cond@1:4=true": 2}


def test_free_booleans_are_bounded(tmp_path):
    from sapo_toolkit.linter.core.variants import MAX_VARIANTS

    text = "".join(f"[ -f /x{i} ] && A{i}=1\n" for i in range(10)) + "python3 -m verl.trainer.main_ppo a.b=1\n"
    result = read_text_script(text)
    assert len(result.commands) == MAX_VARIANTS
    assert any(d.code == "SH001" and "not linted" in d.message for d in result.diagnostics)


def test_variants_that_exit_before_the_trainer_are_dropped():
    text = (
        'case "$MODE" in\n  a) N=1 ;;\n  b) N=2 ;;\n  *) echo "unsupported" >&2; exit 1 ;;\nesac\n'
        'if [ "${N}" = 2 ] && [ "${STRICT:-0}" = 1 ]; then exit 3; fi\n'
        "python3 -m verl.trainer.main_ppo a.n=${N}\n"
    )
    result = read_text_script(text)
    got = {c.variant: c.overrides[0].parsed.value for c in result.commands}
    # MODE unset takes `*) exit 1`, MODE=b with STRICT=1 exits: neither is a variant; with MODE=a the `&&` stops
    # before STRICT is read, so STRICT is no input of that variant
    assert got == {"MODE=a": 1, "MODE=b,STRICT=0": 2}
    assert not {d.code for d in result.diagnostics} & {"SH001", "SL004"}


def test_exit_after_the_trainer_call_keeps_the_variant_and_exit_in_a_subshell_is_not_the_scripts():
    text = "( exit 1 )\npython3 -m verl.trainer.main_ppo a.n=1\nexit $?\n"
    assert pinned(read_text_script(text)) == {None: [("a.n", "1", 2)]}


def test_positional_arguments_are_inputs_not_empty():
    text = (
        'if [ "$#" -lt 2 ]; then echo "usage: $0 N DIR"; exit 1; fi\n'
        "python3 -m verl.trainer.main_ppo trainer.default_local_dir=$2 trainer.nnodes=${3:-1}\n"
    )
    result = read_text_script(text)
    (command,) = result.commands
    assert [(lo.key_text, lo.parsed.value, lo.unresolved) for lo in command.overrides] == [
        ("trainer.default_local_dir", UNRESOLVED_VALUE, ("$2 (an argument the script is given)",)),
        ("trainer.nnodes", 1, ()),
    ]
    assert "its own arguments (`$2`)" in next(d.message for d in result.diagnostics if d.code == "SH004")


def test_arithmetic_in_a_default_word_is_evaluated():
    """tree-sitter-bash reads `${V:-$((A + B))}` as a command substitution of a subshell; bash as arithmetic."""
    text = "A=3\nB=${B:-$((A + 4))}\nC=${C:-$(((A + 1) * 2))}\npython3 -m verl.trainer.main_ppo a.b=$B a.c=$C\n"
    assert pinned(read_text_script(text)) == {None: [("a.b", "7", 4), ("a.c", "8", 4)]}


def _lint_text(tmp_path, text: str, name: str = "run_x_fsdp.sh"):
    from sapo_toolkit.linter.lint import lint_paths

    path = tmp_path / name
    path.write_text(text)
    return lint_paths([path], Settings(shellcheck=False, verl_version="0.9.1")).diagnostics


def test_unresolved_value_is_sh001_only_where_a_rule_checks_it(tmp_path):
    text = (
        "python3 -m verl.trainer.main_ppo \\\n"
        "    data.train_files=$HOME/data/train.parquet \\\n"
        "    trainer.experiment_name=run_$(date +%s) \\\n"
        "    trainer.default_local_dir=$CKPT_DIR \\\n"
        "    trainer.nnodes=$NNODES \\\n"
        "    actor_rollout_ref.rollout.name=$BACKEND \\\n"
        "    trainer.logger=$LOGGERS\n"
    )
    found = _lint_text(tmp_path, text)
    sh001 = sorted((d.location.line, d.severity.value) for d in found if d.code == "SH001")
    assert sh001 == [(5, "warning"), (6, "warning"), (7, "warning")]  # int, a choice, a list
    (sh004,) = [d for d in found if d.code == "SH004"]
    assert sh004.severity.value == "info" and (sh004.location.line, sh004.location.column) == (2, 5)
    for name in ("$BACKEND", "$CKPT_DIR", "$HOME", "$LOGGERS", "$NNODES", "$(date +%s)"):
        assert name in sh004.message
    assert all(_no_marker(d.message) and "SAPO_LINT_UNRESOLVED" not in d.message for d in found)


def test_one_environment_note_per_file_across_variants(tmp_path):
    text = (
        'case "$DEVICE" in\n  npu) D=$NPU_DATA ;;\n  gpu) D=$GPU_DATA ;;\nesac\n'
        "python3 -m verl.trainer.main_ppo data.train_files=$D/train.parquet\n"
    )
    found = [d for d in _lint_text(tmp_path, text) if d.code == "SH004"]
    assert len(found) == 1 and "$GPU_DATA" in found[0].message and "$NPU_DATA" in found[0].message
    assert found[0].variant is None


def test_unresolved_model_path_is_named_not_the_placeholder(tmp_path):
    text = (
        "MODEL_PATH=$HOME/models/my-model\npython3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=$MODEL_PATH\n"
    )
    found = _lint_text(tmp_path, text)
    (rf005,) = [d for d in found if d.code == "RF005"]
    assert "not known statically" in rf005.message and "`$HOME`" in rf005.message
    assert "SAPO_LINT_UNRESOLVED" not in rf005.message and _no_marker(rf005.message)
    assert not any(d.code == "SH001" for d in found)  # RF005 says it once


def test_a_script_without_a_model_path_is_told_so_in_script_terms(tmp_path):
    found = _lint_text(tmp_path, "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo\n")
    (rf005,) = [d for d in found if d.code == "RF005"]
    assert "sets no `actor_rollout_ref.model.path`" in rf005.message and "recipe" not in rf005.message, rf005.message
    assert "--override actor_rollout_ref.model.path=" in rf005.message


def test_an_override_cut_off_by_a_comment_line_is_sh005_and_replaces_shellcheck_sc2276(tmp_path):
    from sapo_toolkit.linter.lint import lint_paths

    path = tmp_path / "run_qwen3_8b_fsdp.sh"
    path.write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n    trainer.nnodes=1 \\\n"
        "    # more nodes later \\\n    trainer.n_gpus_per_node=8 \\\n    +trainer.x.y=1\n",
        encoding="utf-8",
    )
    found = lint_paths([path], Settings(), []).diagnostics
    (sh005,) = [d for d in found if d.code == "SH005"]
    assert (sh005.location.line, sh005.location.column) == (5, 5)
    assert "ended at line 3, where a comment line" in sh005.message and "the 2 overrides" in sh005.message
    assert not [d for d in found if d.code == "SH2276"]
    # the trainer still gets (and is linted with) what came before the break
    commands = read_script_findings(TextFile(str(path), path.read_text()), OPTIONS).commands
    assert [lo.key_text for lo in commands[0].overrides] == ["trainer.nnodes"]


def test_a_tilde_default_is_home_as_bash_expands_it(tmp_path):
    # verl main's fully-async scripts: MODEL_PATH=${MODEL_PATH:-~/models/...}; bash passes $HOME/models/...
    text = (
        "MODEL_PATH=${MODEL_PATH:-~/models/my-model}\nTRAIN=${TRAIN:-~/data/train.parquet}\n"
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=$MODEL_PATH data.train_files=$TRAIN\n"
    )
    found = _lint_text(tmp_path, text)
    assert not [d for d in found if d.code == "SL009"], found
    (rf005,) = [d for d in found if d.code == "RF005"]
    assert "`$HOME`" in rf005.message


def test_rf005_where_a_rule_the_entry_module_reaches_needs_the_model(tmp_path):
    # an SFT trainer's topology rules need the heads too (TP016 on FSDP; issue 33 item 3); main_eval reaches none
    found = _lint_text(
        tmp_path, "torchrun --nproc_per_node=8 -m verl.trainer.sft_trainer model.path=google/gemma-7b engine=fsdp\n"
    )
    assert [d for d in found if d.code == "RF005"], found
    found = _lint_text(tmp_path, "python3 -m verl.trainer.main_eval data.path=x.parquet\n")
    assert not [d for d in found if d.code == "RF005"], found
    for entry in ("main_ppo", "main_generation_server"):  # the rollout servers' TP011/TP012 need the heads
        assert [
            d
            for d in _lint_text(
                tmp_path,
                f"python3 -m verl.trainer.{entry} algorithm.adv_estimator=grpo "
                "actor_rollout_ref.model.path=google/gemma-7b\n",
            )
            if d.code == "RF005"
        ]


def test_duplicate_in_a_device_branch_is_not_sl008_but_one_in_the_same_array_is(tmp_path):
    found = _lint_text(tmp_path, (FIXTURES / "run_qwen3_8b_device_probe_fsdp.sh").read_text())
    assert not [d for d in found if d.code == "SL008"], found
    text = (
        "ARGS=(\n    trainer.nnodes=1\n    trainer.nnodes=2\n)\n"
        'case "$DEVICE" in\n  npu)\n    ARGS+=(trainer.nnodes=4 trainer.nnodes=8)\n    ;;\nesac\n'
        "ARGS+=(trainer.save_freq=1)\n"
        'if [ "$DEVICE" = gpu ]; then ARGS+=(trainer.save_freq=5); fi\n'
        "ARGS+=(trainer.save_freq=9)\n"
        'python3 -m verl.trainer.main_ppo "${ARGS[@]}"\n'
    )
    sl008 = {(d.location.line, d.location.column, d.variant) for d in _lint_text(tmp_path, text) if d.code == "SL008"}
    # line 3 repeats line 2 in one array; the npu branch's second setting repeats its first; the unconditional
    # line 12 repeats line 10 (and overrides the gpu branch's line 11); the branches' first settings are not reported
    assert sl008 == {(3, 5, None), (7, 29, "DEVICE=npu"), (12, 8, None)}
