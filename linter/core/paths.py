"""Where verl 0.9.1 keeps the config nodes the rules, the topology and the estimates read
(`verl/trainer/config/ppo_megatron_trainer.yaml`): each path named once.

In the core, below the topology and the estimates, so that every layer that needs a path can import it."""

ACTOR = "actor_rollout_ref.actor"
REF = "actor_rollout_ref.ref"
ROLLOUT = "actor_rollout_ref.rollout"
CRITIC = "critic"

#: Each role's config node.
ROLE_NODE = {"actor": ACTOR, "ref": REF, "critic": CRITIC}
#: Each role's Megatron settings.
ROLE_PREFIX = {role: f"{node}.megatron" for role, node in ROLE_NODE.items()}

#: megatron-core `OptimizerConfig` fields set on top of the actor's `optim` block (an open dict: keys take `+`).
OVERRIDE_OPTIM = f"{ACTOR}.optim.override_optimizer_config"

#: Dynamic batch size of the actor update, the rollout's old-log-prob recompute and the ref log-prob (the last two
#: follow the first by interpolation).
ACTOR_DYNAMIC_BSZ = f"{ACTOR}.use_dynamic_bsz"
ROLLOUT_DYNAMIC_BSZ = f"{ROLLOUT}.log_prob_use_dynamic_bsz"
REF_DYNAMIC_BSZ = f"{REF}.log_prob_use_dynamic_bsz"
