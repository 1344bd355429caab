"""OP rules (optimizer offload): failing and passing cases beyond the documented examples."""

from .helpers import DYNAMIC, body, only


# OP001
def test_op001_explicit_zero_and_whole_dict_form(lint_text):
    text = body(
        DYNAMIC,
        "+actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload: true",
        "+actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction: 0.0",
    )
    found = only(lint_text(text), "OP001")
    assert found and found[0].severity.name.lower() == "warning"
    whole = body(
        DYNAMIC,
        "actor_rollout_ref.actor.optim.override_optimizer_config: "
        "{optimizer_cpu_offload: true, optimizer_offload_fraction: 0.5}",
    )
    assert not only(lint_text(whole), "OP001")


# OP002
def test_op002_optimizer_from_override_must_be_adam(lint_text):
    text = body(
        DYNAMIC,
        "actor_rollout_ref.actor.optim.use_precision_aware_optimizer: true",
        "actor_rollout_ref.actor.optim.optimizer: sgd",
    )
    found = only(lint_text(text), "OP002")
    assert len(found) == 1 and "only supported with adam" in found[0].message


def test_op002_override_turns_it_off(lint_text):
    text = body(
        DYNAMIC,
        "actor_rollout_ref.actor.megatron.use_distributed_optimizer: false",
        "actor_rollout_ref.actor.optim.use_precision_aware_optimizer: true",
        "+actor_rollout_ref.actor.optim.override_optimizer_config.use_precision_aware_optimizer: false",
    )
    assert not only(lint_text(text), "OP002")


def test_op002_precision_aware_ignored_for_fp32_model(lint_text):
    text = body(
        DYNAMIC,
        "actor_rollout_ref.actor.megatron.use_distributed_optimizer: false",
        "actor_rollout_ref.actor.optim.use_precision_aware_optimizer: true",
        "actor_rollout_ref.actor.megatron.dtype: float32",
    )
    assert not only(lint_text(text), "OP002")


def test_op002_override_distributed_optimizer_wins(lint_text):
    text = body(
        DYNAMIC,
        "+actor_rollout_ref.actor.optim.override_optimizer_config.use_distributed_optimizer: false",
        "+actor_rollout_ref.actor.optim.override_optimizer_config.use_precision_aware_optimizer: true",
    )
    found = only(lint_text(text), "OP002")
    assert found and "override_optimizer_config.use_distributed_optimizer" in found[0].message


# OP003
def test_op003_whole_dict_cpu_offload_counts(lint_text):
    text = body(DYNAMIC, "actor_rollout_ref.actor.megatron.optimizer_offload: true")
    assert only(lint_text(text), "OP003")
    # Under Megatron the dict is `{}`: Hydra merges a mapping into it, which struct mode refuses without `+`.
    whole = (
        "actor_rollout_ref.actor.optim.override_optimizer_config: "
        "{optimizer_cpu_offload: true, optimizer_offload_fraction: 1.0}\n"
    )
    assert "SL001" in {d.code for d in lint_text(text + "  " + whole)}
    assert not only(lint_text(text + "  +" + whole), "OP003")
