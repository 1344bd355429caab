"""SL rules (overrides against verl's schema): failing and passing cases beyond the documented examples."""

import pytest

from .helpers import only, tiny_verl
from .test_verl_source import report


# SL001
def test_sl001_suggests_the_real_path_at_another_level(lint_text):
    found = only(lint_text("overrides:\n  actor_rollout_ref.actor.megatron.tau_pos: 1.0\n"), "SL001")
    assert "actor_rollout_ref.actor.tau_pos" in found[0].message
    assert found[0].fix.text == "actor_rollout_ref.actor.tau_pos" and found[0].fix.applicability == "unsafe"


def test_sl001_near_spelling_elsewhere_prefers_the_closest_branch(lint_text):
    # `tua_neg` is near `tau_neg`, which both the actor and the ref have: the actor's shares the longer prefix.
    found = only(lint_text("overrides:\n  actor_rollout_ref.actor.policy_loss.tua_neg: 1.05\n"), "SL001")
    assert "Did you mean `actor_rollout_ref.actor.tau_neg`?" in found[0].message, found[0].message


def test_sl001_declared_only_field_needs_plus(lint_text):
    found = only(lint_text("overrides:\n  actor_rollout_ref.rollout.repetition_penalty: 1.1\n"), "SL001")
    assert found and found[0].fix.text == "+actor_rollout_ref.rollout.repetition_penalty"
    assert not only(lint_text("overrides:\n  +actor_rollout_ref.rollout.repetition_penalty: 1.1\n"), "SL001")


def test_sl001_depends_on_the_model_engine_selection(lint_text):
    body = "config_name: ppo_trainer\noverrides:\n  actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2\n"
    assert only(lint_text(body), "SL001")  # dp actor has no megatron block
    assert not only(lint_text(body + "  model_engine: megatron\n"), "SL001")


def test_sl001_follows_the_verl_version(lint_text):
    body = "overrides:\n  actor_rollout_ref.actor.megatron.grad_offload: true\n"
    assert only(lint_text('verl: "0.9.1"\n' + body), "SL001")
    assert not only(lint_text('verl: "0.8.0"\n' + body), "SL001")


# SL002
def test_sl002_allows_plus_on_a_null_default(lint_text):
    body = "overrides:\n  +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method: uniform\n"
    assert not only(lint_text(body), "SL002")


def test_sl002_plus_on_config_group(lint_text):
    found = only(lint_text("overrides:\n  +model_engine: megatron\n"), "SL002")
    assert found and "Multiple values" in found[0].message and found[0].fix.text == "model_engine"


# SL003
def test_sl003_field_missing_from_instantiated_dataclass(lint_text):
    found = only(lint_text("overrides:\n  +actor_rollout_ref.rollout.sampling_temp: 0.7\n"), "SL003")
    assert found and "RolloutConfig" in found[0].message and "TypeError" in found[0].message


def test_sl003_key_read_somewhere_under_plain_node_is_accepted(lint_text):
    # `data` is a plain node; `trust_remote_code` is a name verl's source reads.
    assert not only(lint_text("overrides:\n  +data.trust_remote_code: true\n"), "SL003")


def test_sl003_open_dict_without_consumer_accepts_anything(lint_text):
    assert not only(lint_text("overrides:\n  +actor_rollout_ref.model.override_config.anything_goes: 1\n"), "SL003")


# SL004
def test_sl004_float_for_int_and_bool_for_str(lint_text):
    found = lint_text(
        "overrides:\n  actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2.5\n"
        "  actor_rollout_ref.actor.tau_pos: 1\n  trainer.project_name: true\n"
    )
    lines = [d.location.line for d in only(found, "SL004")]
    assert 6 in lines  # 2.5 for an int
    assert 7 not in lines  # an int is a valid float
    assert 8 in lines  # a bool for a str field


