from ..core.diagnostics import Applicability, Severity
from ..core.paths import ACTOR, REF, ROLLOUT
from ..engine import LintContext
from ..rulekit.common import runs_engine_workers
from ..rulekit.fixes import remove_override
from ..rulekit.registry import Finding, rule
from ..topology import active_roles


@rule(
    "BS003",
    "micro-batch-keys",
    Severity.ERROR,
    summary="static batch size needs exactly the *_micro_batch_size_per_gpu key, not the deprecated global one",
    bad="""
    overrides:
      actor_rollout_ref.actor.ppo_micro_batch_size: 8
      actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 1
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 1
      actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 1
    """,
    fix=Applicability.SAFE,
)
def check(ctx: LintContext):
    """Without dynamic batch size every forward needs a micro-batch size. verl 0.9.1 accepts it under two
    names, the deprecated global `*_micro_batch_size` and `*_micro_batch_size_per_gpu`, and rejects both set or
    neither set: `ActorConfig.__post_init__` (`verl/workers/config/actor.py:195-211`: "[actor] You have set both
    ... Please remove 'actor.ppo_micro_batch_size' ..." / "[actor] Please set at least one of ...") and
    `validate_config`'s `check_mutually_exclusive` for the rollout and, when a KL term uses it, the ref
    (`verl/utils/config.py:131-182`). The worker, however, reads only the `_per_gpu` keys
    (`verl/workers/engine_workers.py:615-637`: `assert self.config.actor.ppo_micro_batch_size_per_gpu is not None`,
    `assert self.config.rollout.log_prob_micro_batch_size_per_gpu is not None`), and on Megatron
    `validate_config` computes `megatron_dp * ppo_micro_batch_size_per_gpu` (a `TypeError` on None): a config
    with only the global key passes the dataclass check and fails later. The ref's global key is dropped the
    same way and its first log-prob forward fails with a None micro-batch. Up to verl 0.7.1 the default workers
    turn the global key into the per-GPU one themselves (`fsdp_workers.py`/`megatron_workers.py`), so only the
    global key set is fine there (`schemas/facts.json`: `default-engine-workers`)."""
    actor_static = ctx.config.value(f"{ACTOR}.use_dynamic_bsz") is False
    checks = []  # (role, global key, per-gpu key, validate_config applies, worker needs per-gpu)
    if actor_static:
        checks.append(("actor", f"{ACTOR}.ppo_micro_batch_size", f"{ACTOR}.ppo_micro_batch_size_per_gpu", True, True))
        checks.append(
            (
                "rollout",
                f"{ROLLOUT}.log_prob_micro_batch_size",
                f"{ROLLOUT}.log_prob_micro_batch_size_per_gpu",
                True,
                True,
            )
        )
    if "ref" in active_roles(ctx):
        ref_static = ctx.config.value(f"{REF}.log_prob_use_dynamic_bsz") is False
        if actor_static or ref_static:
            checks.append(
                (
                    "ref",
                    f"{REF}.log_prob_micro_batch_size",
                    f"{REF}.log_prob_micro_batch_size_per_gpu",
                    True,
                    ref_static,
                )
            )
    converts = not runs_engine_workers(ctx)  # the legacy workers divide the global key by the DP size themselves
    for role, global_key, per_gpu_key, _, needs_per_gpu in checks:
        mbs, per_gpu = ctx.config.value(global_key), ctx.config.value(per_gpu_key)
        name = global_key.rsplit(".", 1)[1]
        if mbs is not None and per_gpu is not None:
            at = ctx.blame(global_key, per_gpu_key)
            yield Finding(
                at,
                f'both `{global_key}` ({mbs}) and `{per_gpu_key}` ({per_gpu}) are set: verl raises "You have '
                f"set both ... Please remove '{name}' because only '*_{name}_per_gpu' is supported (the former "
                f'is deprecated)". Remove `{global_key}`',
                # Safe even where it brings back a value the override replaced: that is a global key too
                fix=remove_override() if at is ctx.explicit(global_key) else None,
            )
        elif mbs is None and per_gpu is None:
            yield Finding(
                ctx.blame(global_key, per_gpu_key),
                f"{role} batch size is static but neither `{per_gpu_key}` nor `{global_key}` is set: verl "
                f"fails with \"Please set at least one of '{global_key}' or '{per_gpu_key}'\". Set "
                f"`{per_gpu_key}` (or enable dynamic batch size)",
            )
        elif per_gpu is None and needs_per_gpu and not converts:
            yield Finding(
                ctx.blame(global_key),
                f"only the deprecated global `{global_key}`={mbs} is set: it passes the config check, but the "
                f"worker reads only `{per_gpu_key}` (`assert ... {per_gpu_key.rsplit('.', 1)[1]} is not None`"
                f"{' / TypeError in validate_config' if role == 'actor' and ctx.model_engine == 'megatron' else ''}). "
                f"Set `{per_gpu_key}` (= {global_key} / data-parallel size) instead",
            )
