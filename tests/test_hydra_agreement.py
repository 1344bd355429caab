"""sapo-lint's compose-time verdicts (SL001/SL002/SL005/SL006/SL009) agree with real `hydra.compose` on
verl 0.9.1's config directory, override list by override list."""

import pytest

from sapo_toolkit.linter.lint import lint_paths
from sapo_toolkit.linter.settings import Settings

from .helpers import recipe

COMPOSE_TIME = {"SL001", "SL002", "SL005", "SL006", "SL009"}

CASES = [
    # valid
    ["actor_rollout_ref.actor.tau_pos=1.2"],
    ["actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4"],
    ["+actor_rollout_ref.actor.megatron.override_transformer_config.apply_rope_fusion=True"],
    ["+actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform"],  # null default
    ["++actor_rollout_ref.actor.tau_neg=1.1"],
    ["++trainer.brand_new_key=1"],
    ["~actor_rollout_ref.actor.megatron.override_transformer_config.recompute_modules"],
    ["+actor_rollout_ref.rollout.repetition_penalty=1.0"],  # dataclass field missing from the YAML
    ["model_engine=megatron"],
    ["model_engine=dp"],
    ["+actor_rollout_ref.actor.policy_loss.tau_pos=1.2"],  # composes; SL003/SP001 catch it
    ["data.filter_overlong_prompts_workers=16", "trainer.logger=[console,file]"],
    ["+trainer.foo=1", "trainer.foo=2"],
    ["~trainer.total_epochs", "+trainer.total_epochs=3"],
    ["+actor_rollout_ref.ref.megatron.override_transformer_config.recompute_granularity=full"],
    # a mapping value: merged key by key into a config node or a non-null dict, set whole elsewhere
    ["actor_rollout_ref.actor.policy_loss={loss_mode:sapo}"],
    ["actor_rollout_ref.actor={policy_loss:{loss_mode:sapo},tau_pos:2}"],
    ["actor_rollout_ref.actor.megatron.override_transformer_config={recompute_method:uniform}"],
    [
        "actor_rollout_ref.actor.megatron={tensor_model_parallel_size:2,override_transformer_config:{recompute_granularity:full}}"
    ],
    ["actor_rollout_ref.ref.megatron={tensor_model_parallel_size:2}"],
    ["actor_rollout_ref.rollout.engine_kwargs={vllm:{}}"],
    ["++actor_rollout_ref.actor.megatron.override_transformer_config={apply_rope_fusion:true}"],
    ["+actor_rollout_ref.actor.policy_loss={tau_pos:1}"],  # `+` merges a mapping without struct mode; SP001 catches it
    ["+actor_rollout_ref.actor.new_node={a:1}"],
    # refused by Hydra
    ["actor_rollout_ref.actor.policy_loss={tau_pos:1}"],
    ["actor_rollout_ref.actor={policy_loss:{tau_poss:1}}"],
    ["actor_rollout_ref.actor.megatron.override_transformer_config={apply_rope_fusion:true}"],
    ["actor_rollout_ref.rollout.engine_kwargs={vllm:{a:1}}"],
    ["actor_rollout_ref.model.override_config={a:1}"],
    ["actor_rollout_ref.actor.optim.override_optimizer_config={optimizer_cpu_offload:true}"],  # {} under Megatron
    ["actor_rollout_ref.actor.tau_poss=1.2"],
    ["actor_rollout_ref.actor.megatron.tensor_parallel_size=4"],
    ["actor_rollout_ref.actor.megatron.override_transformer_config.apply_rope_fusion=True"],
    ["actor_rollout_ref.rollout.repetition_penalty=1.0"],
    ["+actor_rollout_ref.actor.tau_pos=1.2"],
    ["+actor_rollout_ref.actor.megatron.override_transformer_config.attention_backend=auto"],
    ["+model_engine=megatron"],
    ["model_engine=fsdp9"],
    ["~actor_rollout_ref.actor.megatron.grad_offload"],  # exists in verl 0.8, not 0.9.1
    ["~trainer.no_such_key"],
    ["trainer.foo=1"],
    ["+trainer.foo=1", "+trainer.foo=2"],
    ["~trainer.total_epochs", "trainer.total_epochs=3"],
    ["trainer.total_epochs=[1,2"],
]


def hydra_refuses(config_dir, overrides: list[str]) -> bool:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        try:
            compose("ppo_megatron_trainer", overrides=overrides)
        except Exception:  # noqa: BLE001 - any compose failure is a refusal
            return True
    return False


@pytest.mark.parametrize("overrides", CASES, ids=[" ".join(c) for c in CASES])
def test_compose_verdict_matches_hydra(overrides, verl_config_dir, tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text(recipe('verl: "0.9.1"\noverrides: {}'), encoding="utf-8")
    # only the SL rules: SP001 replaces SL001 on a nested tau (one finding per problem), which this test would
    # otherwise read as no compose-time verdict
    found = {d.code for d in lint_paths([path], Settings(select=["SL"]), overrides).diagnostics}
    assert bool(found & COMPOSE_TIME) == hydra_refuses(verl_config_dir, overrides), found
