"""Topology rules TP001-TP013: failing and passing cases beyond the documented examples."""

import json

from sapo_toolkit.linter.core.diagnostics import Severity

from .helpers import only

MOE = "model: {path: Qwen/Qwen3-30B-A3B}\n"
A = "actor_rollout_ref.actor.megatron"
R = "actor_rollout_ref.ref.megatron"


def test_tp001_reports_the_ref_once_when_it_inherits(lint_text):
    body = f"overrides:\n  actor_rollout_ref.actor.use_kl_loss: true\n  {A}.tensor_model_parallel_size: 3\n"
    found = only(lint_text(body), "TP001")
    assert [d.message.split(":")[0] for d in found] == ["actor"]
    assert "dp" in found[0].message and "TP 2 or 4" in found[0].message


def test_tp001_ref_with_its_own_sizes(lint_text):
    body = f"overrides:\n  actor_rollout_ref.actor.use_kl_loss: true\n  {R}.tensor_model_parallel_size: 3\n"
    assert [d.message.split(":")[0] for d in only(lint_text(body), "TP001")] == ["ref"]
    # without a KL term the ref does not run
    assert not only(lint_text(f"overrides:\n  {R}.tensor_model_parallel_size: 3\n"), "TP001")


def test_tp001_two_nodes(lint_text):
    body = (
        f"overrides:\n  trainer.nnodes: 2\n  {A}.tensor_model_parallel_size: 8\n  {A}.pipeline_model_parallel_size: 2\n"
    )
    assert not only(lint_text(body), "TP001")
    body = (
        f"overrides:\n  trainer.nnodes: 2\n  {A}.tensor_model_parallel_size: 8\n  {A}.pipeline_model_parallel_size: 3\n"
    )
    assert only(lint_text(body), "TP001")


def test_tp002_etp_defaults_to_tp(lint_text):
    body = MOE + f"overrides:\n  {A}.tensor_model_parallel_size: 2\n  {A}.expert_model_parallel_size: 8\n"
    assert only(lint_text(body), "TP002")  # EP 8 x ETP (=TP) 2 = 16 > 8 devices
    body = MOE + f"overrides:\n  {A}.tensor_model_parallel_size: 2\n  {A}.expert_model_parallel_size: 4\n"
    assert not only(lint_text(body), "TP002")


def test_tp004_depends_on_megatron_core_version(lint_text):
    body = f"overrides:\n  {A}.tensor_model_parallel_size: 8\n  {A}.expert_tensor_parallel_size: 1\n"
    old = only(lint_text(MOE + 'stack: {megatron_core: "0.15.3"}\n' + body), "TP004")
    assert old and "must be a multiple of tensor_model_parallel_size (8)" in old[0].message
    assert not only(lint_text(MOE + 'stack: {megatron_core: "0.16.1"}\n' + body), "TP004")
    three = f"overrides:\n  {A}.tensor_model_parallel_size: 3\n"
    assert only(lint_text(MOE + 'stack: {megatron_core: "0.16.1"}\n' + three), "TP004")


def test_tp005_and_tp006(lint_text):
    assert not only(lint_text(MOE + f"overrides:\n  {A}.expert_model_parallel_size: 8\n"), "TP005")
    assert only(
        lint_text("model: {path: Qwen/Qwen3-235B-A22B}\n" + f"overrides:\n  {A}.expert_model_parallel_size: 6\n"),
        "TP005",
    )
    assert not only(lint_text(MOE + f"overrides:\n  {A}.expert_model_parallel_size: 2\n"), "TP006")


def test_tp007_uneven_layout_for_awkward_layer_counts(lint_text):
    big = "model: {path: Qwen/Qwen3-235B-A22B}\n"  # 94 layers
    assert only(lint_text(big + f"overrides:\n  {A}.pipeline_model_parallel_size: 4\n"), "TP007")
    uneven = (
        f"overrides:\n  {A}.pipeline_model_parallel_size: 4\n"
        f"  +{A}.override_transformer_config.num_layers_in_first_pipeline_stage: 23\n"
        f"  +{A}.override_transformer_config.num_layers_in_last_pipeline_stage: 23\n"
    )
    assert not only(lint_text(big + uneven), "TP007")  # 48 middle layers over 2 stages
    bad = uneven.replace(": 23\n", ": 22\n", 1)
    assert "left over layers" in only(lint_text(big + bad), "TP007")[0].message  # 49 over 2