def test_sl004_null_for_a_type_not_declared_optional_is_a_warning(lint_text):
    found = only(lint_text("overrides:\n  algorithm.rollout_correction.rollout_is_threshold: null\n"), "SL004")
    assert len(found) == 1 and found[0].severity.value == "warning", found
    assert "not Optional" in found[0].message
    found = only(lint_text("overrides:\n  algorithm.rollout_correction.rollout_is_threshold: [2]\n"), "SL004")
    assert len(found) == 1 and found[0].severity.value == "error", found


@pytest.mark.parametrize("typo,meant", [("Flase", "False"), ("Ture", "True"), ("flase", "False")])
def test_sl004_a_misspelt_flag_gets_a_did_you_mean(lint_text, typo, meant):
    """Declared (use_dynamic_bsz) or only read as a flag (val_before_train: an error, not a possible mode name)."""
    found = only(
        lint_text(
            f"overrides:\n  actor_rollout_ref.actor.use_dynamic_bsz: {typo}\n  trainer.val_before_train: {typo}\n"
        ),
        "SL004",
    )
    assert [(d.severity.value, d.message.endswith(f". Did you mean `{meant}`?")) for d in found] == [
        ("error", True)
    ] * 2
    assert not only(lint_text("overrides:\n  trainer.val_before_train: disabled\n"), "SL004")[0].message.endswith("?")
    # a word merely like one (`fast`) or any other (`greedy`) may be a mode the code reads by name: a warning
    for word in ("fast", "greedy"):
        (mode,) = only(lint_text(f"overrides:\n  trainer.balance_batch: {word}\n"), "SL004")
        assert (mode.severity.value, "Did you mean" in mode.message) == ("warning", False), mode


def test_sl004_interpolations_are_not_type_checked(lint_text):
    body = "overrides:\n  actor_rollout_ref.actor.megatron.tensor_model_parallel_size: ${trainer.nnodes}\n"
    assert not only(lint_text(body), "SL004")


# SL005
def test_sl005_loss_mode_registry_and_group_options(lint_text):
    found = lint_text("overrides:\n  actor_rollout_ref.actor.policy_loss.loss_mode: clip-cov\n  model_engine: fsdp9\n")
    assert [d.location.line for d in only(found, "SL005")] == [6, 7]
    assert "clip_cov" in only(found, "SL005")[0].message


# SL006
def test_sl006_delete_after_add_is_fine(lint_text):
    assert not only(lint_text("overrides:\n  +trainer.foo: 1\n  ~trainer.foo: null\n"), "SL006")


# SL007
def test_sl007_follows_megatron_core_version(lint_text):
    body = "overrides:\n  +actor_rollout_ref.actor.optim.override_optimizer_config.decoupled_weight_decay: true\n"
    old = only(lint_text('stack: {megatron_core: "0.12.1"}\n' + body), "SL007")
    assert old and "megatron-core 0.12.1" in old[0].message
    assert not only(lint_text('stack: {megatron_core: "0.16.1"}\n' + body), "SL007")


def test_sl007_unknown_optimizer_field_on_newest_release(lint_text):
    body = (
        'stack: {megatron_core: "0.16.1"}\noverrides:\n'
        "  +actor_rollout_ref.actor.optim.override_optimizer_config.adam_beta3: 0.9\n"
    )
    found = only(lint_text(body), "SL007")
    assert found and "megatron-core 0.16.1" in found[0].message


def test_sl007_mbridge_release_vs_git_main(lint_text):
    body = "overrides:\n  +actor_rollout_ref.actor.checkpoint.mbridge_config.distributed_filesystem: true\n"
    assert only(lint_text('stack: {mbridge: "0.15.1"}\n' + body), "SL007")
    assert not only(lint_text("stack: {mbridge: git-main}\n" + body), "SL007")


def test_sl007_transformer_config_field(lint_text):
    good = "overrides:\n  +actor_rollout_ref.actor.megatron.override_transformer_config.apply_rope_fusion: true\n"
    bad = "overrides:\n  +actor_rollout_ref.actor.megatron.override_transformer_config.apply_rope_fusoin: true\n"
    assert not only(lint_text(good), "SL007")
    assert "apply_rope_fusion" in only(lint_text(bad), "SL007")[0].message


