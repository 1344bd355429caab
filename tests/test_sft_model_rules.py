"""The model-aware rules on SFT trainer commands (issue 33 item 3): topology, memory and checkpoint, each family with
a failing and a passing case, for an FSDP trainer with Ulysses sequence parallel (verl main's `sft_trainer` on the
FSDP engine, verl 0.5.0's `fsdp_sft_trainer`) and one on the Megatron engine (`sft_trainer`, `sft_trainer_ray`).

An SFT trainer trains one model (the role `sft`) with no rollout, reference model or critic: its devices are
torchrun's (`--nproc_per_node` x `--nnodes`; sft_trainer_ray's `trainer.nnodes` x `trainer.n_gpus_per_node`), its
Megatron sizes `engine.*`, its optimizer `optim`, its checkpoint `checkpoint.*`."""

import pytest

from sapo_toolkit.linter.engine import Part, parts_run
from sapo_toolkit.linter.explain import explain_recipe, render_text
from sapo_toolkit.linter.lint import lint_paths
from sapo_toolkit.linter.rules import all_rules
from sapo_toolkit.linter.settings import Settings
from sapo_toolkit.linter.topology import torchrun_devices

TORCHRUN = "torchrun --standalone --nnodes=1 --nproc_per_node={n} -m verl.trainer.sft_trainer \\\n"
MEGATRON_7B = "    model.path=Qwen/Qwen2.5-7B engine=megatron optim=megatron \\\n"


@pytest.fixture
def lint_script(tmp_path):
    """Lint one run script's text; returns its findings (shellcheck off: these are about the trainer command)."""

    def run(text: str, name: str = "run_sft.sh", **settings):
        path = tmp_path / name
        path.write_text("#!/bin/bash\n" + text.rstrip("\\\n") + "\n", encoding="utf-8")
        return lint_paths([path], Settings(shellcheck=False, **settings)).diagnostics

    return run


def _codes(diagnostics) -> list[str]:
    return [x.code for d in diagnostics for x in (d, *d.also)]


def _of(diagnostics, code: str) -> list:
    return [x for d in diagnostics for x in (d, *d.also) if x.code == code]


# ---- which rules hold for an SFT trainer ----------------------------------------------------------------------


def test_the_sft_trainers_run_the_sft_part_and_ppo_runs_do_not():
    for module in ("verl.trainer.sft_trainer", "verl.trainer.sft_trainer_ray", "verl.trainer.fsdp_sft_trainer"):
        assert Part.SFT in parts_run(module)
        assert Part.WORKERS not in parts_run(module) and Part.ROLLOUT not in parts_run(module)
    assert Part.SFT not in parts_run("verl.trainer.main_ppo") and Part.SFT not in parts_run("recipe.x.main")


def test_the_rules_that_hold_for_an_sft_trainer():
    held = {code for code, r in all_rules().items() if Part.SFT in r.parts}
    assert held == {
        *(f"TP{n:03d}" for n in (*range(1, 11), 14, 16)),
        "MEM001",
        "MEM002",
        "CK001",
        "CK002",
        "CK003",
    }
    assert all_rules()["TP016"].parts == frozenset({Part.SFT})  # Ulysses on the SFT trainer's FSDP engine only


def test_torchrun_counts_its_devices_only_where_the_script_writes_them():
    assert torchrun_devices(("torchrun", "--standalone", "--nnodes=1", "--nproc_per_node=8")) == (8, 8)
    assert torchrun_devices(("uv", "run", "torchrun", "--nnodes", "2", "--nproc-per-node", "8")) == (8, 16)
    assert torchrun_devices(("torchrun", "--standalone", "--nproc_per_node=4")) == (4, 4)  # one node
    assert torchrun_devices(("torchrun", "--nproc_per_node=$1")) == (None, None)  # the script's argument
    assert torchrun_devices(("torchrun", "--nproc_per_node=auto", "--nnodes=1")) == (None, None)
    assert torchrun_devices(("torchrun", "--nnodes=1:4", "--nproc_per_node=8")) == (8, None)  # elastic
    assert torchrun_devices(("torchrun", "--nproc_per_node=8")) == (8, None)  # PET_NNODES may say
    assert torchrun_devices(("python3",)) == (None, None)


def test_a_ppo_rule_does_not_run_on_an_sft_command(lint_script):
    found = lint_script(TORCHRUN.format(n=8) + MEGATRON_7B + "    engine.tensor_model_parallel_size=4\n")
    assert not [c for c in _codes(found) if c.startswith(("BS", "PF", "RC", "SP"))], found


# ---- FSDP with Ulysses: topology (TP016) ----------------------------------------------------------------------