def test_tp008_layers_per_stage_and_vpp(lint_text):
    body = f"overrides:\n  {A}.pipeline_model_parallel_size: 2\n  {A}.virtual_pipeline_model_parallel_size: 4\n"
    assert "num_layers_per_pipeline_rank 18" in only(lint_text(body), "TP008")[0].message  # Qwen3-8B: 36 layers


def test_tp009_dense_ffn_and_vocab(lint_text):
    body = (
        "model: {path: Qwen/Qwen2.5-7B}\noverrides:\n  trainer.n_gpus_per_node: 28\n"
        f"  {A}.tensor_model_parallel_size: 28\n"
    )
    messages = [d.message for d in only(lint_text(body), "TP009")]
    assert any("FFN hidden size 18944" in m for m in messages) and any("vocabulary 152064" in m for m in messages)


def test_tp010_is_a_warning_from_megatron_core_0_15(lint_text):
    body = (
        f"overrides:\n  {A}.tensor_model_parallel_size: 2\n  {A}.expert_model_parallel_size: 2\n"
        f"  {A}.sequence_parallel: false\n"
    )
    (new,) = only(lint_text(MOE + 'stack: {megatron_core: "0.16.1"}\n' + body), "TP010")
    assert new.severity == Severity.WARNING
    (old,) = only(lint_text(MOE + 'stack: {megatron_core: "0.12.1"}\n' + body), "TP010")
    assert old.severity == Severity.ERROR


def test_tp010_sequence_parallel_at_tp1_is_a_note(lint_text):
    (note,) = only(lint_text(f"overrides:\n  {A}.sequence_parallel: true\n"), "TP010")
    assert note.severity == Severity.INFO
    assert not only(lint_text("overrides: {}\n"), "TP010")  # verl's own default is not reported


def test_tp012_multi_node_replica_is_allowed(lint_text):
    body = "overrides:\n  trainer.nnodes: 2\n  actor_rollout_ref.rollout.tensor_model_parallel_size: 16\n"
    assert not only(lint_text(body), "TP012")
    body = "overrides:\n  trainer.nnodes: 3\n  actor_rollout_ref.rollout.tensor_model_parallel_size: 16\n"
    assert only(lint_text(body), "TP012")


def test_model_shape_from_a_local_config_json(lint_text, tmp_path):
    model_dir = tmp_path / "my-model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(
        json.dumps(
            {
                "num_hidden_layers": 12,
                "hidden_size": 768,
                "num_attention_heads": 12,
                "num_key_value_heads": 12,
                "intermediate_size": 3072,
                "vocab_size": 50304,
            }
        )
    )
    body = f"model: {{path: ./my-model}}\noverrides:\n  {A}.tensor_model_parallel_size: 8\n"
    (found,) = only(lint_text(body), "TP003")
    assert "12 attention heads" in found.message and "my-model" in found.message


def test_unknown_model_is_one_info_and_skips_model_rules(lint_text):
    body = f"model: {{path: my-org/private}}\noverrides:\n  {A}.tensor_model_parallel_size: 3\n"
    found = lint_text(body)
    notes = [d for d in found if d.code == "RF005"]
    assert len(notes) == 1 and notes[0].severity == Severity.INFO and "model.card" in notes[0].message
    assert not only(found, "TP003")
    assert only(found, "TP001")  # shape-free topology still checked


# --- TP014: sizes below 1 (issue 14) -------------------------------------------------------------------------------

STATIC_MICRO = (
    "  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 2\n"
    "  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 2\n"
)


def test_tp014_a_world_of_no_devices(lint_text):
    for setting, said in [
        ("trainer.nnodes: 0", "`trainer.nnodes` is 0"),
        ("trainer.n_gpus_per_node: -8", "`trainer.n_gpus_per_node` is -8"),
        ("~trainer.nnodes: null", "`~trainer.nnodes` deletes `trainer.nnodes`"),
    ]:
        found = lint_text(f"overrides:\n{STATIC_MICRO}  {setting}\n")
        tp014 = only(found, "TP014")
        assert len(tp014) == 1 and said in tp014[0].message, (setting, [(d.code, d.message) for d in found])
        assert tp014[0].location.line == 8  # the setting's own line, after the 4 header lines and 3 overrides
        # no other rule does arithmetic on the broken world (no crash, no second finding about it)
        assert {d.code for d in found} <= {"TP014", "MEM001", "MEM002"}, [(d.code, d.message) for d in found]
    # on the FSDP engine too: verl's resource pool is `[n_gpus_per_node] * nnodes` whatever the engine
    assert only(lint_text(f"config_name: ppo_trainer\noverrides:\n{STATIC_MICRO}  trainer.nnodes: 0\n"), "TP014")
    assert not only(
        lint_text(f"overrides:\n{STATIC_MICRO}  trainer.nnodes: 2\n  trainer.n_gpus_per_node: 4\n"), "TP014"
    )


