"""BS rules (verl's batch checks): failing and passing cases beyond the documented examples."""

from sapo_toolkit.linter.lint import lint_paths
from sapo_toolkit.linter.settings import Settings

from .helpers import DYNAMIC, LONG, STATIC, body, codes, only


# BS001
def test_bs001_counts_rollout_n_and_actor_tp(lint_text):
    text = body(
        STATIC,
        "trainer.n_gpus_per_node: 8",
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 2",
        "actor_rollout_ref.rollout.n: 5",
        "data.train_batch_size: 30",
        "actor_rollout_ref.actor.ppo_mini_batch_size: 10",
    )
    found = only(lint_text(text), "BS001")
    assert len(found) == 1
    assert "real_train_batch_size (150) must be divisible by minimal possible batch size (8)" in found[0].message
    assert "megatron_dp 4" in found[0].message


def test_bs001_passes_when_n_makes_it_fit(lint_text):
    text = body(
        STATIC,
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 2",
        "actor_rollout_ref.rollout.n: 4",
        "data.train_batch_size: 30",
        "actor_rollout_ref.actor.ppo_mini_batch_size: 10",
    )
    assert not only(lint_text(text), "BS001")


def test_bs001_skipped_with_dynamic_bsz_and_when_topology_is_broken(lint_text):
    assert not only(lint_text(body(DYNAMIC, "data.train_batch_size: 100")), "BS001")
    text = body(STATIC, "actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 3", "data.train_batch_size: 100")
    assert not only(lint_text(text), "BS001")  # TP001's business


# BS002
def test_bs002_micro_batch_must_divide_the_per_rank_mini_batch(lint_text):
    text = body(
        STATIC,
        "actor_rollout_ref.rollout.n: 4",
        "actor_rollout_ref.actor.ppo_mini_batch_size: 6",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 2",
    )
    found = only(lint_text(text), "BS002")
    assert len(found) == 1 and "per rank 3" in found[0].message and "micro_batch_size_per_gpu 2" in found[0].message
    assert not only(
        lint_text(text.replace("ppo_micro_batch_size_per_gpu: 2", "ppo_micro_batch_size_per_gpu: 3")), "BS002"
    )


def test_bs002_dp_check_applies_with_dynamic_bsz_too(lint_text):
    text = body(DYNAMIC, "trainer.nnodes: 2", "actor_rollout_ref.actor.ppo_mini_batch_size: 4")
    found = only(lint_text(text), "BS002")
    assert found and "dp 16" in found[0].message
    assert not only(
        lint_text(
            body(
                DYNAMIC,
                "trainer.nnodes: 2",
                "actor_rollout_ref.actor.ppo_mini_batch_size: 4",
                "actor_rollout_ref.rollout.n: 4",
            )
        ),
        "BS002",
    )


# BS003
def test_bs003_both_keys_set(lint_text):
    text = body(STATIC, "actor_rollout_ref.rollout.log_prob_micro_batch_size: 16")
    found = only(lint_text(text), "BS003")
    assert len(found) == 1 and "You have set both" in found[0].message


def test_bs003_ref_needs_keys_only_when_a_kl_term_runs_it(lint_text):
    found = only(lint_text(body(STATIC, "actor_rollout_ref.actor.use_kl_loss: true")), "BS003")
    assert (
        len(found) == 1
        and "Please set at least one of 'actor_rollout_ref.ref.log_prob_micro_batch_size'" in found[0].message
    )
    assert not only(lint_text(STATIC), "BS003")
    assert not only(
        lint_text(
            body(
                STATIC,
                "actor_rollout_ref.actor.use_kl_loss: true",
                "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu: 2",
            )
        ),
        "BS003",
    )


ONLY_GLOBAL = """overrides:
  algorithm.adv_estimator: grpo
  actor_rollout_ref.actor.ppo_micro_batch_size: 64
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 1
"""


