from ..core.diagnostics import Severity
from ..engine import LintContext, Part, outside_verl, searchpath
from ..rulekit.registry import Finding, rule


@rule(
    "SL011",
    "unchecked-config-group",
    Severity.INFO,
    part=Part.CONFIG,
    summary="a config-group option from outside verl: the keys of its subtree are not checked",
    bad="""
    overrides:
      hydra.searchpath: ["pkg://verl_mlite.config"]
      actor@actor_rollout_ref.actor: mlite_actor
      actor_rollout_ref.actor.engine.tp: 2
    """,
    good="""
    overrides:
      actor@actor_rollout_ref.actor: megatron_actor
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2
    """,
)
def check(ctx: LintContext):
    """`group@package=option` makes Hydra fill the subtree at `package` from the config `group/option` instead of
    the one verl's defaults list names (`actor@actor_rollout_ref.actor: ${model_engine}_actor` in verl
    `verl/trainer/config/ppo_trainer.yaml`). The snapshot holds every option of every group verl ships, so such an
    override is checked as Hydra composes it (SL001, SL005, SL012). `hydra.searchpath=[pkg://...]` or `file://...`
    naming a directory outside verl adds configs the snapshot cannot know: an option verl does not have may come
    from there, and so may a group verl does not have. The keys under that subtree are then not judged (SL001,
    SL003, SL004, SL005 and SL006 are not reported for them), and this note says so once per group override; the
    other rules still see their values. As `model_engine` picks every role's config (`${model_engine}_actor`), an
    option of it from such a directory leaves the whole config unchecked. A list of options (`group=[a,b]`, merged
    in order) is not rebuilt either. Hydra's own keys (`hydra.run.dir`, `hydra.job.chdir`,
    `hydra/job_logging=disabled`) are checked against Hydra's `HydraConf` (hydra-core `hydra/conf/__init__.py`),
    not reported here."""
    added = [entry for entry in (searchpath(ctx.command) if ctx.command else []) if outside_verl(entry)]
    where = f" (it may come from `hydra.searchpath` {', '.join(added)})" if added else ""
    for ro in ctx.overrides:
        if ro.outside is None or ro.outside == "hydra" or ro.group is None or not ro.assigns:
            continue
        subtree = f"`{ro.outside}`" if ro.outside else "the whole config"
        yield Finding(
            ro,
            f"`{ro.override.key_text}={ro.parsed.value}` selects the config `{ro.path}/{ro.parsed.value}`, "
            f"which the verl {ctx.snapshot.verl_version} snapshot does not hold{where}: the keys under "
            f"{subtree} are not checked for existence, type or value (SL001, SL003-SL006)",
        )
