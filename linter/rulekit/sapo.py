"""Where the SAPO settings live (verl.md §2.10)."""

ACTOR = "actor_rollout_ref.actor"
LOSS_MODE = f"{ACTOR}.policy_loss.loss_mode"
TAU_POS = f"{ACTOR}.tau_pos"
TAU_NEG = f"{ACTOR}.tau_neg"
CLIP_KEYS = tuple(f"{ACTOR}.{k}" for k in ("clip_ratio", "clip_ratio_low", "clip_ratio_high", "clip_ratio_c"))