_OTC = "+actor_rollout_ref.actor.megatron.override_transformer_config"
_DEVICE_VARIANTS = (
    "variants:\n  device:\n    npu: {overrides: {trainer.device: npu}}\n    gpu: {overrides: {trainer.device: cuda}}\n"
)


def test_sl007_mindspeed_fields_pass_on_npu_and_fail_on_gpu(lint_text):
    body = f"overrides:\n  model_engine: megatron\n  {_OTC}.use_flash_attn: true\n  {_OTC}.use_naive_l2norm: true\n"
    found = only(lint_text(body + _DEVICE_VARIANTS), "SL007")
    assert {d.variant for d in found} == {"DEVICE=gpu"}
    assert {d.message.split("`")[1] for d in found} == {"use_flash_attn", "use_naive_l2norm"}
    assert "MindSpeed (Ascend) field" in found[0].message and "megatron-core 0.16.1" in found[0].message


def test_sl007_typo_on_npu_is_still_reported_with_the_mindspeed_name(lint_text):
    body = f"overrides:\n  model_engine: megatron\n  trainer.device: npu\n  {_OTC}.use_flash_atn: true\n"
    found = only(lint_text(body), "SL007")
    assert len(found) == 1 and "Did you mean `use_flash_attn`?" in found[0].message
    assert "runs on NPU" in found[0].message and "never takes effect" in found[0].message


def test_sl007_npu_from_stack_accelerator_or_ascend_environment(lint_text):
    body = f"overrides:\n  model_engine: megatron\n  {_OTC}.use_fused_rmsnorm: true\n"
    assert only(lint_text(body), "SL007")  # nothing says NPU: checked as GPU
    assert not only(lint_text('stack: {mindspeed: "2.3.0"}\n' + body), "SL007")
    assert not only(lint_text("env: {HCCL_BUFFSIZE: 300}\n" + body), "SL007")
    assert not only(lint_text("env: {VERL_ENGINE_DEVICE: npu}\n" + body), "SL007")
    assert only(lint_text("env: {HCCL_BUFFSIZE: 300}\n" + body + "  trainer.device: cuda\n"), "SL007")


def test_sl007_npu_script_variant(tmp_path):
    from pathlib import Path

    from sapo_toolkit.linter.lint import lint_paths
    from sapo_toolkit.linter.settings import Settings

    script = Path(__file__).parent / "fixtures" / "ascend" / "run_qwen3_5_megatron_npu_gpu.sh"
    found = only(lint_paths([script], Settings(verl_version="0.9.1"), []).diagnostics, "SL007")
    npu = [d for d in found if d.variant == "DEVICE=npu"]
    assert [d.message.split("`")[1] for d in npu] == ["use_flash_atn"]  # kvallgather_cp_algo, use_ascend_gdn pass
    assert "Did you mean `use_flash_attn`?" in npu[0].message
    gpu = [d for d in found if d.variant == "DEVICE=gpu"]
    assert [d.message.split("`")[1] for d in gpu] == ["use_fused_rmsnorm"]


def test_sl007_names_the_committed_release_that_has_the_field(lint_text):
    body = "overrides:\n  +actor_rollout_ref.actor.optim.override_optimizer_config.decoupled_weight_decay: true\n"
    found = only(lint_text('stack: {megatron_core: "0.12.1"}\n' + body), "SL007")
    assert "megatron-core 0.15.3, 0.16.1, 0.18.0, 0.19.1 have it" in found[0].message
    typo = "overrides:\n  +actor_rollout_ref.actor.optim.override_optimizer_config.adam_beta3: 0.9\n"
    assert " have it" not in only(lint_text('stack: {megatron_core: "0.12.1"}\n' + typo), "SL007")[0].message


