"""RC: recompute combinations megatron-core's TransformerConfig.__post_init__ rejects at model init."""

import pytest

from .helpers import only

OTC = "actor_rollout_ref.actor.megatron.override_transformer_config"
REF_OTC = "actor_rollout_ref.ref.megatron.override_transformer_config"
CRITIC_OTC = "critic.megatron.override_transformer_config"


def body(*lines, mcore=None):
    stack = f'stack: {{megatron_core: "{mcore}"}}\n' if mcore else ""
    return stack + "overrides:\n" + "".join(f"  {line}\n" for line in lines)


def rc(diagnostics, code):
    return only(diagnostics, code)


FULL = (f"{OTC}.recompute_granularity: full", f"{OTC}.recompute_method: uniform", f"{OTC}.recompute_num_layers: 1")


# --- incident 2 ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mcore", ["0.12.1", "0.15.3", "0.16.1"])
def test_incident_2_selective_with_leftover_full_triplet(lint_text, mcore):
    found = lint_text(body(*FULL, f"{OTC}.recompute_granularity: selective", mcore=mcore))
    hits = rc(found, "RC005")
    assert len(hits) == 1, found
    assert hits[0].message.startswith("actor: recompute_granularity=selective with recompute_num_layers=1")
    assert f"megatron-core {mcore}" in hits[0].message
    assert '"When using recompute_granularity: selective recompute_num_layers must be None."' in hits[0].message
    # the leftover method alone is accepted by megatron-core: only RC005
    assert {d.code for d in found if d.code.startswith("RC")} == {"RC005"}


def test_selective_with_leftover_method_only_is_accepted(lint_text):
    found = lint_text(body(f"{OTC}.recompute_granularity: selective", f"{OTC}.recompute_method: uniform"))
    assert not [d for d in found if d.code.startswith("RC")], found


def test_num_layers_without_granularity_is_not_checked(lint_text):
    found = lint_text(body(f"{OTC}.recompute_num_layers: 2", f"{OTC}.recompute_method: nonsense"))
    assert not [d for d in found if d.code.startswith("RC")], found


def test_selective_num_layers_null_is_clean(lint_text):
    found = lint_text(body(f"{OTC}.recompute_granularity: selective", f"{OTC}.recompute_num_layers: null"))
    assert not rc(found, "RC005")


# --- RC001 / RC002 -----------------------------------------------------------------------------------------


def test_granularity_value_is_case_sensitive(lint_text):
    found = lint_text(body(f"{OTC}.recompute_granularity: Selective"))
    [hit] = rc(found, "RC001")
    assert 'When using recompute_granuarlity: Selective must be "full"or "selective".' in hit.message


def test_granularity_null_is_clean(lint_text):
    assert not rc(lint_text(body(f"{OTC}.recompute_granularity: null")), "RC001")


def test_method_value(lint_text):
    found = lint_text(body(f"{OTC}.recompute_granularity: selective", f"{OTC}.recompute_method: Block", mcore="0.12.1"))
    [hit] = rc(found, "RC002")
    assert 'recompute_method: Block must be "block" or "uniform".' in hit.message
    assert not rc(lint_text(body(*FULL[:1], f"{OTC}.recompute_method: block", FULL[2])), "RC002")


# --- RC003 / RC004 -----------------------------------------------------------------------------------------


def test_full_alone_needs_method_and_num_layers(lint_text):
    found = lint_text(body(f"{OTC}.recompute_granularity: full"))
    [m] = rc(found, "RC003")
    [n] = rc(found, "RC004")
    assert 'Using recompute_granularity: full so recompute_method must be "block" or "uniform"' in m.message
    # Qwen3-8B has 36 layers; PP=1
    assert "recompute_num_layers must be between 1 and num_layers_per_pipeline_rank: 36" in n.message


def test_full_num_layers_message_uses_pipeline_size(lint_text):
    found = lint_text(
        body(
            "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size: 4",
            f"{OTC}.recompute_granularity: full",
            f"{OTC}.recompute_method: block",
        )
    )
    [n] = rc(found, "RC004")
    assert "num_layers_per_pipeline_rank: 9" in n.message
    assert not rc(found, "RC003")


def test_full_triplet_is_clean(lint_text):
    found = lint_text(body(*FULL, mcore="0.12.1"))
    assert not [d for d in found if d.code.startswith("RC")], found


# --- RC006: version-dependent module names -----------------------------------------------------------------


@pytest.mark.parametrize("mcore,fails", [("0.12.1", True), ("0.13.1", True), ("0.15.3", False), ("0.16.1", False)])
def test_shared_experts_module_by_version(lint_text, mcore, fails):
    found = lint_text(
        body(
            f"{OTC}.recompute_granularity: selective",
            f"{OTC}.recompute_modules: [core_attn, shared_experts]",
            mcore=mcore,
        )
    )
    hits = rc(found, "RC006")
    assert bool(hits) == fails, found
    if fails:
        assert "Invalid choices for recompute_modules: {'shared_experts'}. Allowed modules are: {" in hits[0].message
        assert "'shared_experts'" not in hits[0].message.split("Allowed modules are:")[1]


