from ..core.diagnostics import Applicability, Severity
from ..engine import LintContext
from ..rulekit.fixes import rename_key
from ..rulekit.registry import Finding, rule
from ..rulekit.sapo import is_nested_tau


@rule(
    "SP001",
    "sapo-tau-nested",
    Severity.ERROR,
    supersedes=("SL001",),  # a nested SAPO tau is an unknown key because it belongs on the actor
    summary="tau_pos/tau_neg nested under policy_loss",
    bad="""
    overrides:
      +actor_rollout_ref.actor.policy_loss.tau_pos: 1.0
      +actor_rollout_ref.actor.policy_loss.tau_neg: 1.05
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.tau_pos: 1.0
      actor_rollout_ref.actor.tau_neg: 1.05
    """,
    fix=Applicability.SAFE,
)
def check(ctx: LintContext):
    """SAPO's temperatures live on the actor (`ActorConfig.tau_pos`/`tau_neg`); `compute_policy_loss_sapo`
    reads `config.tau_pos` from the actor config. `PolicyLossConfig` has no such fields (verl
    `verl/workers/config/actor.py`), so `+actor_rollout_ref.actor.policy_loss.tau_pos` (the form in upstream
    verl's SAPO README and FSDP example scripts) composes, then stops the run at start-up: `main_ppo`'s
    `validate_config` (verl `verl/trainer/main_ppo.py`, before Ray starts) calls
    `omega_conf_to_dataclass(config.actor_rollout_ref.actor)` (`verl/utils/config.py`), which is
    `hydra.utils.instantiate(..., _convert_="partial")`; the `policy_loss` node carries
    `_target_: verl.workers.config.PolicyLossConfig`, so Hydra builds it with the extra keyword and raises
    `InstantiationException: Error in call to target 'verl.workers.config.actor.PolicyLossConfig':
    TypeError("PolicyLossConfig.__init__() got an unexpected keyword argument 'tau_pos'")`, `full_key: policy_loss`.
    Written without `+`, the key is refused earlier, at compose (`policy_loss` has no such key to override): SP001
    reports it in place of SL001's unknown key (one finding per override). The fix moves the key to the actor."""
    for ro in ctx.overrides:
        if ro.assigns and is_nested_tau(ro.path):
            real = ro.path.replace(".policy_loss.", ".")
            fix = real if ctx.config.exists(real) else "+" + real
            name = ro.path.rpartition(".")[2]
            if ro.parsed.op == "set" and not ro.existed:
                why = "Hydra refuses to override it at compose"
            else:
                why = (
                    "verl stops at start-up when it builds the actor config: Hydra's instantiate raises "
                    f"\"PolicyLossConfig.__init__() got an unexpected keyword argument '{name}'\""
                )
            yield Finding(
                ro,
                f"`{ro.path}`: PolicyLossConfig has no field `{name}`, so {why}. The SAPO temperatures are actor "
                f"fields: set `{real}` instead",
                fix=rename_key(fix),
            )
