"""A run script's own entry module: the Python module (`python3 -m recipe.dapo.main_dapo`) or file
(`python3 train.py`) that a trainer call starts when it is not one of verl's, found in the script's repository and
read with libcst (never imported or run) for the config it composes.

Where it is looked for, first found first. The directory the call runs in: the one the script `cd`s into (relative to
where it is started), else where it is started; a script is started from its repository's root or its own
directory, so each directory from the script's own up to the repository root (the closest one above holding `.git`)
is tried as the start. In each, the module is looked for in that directory, then in each directory of the call's
`PYTHONPATH` (a relative one from there), as Python does for `-m`; a file's path is taken from there. A `cd` or
`PYTHONPATH` directory this machine does not have (a placeholder or an unknown variable before it, another
machine's absolute path) is the repository's directory its last components name, where there is one
(`verl_source.in_repository`, called by the bash reader): `cd $ROOT/luffy/verl` with `ROOT=/mnt/someone/LUFFY/`
runs in the repository's `luffy/verl`.

The config is the one its `@hydra.main(config_path=..., config_name=...)` names, `config_path` taken as Hydra takes
it (`hydra/_internal/utils.py` `compute_search_path_dir`): relative to the real directory of the module's file (for
`-m` as well, since Hydra sees the module as `__main__`), or absolute; `pkg://a.b` is package a.b's directory,
found as a module is. A directory of a verl package (`verl/trainer/config`, `pkg://verl.trainer.config`) is verl's
own: the command is checked as verl's trainer with that config name, against the verl being linted. Any other
directory holding the config is a custom one (`EntryConfig.config_path`, absolute). A module without `@hydra.main`
that calls a verl entry module's `main` (`from verl.trainer.main_ppo import main`) runs verl's trainer with its
config; one whose config directory does not hold the config but that calls verl's `main` or `run_ppo` is checked as
verl's trainer with that config name. A module that neither composes verl's config nor imports anything of verl is a
program of its own (another trainer's, on a Hydra config of its own): no verl trainer call. Anything else cannot be
resolved: the reason says why."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from ..verl_source import repository_dirs
from .files import UnreadableFile, read_bytes

# Functions of a verl entry module that run its trainer: the `@hydra.main` one, and what it hands the config to.
_RUNS_TRAINER = ("main", "run_ppo")


class EntryConfig(NamedTuple):
    """The config a wrapper entry module composes, and the entry module its run counts as."""

    entry_module: str  # the verl entry module it hands the run to, else the wrapper as the script names it
    config_name: str
    config_path: str | None  # an absolute directory outside verl's package; None: verl's own config directory


def start_directories(script: Path, cwd: str | None) -> list[Path]:
    """The directories the call may run in: the one the script `cd`s into (`cwd`, None: none), taken from each
    directory the script may be started from (its own, up to the repository root)."""
    starts = []
    for base in repository_dirs(script.resolve().parent):
        starts.append(base if cwd is None else Path(os.path.normpath(base / cwd)))
        if cwd is not None and os.path.isabs(cwd):
            break
    return list(dict.fromkeys(starts))


def search_roots(starts: Iterable[Path], pythonpath: Iterable[str]) -> list[Path]:
    """Where Python looks for `-m` modules from each start directory: the directory, then `PYTHONPATH`'s entries."""
    roots = []
    for start in starts:
        roots.append(start)
        roots.extend(start / entry for entry in pythonpath if entry)  # an absolute entry stays what it is
    return list(dict.fromkeys(roots))


