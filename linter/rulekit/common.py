"""Small helpers shared by the override rules."""

from __future__ import annotations

from typing import Any

from ..engine import MAX_SUGGESTIONS, LintContext, ResolvedOverride

# What a finding says instead of a did-you-mean once its file has had `MAX_SUGGESTIONS` of them.
NO_SUGGESTION = f" (No suggestion: sapo-lint suggests names for the first {MAX_SUGGESTIONS} in a file.)"


def is_interpolation(value: Any) -> bool:
    return isinstance(value, str) and "${" in value


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def short_class(target: str | None) -> str:
    return (target or "").rpartition(".")[2]


def where(ctx: LintContext) -> str:
    """How to name the config a key was checked against, in messages."""
    chosen = ", ".join(f"{g}={o}" for g, o in ctx.selection.items())
    return f"verl {ctx.snapshot.verl_version} `{ctx.snapshot.config_name}`" + (f" ({chosen})" if chosen else "")


def first_missing(ro: ResolvedOverride) -> str:
    """The first segment of the key below its deepest existing ancestor."""
    rest = ro.path[len(ro.anchor) + 1 :] if ro.anchor else ro.path
    return rest.split(".")[0]


def did_you_mean(ctx: LintContext, path: str) -> tuple[str, str | None]:
    """(' Did you mean `x`?' or '', the suggestion when it is unambiguous); `NO_SUGGESTION` past the file's
    suggestions."""
    if not ctx.suggestions.allowed(path):
        return NO_SUGGESTION, None
    suggestion, sure = ctx.tree.suggest(path)
    if suggestion is None:
        return "", None
    # A real key is set plainly; a dataclass field missing from the YAML needs `+`.
    written = suggestion if ctx.config.exists(suggestion) else "+" + suggestion
    return f" Did you mean `{written}`?", written if sure else None


def plain_key(ro: ResolvedOverride) -> str:
    """The override's key without its +/++/~ prefix, with its @package if any."""
    return ro.override.key_text.lstrip("+~")


def nearest(ctx: LintContext, word, candidates) -> str:
    """' Did you mean `x`?' for the closest candidate, or ''; `NO_SUGGESTION` past the file's suggestions."""
    import difflib  # only when something is wrong

    if not ctx.suggestions.allowed(str(word)):
        return NO_SUGGESTION
    near = difflib.get_close_matches(str(word), sorted(map(str, candidates)), n=1, cutoff=0.6)
    return f" Did you mean `{near[0]}`?" if near else ""


def repository_code(ctx: LintContext):
    """What the code of the repository the command runs in adds to its verl (`repository_code.repository_code`:
    registrations, key names read), read on the first ask; None outside a repository."""
    from pathlib import Path

    from ..repository_code import repository_code as read

    stack = ctx.stack
    if stack.repository is None:
        return None
    return read(Path(stack.repository), Path(stack.verl_package) if stack.verl_package else None)


def runs_engine_workers(ctx: LintContext) -> bool:
    """Whether the command's PPO workers are verl's engine workers (`schemas/facts.json`: `default-engine-workers`),
    or a run of an older verl that asks for them (`trainer.use_legacy_worker_impl=disable`)."""
    return bool(ctx.fact("verl:default-engine-workers")) or (
        ctx.config.value("trainer.use_legacy_worker_impl") == "disable"
    )
