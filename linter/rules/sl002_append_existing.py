from ..core.diagnostics import Severity
from ..core.redaction import shown_value
from ..engine import LintContext, Part
from ..rulekit.common import plain_key
from ..rulekit.registry import Finding, rule


@rule(
    "SL002",
    "append-existing",
    Severity.ERROR,
    part=Part.CONFIG,
    summary="`+key` where the key already exists",
    bad="""
    overrides:
      +actor_rollout_ref.actor.megatron.override_transformer_config.attention_backend: auto
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.attention_backend: auto
    """,
)
def check(ctx: LintContext):
    """`+key=value` appends a key; Hydra refuses it when the key already holds a non-null value
    (`Could not append to config. An item is already at 'key'`). On a key whose default is null Hydra treats
    the key as absent and accepts the `+`, so that case is not reported. `+model_engine=...` on a config group
    that already has a selection fails the same way (`Multiple values for model_engine`). The fix drops the `+`."""
    for ro in ctx.overrides:
        if ro.parsed.op != "add":
            continue
        if ro.group is not None and ro.current is not None:
            yield Finding(
                ro,
                f"`+{plain_key(ro)}` adds a second selection to the config group `{ro.path}`, which already "
                f"selects `{ro.current}`; Hydra fails with `Multiple values for {plain_key(ro)}`",
                fix=plain_key(ro),
            )
        elif ro.existed and ro.current is not None:
            yield Finding(
                ro,
                f"`{ro.path}` already exists (value {shown_value(ro.path, ro.current)}); Hydra refuses "
                "`+` on it (`Could not append to config`): drop the `+`",
                fix=plain_key(ro),
            )
