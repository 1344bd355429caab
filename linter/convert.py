"""`sapo-lint convert SCRIPT.sh`: a verl-style bash run script -> a `sapo-recipe/v1` recipe.

The script is read the way `sapo-lint` reads it (statically, every variant); the model path and the accelerators
(when `[tool.sapo-lint]` names them) go to `model` and `hardware`, overrides shared by every variant go to
`overrides`, exported variables shared by every variant to `env`, and the rest to `variants`: one axis per variable
the script switches on (`device`, `infer_backend`, ...), with the value the script runs with when its caller sets
none as the axis's `variant_defaults` entry. Variables whose differences do not factor apart (the script sets
something only for one combination of them) share one axis, `device_infer_backend: {npu-vllm: ..., ...}`: the
finest grouping that reproduces every variant is chosen. A loop's variable is a switch like any other (`for lr in
...`: an `lr` axis, without a default); a variable that changes nothing is no axis, and values of an axis that run
the trainer the same are one variant (`_distinct`, `_variant_axes`).

What comes before the entry module (`uv run --frozen --extra gpu python3`, `torchrun ...`) has no place in a recipe,
and is dropped with a note and a warning (`LaunchNote`): `sapo-launch` runs `python -m` with its own Python, so the
note says to start `sapo-launch` through the same prefix. Carrying it would need a recipe field per variant (verl's
scripts use uv for some variants only), and the plan's argv, the Ray entrypoint, `plan.json` and reruns to follow.

A value the script takes from the environment it runs in (`$DATA_DIR/x.parquet`, `$(date +%s)`) cannot be known
here: it becomes `???`, OmegaConf's mandatory value, which the recipe's user must set (RF014 refuses a launch until
the recipe or the launch's command line does), with a note at the top naming what the script's value used.

`verl:` is the snapshot the script's keys need, decided by linting: every snapshot shipped is tried, and the one
with the fewest errors is written; among equals the version a plain `sapo-lint` would use (the installed verl,
`[tool.sapo-lint]`, else the default), else the newest. A script written for an older verl whose keys were renamed
since gets that verl; one written for verl main gets main's snapshot. `--verl-version` names it instead. A script
linted against its repository's own verl (a source tree, or an installed verl snapshotted from its files) gets no
`verl:`, with a note: a recipe's `verl:` wins over what is discovered, so naming a committed snapshot would lint the
recipe against a verl the repository does not run.
"""

from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import replace
from pathlib import Path

import yaml

from .core.command import MUST_BE_SET
from .core.diagnostics import Severity
from .core.overrides import MISSING
from .core.printable import printable
from .sources.files import TextFile
from .verl_source import INSTALLED, SOURCE_TREE


class ConversionError(ValueError):
    """The script cannot be converted: not a run script, or no trainer command in it."""


class LaunchNote(str):
    """A note that `sapo-lint convert` also prints as a warning: the recipe starts the trainer otherwise than the
    script does."""


_AXIS_NAME = re.compile(r"[^a-z0-9_]")
_CHOICE_NAME = re.compile(r"[^A-Za-z0-9._-]")
# The interpreter a recipe's launch stands for: a Python found on PATH, without options (`python3 -m ...`)
_PLAIN_PYTHON = re.compile(r"python[\d.]*")


# Groupings of at most this many switch variables are searched for the finest that factors (Bell(6) = 203 tries);
# with more, each variable is its own axis or all share one.
MAX_GROUPED_VARIABLES = 6


def _value(lo):
    if lo.unresolved:  # what the script takes from the environment it runs in: the recipe's user sets it
        return MUST_BE_SET
    value = lo.parsed.value
    return None if value is MISSING else value


def _override_map(command) -> dict:
    """key as written -> value, last one wins (a script setting a key twice keeps Hydra's last value)."""
    return {lo.key_text: _value(lo) for lo in command.overrides if lo.parsed is not None}


def _env_map(command) -> dict:
    return {e.name: e.value for e in command.env}


def _common(maps: list[dict]) -> dict:
    first = maps[0]
    return {k: v for k, v in first.items() if all(k in m and _same(m[k], v) for m in maps[1:])}


def _same(a, b) -> bool:
    """The same value written: of one type and equal, NaN included (`x=nan` in two variants is one value)."""
    return type(a) is type(b) and (a == b or (a != a and b != b))


def _minus(m: dict, base: dict) -> dict:
    return {k: v for k, v in m.items() if not (k in base and _same(base[k], v))}