def test_tp014_megatron_expert_and_virtual_pipeline_sizes(lint_text):
    for name, value in [
        ("expert_model_parallel_size", 0),
        ("expert_tensor_parallel_size", 0),
        ("expert_tensor_parallel_size", -2),
        ("virtual_pipeline_model_parallel_size", 0),
    ]:
        found = only(
            lint_text(
                MOE + f"overrides:\n{STATIC_MICRO}  {A}.pipeline_model_parallel_size: 2\n  {A}.{name}: {value}\n"
            ),
            "TP014",
        )
        assert len(found) == 1 and f"`{A}.{name}` is {value}" in found[0].message, (name, found)
    assert not only(
        lint_text(
            MOE + f"overrides:\n{STATIC_MICRO}  {A}.pipeline_model_parallel_size: 2\n"
            f"  {A}.expert_model_parallel_size: 2\n  {A}.expert_tensor_parallel_size: 1\n"
            f"  {A}.virtual_pipeline_model_parallel_size: 2\n"
        ),
        "TP014",
    )


# --- a separate rollout (verl main's fully-async and one-step-off trainers): TP012 on its devices, TP015 ---------


def _separated(tmp_path, *extra, entry="verl.experimental.one_step_off_policy.main_ppo"):
    from sapo_toolkit.linter.lint import lint_paths
    from sapo_toolkit.linter.settings import Settings

    path = tmp_path / "run_qwen3_8b_fsdp.sh"
    path.write_text(
        f"python3 -m {entry} actor_rollout_ref.model.path=Qwen/Qwen3-8B trainer.nnodes=1 "
        "trainer.n_gpus_per_node=4 " + " ".join(extra) + "\n",
        encoding="utf-8",
    )
    return lint_paths([path], Settings(verl_version="0.10.0.dev", shellcheck=False), []).diagnostics


def test_tp012_tiles_a_separate_rollout_on_its_own_devices(tmp_path):
    hybrid_off = "actor_rollout_ref.hybrid_engine=False"
    # 4 trainer devices, 8 rollout devices: TP 8 is one standalone replica (the trainer's 4 would not hold it)
    rollout = "rollout.nnodes=1 rollout.n_gpus_per_node=8 actor_rollout_ref.rollout.tensor_model_parallel_size=8"
    assert not only(_separated(tmp_path, hybrid_off, rollout), "TP012")
    assert only(_separated(tmp_path, hybrid_off, rollout, entry="verl.trainer.main_ppo"), "TP012")  # colocated
    # 3 nodes x 8 with TP 16: one replica, 8 devices idle (verl floor-divides): a warning
    idle = only(
        _separated(
            tmp_path, hybrid_off, rollout.replace("rollout.nnodes=1", "rollout.nnodes=3").replace("size=8", "size=16")
        ),
        "TP012",
    )
    assert len(idle) == 1 and idle[0].severity is Severity.WARNING and "leaves 8 of the rollout's 24" in idle[0].message
    # a replica that straddles nodes is an error there too
    split = only(_separated(tmp_path, hybrid_off, rollout.replace("size=8", "size=3")), "TP012")
    assert (
        len(split) == 1 and split[0].severity is Severity.ERROR and "rollout's 8 devices per node" in split[0].message
    )


def test_tp015_separate_rollout_trainers_need_hybrid_engine_off(tmp_path):
    rollout = "rollout.nnodes=1 rollout.n_gpus_per_node=4"
    for entry in (
        "verl.experimental.one_step_off_policy.main_ppo",
        "verl.experimental.fully_async_policy.fully_async_main",
    ):
        found = only(_separated(tmp_path, rollout, entry=entry), "TP015")
        assert len(found) == 1 and "asserts `not hybrid_engine`" in found[0].message, entry
        assert not only(_separated(tmp_path, rollout, "actor_rollout_ref.hybrid_engine=False", entry=entry), "TP015")
    assert not only(_separated(tmp_path, rollout, entry="verl.trainer.main_ppo"), "TP015")