def test_sl007_field_of_no_release_is_a_warning_when_the_script_installs_a_megatron_commit(tmp_path):
    from sapo_toolkit.linter.lint import lint_paths
    from sapo_toolkit.linter.settings import Settings

    call = (
        "python3 -m verl.trainer.main_ppo model_engine=megatron "
        "+actor_rollout_ref.actor.megatron.override_transformer_config.{field}=True\n"
    )
    pinned = (
        "[ -d Megatron-LM ] || git clone https://github.com/NVIDIA/Megatron-LM -b dev && "
        "(cd Megatron-LM; git checkout 23e092f41ec8bc659020e401ddac9576c1cfed7e)\n"
    )

    def sl007(text):
        script = tmp_path / "run_x_megatron.sh"
        script.write_text(text)
        return only(lint_paths([script], Settings(verl_version="0.9.1"), []).diagnostics, "SL007")

    (found,) = sl007(pinned + call.format(field="field_of_a_dev_commit"))  # in no committed release
    assert found.severity.value == "warning" and "Megatron-LM commit 23e092f4, which may have it" in found.message
    (found,) = sl007(call.format(field="field_of_a_dev_commit"))  # no pin: an error
    assert found.severity.value == "error"
    # a name some committed release has is judged against the release in use, pin or not
    assert not sl007(pinned + call.format(field="moe_router_enable_expert_bias"))


def test_megatron_pin_read_from_the_scripts_install_lines_and_comments():
    from sapo_toolkit.linter.sources.bash.megatron_pin import megatron_pin

    assert megatron_pin("#   git clone -b lite https://github.com/verl-project/Megatron-LM mlite\n") == "branch lite"
    assert (
        megatron_pin("pip install git+https://github.com/NVIDIA/Megatron-LM.git@core_r0.18.0\n") == "ref core_r0.18.0"
    )
    assert megatron_pin("#   - Megatron-LM==0.16.0\n") is None  # a release: the stack names its snapshot
    assert megatron_pin("git checkout 23e092f41ec8\n") is None  # not Megatron-LM's


# SL008
def test_sl008_variant_replacing_base_key_is_not_a_duplicate(lint_text):
    body = (
        "overrides:\n  trainer.device: cuda\nvariants:\n  device:\n"
        "    npu: {overrides: {trainer.device: npu}}\n    gpu: {overrides: {trainer.device: cuda}}\n"
    )
    assert not only(lint_text(body), "SL008")


# SL010
def test_sl010_plain_set_on_actor_is_fine(lint_text):
    body = "overrides:\n  +actor_rollout_ref.actor.megatron.override_transformer_config.apply_rope_fusion: true\n"
    assert not only(lint_text(body), "SL010")


def test_sl004_undeclared_path_keys_take_a_list_of_paths(lint_text):
    # data.train_files has a string default on a plain node: verl reads one path or a list of them
    assert not only(lint_text("overrides:\n  data.train_files: [/a.parquet, /b.parquet]\n"), "SL004")
    # a declared `str` field (HFModelConfig.path) does not take a list
    assert only(lint_text("overrides:\n  actor_rollout_ref.model.path: [/a, /b]\n"), "SL004")


def test_sl004_undeclared_list_of_names_takes_one_name(lint_text):
    # trainer.logger is a list of strings on a plain node: verl's Tracking wraps a single string in a list
    assert not only(lint_text("overrides:\n  trainer.logger: console\n"), "SL004")
    assert only(lint_text("overrides:\n  trainer.logger: 3\n"), "SL004")
    # a list a dataclass declares (CheckpointConfig.save_contents) does not take a bare string
    assert only(lint_text("overrides:\n  actor_rollout_ref.actor.checkpoint.save_contents: model\n"), "SL004")


# Version-aware SL001/SL003 (other committed snapshots), verl main's configs, builder fixes (H2)
_MAIN = '"0.10.0.dev"'


