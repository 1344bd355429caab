"""Where the SAPO settings live: `tau_pos`/`tau_neg` are `ActorConfig` fields and `loss_mode` is under
`policy_loss` (verl 0.9.1 `verl/workers/config/actor.py`, `verl/trainer/ppo/core_algos.py`
`compute_policy_loss_sapo`)."""

from ..core.paths import ACTOR

LOSS_MODE = f"{ACTOR}.policy_loss.loss_mode"
TAU_POS = f"{ACTOR}.tau_pos"
TAU_NEG = f"{ACTOR}.tau_neg"
CLIP_KEYS = tuple(f"{ACTOR}.{k}" for k in ("clip_ratio", "clip_ratio_low", "clip_ratio_high", "clip_ratio_c"))

TAUS = ("tau_pos", "tau_neg")


def is_nested_tau(path: str) -> bool:
    """`...policy_loss.tau_pos`: the temperatures written where nothing reads them (SP001)."""
    parts = path.split(".")
    return len(parts) >= 2 and parts[-1] in TAUS and parts[-2] == "policy_loss"
