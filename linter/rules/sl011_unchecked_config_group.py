from ..core.diagnostics import Severity
from ..engine import LintContext, Part, searchpath
from ..rulekit.registry import Finding, rule


@rule(
    "SL011",
    "unchecked-config-group",
    Severity.INFO,
    part=Part.CONFIG,
    summary="a config-group option outside the snapshot: the keys of its subtree are not checked",
    bad="""
    overrides:
      hydra.searchpath: ["pkg://verl_mlite.config"]
      actor@actor_rollout_ref.actor: mlite_actor
      actor_rollout_ref.actor.engine.tp: 2
    """,
    good="""
    overrides:
      model_engine: megatron
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2
    """,
)
def check(ctx: LintContext):
    """`group@package=option` makes Hydra fill the subtree at `package` from the config `group/option` instead of
    the one verl's defaults list names (`actor@actor_rollout_ref.actor: ${model_engine}_actor` in verl
    `verl/trainer/config/ppo_trainer.yaml`); `hydra.searchpath=[pkg://...]` adds config directories where such
    options may live. The snapshot holds only the options of the groups that pick its tree (`model_engine` for
    the PPO configs; schemas/FORMAT.md `groups`), verl's other groups are not in it, so the keys under that
    subtree cannot be judged: SL001, SL003, SL004, SL005 and SL006 are not reported for them,
    and this note says so once per group override. The other rules still see their values. `hydra.searchpath`
    only appends directories after verl's (Hydra searches them in order, so verl's own configs keep precedence):
    on its own it changes nothing the snapshot knows, but an option verl does not have for a group that picks the
    tree (`model_engine`) may then come from an added directory, and as that group picks every role's config,
    the whole config is then unchecked (without a search path such an option is SL005). Hydra's own keys
    (`hydra.run.dir`, `hydra.job.chdir`, `hydra/job_logging=disabled`) are checked against Hydra's `HydraConf`
    (hydra-core `hydra/conf/__init__.py`), not reported here."""
    added = searchpath(ctx.command) if ctx.command else []
    where = f" (it may come from `hydra.searchpath` {', '.join(added)})" if added else ""
    for ro in ctx.overrides:
        if ro.outside is None or ro.outside == "hydra" or not ro.assigns:
            continue
        group = ro.path
        if ro.parsed.package is not None or "/" in ro.path:
            subtree = f"`{ro.outside}`" if ro.outside else "the whole config (the option lands at its root)"
        elif ro.outside == "" and ro.group is not None:
            subtree = f"the whole config (`{group}` picks every role's config)"
        else:
            continue
        yield Finding(
            ro,
            f"`{ro.override.key_text}={ro.parsed.value}` selects the config `{group}/{ro.parsed.value}`, "
            f"which the verl {ctx.snapshot.verl_version} snapshot does not hold{where}: the keys under "
            f"{subtree} are not checked for existence, type or value (SL001, SL003-SL006)",
        )