def _inputs(command) -> dict[str, str]:
    """What tells the command from the script's others: the switch variables and conditions its variant was
    evaluated with (its label), then the values of the loops around the trainer call (`lr=1e-6`)."""
    return {**dict(tok.split("=", 1) for tok in (command.variant or "").split(",") if tok), **dict(command.loop)}


def _runs_the_same(a, b) -> bool:
    """Both commands run the trainer with the same overrides and environment."""
    written = _override_map(a)
    return (
        written.keys() == _override_map(b).keys()
        and all(_same(v, _override_map(b)[k]) for k, v in written.items())
        and _env_map(a) == _env_map(b)
    )


def _distinct(commands) -> tuple[list[tuple[object, dict[str, str]]], list[str]]:
    """One (command, inputs) per way the script runs the trainer, and notes. An input that changes nothing is left
    out (a `for seed` whose seed the trainer never gets, a switch with one value): any two commands whose other
    inputs agree (an input one of them never read agrees with any value) run the same; then commands with the same
    inputs are one (`for lr in 1e-6 1e-6 2e-6` runs two ways). Commands that nothing read tells apart (a `while`
    loop's rounds) cannot all be kept: the first is."""
    inputs = [_inputs(c) for c in commands]
    pairs = list(itertools.combinations(range(len(commands)), 2))
    for var in dict.fromkeys(var for i in inputs for var in i):
        if all(
            _runs_the_same(commands[a], commands[b])
            for a, b in pairs
            if all(inputs[b].get(k, v) == v for k, v in inputs[a].items() if k != var)
        ):
            for i in inputs:
                i.pop(var, None)
    kept: dict[tuple, tuple[object, dict[str, str]]] = {}
    notes = []
    for c, i in zip(commands, inputs, strict=True):
        key = tuple(i.items())
        if key not in kept:
            kept[key] = (c, i)
        elif not _runs_the_same(kept[key][0], c):
            label = ",".join(f"{k}={v}" for k, v in key) or "the script"
            notes.append(
                f"{label} runs the trainer in ways nothing the script reads tells apart: the first is converted"
            )
    return list(kept.values()), list(dict.fromkeys(notes))


def _choice(value: str) -> str:
    name = _CHOICE_NAME.sub("_", value) or "unset"
    return name if name[0].isalnum() else "v" + name


def _grouped(values: dict[str, str], groups: list[tuple[str, ...]]) -> list[tuple[tuple[str, ...], str]]:
    """A command's inputs as (group of variables, their values joined by `-`) for each group it names."""
    out = []
    for group in groups:
        named = [values[var] for var in group if var in values]
        if named:
            out.append((group, "-".join(named)))
    return out


def _factor(runs, base_o: dict, base_e: dict, groups: list[tuple[str, ...]]) -> dict | None:
    """Per-axis deltas (one axis per group of variables) that reproduce every (command, inputs) of `runs`, or None
    when they do not factor by these groups."""
    axes: dict[tuple[str, ...], dict[str, tuple[dict, dict]]] = {}
    by_axis: dict[tuple, list] = {}
    for c, inputs in runs:
        for group, value in _grouped(inputs, groups):
            by_axis.setdefault((group, value), []).append(c)
    for (group, value), cs in by_axis.items():
        o = _common([_minus(_override_map(c), base_o) for c in cs])
        e = _common([_minus(_env_map(c), base_e) for c in cs])
        axes.setdefault(group, {})[value] = (o, e)
    for c, inputs in runs:
        o, e = dict(base_o), dict(base_e)
        seen: set[str] = set()
        for group, value in _grouped(inputs, groups):
            do, de = axes[group][value]
            if seen & set(do):
                return None
            seen |= set(do)
            o.update(do)
            e.update(de)
        written = _override_map(c)
        if o.keys() != written.keys() or any(not _same(o[k], v) for k, v in written.items()) or e != _env_map(c):
            return None
    return axes


def _partitions(items: list[str]):
    """Every way to split `items` into groups (each group in the items' order), most groups first."""

    def split(rest: list[str]):
        if not rest:
            yield []
            return
        first, others = rest[0], rest[1:]
        for partition in split(others):
            yield [(first,), *partition]
            for i in range(len(partition)):
                yield [*partition[:i], (first, *partition[i]), *partition[i + 1 :]]

    if len(items) > MAX_GROUPED_VARIABLES:
        return [[(item,) for item in items], [tuple(items)]]
    return sorted(split(items), key=len, reverse=True)