def test_bs003_only_the_global_key_is_an_error_where_the_workers_read_only_per_gpu_keys(lint_text):
    found = only(lint_text('verl: "0.9.1"\n' + ONLY_GLOBAL), "BS003")
    assert len(found) == 1 and "only the deprecated global" in found[0].message
    assert only(lint_text('verl: "0.8.0"\n' + ONLY_GLOBAL), "BS003")


def test_bs003_only_the_global_key_is_fine_where_the_workers_convert_it(lint_text):
    # verl <= 0.7.1's fsdp_workers/megatron_workers divide the global key by the data-parallel size themselves
    for version in ("0.4.1", "0.5.0", "0.6.1", "0.7.1"):
        assert not only(lint_text(f'verl: "{version}"\n' + ONLY_GLOBAL), "BS003"), version


def test_bs003_not_needed_with_dynamic_bsz(lint_text):
    assert not only(lint_text(DYNAMIC), "BS003")


# BS004
def test_bs004_actor_only_without_critic(lint_text):
    text = body(STATIC, "data.train_batch_size: 64")
    found = only(lint_text(text), "BS004")
    assert len(found) == 1 and "actor.ppo_mini_batch_size (256)" in found[0].message
    assert not only(lint_text(body(DYNAMIC, "data.train_batch_size: 64")), "BS004")


# BS005
def test_bs005_ref_use_mbridge_only_when_ref_runs(lint_text):
    text = body(DYNAMIC, "actor_rollout_ref.ref.megatron.use_mbridge: false")
    assert not only(lint_text(text), "BS005")
    found = only(lint_text(text + "  actor_rollout_ref.actor.use_kl_loss: true\n"), "BS005")
    assert len(found) == 1 and "ref worker" in found[0].message


# BS006
def test_bs006_rollout_set_against_the_actor_default(lint_text):
    found = only(lint_text(body(STATIC, "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz: true")), "BS006")
    assert found and "actor.use_dynamic_bsz=False" in found[0].message


def test_bs006_rollout_follows_the_actor_by_interpolation(lint_text):
    assert not only(lint_text(DYNAMIC), "BS006")


# BS007
def test_bs007_counts_rollout_dp_and_exempts_trtllm(lint_text):
    text = body(
        DYNAMIC,
        "actor_rollout_ref.rollout.tensor_model_parallel_size: 2",
        "actor_rollout_ref.rollout.data_parallel_size: 2",
        "actor_rollout_ref.rollout.expert_parallel_size: 4",
    )
    assert not only(lint_text(text), "BS007")
    bad = text.replace("expert_parallel_size: 4", "expert_parallel_size: 2")
    assert only(lint_text(bad), "BS007")
    assert not only(lint_text(bad + "  actor_rollout_ref.rollout.name: trtllm\n"), "BS007")


# BS008
def test_bs008_sglang_and_unset_name(lint_text):
    text = body(DYNAMIC, "actor_rollout_ref.rollout.pipeline_model_parallel_size: 2")
    assert not only(lint_text(text), "BS008")  # rollout.name unset (???): nothing to judge
    found = only(lint_text(text + "  actor_rollout_ref.rollout.name: sglang\n"), "BS008")
    assert found and "not implemented pipeline_model_parallel_size > 1" in found[0].message


# BS009
def test_bs009_counts_dp_over_two_nodes(lint_text):
    text = body(
        DYNAMIC,
        "trainer.nnodes: 2",
        "actor_rollout_ref.rollout.tensor_model_parallel_size: 2",
        "actor_rollout_ref.rollout.data_parallel_size: 3",
    )
    found = only(lint_text(text), "BS009")
    assert found and "rollout world_size: 16 is not divisible by infer_world_size: 6" in found[0].message
    assert not only(lint_text(text.replace("data_parallel_size: 3", "data_parallel_size: 4")), "BS009")


def test_bs009_leaves_plain_rollout_tp_to_topology(lint_text):
    text = body(DYNAMIC, "actor_rollout_ref.rollout.tensor_model_parallel_size: 3")
    assert not only(lint_text(text), "BS009")