def test_ulysses_size_that_does_not_divide_the_heads_fails_and_one_that_does_passes(lint_script):
    # Qwen2.5-7B: 28 attention heads, 4 KV heads
    bad = lint_script(TORCHRUN.format(n=8) + "    model.path=Qwen/Qwen2.5-7B engine.ulysses_sequence_parallel_size=8\n")
    [finding] = _of(bad, "TP016")
    assert finding.message.startswith("sft: Ulysses size 8 cannot split qwen2.5-7b's attention")
    assert "its 28 attention heads by 8" in finding.message and "SP 2 or 4 would work" in finding.message
    good = lint_script(
        TORCHRUN.format(n=8) + "    model.path=Qwen/Qwen2.5-7B engine.ulysses_sequence_parallel_size=4\n"
    )
    assert not _of(good, "TP016"), good


def test_ulysses_size_that_does_not_divide_the_world_fails(lint_script):
    found = lint_script(
        TORCHRUN.format(n=6) + "    model.path=Qwen/Qwen2.5-7B engine.ulysses_sequence_parallel_size=4\n"
    )
    [finding] = _of(found, "TP016")
    assert finding.message.startswith("sft: world size 6 is not divisible by the Ulysses size 4")
    assert finding.message.endswith("SP 2 would")


def test_kv_heads_and_ulysses_size_must_divide_one_another(lint_script):
    # Qwen2.5-32B: 40 attention heads, 8 KV heads. SP 5 divides the heads but neither divides the other.
    bad = lint_script(
        TORCHRUN.format(n=10) + "    model.path=Qwen/Qwen2.5-32B engine.ulysses_sequence_parallel_size=5\n"
    )
    [finding] = _of(bad, "TP016")
    assert "cannot divide its 8 KV heads and 5 into one another" in finding.message
    assert "attention heads by" not in finding.message and finding.message.endswith("SP 2 would work")
    # Qwen3-8B: 32 heads, 8 KV heads; SP 16 divides the heads and the KV heads are repeated up to it (16 % 8 == 0)
    ok = lint_script(TORCHRUN.format(n=16) + "    model.path=Qwen/Qwen3-8B engine.ulysses_sequence_parallel_size=16\n")
    assert not _of(ok, "TP016"), ok


def test_an_unknown_world_size_still_checks_the_heads(lint_script):
    text = "torchrun --standalone --nproc_per_node=$1 -m verl.trainer.sft_trainer \\\n"
    found = lint_script(text + "    model.path=Qwen/Qwen2.5-7B engine.ulysses_sequence_parallel_size=8\n")
    [finding] = _of(found, "TP016")
    assert finding.message.endswith("SP 2 or 4 or 28 would work")  # no world size: the heads alone decide


def test_ulysses_without_padding_removal_is_refused_from_verl_0_8(lint_script):
    text = TORCHRUN.format(n=8) + (
        "    model.path=Qwen/Qwen2.5-7B engine.ulysses_sequence_parallel_size=2 model.use_remove_padding=false\n"
    )
    [finding] = _of(lint_script(text), "TP016")
    assert (finding.location.line, finding.location.column) == (3, text.splitlines()[1].index("model.use_remove") + 1)
    assert "you must enable `use_remove_padding`" in finding.message
    assert not _of(lint_script(text, verl_version="0.7.1"), "TP016")  # verl 0.7.1's engine has no such check
    fixed = text.replace("model.use_remove_padding=false", "model.use_remove_padding=true")
    assert not _of(lint_script(fixed), "TP016")


def test_verl_0_5_fsdp_sft_trainer_reads_its_root_ulysses_size(lint_script):
    text = (
        "torchrun --standalone --nnodes=1 --nproc_per_node=8 -m verl.trainer.fsdp_sft_trainer \\\n"
        "    model.partial_pretrain=Qwen/Qwen2.5-7B-Instruct use_remove_padding=true "
        "ulysses_sequence_parallel_size={sp}\n"
    )
    [finding] = _of(lint_script(text.format(sp=8), verl_version="0.5.0"), "TP016")
    assert finding.message.startswith("sft: Ulysses size 8 cannot split qwen2.5-7b's attention")
    assert not _of(lint_script(text.format(sp=4), verl_version="0.5.0"), "TP016")


def test_the_megatron_rules_do_not_run_on_an_fsdp_sft_trainer(lint_script):
    found = lint_script(
        TORCHRUN.format(n=6) + "    model.path=Qwen/Qwen2.5-7B engine.ulysses_sequence_parallel_size=2\n"
    )
    assert not [c for c in _codes(found) if c.startswith(("TP", "MEM", "CK"))], found


# ---- the Megatron engine: topology -----------------------------------------------------------------------------