def _variant_axes(runs, base_o: dict, base_e: dict, defaults: dict[str, str]) -> tuple[dict, dict, list[str]]:
    """The recipe's `variants` and `variant_defaults`, and notes: the finest grouping of the script's switch and
    loop variables that reproduces every (command, inputs) of `runs` (all of them in one axis always does); an axis
    is named by its variables (`MODEL_SIZE`: `model_size`)."""
    variables = list(dict.fromkeys(var for _, inputs in runs for var in inputs))
    for groups in _partitions(variables):
        axes = _factor(runs, base_o, base_e, groups)
        if axes is not None:
            break
    loops = {var for c, _ in runs for var, _ in c.loop}
    variants, chosen, notes = {}, {}, []
    for group, choices in axes.items():
        axis = _AXIS_NAME.sub("_", "_".join(group).lower())
        if len(group) > 1:
            notes.append(
                f"{', '.join(group)} do not factor apart (the script sets something for one combination): "
                f"the `{axis}` axis holds their combinations"
            )
        if loops & set(group):
            notes.append(
                f"the script runs the trainer once per round of its loop over {', '.join(sorted(loops & set(group)))};"
                f" a launch runs one: `sapo-launch RECIPE --variant {axis}=VALUE`"
            )
        default = "-".join(defaults[var] for var in group if var in defaults)
        default = default if default in choices and all(var in defaults for var in group) else None
        variants[axis] = {}
        kept: dict[str, str] = {}  # a body, as text -> the value it is kept under
        for value in sorted(choices, key=lambda value: value != default):  # the default's name first
            o, e = choices[value]
            same = repr((sorted(o.items()), sorted(e.items())))
            if same in kept:  # `npu|ascend)`: one variant, under the first name
                notes.append(f"{', '.join(group)}={value} runs as {kept[same]}: one variant, `{_choice(kept[same])}`")
                continue
            kept[same] = value
            variants[axis][_choice(value)] = {**({"overrides": o} if o else {}), **({"env": e} if e else {})} or None
        if default is not None:
            chosen[axis] = _choice(default)
    return variants, chosen, notes


def _hardware(commands) -> str | dict | None:
    """`hardware.accelerator` when the script's commands run on named accelerators (`--accelerator` or
    `[tool.sapo-lint] accelerator`): one name, or one per device kind; None when any is an assumption or unknown."""
    from .core.device import device_of

    if any(c.accelerator is None or c.accelerator.assumed for c in commands):
        return None
    names = {c.accelerator.name for c in commands}
    if len(names) == 1:
        return names.pop()
    per_kind = {device_of(c, c.accelerator).kind: c.accelerator.name for c in commands}
    return dict(sorted(per_kind.items(), reverse=True))  # npu, gpu


def script_to_recipe(source: TextFile, options) -> tuple[dict, list[str]]:
    """The recipe, as the plain data its YAML holds, and notes on what could not be carried over (text quoted
    from the script, as it is): from the script's text alone. `recipe_yaml` writes them."""
    from .api import SCRIPT_SUFFIXES, load_text

    path = Path(source.path)
    read = load_text(source, options) if path.suffix in SCRIPT_SUFFIXES else None
    if read is None:
        raise ConversionError(f"{path}: not a run script (`*.sh`)")
    notes = [f"{d.location.path}:{d.location.line}:{d.location.column}: {d.code} {d.message}" for d in read.diagnostics]
    commands = read.commands
    if not commands:
        raise ConversionError(
            f"{path}: no `python3 -m verl...` trainer command found" + "".join(f"; {n}" for n in notes)
        )
    first = {c.origin for c in commands}
    if len(first) > 1:
        origin = commands[0].origin
        notes.append(f"the script runs {len(first)} trainer commands; only the one at line {origin.line} is converted")
        commands = [c for c in commands if c.origin == origin]
    for c in commands:
        for lo in c.overrides:
            if lo.parsed is None:
                notes.append(f"line {lo.location.line}: `{lo.key_text}` not converted: {lo.syntax_error}")
    name = re.sub(r"^run_", "", path.stem).replace("_", "-")
    recipe: dict = {"recipe": "sapo-recipe/v1", "name": name}
    own = read.verl is not None and read.verl.source in (SOURCE_TREE, INSTALLED) and read.verl.cached is not None
    if own and not options.cli_verl:  # a recipe's `verl:` would win over the repository's own verl when it is linted
        notes.append(f"no `verl:`: the recipe is linted, as the script is, against {read.verl.describe()}")
    else:
        recipe["verl"] = _verl_version(replace(read, commands=commands), options)
    config = commands[0].config_name
    if config in ("ppo_trainer", "ppo_megatron_trainer"):
        recipe["entrypoint"] = "verl.trainer.main_ppo"
        recipe["config_name"] = config
    else:
        notes.append(f"config `{config}` is not one a v1 recipe can name; converted for ppo_trainer")
    maps = [_override_map(c) for c in commands]
    envs = [_env_map(c) for c in commands]
    base_o, base_e = _common(maps), _common(envs)
    model_path = base_o.get("actor_rollout_ref.model.path")
    if isinstance(model_path, str) and all(c.model is not None for c in commands):
        recipe["model"] = {"path": model_path}
    accelerator = _hardware(commands)
    if accelerator is not None:
        recipe["hardware"] = {"accelerator": accelerator}
    recipe["overrides"] = base_o
    if base_e:
        recipe["env"] = base_e
    runs, merged = _distinct(commands)
    notes.extend(merged)
    if len(runs) > 1:
        defaults = dict(token.split("=", 1) for token in read.variant_defaults)
        variants, chosen, grouped = _variant_axes(runs, base_o, base_e, defaults)
        notes.extend(grouped)
        recipe["variants"] = variants
        if chosen:
            recipe["variant_defaults"] = chosen
    notes.extend(_must_be_set(commands))
    notes.extend(_launch_notes(commands))
    return recipe, notes


