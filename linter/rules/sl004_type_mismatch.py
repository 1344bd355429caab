from ..core.diagnostics import Severity
from ..core.redaction import shown_value
from ..engine import INT64, LintContext, Part, beyond_int64
from ..rulekit.common import is_interpolation, is_number
from ..rulekit.registry import Finding, rule

_ACCEPTS = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": is_number,
    "bool": lambda v: isinstance(v, bool),
    # OmegaConf turns scalars into strings for str fields; a bool or a container is a mistake.
    "str": lambda v: isinstance(v, (str, int, float)) and not isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict),
}


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def type_error(path: str, value, entry: dict) -> str | None:
    """Why `value`, set at `path`, cannot be this entry's type, or None when it can."""
    members = entry.get("type", "any").split("|")  # a union is "float|str" (schemas/FORMAT.md)
    if any(m not in _ACCEPTS for m in members) or is_interpolation(value):
        return None
    expected = " or ".join(members)
    if value is None:
        return None if entry.get("nullable") else f"expects {expected}, not null"
    if any(_ACCEPTS[m](value) for m in members):
        return None
    if (
        entry.get("inferred")
        and expected == "str"
        and isinstance(value, list)
        and all(isinstance(v, str) for v in value)
    ):
        return None  # undeclared path-like keys (data.train_files) are read as a string or a list of them
    if entry.get("inferred") and expected == "list" and isinstance(value, str) and _strings(entry.get("default")):
        return None  # and undeclared lists of names (trainer.logger) as a list or one name, which verl wraps
    nullable = " or null" if entry.get("nullable") else ""
    return f"expects {expected}{nullable}, got {shown_value(path, value)} ({type(value).__name__})"


def _out_of_range(path: str, value) -> str:
    """What is out of range, without printing a number too long to read in a message (or to print at all)."""
    if not isinstance(value, int):
        return f"`{path}` holds an integer out of range"
    if value.bit_length() > 128:
        return f"`{path}` is an integer of {value.bit_length():,} bits, out of range"
    return f"`{path}`={shown_value(path, value)} is out of range"


def _declared(ctx: LintContext, path: str) -> bool:
    """Whether a dataclass declares the key: its parent node has a `_target_` (schemas/FORMAT.md `type`)."""
    parent = ctx.tree.get(path.rpartition(".")[0])
    return parent is not None and bool(parent.get("target"))


@rule(
    "SL004",
    "type-mismatch",
    Severity.ERROR,
    part=Part.CONFIG,
    summary="value cannot be the field's type",
    bad="""
    overrides:
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: four
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 4
    """,
)
def check(ctx: LintContext):
    """verl turns its config nodes into dataclasses with `hydra.utils.instantiate`, which does not check types:
    `tensor_model_parallel_size=abc` or `2.5` passes start-up and fails (or silently misbehaves) wherever the
    value is first used. The expected type is the dataclass annotation where the node has one, otherwise the
    type of verl's default. Integers are accepted for floats and scalars for strings, as OmegaConf does; where
    the type only comes from a string default (plain nodes such as `data`), a list of strings is accepted too,
    since verl reads such keys as one path or a list of them (`data.train_files`); likewise, where a list of
    strings only has its type from the default (no dataclass declares it), one string is accepted: the one such
    key, `trainer.logger`, goes to `Tracking(default_backend: str | list[str])`, which wraps a string in a list
    (verl `verl/utils/tracking.py` `Tracking.__init__`), as does `main_ppo`'s own read of it
    (`verl/trainer/main_ppo.py`, `[trainer_logger] if isinstance(trainer_logger, str)`). A union annotation
    (`rollout_is_threshold: str | float`) takes a value of any of its types. A mismatch with a type that only
    comes from the default is a warning, not an error; so is null for a type not declared Optional, since code
    often reads null as "off" where the annotation omits it (verl main's `compute_rollout_correction_and_rejection_mask`
    skips the IS weights when `rollout_is_threshold` is None, which `RolloutCorrectionConfig` declares
    `str | float`). Interpolations are not checked. An integer beyond 64 bits is out of range wherever a number is
    expected: verl's sizes and counts end up in torch, NumPy and Ray, which hold 64-bit integers (an integer of more
    than 4,300 digits cannot even be read: RF002 in a recipe, SL009 in an override)."""
    for ro in ctx.overrides:
        if not ro.assigns or ro.entry is None or ro.group is not None or ro.parsed.is_sweep or ro.outside is not None:
            continue
        if ro.entry["kind"] not in ("value", "list"):
            continue
        entry = ro.entry
        written = ro.override.parsed.value  # `ro.parsed` holds a placeholder for an integer beyond 64 bits
        if beyond_int64(written) and entry.get("type") != "str":
            yield Finding(
                ro,
                f"{_out_of_range(ro.path, written)}: verl's sizes and counts end up in torch, NumPy and "
                f"Ray, which hold 64-bit integers (from {INT64.start} to {INT64.stop - 1})",
            )
            continue
        if entry["kind"] == "list" and not _declared(ctx, ro.path):
            entry = {**entry, "inferred": True}  # a list's type comes from its default unless a dataclass declares it
        problem = type_error(ro.path, ro.parsed.value, entry)
        if problem and ro.parsed.value is None:
            # instantiate does not check types, and verl often reads null as "off" where the annotation forgot
            # Optional (its own rollout-correction scripts set `rollout_is_threshold=null` with `rollout_is=null`).
            yield Finding(
                ro,
                f"`{ro.path}` {problem}: the declared type is not Optional, and verl does not check "
                "types when it builds the config, so null reaches the code that reads the key; check "
                "that it takes null",
                severity=Severity.WARNING,
            )
        elif problem and entry.get("inferred"):
            # No dataclass declares the type, only verl's default shows it: verl may well take other values
            # (`rollout_is_threshold: 2.0` also takes "0.5_4.0"), so this is a warning, never an error.
            yield Finding(
                ro,
                f"`{ro.path}` {problem}, the type of verl's default; no dataclass declares the key's "
                "type, so check that verl reads this value",
                severity=Severity.WARNING,
            )
        elif problem:
            yield Finding(ro, f"`{ro.path}` {problem}")