def test_sl001_names_the_newer_snapshot_that_has_the_key(lint_text):
    body = "overrides:\n  model_engine: megatron\n  actor_rollout_ref.actor.megatron.grad_offload: true\n"
    found = only(lint_text('verl: "0.9.1"\n' + body), "SL001")
    assert len(found) == 1
    assert "Added after 0.9.1: present in verl 0.10.0.dev (main @ 1dda039)" in found[0].message
    assert "lint with `--verl-version 0.10.0.dev` if you run verl main" in found[0].message
    assert "Removed or renamed since verl 0.8.0" in found[0].message  # 0.8.0 had it, 0.9.1 dropped it
    assert found[0].fix is None  # not a typo: no `Did you mean` rewrite
    assert not only(lint_text(f"verl: {_MAIN}\n" + body), "SL001")


def test_sl001_names_the_older_snapshot_of_a_removed_key(lint_text):
    found = only(lint_text(f"verl: {_MAIN}\noverrides:\n  trainer.checkpoint_callback_class: x.Y\n"), "SL001")
    assert "Removed or renamed since verl 0.9.1" in found[0].message and "Added after" not in found[0].message
    typo = only(lint_text(f"verl: {_MAIN}\noverrides:\n  trainer.checkpoint_callbak_class: x.Y\n"), "SL001")
    assert "Removed" not in typo[0].message and "Added" not in typo[0].message


def test_sl003_declared_dict_field_takes_keys(lint_text):
    # FSDPEngineConfig.mixed_precision: Optional[dict[str, Any]] (verl/workers/config/engine.py), not in the YAML
    head = "config_name: ppo_trainer\noverrides:\n"
    ok = head + "  +actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype: bf16\n"
    bad = head + "  +actor_rollout_ref.actor.fsdp_config.mixed_precison.param_dtype: bf16\n"
    assert not only(lint_text(ok), "SL003")
    assert only(lint_text(bad), "SL003")


def test_sl003_keys_under_turbo_config_go_to_fsdp_turbo(lint_text):
    base = "+actor_rollout_ref.actor.fsdp_config.turbo_config.distributed"
    head = f"verl: {_MAIN}\nconfig_name: ppo_trainer\noverrides:\n"
    assert not only(
        lint_text(head + f"  {base}.fsdp_plan.apply_modules: [a]\n  {base}.ep_plan.dispatcher: x\n"), "SL003"
    )
    assert only(lint_text(head + "  +actor_rollout_ref.actor.fsdp_config.turbo_cfg.x: 1\n"), "SL003")


def test_sl007_ray_init_keys_are_ray_init_parameters(lint_text):
    ok = "overrides:\n  +ray_kwargs.ray_init._temp_dir: /tmp/ray\n  +ray_kwargs.ray_init.namespace: n\n"
    found = lint_text(ok)
    assert not only(found, "SL003") and not only(found, "SL007")
    bad = only(lint_text("overrides:\n  +ray_kwargs.ray_init.num_cpu: 8\n"), "SL007")
    assert len(bad) == 1 and "ray 2.60.0 `init`" in bad[0].message and "Unknown keyword" in bad[0].message
    assert "num_cpus" in bad[0].message


def test_sl004_union_type_takes_either(lint_text):
    key = "algorithm.rollout_correction.rollout_is_threshold"  # `str | float` (verl/trainer/config/algorithm.py)
    assert not only(
        lint_text(f"overrides:\n  {key}: 0.5_4.0\n  algorithm.rollout_correction.rollout_is: token\n"), "SL004"
    )
    found = only(lint_text(f"overrides:\n  {key}: [1, 2]\n"), "SL004")
    assert found and "expects float or str" in found[0].message and found[0].severity.value == "error"


def test_sl004_inferred_type_is_a_warning(lint_text):
    # `data`: no dataclass; a float where the default is an integer is a value verl may compute with
    found = only(lint_text("overrides:\n  data.max_prompt_length: 512.5\n"), "SL004")
    assert found and found[0].severity.value == "warning" and "verl's default" in found[0].message
    declared = only(lint_text("overrides:\n  actor_rollout_ref.actor.ppo_mini_batch_size: long\n"), "SL004")
    assert declared and declared[0].severity.value == "error"


