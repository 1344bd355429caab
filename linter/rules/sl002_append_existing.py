from ..core.diagnostics import Applicability, Severity
from ..core.redaction import shown_value
from ..engine import LintContext, Part
from ..rulekit.common import plain_key
from ..rulekit.fixes import rename_key
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
    fix=Applicability.SAFE,
)
def check(ctx: LintContext):
    """`+key=value` appends a key; Hydra refuses it when the key already holds a non-null value
    (`Could not append to config. An item is already at 'key'`). On a key whose default is null Hydra treats
    the key as absent and accepts the `+`, so that case is not reported. `+model_engine=...` on a config group
    that already has a selection fails the same way (`Multiple values for model_engine`). The fix drops the `+`.
    A list or mapping value is no append: Hydra 1.3 merges it as it merges `++` (hydra
    `_internal/config_loader_impl.py`: `is None or isinstance(value, (dict, list))` -> `OmegaConf.update(...,
    merge=True, force_add=True)`), so `+trainer.logger=[console]` replaces the list; only a list into a mapping
    fails (`Error merging override`)."""
    for ro in ctx.overrides:
        if ro.parsed.op != "add":
            continue
        if ro.group is not None and ro.current is not None:
            yield Finding(
                ro,
                f"`+{plain_key(ro)}` adds a second selection to the config group `{ro.path}`, which already "
                f"selects `{ro.current}`; Hydra fails with `Multiple values for {plain_key(ro)}`",
                fix=rename_key(plain_key(ro)),
            )
        elif ro.existed and ro.current is not None and isinstance(ro.parsed.value, list):
            # Hydra merges a container `+` as `++` does (`OmegaConf.update(..., merge=True, force_add=True)`): a
            # list replaces the value, except a mapping, which a list cannot merge into
            if isinstance(ro.current, dict):
                yield Finding(
                    ro,
                    f"`{ro.path}` is a mapping; Hydra merges a `+` list into it and fails with `Error merging "
                    f"override {ro.override.key_text}=...`: give it a mapping",
                )
        elif ro.existed and ro.current is not None:
            yield Finding(
                ro,
                f"`{ro.path}` already exists (value {shown_value(ro.path, ro.current)}); Hydra refuses "
                "`+` on it (`Could not append to config`): drop the `+`",
                fix=rename_key(plain_key(ro)),
            )