def test_bs010_context_parallel_multiplies_the_budget(lint_text):
    text = body(DYNAMIC, *LONG)
    found = only(lint_text(text), "BS010")
    assert len(found) == 1 and "at least 10240" in found[0].message  # the rollout budget follows the actor's
    assert not only(lint_text(text + "  actor_rollout_ref.actor.megatron.context_parallel_size: 2\n"), "BS010")


def test_bs010_ref_budget_checked_when_the_ref_runs(lint_text):
    text = body(
        DYNAMIC,
        "data.max_prompt_length: 2048",
        "data.max_response_length: 8192",
        "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu: 4096",
    )
    assert not only(lint_text(text), "BS010")
    found = only(lint_text(text + "  actor_rollout_ref.actor.use_kl_loss: true\n"), "BS010")
    assert len(found) == 1 and "ref.log_prob_max_token_len_per_gpu`=4096" in found[0].message


def test_bs010_static_bsz_has_no_budget(lint_text):
    assert not only(lint_text(body(STATIC, *LONG)), "BS010")


def test_bs010_ulysses_sequence_parallel_multiplies_the_budget(lint_text):
    fsdp = body(DYNAMIC, "model_engine: dp", *LONG)
    assert only(lint_text(fsdp), "BS010")
    assert not only(
        lint_text(fsdp + "  actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size: 2\n"), "BS010"
    )
    # the deprecated actor-level size is copied over the engine's by FSDPActorConfig.__post_init__
    assert not only(lint_text(fsdp + "  actor_rollout_ref.actor.ulysses_sequence_parallel_size: 2\n"), "BS010")
    veomni = body(DYNAMIC, "model_engine: veomni", *LONG)
    assert only(lint_text(veomni), "BS010")
    assert not only(lint_text(veomni + "  actor_rollout_ref.actor.veomni.ulysses_parallel_size: 2\n"), "BS010")


def test_bs010_names_the_effective_budget_when_sp_is_not_enough(lint_text):
    text = body(
        DYNAMIC,
        "model_engine: dp",
        "data.max_prompt_length: 2048",
        "data.max_response_length: 8192",
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu: 4096",
        "actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size: 2",
    )
    found = only(lint_text(text), "BS010")
    assert len(found) == 1
    assert "x `ulysses_sequence_parallel_size` 2 = 8192 tokens" in found[0].message
    assert "at least 5120" in found[0].message


def test_bs010_fsdp_critic_counts_only_its_engine_ulysses_size(lint_text):
    text = body(
        DYNAMIC,
        "model_engine: dp",
        "critic.enable: true",
        "critic.use_dynamic_bsz: true",
        "data.max_prompt_length: 2048",
        "data.max_response_length: 8192",
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu: 10240",
        "critic.ppo_max_token_len_per_gpu: 5120",
        "+critic.ppo_infer_max_token_len_per_gpu: 5120",
    )
    # FSDPCriticConfig does not copy the deprecated critic-level size to its engine
    found = only(lint_text(text + "  critic.ulysses_sequence_parallel_size: 2\n"), "BS010")
    assert {f.message.split("`")[1] for f in found} == {
        "critic.ppo_max_token_len_per_gpu",
        "critic.ppo_infer_max_token_len_per_gpu",
    }
    assert not only(lint_text(text + "  critic.fsdp.ulysses_sequence_parallel_size: 2\n"), "BS010")


# BS011
def test_bs011_moe_tp_outside_trtllm_fails_at_start_up(lint_text):
    text = body(
        DYNAMIC, "actor_rollout_ref.rollout.name: sglang", "+actor_rollout_ref.rollout.moe_tensor_parallel_size: 2"
    )
    found = only(lint_text(text), "BS011")
    assert len(found) == 1 and "only supported for trtllm" in found[0].message and "sglang" in found[0].message
    assert not only(lint_text(text.replace("moe_tensor_parallel_size: 2", "moe_tensor_parallel_size: 1")), "BS011")
    assert not only(lint_text(text.replace("name: sglang", "name: trtllm")), "BS011")


