from ..core.diagnostics import Severity
from ..core.redaction import shown_value
from ..engine import INT64, LintContext, Part, beyond_int64
from ..rulekit.common import is_interpolation, is_number
from ..rulekit.registry import Finding, rule
from ..schema import declared_elsewhere

_ACCEPTS = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": is_number,
    "bool": lambda v: isinstance(v, bool),
    # OmegaConf turns scalars into strings for str fields; a bool or a container is a mistake.
    "str": lambda v: isinstance(v, (str, int, float)) and not isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict),
}


# Where no dataclass declares a key, verl reads it as the type of its default, with the exceptions below. A number
# is computed with and compared (verl/trainer/ppo/ray_trainer.py: `len(self.train_dataloader) *
# self.config.trainer.total_epochs`, `range(current_epoch, self.config.trainer.total_epochs)`,
# `self.config.trainer.test_freq > 0`, `self.global_steps % self.config.trainer.test_freq`), a flag is branched on
# (`if self.config.trainer.get("val_before_train", True)`): a string, a bool or a container cannot stand in for a
# number (TypeError where it is first used), and a string or a container is always true as a flag.
_CANNOT_STAND_IN = {
    "int": lambda v: not is_number(v),
    "float": lambda v: not is_number(v),
    "bool": lambda v: isinstance(v, (str, list, dict)),
}
_READ_AS = {
    "int": ("an integer", "the run fails where verl first computes with it"),
    "float": ("a number", "the run fails where verl first computes with it"),
    "bool": ("a flag", "it is always true"),
}
# Values verl reads besides its default's type, per config: the SFT trainers take "after_each_epoch" for both
# frequencies (verl/trainer/sft_trainer.py and sft_trainer_ray.py, `if self.test_freq == "after_each_epoch":
# self.test_freq = self.steps_per_epoch`, the same for save_freq; verl 0.8.0 to main).
ALSO_READ = {
    ("sft_trainer_engine", "trainer.test_freq"): ("after_each_epoch",),
    ("sft_trainer_engine", "trainer.save_freq"): ("after_each_epoch",),
}


# Where only verl's YAML default gives a key its type (no dataclass declares it), null is verl's own way to leave a
# name, a path, a flag or a collection unset: `reward_model.model.input_tokenizer: ${actor_rollout_ref.model.path}
# # set this to null if the chat template is identical` (verl 0.2-0.5 ppo_trainer.yaml), read as `if
# self.config.model.input_tokenizer is None` (fsdp_workers.py). A number is computed with.
_NULL_LEAVES_UNSET = frozenset({"str", "bool", "list", "dict"})


# Strings that mean "off" to a person but are true to Python: for a flag, certainly a mistake.
SPELLS_OFF = frozenset({"no", "n", "false", "f", "off", "0", "none", "null", "disable", "disabled", ""})


def _flag_typo(entry: dict, value) -> str:
    """'. Did you mean `False`?' for a flag's value that is a misspelt True or False: the same letters in another
    order (`Flase`, `ture`) or one letter off (`Fals`, `Trye`). Not merely a similar word: `fast` may be a mode the
    code reads by name."""
    if "bool" not in entry.get("type", "").split("|") or not isinstance(value, str):
        return ""
    word = value.strip().lower()
    for meant in ("false", "true"):
        if word != meant and (sorted(word) == sorted(meant) or _one_edit_apart(word, meant)):
            return f". Did you mean `{meant.capitalize()}`?"
    return ""