def test_world_not_divisible_by_the_engine_sizes_fails_and_a_divisor_passes(lint_script):
    bad = lint_script(TORCHRUN.format(n=8) + MEGATRON_7B + "    engine.tensor_model_parallel_size=3\n")
    [finding] = _of(bad, "TP001")
    assert finding.message.startswith("sft: world size 8 is not divisible by TP*PP*CP = 3*1*1 = 3")
    assert finding.message.endswith("TP 2 or 4 would give an integer dp")
    assert finding.location.line == 4  # engine.tensor_model_parallel_size=3
    good = lint_script(TORCHRUN.format(n=8) + MEGATRON_7B + "    engine.tensor_model_parallel_size=4\n")
    assert not [c for c in _codes(good) if c.startswith(("TP", "MEM", "CK"))], good


def test_heads_not_divisible_by_the_engine_tp_fails(lint_script):
    found = lint_script(TORCHRUN.format(n=16) + MEGATRON_7B + "    engine.tensor_model_parallel_size=8\n")
    [finding] = _of(found, "TP003")
    assert finding.message.startswith("sft: qwen2.5-7b has 28 attention heads")
    assert finding.related and finding.related[0].line == 3  # model.path, the SFT trainer's model key


def test_torchrun_counts_sft_trainer_devices_and_trainer_keys_count_sft_trainer_ray(lint_script):
    # sft_trainer never reads trainer.n_gpus_per_node: torchrun's 8 processes are the world
    ignored = lint_script(
        TORCHRUN.format(n=8) + MEGATRON_7B + "    engine.tensor_model_parallel_size=4 trainer.n_gpus_per_node=6\n"
    )
    assert not _of(ignored, "TP001"), ignored
    ray = (
        "python3 -m verl.trainer.sft_trainer_ray \\\n"
        + MEGATRON_7B
        + "    engine.tensor_model_parallel_size=4 trainer.nnodes=1 trainer.n_gpus_per_node={n}\n"
    )
    [finding] = _of(lint_script(ray.format(n=6)), "TP001")
    assert finding.message.startswith("sft: world size 6")
    assert finding.related  # trainer.n_gpus_per_node, where the world is set
    assert not _of(lint_script(ray.format(n=8)), "TP001")


def test_engine_size_below_one_fails(lint_script):
    found = lint_script(TORCHRUN.format(n=8) + MEGATRON_7B + "    engine.expert_model_parallel_size=0\n")
    [finding] = _of(found, "TP014")
    assert finding.message.startswith("sft: `engine.expert_model_parallel_size` is 0")


# ---- the Megatron engine: memory -------------------------------------------------------------------------------

BIG = (
    "    model.path=Qwen/Qwen2.5-72B-Instruct engine=megatron optim=megatron data.max_length=4096 \\\n"
    "    engine.tensor_model_parallel_size={tp} {extra}\n"
)


def test_device_memory_over_the_hbm_fails_with_the_sft_keys_as_fixes(lint_script):
    found = lint_script(TORCHRUN.format(n=8) + BIG.format(tp=8, extra=""), accelerator="nvidia-h100")
    [finding] = _of(found, "MEM001")
    assert finding.severity.value == "error"
    assert finding.message.startswith("SFT update of step 1, forward/backward (no Adam moments yet): estimated")
    assert "(qwen2.5-72b on 8 devices, TP8 PP1 CP1, dp 1)" in finding.message
    assert "`+optim.override_optimizer_config.optimizer_cpu_offload: true`" in finding.message
    assert "engine.override_transformer_config.recompute_granularity: full" in finding.message
    assert "actor_rollout_ref" not in finding.message and "rollout" not in finding.message.replace("rollout_", "")


def test_device_memory_within_the_hbm_passes(lint_script):
    found = lint_script(
        TORCHRUN.format(n=8) + MEGATRON_7B + "    engine.tensor_model_parallel_size=4\n", accelerator="nvidia-h100"
    )
    assert not _of(found, "MEM001"), found


def test_host_memory_of_offloaded_optimizer_state(lint_script):
    offload = (
        "+optim.override_optimizer_config.optimizer_cpu_offload=true "
        "+optim.override_optimizer_config.optimizer_offload_fraction=1.0 engine.use_distributed_optimizer={dist}"
    )
    settings = {"accelerator": "nvidia-h100", "host_ram_gib": 2048}
    bad = lint_script(TORCHRUN.format(n=8) + BIG.format(tp=4, extra=offload.format(dist="false")), **settings)
    [finding] = _of(bad, "MEM002")
    assert finding.severity.value == "error" and "optimizer_cpu_offload" in finding.message
    assert "`optim.override_optimizer_config.optimizer_offload_fraction`" in finding.message
    good = lint_script(TORCHRUN.format(n=8) + BIG.format(tp=4, extra=offload.format(dist="true")), **settings)
    assert not _of(good, "MEM002"), good