def _launch_notes(commands) -> list[LaunchNote]:
    """A note per way the script starts the trainer other than `python3 -m` (`uv run --frozen --extra gpu python3`,
    `python3 -u`, `torchrun ...`, `ray job submit -- python3`), with the variants that do."""
    variants: dict[tuple[str, ...], list[str | None]] = {}
    for c in commands:
        if len(c.launch) != 1 or not _PLAIN_PYTHON.fullmatch(c.launch[0]):
            variants.setdefault(c.launch, []).append(c.variant)
    notes = []
    for launch, labels in variants.items():
        written = f"`{shlex.join(launch)} -m {commands[0].entry_module}`"
        if len(labels) < len(commands):
            written += f" (in {' or '.join(label or 'the script' for label in labels)})"
        if launch[0] == "ray":
            notes.append(
                LaunchNote(f"the script submits the trainer as a Ray job, {written}: `sapo-launch --ray` does")
            )
            continue
        interpreter = max((i for i, word in enumerate(launch) if _PLAIN_PYTHON.fullmatch(word)), default=0)
        how = f"`{shlex.join(launch[:interpreter])} sapo-launch RECIPE`" if interpreter else "from that environment"
        notes.append(
            LaunchNote(
                f"the script runs the trainer as {written}; a recipe does not say how the trainer is started: "
                f"sapo-launch runs `-m {commands[0].entry_module}` with the Python that runs sapo-launch, so start "
                f"sapo-launch the same way, {how}, or the trainer's driver runs under another Python than its workers"
            )
        )
    return notes


def _must_be_set(commands) -> list[str]:
    """A note for each key whose value the script takes from where it runs: the recipe has `???` there."""
    unresolved = {lo.key_text: lo.unresolved for c in commands for lo in c.overrides if lo.parsed and lo.unresolved}
    return [
        f"{key}: `{MUST_BE_SET}`, to be set before a launch: the script's value uses {', '.join(used)}"
        for key, used in unresolved.items()
    ]


def _verl_version(read, options) -> str:
    """The verl snapshot the script's commands lint with the fewest errors on (see the module docstring)."""
    from .api import check
    from .schema import available_verl_versions, version_key
    from .settings import Settings

    if options.cli_verl:
        return options.cli_verl

    def errors(version: str) -> int:
        found = check(replace(read, verl_version=version), Settings())
        return sum(d.severity == Severity.ERROR for d in found)

    newest_first = sorted(available_verl_versions(), key=version_key, reverse=True)  # ties go to the newest
    return min(newest_first, key=lambda version: (errors(version), version != read.verl_version))


class _RecipeDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, but a string holding a line break, control or bidi character is double-quoted, the one
    style where PyYAML escapes them: in its other styles it writes U+0085, U+2028 and U+2029 as they are, and a
    reader takes them for line breaks (the string does not read back)."""


def _string(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style='"' if printable(text) != text else None)


_RecipeDumper.add_representer(str, _string)


def recipe_yaml(recipe: dict, notes: list[str], source: Path) -> str:
    """The recipe as YAML, after a comment line per note: the script's text in a note or a value is escaped, so
    it can only ever be read back as the text it was (never as YAML keys of its own)."""
    header = [f"Converted from {source.name} by `sapo-lint convert`.", *(f"note: {n}" for n in notes)]
    body = yaml.dump(
        recipe, Dumper=_RecipeDumper, sort_keys=False, allow_unicode=True, width=120, default_flow_style=False
    )
    return "".join(f"# {printable(line)}\n" for line in header) + body