def test_sl004_a_float_for_an_integer_default_that_later_verls_declare_a_float(tmp_path):
    """A vendored verl whose YAML writes coefficients as integers (verl <= 0.5: `entropy_coeff: 0`, `top_p: 1`):
    a float there is what the key holds, as verl 0.6 on declares it (ActorConfig.entropy_coeff: float). A key that
    later verls declare an int (`ppo_epochs`), or that none declares (`data.max_prompt_length`), keeps its
    warning."""
    package = tiny_verl(tmp_path, version="0.3.1.dev")
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text(
        "trainer:\n  nnodes: 1\ndata:\n  max_prompt_length: 512\nactor_rollout_ref:\n  actor:\n"
        "    entropy_coeff: 0\n    ppo_epochs: 1\n  rollout:\n    top_p: 1\n"
    )
    (tmp_path / ".git").mkdir()
    # a recipe's config that extends verl's (no committed verl ships it): the same keys under the same paths
    (tmp_path / "recipe" / "config").mkdir(parents=True)
    (tmp_path / "recipe" / "config" / "my_trainer.yaml").write_text(
        "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\ndefaults:\n  - ppo_trainer\n  - _self_\n"
    )
    overrides = (
        "actor_rollout_ref.actor.entropy_coeff=0.001 actor_rollout_ref.rollout.top_p=0.95 "
        "actor_rollout_ref.actor.ppo_epochs=1.5 data.max_prompt_length=512.5"
    )
    (tmp_path / "run.sh").write_text(f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {overrides}\n")
    (tmp_path / "recipe.sh").write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path=$(pwd)/recipe/config --config-name=my_trainer "
        f"{overrides}\n"
    )
    found = report("run.sh", "recipe.sh", cwd=tmp_path, cache=tmp_path / "cache")
    for script in ("run.sh", "recipe.sh"):
        warned = [
            d["message"].split("`")[1] for d in found["diagnostics"] if (d["code"], d["path"]) == ("SL004", script)
        ]
        assert warned == ["actor_rollout_ref.actor.ppo_epochs", "data.max_prompt_length"], found["diagnostics"]


def test_sl004_null_leaves_an_undeclared_name_flag_or_collection_unset(tmp_path):
    """Where only verl's YAML default types a key, null is verl's way to leave a name, path, flag or collection unset
    (`reward_model.model.input_tokenizer`: "set this to null if the chat template is identical", read as `is
    None`): no finding. A number verl computes with keeps its warning."""
    package = tiny_verl(tmp_path, version="0.2.0.dev")
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text(
        "trainer:\n  nnodes: 1\n  val_before_train: true\n  logger: [console]\ndata:\n  max_prompt_length: 512\n"
        "actor_rollout_ref:\n  model:\n    path: Qwen/Qwen2.5-7B\n"
        "reward_model:\n  model:\n    input_tokenizer: ${actor_rollout_ref.model.path}\n"
    )
    (tmp_path / ".git").mkdir()
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo reward_model.model.input_tokenizer=null "
        "trainer.val_before_train=null trainer.logger=null data.max_prompt_length=null\n"
    )
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    warned = [d["message"].split("`")[1] for d in found["diagnostics"] if d["code"] == "SL004"]
    assert warned == ["data.max_prompt_length"], found["diagnostics"]


def _script(tmp_path, module: str, *args: str, version: str = "0.10.0.dev"):
    from sapo_toolkit.linter.lint import lint_paths
    from sapo_toolkit.linter.settings import Settings

    path = tmp_path / "run_sft_megatron.sh"
    path.write_text(
        "#!/usr/bin/env bash\ntorchrun --nproc_per_node=8 -m "
        + module
        + " \\\n"
        + " \\\n".join(f"    {a}" for a in args)
        + "\n",
        encoding="utf-8",
    )
    return lint_paths([path], Settings(verl_version=version), []).diagnostics


