"""Where verl 0.9.1 keeps the config nodes the rules, the topology and the estimates read
(`verl/trainer/config/ppo_megatron_trainer.yaml`): each path named once.

In the core, below the topology and the estimates, so that every layer that needs a path can import it."""

from typing import NamedTuple

ACTOR = "actor_rollout_ref.actor"
REF = "actor_rollout_ref.ref"
ROLLOUT = "actor_rollout_ref.rollout"
CRITIC = "critic"

#: The role of an SFT trainer's one model (`topology.active_roles` of an SFT run): its engine's Megatron or FSDP
#: settings are sft_trainer_engine's `engine` node, its optimizer `optim`, its checkpoint `checkpoint` (verl
#: >= 0.6 `verl/trainer/config/sft_trainer_engine.yaml`); verl <= 0.6's `sft_trainer` config (fsdp_sft_trainer)
#: has its Ulysses size at the root and its checkpoint under `trainer.checkpoint`.
SFT = "sft"
SFT_ENGINE = "engine"
SFT_OPTIM = "optim"
SFT_CHECKPOINT = "checkpoint"

#: Each PPO role's config node (an SFT trainer's settings are at the config's root).
ROLE_NODE = {"actor": ACTOR, "ref": REF, "critic": CRITIC}
#: Each role's Megatron settings.
ROLE_PREFIX = {**{role: f"{node}.megatron" for role, node in ROLE_NODE.items()}, SFT: SFT_ENGINE}

#: megatron-core `OptimizerConfig` fields set on top of the actor's `optim` block (an open dict: keys take `+`).
OVERRIDE_OPTIM = f"{ACTOR}.optim.override_optimizer_config"

#: Dynamic batch size of the actor update, the rollout's old-log-prob recompute and the ref log-prob (the last two
#: follow the first by interpolation).
ACTOR_DYNAMIC_BSZ = f"{ACTOR}.use_dynamic_bsz"
ROLLOUT_DYNAMIC_BSZ = f"{ROLLOUT}.log_prob_use_dynamic_bsz"
REF_DYNAMIC_BSZ = f"{REF}.log_prob_use_dynamic_bsz"


class TrainedKeys(NamedTuple):
    """Where the settings of the model a run trains are: PPO's actor, or an SFT trainer's engine. The memory and
    checkpoint estimate and the MEM/CK rules read and name them through this."""

    role: str  # `topology.active_roles`' name for it
    megatron: str  # its Megatron engine settings (sizes, offload, dtype, override_transformer_config)
    optim: str  # its optimizer (`override_optimizer_config` under it)
    dynamic_bsz: str
    token_budget: str  # the dynamic-bsz token budget per device
    micro_batch: str  # the static micro-batch per device
    checkpoint: str  # its CheckpointConfig node (`save_contents`, `async_save`)
    keep: str  # how many checkpoints verl keeps
    timeout: str | None  # the key of the world group's timeout; None where verl's code fixes it

    @property
    def override_optim(self) -> str:
        return f"{self.optim}.override_optimizer_config"

    @property
    def transformer(self) -> str:
        return f"{self.megatron}.override_transformer_config"


#: PPO's actor (verl 0.9.1 ppo_megatron_trainer.yaml).
ACTOR_KEYS = TrainedKeys(
    "actor",
    f"{ACTOR}.megatron",
    f"{ACTOR}.optim",
    ACTOR_DYNAMIC_BSZ,
    f"{ACTOR}.ppo_max_token_len_per_gpu",
    f"{ACTOR}.ppo_micro_batch_size_per_gpu",
    f"{ACTOR}.checkpoint",
    "trainer.max_actor_ckpt_to_keep",
    "actor_rollout_ref.nccl_timeout",
)
#: An SFT trainer's model on the engine (sft_trainer_engine.yaml; verl/trainer/sft_trainer.py passes `data.*` to the
#: engine as its micro-batching and `trainer.max_ckpt_to_keep` to its CheckpointHandler). Its world group's timeout
#: is fixed in verl's code (`topology.sft_timeout`).
SFT_KEYS = TrainedKeys(
    SFT,
    SFT_ENGINE,
    SFT_OPTIM,
    "data.use_dynamic_bsz",
    "data.max_token_len_per_gpu",
    "data.micro_batch_size_per_gpu",
    SFT_CHECKPOINT,
    "trainer.max_ckpt_to_keep",
    None,
)