def test_explain_shows_the_sft_update_alone(tmp_path):
    path = tmp_path / "run_sft.sh"
    path.write_text("#!/bin/bash\n" + TORCHRUN.format(n=8) + MEGATRON_7B + "    engine.tensor_model_parallel_size=4\n")
    items, problems = explain_recipe(path)
    assert not problems and items[0].estimate is not None
    est = items[0].estimate
    assert est.inputs.sft and list(est.phases) == ["train"] and est.ref is None and est.critic is None
    assert est.phases["train"]["rollout"] == 0
    text = render_text(items, str(path), width=200)
    assert "SFT update (no rollout, reference model or critic)" in text and "model weights (bf16)" in text
    assert "log-prob" not in text.split("device memory")[0]


# ---- the Megatron engine: checkpoint ---------------------------------------------------------------------------

SAVE = BIG.format(tp=8, extra="trainer.save_freq=100 {more}")


def test_checkpoint_save_longer_than_the_sft_timeout(lint_script):
    """sft_trainer_ray's world group keeps torch's 30-minute default; sft_trainer (torchrun) sets 36000 s; on
    Ascend HCCL_EXEC_TIMEOUT (1836 s) bounds it. 145 GB of HF weights at 0.05 GiB/s take ~2700 s."""
    settings = {"write_gib_per_s": 0.05, "disk_budget_gib": 100000, "host_ram_gib": 100000}
    ray = "python3 -m verl.trainer.sft_trainer_ray trainer.nnodes=1 trainer.n_gpus_per_node=8 \\\n"
    [finding] = _of(lint_script(ray + SAVE.format(more=""), **settings), "CK001")
    assert "exceeds the 1800 s torch's default process-group timeout (sft_trainer_ray sets none)" in finding.message
    assert "save weights only (`checkpoint.save_contents: [model]`), or write to faster storage" in finding.message
    assert "nccl_timeout" not in finding.message
    assert not _of(lint_script(TORCHRUN.format(n=8) + SAVE.format(more=""), **settings), "CK001")  # 36000 s
    [npu] = _of(
        lint_script(TORCHRUN.format(n=8) + SAVE.format(more=""), accelerator="ascend-910b3", **settings), "CK001"
    )
    assert "exceeds the 1836 s HCCL_EXEC_TIMEOUT" in npu.message and "raise HCCL_EXEC_TIMEOUT above" in npu.message


def test_checkpoint_disk_peak_over_the_budget_fails_and_weights_only_passes(lint_script):
    settings = {"disk_budget_gib": 1000}
    [finding] = _of(lint_script(TORCHRUN.format(n=8) + SAVE.format(more=""), **settings), "CK002")
    assert finding.severity.value == "error"
    assert "`max_ckpt_to_keep` cannot lower this" in finding.message
    assert "save weights only (`checkpoint.save_contents: [model]`)" in finding.message
    weights = SAVE.format(more="checkpoint.save_contents=[model]")
    assert not _of(lint_script(TORCHRUN.format(n=8) + weights, **settings), "CK002")
    never = BIG.format(tp=8, extra="")  # trainer.save_freq -1: nothing saved
    assert not _of(lint_script(TORCHRUN.format(n=8) + never, **settings), "CK002")


def test_checkpoint_every_epoch_counts_as_saving(lint_script):
    epochs = BIG.format(tp=8, extra="trainer.save_freq=after_each_epoch")
    assert _of(lint_script(TORCHRUN.format(n=8) + epochs, disk_budget_gib=1000), "CK002")


def test_a_save_mode_broken_in_verl_0_8_on_the_sft_engine(lint_script):
    text = (
        TORCHRUN.format(n=8) + MEGATRON_7B + "    engine.tensor_model_parallel_size=4 trainer.save_freq=10 {async_}\n"
    )
    [finding] = _of(lint_script(text.format(async_="+checkpoint.async_save=true"), verl_version="0.8.0"), "CK003")
    assert finding.message.startswith("sft: verl 0.8.0 hands the async save request")
    assert finding.message.endswith("Fix: set `checkpoint.async_save: false` or use verl 0.9.1")
    assert not _of(lint_script(text.format(async_="+checkpoint.async_save=false"), verl_version="0.8.0"), "CK003")
    assert not _of(lint_script(text.format(async_="+checkpoint.async_save=true")), "CK003")  # 0.9.1 finalizes it


# ---- no model --------------------------------------------------------------------------------------------------


def test_an_sft_model_known_only_at_run_time_says_which_rules_were_skipped_and_how_to_name_it(lint_script):
    found = lint_script(TORCHRUN.format(n=8) + '    model.path="$MODEL_PATH" engine.ulysses_sequence_parallel_size=8\n')
    [note] = _of(found, "RF005")
    assert "skipped the rules that need the model's shape" in note.message
    assert "--override model.path=ID" in note.message and "actor_rollout_ref" not in note.message
    assert not _of(found, "TP016")  # the world (8) is divisible by 8; the heads are not known
