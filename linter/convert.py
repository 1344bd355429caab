"""`sapo-lint convert SCRIPT.sh`: a verl-style bash run script -> a `sapo-recipe/v1` recipe.

The script is read the way `sapo-lint` reads it (statically, every variant); the model path and the accelerators
(when `[tool.sapo-lint]` names them) go to `model` and `hardware`, overrides shared by every variant go to
`overrides`, exported variables shared by every variant to `env`, and the rest to `variants`: one axis per variable
the script switches on (`device`, `infer_backend`, ...) when the differences factor that way, else a single `variant`
axis with one entry per combination.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from .core.overrides import MISSING
from .core.printable import printable
from .sources.files import TextFile


class ConversionError(ValueError):
    """The script cannot be converted: not a run script, or no trainer command in it."""


_AXIS_NAME = re.compile(r"[^a-z0-9_]")
_CHOICE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def _ident(lo):
    return lo.key_text


def _value(lo):
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
    return type(a) is type(b) and a == b


def _minus(m: dict, base: dict) -> dict:
    return {k: v for k, v in m.items() if not (k in base and _same(base[k], v))}


def _labels(variant: str | None) -> list[tuple[str, str]]:
    return [tuple(tok.split("=", 1)) for tok in (variant or "").split(",") if tok]


def _choice(value: str) -> str:
    name = _CHOICE_NAME.sub("_", value) or "unset"
    return name if name[0].isalnum() else "v" + name


def _factor(commands, base_o: dict, base_e: dict) -> dict | None:
    """Per-axis deltas that reproduce every variant, or None when the variants do not factor by axis."""
    axes: dict[str, dict[str, tuple[dict, dict]]] = {}
    by_axis: dict[tuple[str, str], list] = {}
    for c in commands:
        for var, value in _labels(c.variant):
            by_axis.setdefault((var, value), []).append(c)
    for (var, value), cs in by_axis.items():
        o = _common([_minus(_override_map(c), base_o) for c in cs])
        e = _common([_minus(_env_map(c), base_e) for c in cs])
        axes.setdefault(var, {})[value] = (o, e)
    for c in commands:
        o, e = dict(base_o), dict(base_e)
        seen: set[str] = set()
        for var, value in _labels(c.variant):
            do, de = axes[var][value]
            if seen & set(do):
                return None
            seen |= set(do)
            o.update(do)
            e.update(de)
        if o != _override_map(c) or any(not _same(o[k], v) for k, v in _override_map(c).items()) or e != _env_map(c):
            return None
    return axes


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
    recipe: dict = {"recipe": "sapo-recipe/v1", "name": name, "verl": read.verl_version}
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
    if len(commands) > 1:
        axes = _factor(commands, base_o, base_e)
        variants: dict = {}
        if axes is not None:
            for var, choices in axes.items():
                axis = _AXIS_NAME.sub("_", var.lower())
                variants[axis] = {}
                for value, (o, e) in choices.items():
                    body = {}
                    if o:
                        body["overrides"] = o
                    if e:
                        body["env"] = e
                    variants[axis][_choice(value)] = body or None
        else:
            notes.append("the variants do not factor by variable; one `variant` axis holds every combination")
            variants["variant"] = {}
            for c, o, e in zip(commands, maps, envs, strict=True):
                body = {}
                if _minus(o, base_o):
                    body["overrides"] = _minus(o, base_o)
                if _minus(e, base_e):
                    body["env"] = _minus(e, base_e)
                label = ".".join(f"{k}_{v}" for k, v in _labels(c.variant))
                variants["variant"][_choice(label)] = body or None
        recipe["variants"] = variants
    return recipe, notes


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