def test_unknown_module_every_version(lint_text):
    for mcore in ("0.12.1", "0.15.3", "0.16.1"):
        found = lint_text(
            body(f"{OTC}.recompute_granularity: selective", f"{OTC}.recompute_modules: [attn]", mcore=mcore)
        )
        assert rc(found, "RC006"), mcore


def test_modules_not_checked_without_selective(lint_text):
    found = lint_text(body(*FULL, f"{OTC}.recompute_modules: [attn]", mcore="0.12.1"))
    assert not rc(found, "RC006")
    found = lint_text(body(f"{OTC}.recompute_granularity: selective", f"{OTC}.recompute_modules: []"))
    assert not rc(found, "RC006")


# --- RC007..RC010 ------------------------------------------------------------------------------------------


def test_cpu_offloading_with_recompute(lint_text):
    found = lint_text(body(*FULL, f"+{OTC}.cpu_offloading: true", mcore="0.12.1"))
    [hit] = rc(found, "RC007")
    assert '"CPU offloading does not work when activation recomputation is enabled"' in hit.message
    assert not rc(lint_text(body(f"+{OTC}.cpu_offloading: true")), "RC007")


def test_distribute_saved_activations_needs_sequence_parallel(lint_text):
    dsa = f"+{OTC}.distribute_saved_activations: true"
    tp2 = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2"
    [hit] = rc(lint_text(body(tp2, *FULL, dsa)), "RC008")
    assert "distribute_saved_activations: True must be false when sequence parallel is enabled: True" in hit.message
    # TP=1: verl turns sequence parallel off
    assert not rc(lint_text(body(*FULL, dsa)), "RC008")
    # sequence parallel explicitly off
    assert not rc(
        lint_text(body(tp2, "actor_rollout_ref.actor.megatron.sequence_parallel: false", *FULL, dsa)), "RC008"
    )
    # no recompute: not checked
    assert not rc(lint_text(body(tp2, dsa)), "RC008")


def test_moe_layer_recompute_with_full(lint_text):
    flag = f"+{OTC}.moe_layer_recompute: true"
    [hit] = rc(lint_text(body(*FULL, flag, mcore="0.15.3")), "RC009")
    assert "Do not set --moe-layer-recompute with full recompute granularity." in hit.message
    assert not rc(lint_text(body(f"{OTC}.recompute_granularity: selective", flag)), "RC009")


def test_a2a_overlap_by_version(lint_text):
    flag = f"+{OTC}.overlap_moe_expert_parallel_comm: true"
    [hit] = rc(lint_text(body(*FULL, flag, mcore="0.15.3")), "RC010")
    assert '"disable full recomputation when enabling overlap_moe_expert_parallel_comm"' in hit.message
    assert "recompute_num_layers must be None when enabling overlap_moe_expert_parallel_comm" in hit.message
    # 0.12.1 has no such field (SL007 reports it), so no RC010
    found = lint_text(body(*FULL, flag, mcore="0.12.1"))
    assert not rc(found, "RC010") and "SL007" in [d.code for d in found]


# --- roles ----------------------------------------------------------------------------------------------------

KL = "actor_rollout_ref.actor.use_kl_loss: true"


def test_ref_inheriting_the_actor_is_reported_once(lint_text):
    found = lint_text(body(KL, f"{OTC}.recompute_granularity: selective", f"{OTC}.recompute_num_layers: 1"))
    hits = rc(found, "RC005")
    assert [h.message.split(":")[0] for h in hits] == ["actor"], found


def test_ref_own_setting_is_reported_for_the_ref(lint_text):
    # the ref's node interpolates the actor's, so its keys are added with `+` (SL010 warns about that)
    found = lint_text(body(KL, f"+{REF_OTC}.recompute_granularity: selective", f"+{REF_OTC}.recompute_num_layers: 2"))
    assert [h.message.split(":")[0] for h in rc(found, "RC005")] == ["ref"], found


def test_critic_reported_when_it_runs(lint_text):
    lines = (f"{CRITIC_OTC}.recompute_granularity: full",)
    assert not rc(lint_text(body("algorithm.adv_estimator: grpo", *lines)), "RC003")  # no critic with GRPO
    found = lint_text(body("algorithm.adv_estimator: gae", *lines))
    assert [h.message.split(":")[0] for h in rc(found, "RC003")] == ["critic"], found


def test_fsdp_engine_is_not_checked(lint_text):
    found = lint_text("config_name: ppo_trainer\n" + body(f"{OTC}.recompute_granularity: full"))
    assert not [d for d in found if d.code.startswith("RC")], found
