"""The bash run-script source: exact overrides per variant for each fixture, diagnostics, SAPO tau bug."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from sapo_toolkit.linter.api import read_options
from sapo_toolkit.linter.engine import lint_command
from sapo_toolkit.linter.rules import all_rules
from sapo_toolkit.linter.schema import entrypoints, load_snapshot
from sapo_toolkit.linter.settings import Settings
from sapo_toolkit.linter.sources.bash import UNRESOLVED_VALUE, read_script
from sapo_toolkit.linter.sources.files import TextFile, read_text

from .helpers import REPO, fetch_wheel

FIXTURES = Path(__file__).parent / "fixtures" / "scripts"
OPTIONS = read_options(Settings(verl_version="0.9.1"))


def read(name: str):
    return read_script(read_text(FIXTURES / name), OPTIONS)


def read_text_script(text: str, path: str = "run_x_fsdp.sh"):
    return read_script(TextFile(path, text), OPTIONS)


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
    'run_deepseek_v3_megatron.sh': {
        'INFER_BACKEND=sglang': [
            ('actor_rollout_ref.model.path', "'deepseek-ai/DeepSeek-V3'", 17),
            ('actor_rollout_ref.rollout.name', "'sglang'", 18),
            ('actor_rollout_ref.rollout.tensor_model_parallel_size', '16', 19),
            ('actor_rollout_ref.actor.megatron.expert_model_parallel_size', '64', 20),
            ('trainer.nnodes', '32', 21),
        ],
        'INFER_BACKEND=vllm': [
            ('actor_rollout_ref.model.path', "'deepseek-ai/DeepSeek-V3'", 17),
            ('actor_rollout_ref.rollout.name', "'vllm'", 18),
            ('actor_rollout_ref.rollout.tensor_model_parallel_size', '32', 19),
            ('actor_rollout_ref.actor.megatron.expert_model_parallel_size', '64', 20),
            ('trainer.nnodes', '32', 21),
        ],
    },
    'run_gemma3_12b_fsdp.sh': {
        None: [
            ('actor_rollout_ref.model.path', "'google/gemma-3-12b-it'", 5),
            ('actor_rollout_ref.actor.ppo_mini_batch_size', '16', 6),
            ('trainer.n_gpus_per_node', '3', 7),
            ('~actor_rollout_ref.actor.checkpoint', 'MISSING', 8),
            ('++trainer.extra_flag', 'True', 9),
        ],
    },
    'run_llama3_8b_megatron.sh': {
        'DEVICE=npu,INFER_BACKEND=sglang': [
            ('actor_rollout_ref.model.path', "'meta-llama/Meta-Llama-3-8B-Instruct'", 21),
            ('actor_rollout_ref.actor.megatron.param_offload', 'True', 8),
            ('actor_rollout_ref.rollout.name', "'sglang'", 16),
        ],
        'DEVICE=npu,INFER_BACKEND=vllm': [
            ('actor_rollout_ref.model.path', "'meta-llama/Meta-Llama-3-8B-Instruct'", 21),
            ('actor_rollout_ref.actor.megatron.param_offload', 'True', 8),
            ('actor_rollout_ref.rollout.name', "'vllm'", 18),
        ],
        'DEVICE=ascend,INFER_BACKEND=sglang': [
            ('actor_rollout_ref.model.path', "'meta-llama/Meta-Llama-3-8B-Instruct'", 21),
            ('actor_rollout_ref.actor.megatron.param_offload', 'True', 8),
            ('actor_rollout_ref.rollout.name', "'sglang'", 16),
        ],
        'DEVICE=ascend,INFER_BACKEND=vllm': [
            ('actor_rollout_ref.model.path', "'meta-llama/Meta-Llama-3-8B-Instruct'", 21),
            ('actor_rollout_ref.actor.megatron.param_offload', 'True', 8),
            ('actor_rollout_ref.rollout.name', "'vllm'", 18),
        ],
        'DEVICE=gpu,INFER_BACKEND=sglang': [
            ('actor_rollout_ref.model.path', "'meta-llama/Meta-Llama-3-8B-Instruct'", 21),
            ('actor_rollout_ref.actor.megatron.param_offload', 'False', 12),
            ('actor_rollout_ref.rollout.name', "'sglang'", 16),
        ],
        'DEVICE=gpu,INFER_BACKEND=vllm': [
            ('actor_rollout_ref.model.path', "'meta-llama/Meta-Llama-3-8B-Instruct'", 21),
            ('actor_rollout_ref.actor.megatron.param_offload', 'False', 12),
            ('actor_rollout_ref.rollout.name', "'vllm'", 18),
        ],
    },
    'run_qwen2_5_3b_fsdp.sh': {
        None: [
            ('data.max_length', '2048', 8),
            ('model.path', "'Qwen/Qwen2.5-3B-Instruct'", 9),
            ('trainer.total_epochs', '2', 10),
        ],
    },
    'run_qwen2_5_7b_fsdp.sh': {
        None: [
            ('algorithm.adv_estimator', "'grpo'", 11),
            ('data.train_files', "['/data/gsm8k/train.parquet']", 12),
            ('data.val_files', "['/data/gsm8k/test.parquet']", 13),
            ('data.train_batch_size', '1024', 14),
            ('data.max_prompt_length', '512', 15),
            ('data.max_response_length', '1024', 16),
            ('actor_rollout_ref.model.path', "'Qwen/Qwen2.5-7B-Instruct'", 17),
            ('actor_rollout_ref.actor.optim.lr', '1e-06', 18),
            ('actor_rollout_ref.actor.ppo_mini_batch_size', '256', 19),
            ('actor_rollout_ref.actor.use_kl_loss', 'True', 20),
            ('actor_rollout_ref.rollout.name', "'vllm'", 21),
            ('actor_rollout_ref.rollout.n', '5', 22),
            ('trainer.logger', "['console', 'wandb']", 23),
            ('trainer.project_name', "'verl_grpo_example_gsm8k'", 24),
            ('trainer.n_gpus_per_node', '8', 25),
            ('trainer.nnodes', '1', 26),
            ('trainer.total_epochs', '15', 27),
        ],
    },
    'run_qwen2_5_vl_7b_fsdp.sh': {
        None: [
            ('data.image_key', "'images'", 5),
            ('data.prompt_key', "'prompt_text'", 6),
            ('data.val_files', "['/data/a.parquet', '/data/b.parquet']", 7),
            ('trainer.experiment_name', "'vlA'", 8),
            ('actor_rollout_ref.model.path', "'Qwen/Qwen2.5-VL-7B-Instruct'", 9),
            ('trainer.logger', "['console']", 10),
        ],
    },
    'run_qwen3_0_6b_fsdp.sh': {
        None: [
            ('trainer.nnodes', '1', 7),
            ('trainer.experiment_name', "'qwen3_06b'", 7),
            ('trainer.project_name', "'sapo tests'", 8),
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-0.6B'", 10),
            ('actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu', '2', 11),
            ('actor_rollout_ref.actor.ppo_mini_batch_size', '16', 12),
            ('actor_rollout_ref.actor.ppo_max_token_len_per_gpu', '18432', 13),
        ],
    },
    'run_qwen3_14b_megatron.sh': {
        None: [
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-14B'", 6),
            ('actor_rollout_ref.actor.megatron.tensor_model_parallel_size', '4', 4),
            ('actor_rollout_ref.actor.megatron.sequence_parallel', 'True', 4),
            ('trainer.nnodes', '2', 8),
            ('trainer.n_gpus_per_node', '8', 8),
        ],
    },
    'run_qwen3_1_7b_fsdp.sh': {
        'DEVICE=npu': [
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-1.7B'", 14),
            ('actor_rollout_ref.actor.strategy', "'fsdp'", 15),
            ('critic.strategy', "'fsdp'", 16),
        ],
        'DEVICE=gpu': [
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-1.7B'", 14),
            ('actor_rollout_ref.actor.strategy', "'fsdp2'", 15),
            ('critic.strategy', "'fsdp2'", 16),
        ],
    },
    'run_qwen3_30b_a3b_megatron.sh': {
        'USE_UV=1,DEVICE=npu': [
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-30B-A3B'", 38),
            ('actor_rollout_ref.actor.megatron.tensor_model_parallel_size', '4', 18),
            ('actor_rollout_ref.actor.megatron.expert_model_parallel_size', '8', 19),
            ('actor_rollout_ref.actor.megatron.pipeline_model_parallel_size', '2', 20),
            ('actor_rollout_ref.actor.megatron.override_transformer_config.use_flash_attn', 'True', 27),
            ('actor_rollout_ref.rollout.tensor_model_parallel_size', '8', 22),
            ('actor_rollout_ref.rollout.enforce_eager', 'True', 29),
            ('trainer.n_gpus_per_node', '8', 41),
            ('trainer.nnodes', '2', 41),
        ],
        'USE_UV=1,DEVICE=cuda': [
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-30B-A3B'", 38),
            ('actor_rollout_ref.actor.megatron.tensor_model_parallel_size', '4', 18),
            ('actor_rollout_ref.actor.megatron.expert_model_parallel_size', '8', 19),
            ('actor_rollout_ref.actor.megatron.pipeline_model_parallel_size', '2', 20),
            ('actor_rollout_ref.rollout.tensor_model_parallel_size', '8', 22),
            ('actor_rollout_ref.rollout.enforce_eager', 'False', 33),
            ('trainer.n_gpus_per_node', '8', 41),
            ('trainer.nnodes', '2', 41),
        ],
        'USE_UV=0,DEVICE=npu': [
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-30B-A3B'", 38),
            ('actor_rollout_ref.actor.megatron.tensor_model_parallel_size', '4', 18),
            ('actor_rollout_ref.actor.megatron.expert_model_parallel_size', '8', 19),
            ('actor_rollout_ref.actor.megatron.pipeline_model_parallel_size', '2', 20),
            ('actor_rollout_ref.actor.megatron.override_transformer_config.use_flash_attn', 'True', 27),
            ('actor_rollout_ref.rollout.tensor_model_parallel_size', '8', 22),
            ('actor_rollout_ref.rollout.enforce_eager', 'True', 29),
            ('trainer.n_gpus_per_node', '8', 41),
            ('trainer.nnodes', '2', 41),
        ],
        'USE_UV=0,DEVICE=cuda': [
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-30B-A3B'", 38),
            ('actor_rollout_ref.actor.megatron.tensor_model_parallel_size', '4', 18),
            ('actor_rollout_ref.actor.megatron.expert_model_parallel_size', '8', 19),
            ('actor_rollout_ref.actor.megatron.pipeline_model_parallel_size', '2', 20),
            ('actor_rollout_ref.rollout.tensor_model_parallel_size', '8', 22),
            ('actor_rollout_ref.rollout.enforce_eager', 'False', 33),
            ('trainer.n_gpus_per_node', '8', 41),
            ('trainer.nnodes', '2', 41),
        ],
    },
    'run_qwen3_32b_megatron.sh': {
        None: [
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-32B'", 12),
            ('actor_rollout_ref.actor.policy_loss.loss_mode', "'sapo'", 6),
            ('actor_rollout_ref.actor.policy_loss.tau_pos', '1.0', 7),
            ('actor_rollout_ref.actor.policy_loss.tau_neg', '1.05', 8),
        ],
    },
    'run_qwen3_4b_fsdp.sh': {
        None: [
            ('actor_rollout_ref.rollout.n', '4', 11),
            ('actor_rollout_ref.actor.optim.lr', '3e-06', 12),
            ('trainer.experiment_name', "'qwen3-4b'", 13),
            ('actor_rollout_ref.actor.use_kl_loss', 'False', 14),
            ('trainer.project_name', "'sapo demo'", 15),
            ('trainer.logger', "['console']", 16),
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-4B'", 17),
        ],
    },
    'run_qwen3_8b_fsdp2.sh': {
        None: [
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-8B'", 9),
            ('actor_rollout_ref.actor.strategy', "'fsdp2'", 10),
            ('trainer.experiment_name', "'${oc.env:SAPO_LINT_UNRESOLVED}'", 11),
            ('trainer.default_local_dir', "'/ckpt/qwen3_8b'", 12),
            ('trainer.n_gpus_per_node', '8', 13),
            ('trainer.val_before_train', 'False', 14),
        ],
    },
    'run_qwen3_8b_megatron.sh': {
        'DEVICE=npu,INFER_BACKEND=sglang': [
            ('data.train_files', "['/data/gsm8k/train.parquet']", 15),
            ('data.train_batch_size', '128', 16),
            ('data.max_prompt_length', '1024', 17),
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-8B'", 20),
            ('actor_rollout_ref.actor.policy_loss.loss_mode', "'sapo'", 23),
            ('+actor_rollout_ref.actor.policy_loss.tau_pos', '1.0', 24),
            ('+actor_rollout_ref.actor.policy_loss.tau_neg', '1.05', 25),
            ('actor_rollout_ref.actor.ppo_mini_batch_size', '32', 26),
            ('actor_rollout_ref.actor.megatron.tensor_model_parallel_size', '2', 27),
            ('actor_rollout_ref.actor.megatron.use_mbridge', 'True', 41),
            ('actor_rollout_ref.rollout.name', "'sglang'", 30),
            ('actor_rollout_ref.rollout.tensor_model_parallel_size', '2', 31),
            ('actor_rollout_ref.rollout.gpu_memory_utilization', '0.5', 50),
            ('trainer.nnodes', '1', 34),
            ('trainer.n_gpus_per_node', '8', 35),
            ('trainer.logger', "['console']", 36),
        ],
        'DEVICE=npu,INFER_BACKEND=vllm': [
            ('data.train_files', "['/data/gsm8k/train.parquet']", 15),
            ('data.train_batch_size', '128', 16),
            ('data.max_prompt_length', '1024', 17),
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-8B'", 20),
            ('actor_rollout_ref.actor.policy_loss.loss_mode', "'sapo'", 23),
            ('+actor_rollout_ref.actor.policy_loss.tau_pos', '1.0', 24),
            ('+actor_rollout_ref.actor.policy_loss.tau_neg', '1.05', 25),
            ('actor_rollout_ref.actor.ppo_mini_batch_size', '32', 26),
            ('actor_rollout_ref.actor.megatron.tensor_model_parallel_size', '2', 27),
            ('actor_rollout_ref.actor.megatron.use_mbridge', 'True', 41),
            ('actor_rollout_ref.rollout.name', "'vllm'", 30),
            ('actor_rollout_ref.rollout.tensor_model_parallel_size', '2', 31),
            ('trainer.nnodes', '1', 34),
            ('trainer.n_gpus_per_node', '8', 35),
            ('trainer.logger', "['console']", 36),
        ],
        'DEVICE=gpu,INFER_BACKEND=sglang': [
            ('data.train_files', "['/data/gsm8k/train.parquet']", 15),
            ('data.train_batch_size', '128', 16),
            ('data.max_prompt_length', '1024', 17),
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-8B'", 20),
            ('actor_rollout_ref.actor.policy_loss.loss_mode', "'sapo'", 23),
            ('+actor_rollout_ref.actor.policy_loss.tau_pos', '1.0', 24),
            ('+actor_rollout_ref.actor.policy_loss.tau_neg', '1.05', 25),
            ('actor_rollout_ref.actor.ppo_mini_batch_size', '32', 26),
            ('actor_rollout_ref.actor.megatron.tensor_model_parallel_size', '2', 27),
            ('actor_rollout_ref.rollout.name', "'sglang'", 30),
            ('actor_rollout_ref.rollout.tensor_model_parallel_size', '2', 31),
            ('actor_rollout_ref.rollout.gpu_memory_utilization', '0.5', 50),
            ('trainer.nnodes', '1', 34),
            ('trainer.n_gpus_per_node', '8', 35),
            ('trainer.logger', "['console']", 36),
        ],
        'DEVICE=gpu,INFER_BACKEND=vllm': [
            ('data.train_files', "['/data/gsm8k/train.parquet']", 15),
            ('data.train_batch_size', '128', 16),
            ('data.max_prompt_length', '1024', 17),
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-8B'", 20),
            ('actor_rollout_ref.actor.policy_loss.loss_mode', "'sapo'", 23),
            ('+actor_rollout_ref.actor.policy_loss.tau_pos', '1.0', 24),
            ('+actor_rollout_ref.actor.policy_loss.tau_neg', '1.05', 25),
            ('actor_rollout_ref.actor.ppo_mini_batch_size', '32', 26),
            ('actor_rollout_ref.actor.megatron.tensor_model_parallel_size', '2', 27),
            ('actor_rollout_ref.rollout.name', "'vllm'", 30),
            ('actor_rollout_ref.rollout.tensor_model_parallel_size', '2', 31),
            ('trainer.nnodes', '1', 34),
            ('trainer.n_gpus_per_node', '8', 35),
            ('trainer.logger', "['console']", 36),
        ],
    },
    'run_qwen3_8b_megatron_lite.sh': {
        'INFER_BACKEND=vllm': [
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-8B'", 10),
            ('actor_rollout_ref.rollout.name', "'vllm'", 11),
            ('actor_rollout_ref.rollout.mode', "'async'", 12),
        ],
        'INFER_BACKEND=sglang': [
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-8B'", 10),
            ('actor_rollout_ref.rollout.name', "'sglang'", 11),
            ('actor_rollout_ref.rollout.mode', "'sync'", 12),
        ],
    },
    'run_qwen3_8b_mindspeed.sh': {
        None: [
            ('actor_rollout_ref.model.path', "'Qwen/Qwen3-8B'", 4),
            ('trainer.logger', "('SYNTAX',)", 5),
            ('trainer.nnodes', '1', 6),
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
        "DEVICE=npu,INFER_BACKEND=sglang", "DEVICE=npu,INFER_BACKEND=vllm",
        "DEVICE=gpu,INFER_BACKEND=sglang", "DEVICE=gpu,INFER_BACKEND=vllm",
    ]
    lines = (FIXTURES / "run_qwen3_8b_megatron.sh").read_text().splitlines()
    tau_line = next(i for i, l in enumerate(lines, 1) if "+actor_rollout_ref.actor.policy_loss.tau_pos=${tau_pos}" in l)
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


def test_command_substitution_is_sh001_and_passthrough_sh003():
    result = read("run_qwen3_8b_fsdp2.sh")
    assert ("SH001", 11, 5) in codes(result)
    assert ("SH003", 15, 5) in codes(result)
    msg = next(d.message for d in result.diagnostics if d.code == "SH001")
    assert "$(date +%Y%m%d_%H%M%S)" in msg
    lo = next(lo for lo in result.commands[0].overrides if lo.key_text == "trainer.experiment_name")
    assert lo.parsed.value == UNRESOLVED_VALUE


def test_unknown_variable_in_key_is_sh001_and_dropped():
    result = read("run_deepseek_v3_megatron.sh")
    sh = [d for d in result.diagnostics if d.code == "SH001"]
    assert len(sh) == 1 and sh[0].variant is None and "$PREFIX_KEY" in sh[0].message and sh[0].location.line == 22
    assert all(not lo.key_text.endswith(".enable") for c in result.commands for lo in c.overrides)


def test_syntax_error_is_sh002_with_position():
    result = read_text_script("ACTOR=(a=1\npython3 -m verl.trainer.main_ppo \"${ACTOR[@]}\"\n")
    assert result.commands == []
    assert [d.code for d in result.diagnostics] and {d.code for d in result.diagnostics} == {"SH002"}
    assert result.diagnostics[0].location.line >= 1


def test_unparseable_override_keeps_syntax_error():
    result = read("run_qwen3_8b_mindspeed.sh")
    lo = next(lo for lo in result.commands[0].overrides if lo.key_text == "trainer.logger")
    assert lo.parsed is None and lo.syntax_error


def test_unknown_if_condition_is_reported():
    text = "if [ -f /etc/x ]; then\n  N=2\nfi\npython3 -m verl.trainer.main_ppo trainer.nnodes=${N:-1}\n"
    result = read_text_script(text)
    assert ("SH001", 1, 4) in codes(result)
    assert pinned(result) == {None: [("trainer.nnodes", "1", 4)]}


def test_cli_overrides_merged_last():
    from sapo_toolkit.linter.api import command_line_overrides

    options = OPTIONS._replace(cli_overrides=command_line_overrides(["trainer.nnodes=4"]))
    result = read_script(read_text(FIXTURES / "run_qwen3_14b_megatron.sh"), options)
    last = result.commands[0].overrides[-1]
    assert last.key_text == "trainer.nnodes" and last.parsed.value == 4
    assert [lo.key_text for lo in result.commands[0].overrides].count("trainer.nnodes") == 1


@pytest.mark.parametrize("text", [
    "", "#!/bin/bash\necho hi\n", "for i in 1 2; do echo $i; done\n", "x=$(( 1 / 0 ))\n",
    "f() { f; }\nf\n", "A=(1 2)\nA[5]=x\necho ${A[@]}\n", "while true; do break; done\n",
    "case $X in a) ;; esac\npython3 -m verl.trainer.main_ppo a.b=${X}\n",
    "cat <<EOF\nhello $X\nEOF\n", "echo ${X/a/b} ${X#p} ${X%%s} ${!X} ${X^^}\n",
])
def test_odd_valid_bash_never_raises(text):
    read_text_script(text)


def _findings(commands, version="0.9.1"):
    out = set()
    for c in commands:
        for d in lint_command(c, load_snapshot(version, c.config_name), all_rules().values()):
            out.add((d.code, c.variant))
    return out


@pytest.mark.parametrize("name", sorted(PINS))
def test_convert_lints_with_the_same_findings(name, tmp_path):
    import yaml
    from click.testing import CliRunner

    from sapo_toolkit.linter.convert import convert
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
    assert not [d for d in recipe.diagnostics if d.code == "RF001"], recipe.diagnostics
    assert sorted(c.variant or "" for c in recipe.recipe.commands) == sorted(c.variant or "" for c in script.commands)
    # unparseable overrides are not carried over (the convert notes say so)
    expected = {f for f in _findings(script.commands) if f[0] != "SL009"}
    assert _findings(recipe.recipe.commands) == expected


def test_convert_to_stdout():
    from click.testing import CliRunner

    from sapo_toolkit.linter.convert import convert

    result = CliRunner().invoke(convert, [str(FIXTURES / "run_qwen3_8b_fsdp2.sh")])
    assert result.exit_code == 0
    assert result.output.startswith("# Converted from run_qwen3_8b_fsdp2.sh")
    assert "SH003" in result.output and "trainer.experiment_name: ${oc.env:SAPO_LINT_UNRESOLVED}" in result.output
