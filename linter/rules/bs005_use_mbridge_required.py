from ..core.diagnostics import Severity
from ..core.paths import ROLE_PREFIX
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.common import runs_engine_workers
from ..rulekit.registry import Finding, rule
from ..topology import active_roles


@rule(
    "BS005",
    "use-mbridge-required",
    Severity.ERROR,
    engines=MEGATRON_ONLY,
    summary="megatron.use_mbridge=False is not supported by verl's Megatron engine",
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.use_mbridge: false
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.use_mbridge: true
    """,
)
def check(ctx: LintContext):
    """verl 0.9.1's Megatron engine builds every model through mbridge: `MegatronEngine.__init__` asserts
    `assert self.engine_config.use_mbridge, "use_mbridge must be True"`
    (`verl/workers/engine/megatron/transformer_impl.py:191`), and nothing else reads the flag. Setting it to
    false fails at worker init for each role that runs on the Megatron engine (the ref inherits the actor's
    value unless set). Before verl 0.8.0 the default legacy Megatron workers build models without mbridge too
    (`schemas/facts.json`: `default-engine-workers`)."""
    if not runs_engine_workers(ctx):
        return
    for role in active_roles(ctx):
        key = f"{ROLE_PREFIX[role]}.use_mbridge"
        if ctx.tree.get(key) is None:
            continue
        if ctx.config.value(key) is False:
            yield Finding(
                ctx.blame(key, f"{ROLE_PREFIX['actor']}.use_mbridge"),
                f'`{key}` is false: verl\'s Megatron engine asserts "use_mbridge must be True" at {role} '
                f"worker init. Remove the override (use_mbridge=False is no longer supported)",
            )