def _one_edit_apart(a: str, b: str) -> bool:
    """Whether one letter changed, added or removed turns `a` into `b`."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


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


def _read_as_default(ctx: LintContext, path: str, entry: dict, value) -> bool:
    """Whether verl reads this undeclared key as its default's type and `value` cannot be of it (`_CANNOT_STAND_IN`):
    the key's name is one verl's source reads."""
    cannot = _CANNOT_STAND_IN.get(entry.get("type", ""))
    return cannot is not None and cannot(value) and path.rpartition(".")[2] in ctx.snapshot.read_set


def _typed_by_yaml(ctx: LintContext, path: str, entry: dict) -> bool:
    """Whether only verl's YAML gives the key its type: inferred from its default, or an interpolation of another
    key in a node no dataclass declares, which takes that key's type (`reward_model.model.input_tokenizer:
    ${actor_rollout_ref.model.path}`)."""
    return bool(entry.get("inferred") or (entry.get("interpolation") and not _declared(ctx, path)))


def _meant_where_undeclared(ctx: LintContext, path: str, entry: dict, value) -> bool:
    """Whether a value of another type than an undeclared key's default is one verl means all the same: null where
    null leaves the key unset (`_NULL_LEAVES_UNSET`), or a float for an integer default that another committed
    verl's dataclass declares a float. verl's YAML writes many coefficients as integers (`entropy_coeff: 0`,
    `top_p: 1`, `val_kwargs.temperature: 0` up to 0.5), which verl 0.6 on declares `float` (ActorConfig,
    RolloutConfig, SamplingConfig) with the same default: the key always held a number."""
    if value is None:
        return entry.get("type") in _NULL_LEAVES_UNSET
    if entry.get("type") != "int" or not isinstance(value, float):
        return False
    return "float" in declared_elsewhere(ctx.snapshot, ctx.selection, path)


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
    (`rollout_is_threshold: str | float`) takes a value of any of its types.
    Where no dataclass declares the key, the value is an error all the same when verl reads the key (its name is
    in the snapshot's read-set) as its default's type and the value cannot be of that type: a string, a bool or a
    container for a number (`trainer.total_epochs=abc`: `ray_trainer.py` multiplies and ranges over it;
    `trainer.test_freq=many` is compared with ints: TypeError where it is first used), a string or a container for
    a flag (`trainer.val_before_train=no` is a non-empty string, so true). A string for a flag that does not spell
    "off" (`recurrent.enable=memory`) is a warning: code may branch on it and read it as a name too. It stays a
    warning where verl
    demonstrably reads other types or never reads the key: a mismatch with a string default (verl hands
    `data.enable_thinking_default`, default the string "none", to the chat template as a bool), a float for an
    integer default (`lora.alpha=16.0` divides fine), a number for a flag (0 and 1 branch as False and True), a
    list default, and a key whose name no verl code reads (its value goes on as a whole, like nsys options). A
    float for an integer default is no finding at all where another committed verl's dataclass declares the same
    key a float: the YAML wrote a number as an integer (`actor.entropy_coeff: 0`, `rollout.top_p: 1` up to verl
    0.5, `float` fields of ActorConfig and RolloutConfig from 0.6 on), so `entropy_coeff=0.001` is what it is for. The
    SFT trainers' `trainer.test_freq` and `trainer.save_freq` also take "after_each_epoch" (`sft_trainer.py`).
    Null for a key no dataclass declares is no finding where its default is a string, a flag or a collection
    (null is verl's own way to leave one unset: `reward_model.model.input_tokenizer`, "set this to null if the chat
    template is identical"); a number is computed with. Null for a type not declared Optional is a warning too,
    since code often reads null as "off" where the annotation omits it (verl main's
    `compute_rollout_correction_and_rejection_mask` skips the IS weights when `rollout_is_threshold` is None, which
    `RolloutCorrectionConfig` declares `str | float`). Interpolations are not checked. An integer beyond 64 bits is
    out of range wherever a number is expected: verl's sizes and counts end up in torch, NumPy and Ray, which hold
    64-bit integers (an integer of more than 4,300 digits cannot even be read: RF002 in a recipe, SL009 in an
    override)."""
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
        value = ro.parsed.value
        if value in ALSO_READ.get((ctx.snapshot.config_name, ro.path), ()):
            continue
        problem = type_error(ro.path, value, entry)
        if problem and _typed_by_yaml(ctx, ro.path, entry) and _meant_where_undeclared(ctx, ro.path, entry, value):
            continue
        typo = _flag_typo(entry, value) if problem else ""
        if problem and value is not None and entry.get("inferred") and _read_as_default(ctx, ro.path, entry, value):
            read_as, breaks = _READ_AS[entry["type"]]
            # A string for a flag that does not spell "off" may be a mode the code also reads by name
            # (`if config.recurrent.enable: getattr(config.recurrent, config.recurrent.enable)`): a warning.
            # A misspelt True or False is no mode: an error.
            mode = (
                entry["type"] == "bool"
                and isinstance(value, str)
                and value.strip().lower() not in SPELLS_OFF
                and not typo
            )
            yield Finding(
                ro,
                f"`{ro.path}` {problem}, the type of verl's default; no dataclass declares it, but verl reads "
                f"`{ro.path.rpartition('.')[2]}` as {read_as}, which a {type(value).__name__} cannot be: {breaks}"
                + ("; check that the code also reads it as a name" if mode else "")
                + typo,
                severity=Severity.WARNING if mode else None,
            )
        elif problem and value is None:
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
            # No dataclass declares the type, only verl's default shows it, and the value is one verl may take
            # (`_read_as_default` picks those it cannot): a warning.
            yield Finding(
                ro,
                f"`{ro.path}` {problem}, the type of verl's default; no dataclass declares the key's "
                f"type, so check that verl reads this value{typo}",
                severity=Severity.WARNING,
            )
        elif problem:
            yield Finding(ro, f"`{ro.path}` {problem}{typo}")