def test_sft_trainer_engine_is_checked(tmp_path):
    sft = "verl.trainer.sft_trainer"
    good = _script(
        tmp_path,
        sft,
        "model=hf_model",
        "engine=megatron",
        "optim=megatron",
        "engine.tensor_model_parallel_size=2",
        "optim.lr_decay_style=cosine",
    )
    assert not [d for d in good if d.code.startswith(("SL", "RF004"))]
    found = only(_script(tmp_path, sft, "engine=megatron", "optim=megatron", "engine.tensor_parallel_size=2"), "SL001")
    assert "`sft_trainer_engine` (engine=megatron, optim=megatron)" in found[0].message
    assert "engine.tensor_model_parallel_size" in found[0].message
    assert only(_script(tmp_path, sft, "engine.tensor_model_parallel_size=2"), "SL001")  # default engine=fsdp
    assert not only(
        _script(tmp_path, sft, "engine=megatron", "engine.tensor_model_parallel_size=2", version="0.9.1"), "SL001"
    )  # verl 0.9.1 ships sft_trainer_engine too


def test_config_without_snapshot_is_one_info(tmp_path):
    found = only(
        _script(
            tmp_path, "verl.trainer.main_ppo", "--config-name=my_own_trainer", "trainer.nnodes=2", "trainer.nnodes=3"
        ),
        "RF004",
    )
    assert len(found) == 1 and found[0].severity.value == "info"
    assert "no config 'my_own_trainer'" in found[0].message and "not checked" in found[0].message
    assert not only(_script(tmp_path, "verl.trainer.main_ppo", "trainer.nnodes=2"), "RF004")
    assert (
        only(_script(tmp_path, "verl.trainer.main_ppo", "trainer.nnodes=2", version="0.3.0"), "RF004")[0].severity.value
        == "error"
    )


def test_other_snapshots_are_read_only_for_unknown_keys(lint_text):
    from sapo_toolkit.linter import schema

    for cached in (schema._verl_snapshot, schema.load_snapshot, schema._tree_of):
        cached.cache_clear()
    lint_text('verl: "0.9.1"\noverrides:\n  trainer.nnodes: 2\n')
    assert schema._verl_snapshot.cache_info().currsize == 1  # only 0.9.1's file
    lint_text('verl: "0.9.1"\noverrides:\n  trainer.nnodez: 2\n')
    assert schema._verl_snapshot.cache_info().currsize == len(schema.available_verl_versions())


def test_sl009_names_a_template_placeholder_left_unfilled(tmp_path):
    """verl's own templates leave `<path_to_...>` blanks; a script that keeps one cannot start (Hydra cannot read
    `<`): the finding says it is a placeholder."""
    from sapo_toolkit.linter.lint import lint_paths
    from sapo_toolkit.linter.settings import Settings

    script = tmp_path / "run.sh"
    script.write_text(
        'LLM="<path_to_dsv3_config>"\n'
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=$LLM 'trainer.nnodes=[1'\n"
    )
    found = [d for d in lint_paths([script], Settings()).diagnostics if d.code == "SL009"]
    assert len(found) == 2
    assert "`<path_to_dsv3_config>` is a placeholder to fill in" in found[0].message
    assert "placeholder" not in found[1].message


def test_sl003_is_a_warning_where_the_unread_key_turns_something_off(lint_text):
    """`+trainer.some_legacy_switch=disable` or a null threshold that nothing reads loses nothing: a warning; a
    value that turns something on is silently lost: an error."""
    for off in ("disable", "null", "false"):
        (found,) = only(lint_text(f"overrides:\n  +trainer.my_unread_switch: {off}\n"), "SL003")
        assert found.severity.value == "warning" and "nothing is lost" in found.message, off
    for on in ("enable", "0", "8"):  # a count of 0 is a setting of its own, lost all the same
        (found,) = only(lint_text(f"overrides:\n  +trainer.my_unread_switch: {on}\n"), "SL003")
        assert found.severity.value == "error", on