def test_bs011_trtllm_moe_tp_times_ep_must_be_the_rollout_tp(lint_text):
    text = body(
        DYNAMIC,
        "actor_rollout_ref.rollout.name: trtllm",
        "actor_rollout_ref.rollout.tensor_model_parallel_size: 4",
        "+actor_rollout_ref.rollout.moe_tensor_parallel_size: 2",
        "actor_rollout_ref.rollout.expert_parallel_size: 4",
    )
    found = only(lint_text(text), "BS011")
    assert len(found) == 1 and "2 x expert_parallel_size 4 = 8 != tensor_model_parallel_size 4" in found[0].message
    assert "Set expert_parallel_size to 2" in found[0].message
    assert not only(lint_text(text.replace("expert_parallel_size: 4", "expert_parallel_size: 2")), "BS011")
    assert not only(lint_text(text.replace("expert_parallel_size: 4", "expert_parallel_size: 1")), "BS011")


# Entry modules that never build the actor run only the rules of the parts they run (engine.ENTRY_MODULE_PARTS)
_NO_MICRO_BATCH_MOE_TP = (
    "actor_rollout_ref.rollout.name: vllm",
    "+actor_rollout_ref.rollout.moe_tensor_parallel_size: 2",
)


def test_generation_server_runs_rollout_rules_not_training_rules(lint_text):
    text = body("overrides:\n", *_NO_MICRO_BATCH_MOE_TP)
    found = codes(lint_text(text))
    assert "BS003" in found and "BS011" in found  # main_ppo (a recipe's default) builds the actor
    found = codes(lint_text("entrypoint: verl.trainer.main_generation_server\n" + text))
    assert "BS003" not in found and "BS011" in found


def test_generation_server_script_skips_training_rules(tmp_path):
    def lint_script(module):
        path = tmp_path / "run_x_fsdp.sh"
        path.write_text(
            f"python3 -m {module} actor_rollout_ref.rollout.name=vllm "
            "+actor_rollout_ref.rollout.moe_tensor_parallel_size=2\n",
            encoding="utf-8",
        )
        return codes(lint_paths([path], Settings(), []).diagnostics)

    assert {"BS003", "BS011"} <= set(lint_script("verl.trainer.main_ppo"))
    found = lint_script("verl.trainer.main_generation_server")
    assert "BS003" not in found and "BS011" in found


def test_fully_async_entry_skips_the_train_batch_checks_of_validate_config(tmp_path):
    # verl main's fully-async trainer never calls validate_config, and its rollouter asserts train_batch_size == 0.
    def lint_script(module):
        path = tmp_path / "run_x_fsdp.sh"
        path.write_text(
            f"python3 -m {module} data.train_batch_size=0 actor_rollout_ref.actor.ppo_mini_batch_size=32 "
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 "
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1\n",
            encoding="utf-8",
        )
        return codes(lint_paths([path], Settings(verl_version="0.10.0.dev"), []).diagnostics)

    assert "BS004" in lint_script("verl.trainer.main_ppo")
    assert not {"BS001", "BS004"} & set(lint_script("verl.experimental.fully_async_policy.fully_async_main"))


def test_bs010_the_legacy_workers_multiply_each_role_s_budget_by_its_own_ulysses_size(lint_text):
    """verl <= 0.7.1's default FSDP workers: `max_token_len = ppo_max_token_len_per_gpu * ulysses size` of the role."""
    base = (
        'verl: "0.7.1"\nconfig_name: ppo_trainer\noverrides:\n  algorithm.adv_estimator: grpo\n'
        "  data.max_prompt_length: 2048\n  data.max_response_length: 8192\n"
        "  actor_rollout_ref.actor.use_dynamic_bsz: true\n  actor_rollout_ref.actor.ulysses_sequence_parallel_size: 2\n"
    )
    assert not only(lint_text(base + "  actor_rollout_ref.actor.ppo_max_token_len_per_gpu: 6000\n"), "BS010")
    assert only(lint_text(base + "  actor_rollout_ref.actor.ppo_max_token_len_per_gpu: 4000\n"), "BS010")
