from ..core.diagnostics import Applicability, Severity
from ..engine import LintContext, Part
from ..rulekit.common import did_you_mean, where
from ..rulekit.fixes import rename_key
from ..rulekit.registry import Finding, rule
from ..rulekit.versions import path_elsewhere


@rule(
    "SL001",
    "unknown-key",
    Severity.ERROR,
    part=Part.CONFIG,
    summary="override of a key the config does not have",
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.tensor_parallel_size: 4
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 4
    """,
    fix=Applicability.SAFE,
)
def check(ctx: LintContext):
    """Hydra composes verl's config in struct mode: `key=value` for a key that is not in the composed config
    fails with `Could not override 'key'`, even inside open dicts such as `override_transformer_config`.
    When that happens depends on the run: a script fails at start-up after its environment is set up, a typo
    in a variant only on the cluster that selects it. The message names the nearest real path, searched both
    at the same level and by leaf name across the tree. A dataclass field that verl's YAML does not list
    (for example `actor_rollout_ref.rollout.repetition_penalty`) is legal only with `+`; the fix says so. When
    another committed snapshot of the same config has the key (`actor_rollout_ref.actor.megatron.grad_offload` is
    in verl main but not 0.9.1), the message says which, and which `--verl-version` to lint with. Suggestions take
    a fuzzy search each: a file gets them for its first 100 unknown names (here and in SL003, SL005, SL006, SL007),
    and the findings about the others say that none is given. The `+` fix is safe (`--fix`); renaming an unknown key
    to the nearest real one is unsafe (`--fix --unsafe-fixes`): the near spelling is a guess at the key meant, and
    the renamed override sets whatever that key does. A group override replaces a whole subtree before any key is
    set (`actor@actor_rollout_ref.actor=dp_actor` under `model_engine=megatron`): a key only the replaced option has
    is unknown too, and the message names both options. Keys that exist only under another option of a group the
    command leaves at its default (a Megatron script without `model_engine=megatron`: every
    `actor_rollout_ref.actor.megatron.*` key) are one finding naming that cause, at the first of them, with the
    others as related locations, and no guessed rename."""
    unselected = _under_unselected_option(ctx)
    if unselected:
        (group, option), keys = next(iter(unselected.items()))
        first, *others = keys
        yield Finding(
            first,
            f"unknown key `{first.path}`"
            + (f" and {len(others)} more" if others else "")
            + f": they are keys of `{group}={option}`, which this command does not select (it runs "
            f"`{group}={ctx.selection.get(group)}`), so Hydra refuses them at compose. Add `{group}={option}` "
            "to the command",
            related=tuple(ro.location for ro in others),
        )
    cause_given = {id(ro) for keys in unselected.values() for ro in keys}
    for ro in ctx.overrides:
        if id(ro) in cause_given:
            continue
        if ro.parsed.op != "set" or ro.group is not None or ro.existed or ro.outside is not None:
            continue
        anchor = ctx.tree.get(ro.anchor) if ro.anchor else None
        if ro.entry is not None and ro.entry.get("declared_only"):
            yield Finding(
                ro,
                f"`{ro.path}` is a dataclass field that {where(ctx)} does not list; Hydra refuses "
                "to override a key that is not in the config: add it with `+`",
                fix=rename_key("+" + ro.override.key_text),
            )
        elif ro.replaced is not None:  # a group override replaced the option that has the key
            yield Finding(ro, f"unknown key `{ro.path}`: it {ro.replaced}, so Hydra refuses it at compose")
        elif anchor is not None and anchor["kind"] == "dict":
            yield Finding(
                ro,
                f"`{ro.path}` is not in the open dict `{ro.anchor}`; Hydra refuses to override a "
                "missing key even there: add it with `+`",
                fix=rename_key("+" + ro.override.key_text),
            )
        else:
            hint, fix = did_you_mean(ctx, ro.path)
            elsewhere = path_elsewhere(ctx, ro.path)
            yield Finding(
                ro,
                f"unknown key `{ro.path}`: not in {where(ctx)}, so Hydra refuses it at compose.{elsewhere or hint}",
                fix=None if elsewhere or fix is None else rename_key(fix, Applicability.UNSAFE),
            )


def _under_unselected_option(ctx: LintContext) -> dict:
    """{(group, option): the unknown `key=value` overrides that the tree of that other option of a selecting group
    (`model_engine`) has}, for groups the command leaves at their default; the option holding most of them first,
    and only when it holds at least one."""
    unknown = [
        ro
        for ro in ctx.overrides
        if ro.parsed.op == "set" and ro.group is None and not ro.existed and ro.outside is None and ro.entry is None
        and ro.replaced is None
    ]  # fmt: skip
    if not unknown:
        return {}
    found: dict[tuple[str, str], list] = {}
    for group, chosen in ctx.selection.items():
        if any(ro.group is not None and ro.path == group for ro in ctx.overrides):
            continue  # the command selects an option itself: its keys are judged against it
        for option in ctx.snapshot.groups[group]["options"]:
            if option == chosen:
                continue
            other = ctx.snapshot.tree({**ctx.selection, group: option})
            keys = [ro for ro in unknown if other.get(ro.path) is not None]
            if keys:
                found[group, option] = keys
    return dict(sorted(found.items(), key=lambda item: -len(item[1]))[:1])