def test_sl002_agrees_with_hydra_on_a_plus_list_or_mapping_for_an_existing_key(tmp_path):
    """Hydra 1.3 merges `+key=<list or mapping>` as it merges `++`: a list replaces the value, a mapping merges into
    one; a scalar (or a list into a mapping) is refused. Checked against real Hydra, then through sapo-lint."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import ConfigCompositionException

    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "c.yaml").write_text("a:\n  l: [1, 2]\n  d: {x: 1}\n  s: 3\n")

    def hydra_accepts(override: str) -> bool:
        try:
            with initialize_config_dir(config_dir=str(tmp_path / "conf"), version_base=None):
                compose("c", overrides=[override])
            return True
        except ConfigCompositionException:
            return False

    assert [hydra_accepts(o) for o in ("+a.l=[3]", "+a.d={y: 2}", "+a.s=4", "+a.d=[1]")] == [True, True, False, False]
    from sapo_toolkit.linter.lint import lint_paths
    from sapo_toolkit.linter.settings import Settings

    script = tmp_path / "run.sh"
    script.write_text(
        "python3 -m verl.trainer.main_ppo +trainer.logger=[console] '+actor_rollout_ref.rollout.engine_kwargs={a: 1}' "
        "+trainer.nnodes=2 +actor_rollout_ref.rollout.engine_kwargs=[1]\n"
    )
    found = lint_paths([script], Settings(shellcheck=False, verl_version="0.9.1")).diagnostics
    assert sorted(d.message.split("`")[1] for d in found if d.code == "SL002") == [
        "actor_rollout_ref.rollout.engine_kwargs",
        "trainer.nnodes",
    ]


def test_sl001_names_an_unselected_engine_once_for_all_its_keys(tmp_path):
    """A Megatron script without `model_engine=megatron`: one finding naming the cause at the first key, the others
    as related locations, no guessed rename; a typo elsewhere is still its own finding."""
    from sapo_toolkit.linter.lint import lint_paths
    from sapo_toolkit.linter.settings import Settings

    keys = (
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4 "
        "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 "
        "actor_rollout_ref.ref.megatron.param_offload=True"
    )
    script = tmp_path / "run.sh"
    script.write_text(f"python3 -m verl.trainer.main_ppo {keys} trainer.nnodez=1\n")
    found = [d for d in lint_paths([script], Settings(shellcheck=False, verl_version="0.9.1")).diagnostics]
    sl001 = [d for d in found if d.code == "SL001"]
    assert len(sl001) == 2
    cause, typo = sl001
    assert "Add `model_engine=megatron`" in cause.message and len(cause.related) == 2 and cause.fix is None
    assert "Did you mean `trainer.nnodes`?" in typo.message
    script.write_text(f"python3 -m verl.trainer.main_ppo model_engine=megatron {keys}\n")
    assert not [d for d in lint_paths([script], Settings(shellcheck=False, verl_version="0.9.1")).diagnostics
                if d.code == "SL001"]  # fmt: skip


def test_sl003_on_verl_0_7_the_legacy_workers_keep_the_ref_a_plain_config(lint_text):
    """verl 0.7.1 runs its legacy workers by default, which hand the ref's config on as it is (and read
    `ref.model`): no TypeError for a `+` key there; with the engine workers (asked for, or verl >= 0.8) there is."""
    added = "  +actor_rollout_ref.ref.model.override_config.attn_implementation: eager\n"
    header = "config_name: ppo_trainer\noverrides:\n  algorithm.adv_estimator: grpo\n"
    assert not only(lint_text('verl: "0.7.1"\n' + header + added), "SL003")
    engine = lint_text('verl: "0.7.1"\n' + header + added + "  +trainer.use_legacy_worker_impl: disable\n")
    assert [d for d in only(engine, "SL003") if "instantiation fails" in d.message]
    assert [d for d in only(lint_text('verl: "0.9.1"\n' + header + added), "SL003") if "TypeError" in d.message]