def resolve_entry(
    written: str, is_file: bool, starts: list[Path], roots: list[Path], verl_entries: Mapping[str, str]
) -> EntryConfig | str | None:
    """The config of the module `written` (a dotted name, or a file's path when `is_file`), or why it cannot be
    found; None for a module that is no verl trainer. `verl_entries`: verl's entry modules and their default config
    names, for a module that delegates."""
    from ...schemas.build.hydra_main import (
        called_names,
        hydra_mains,
        imported_names,
        parse_module,
    )  # libcst: only for a wrapper

    path = _find_file(written, starts) if is_file else _find_module(written, roots)
    if path is None:
        source = written if is_file else written.replace(".", "/") + ".py"
        where = "" if is_file else ", nor on its PYTHONPATH"
        return f"`{source}` is not in the directory the script runs it from (its own or any above it){where}"
    shown = f"`{written}`" if is_file else f"`{_module_file(written, path)}`"
    try:
        module = parse_module(read_bytes(path))
    except UnreadableFile as exc:
        return f"{shown} cannot be read ({exc})"
    if module is None:
        return f"{shown} is not valid Python"
    calls = called_names(module)
    delegate = next(
        (m for m in verl_entries if any(f"{m}.{fn}" in calls for fn in _RUNS_TRAINER)),
        None,
    )
    entry_module = delegate or written
    mains = hydra_mains(module)
    main = mains[0] if mains else None
    named = main is not None and not main.unread and main.config_name and main.config_path is not None
    name = main.config_name.removesuffix(".yaml") if named else ""
    directory = _config_directory(main.config_path, path, roots) if named else None
    if named and (directory is None or _in_verl_package(directory)):
        return EntryConfig(entry_module, name, None)
    if not any(name.split(".")[0] == "verl" for name in imported_names(module)):
        return None  # a program of its own, on a config of its own (another trainer's): no verl trainer call
    if main is None:
        runs_main = next((m for m in verl_entries if f"{m}.main" in calls), None)
        if runs_main is not None:
            return EntryConfig(runs_main, verl_entries[runs_main], None)
        if delegate is not None:
            return f"{shown} has no `@hydra.main`: it builds the config it passes to `{delegate}` itself"
        return f"{shown} has no `@hydra.main`"
    if main.unread:
        return f"the `@hydra.main` of {shown} computes its {' and '.join(f'`{a}`' for a in main.unread)}"
    if not main.config_name:
        return f"the `@hydra.main` of {shown} names no `config_name`"
    if main.config_path is None:
        return f"the `@hydra.main` of {shown} names no `config_path`"
    if (directory / f"{name}.yaml").is_file():
        return EntryConfig(entry_module, name, str(directory))
    if delegate is not None:  # verl's trainer, with a config name the linted verl may ship
        return EntryConfig(entry_module, name, None)
    return f"the `@hydra.main` of {shown} names config `{name}` in `{main.config_path}`, which holds no `{name}.yaml`"


def _find_module(dotted: str, roots: list[Path]) -> Path | None:
    parts = dotted.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    for root in roots:
        for candidate in (root.joinpath(*parts[:-1], parts[-1] + ".py"), root.joinpath(*parts, "__main__.py")):
            if candidate.is_file():
                return candidate
    return None


def _find_file(written: str, starts: list[Path]) -> Path | None:
    if os.path.isabs(written):
        return Path(written) if Path(written).is_file() else None
    return next((start / written for start in starts if (start / written).is_file()), None)


def _config_directory(config_path: str, module_file: Path, roots: list[Path]) -> Path | None:
    """The directory `config_path` names; None for one in an installed verl (`pkg://verl.trainer.config`)."""
    if config_path.startswith("pkg://"):
        package = config_path[len("pkg://") :].strip("/").replace("/", ".")
        if package.split(".")[0] == "verl":
            return None
        found = (r.joinpath(*package.split(".")) for r in roots)
        return next((d for d in found if d.is_dir()), roots[0].joinpath(*package.split(".")))
    return Path(os.path.normpath(os.path.join(os.path.realpath(module_file.parent), config_path)))


def _in_verl_package(directory: Path) -> bool:
    """Whether a config directory is inside a verl package (one holding `trainer/config`), or named as verl's is."""
    if directory.parts[-3:] == ("verl", "trainer", "config"):
        return True
    return any(d.name == "verl" and (d / "trainer" / "config").is_dir() for d in directory.parents)


def _module_file(dotted: str, path: Path) -> str:
    """The module's file as `python -m` names it, from the directory it is imported from (`recipe/x/main.py`)."""
    parts = dotted.split(".")
    return "/".join([*parts, "__main__.py"] if path.name == "__main__.py" else [*parts[:-1], parts[-1] + ".py"])
