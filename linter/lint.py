"""Lint files: discover, read through the sources, run the rules, filter, and collapse variants."""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import rules as _rules  # registers every rule
from .core.command import LocatedOverride, Stack, locate_override
from .core.diagnostics import Diagnostic, Location
from .core.variants import collapse_variants
from .engine import lint_command
from .rules.rf_recipe import UNKNOWN_VERSION, UNREADABLE_FILE
from .schema import (
    DEFAULT_MBRIDGE,
    DEFAULT_MEGATRON_CORE,
    DEFAULT_VERL_VERSION,
    SnapshotNotFound,
    installed_verl_version,
    load_snapshot,
)
from .settings import Settings
from .sources.files import UnreadableFile, read_text
from .sources.recipe import ReadOptions, Recipe, looks_like_recipe, read_recipe

SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache", "build", "dist"}
RECIPE_SUFFIXES = (".yaml", ".yml")
SCRIPT_SUFFIXES = (".sh",)
_NOQA = re.compile(r"#\s*sapo-lint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*))?", re.I)


@dataclass
class LintResult:
    diagnostics: list[Diagnostic]
    files: int
    unreadable: int
    recipes: list[Recipe] = field(default_factory=list)


def discover(paths: list[Path], exclude: list[str]) -> list[Path]:
    """Recipe and run-script candidates under the given paths (explicit files are always candidates), sorted,
    de-duplicated."""
    found: dict[Path, None] = {}

    def excluded(p: Path) -> bool:
        text = p.as_posix()
        return any(fnmatch.fnmatch(text, pat) or fnmatch.fnmatch(p.name, pat) for pat in exclude)

    for root in paths:
        if root.is_file():
            if not excluded(root):
                found[root] = None
            continue
        for directory, subdirs, files in os.walk(root):
            subdirs[:] = sorted(d for d in subdirs if d not in SKIP_DIRS and not excluded(Path(directory, d)))
            for name in sorted(files):
                p = Path(directory, name)
                if p.suffix in RECIPE_SUFFIXES + SCRIPT_SUFFIXES and not excluded(p):
                    found[p] = None
    return list(found)


def command_line_overrides(texts: list[str]) -> tuple[LocatedOverride, ...]:
    return tuple(locate_override(text, Location("--override", i, 1)) for i, text in enumerate(texts, 1))


def read_options(settings: Settings, cli_overrides=(), cli_verl: str | None = None,
                 cli_accelerator: str | None = None) -> ReadOptions:
    """Defaults for every recipe of a run: the command line first, then `[tool.sapo-lint]`, then the installed
    verl, then the built-in defaults."""
    return ReadOptions(
        default_verl=settings.verl_version or installed_verl_version() or DEFAULT_VERL_VERSION,
        stack=Stack(settings.megatron_core or DEFAULT_MEGATRON_CORE, settings.mbridge or DEFAULT_MBRIDGE),
        cli_verl=cli_verl,
        cli_overrides=command_line_overrides(list(cli_overrides)),
        cli_accelerator=cli_accelerator,
        resources=settings.resources(),
    )


def lint_paths(paths: list[Path], settings: Settings, cli_overrides: list[str] = (), cli_verl: str | None = None,
               cli_accelerator: str | None = None) -> LintResult:
    options = read_options(settings, cli_overrides, cli_verl, cli_accelerator)
    active = [r for code, r in _rules.RULES.items() if settings.enabled(code)]
    diagnostics: list[Diagnostic] = []
    result = LintResult(diagnostics, 0, 0)
    files = discover(paths, settings.exclude)
    scripts = [p for p in files if p.suffix in SCRIPT_SUFFIXES]
    shellcheck = _shellcheck(scripts) if settings.shellcheck and scripts else {}
    for path in files:
        try:
            source = read_text(path)
        except UnreadableFile as exc:
            result.files += 1
            result.unreadable += 1
            diagnostics.append(UNREADABLE_FILE.diagnostic(Location(str(path)), str(exc)))
            continue
        if path.suffix in SCRIPT_SUFFIXES:
            from .rules.nm_naming import naming_diagnostics
            from .sources.bash import read_script

            read = read_script(source, options)
            found = [*read.diagnostics, *shellcheck.get(str(path), []),
                     *naming_diagnostics(path, settings.naming_ignore_dirs, settings.naming_ignore_files)]
            found.extend(_lint_commands(read.commands, read.verl_version or options.cli_verl or options.default_verl,
                                        active, Location(source.path)))
        elif looks_like_recipe(source.text):
            read = read_recipe(source, options)
            found = list(read.diagnostics)
            if read.recipe is not None:
                result.recipes.append(read.recipe)
                found.extend(_lint_commands(read.recipe.commands, read.recipe.verl_version, active,
                                            _verl_key_location(source.path, source.text)))
        else:
            continue
        result.files += 1
        diagnostics.extend(_without_noqa(source, found))
    result.diagnostics = sorted(
        {(d.sort_key(), d.message): d for d in diagnostics if settings.enabled(d.code)}.values(),
        key=Diagnostic.sort_key,
    )
    return result


def _lint_commands(commands, verl_version: str, active, version_location: Location) -> list[Diagnostic]:
    """Every command (variant) against its config's snapshot, findings collapsed over the variants."""
    try:
        snapshots = {c.config_name: load_snapshot(verl_version, c.config_name) for c in commands}
    except SnapshotNotFound as exc:
        return [UNKNOWN_VERSION.diagnostic(version_location, str(exc))]
    per_variant = [lint_command(c, snapshots[c.config_name], active) for c in commands]
    return collapse_variants(per_variant, [c.variant for c in commands])


def _shellcheck(scripts: list[Path]) -> dict[str, list[Diagnostic]]:
    from .sources.shellcheck import (
        shellcheck_diagnostics,  # only when scripts are linted
    )

    return shellcheck_diagnostics(scripts)


def _verl_key_location(path: str, text: str) -> Location:
    m = re.search(r"^verl\s*:", text, re.M)
    return Location(path, text.count("\n", 0, m.start()) + 1, 1) if m else Location(path)


def _without_noqa(source, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Drop diagnostics whose line carries `# sapo-lint: noqa` (all codes) or `# sapo-lint: noqa: CODE,...`."""
    lines = source.text.splitlines()
    kept = []
    for d in diagnostics:
        in_file = d.location.path == source.path and 0 < d.location.line <= len(lines)
        line = lines[d.location.line - 1] if in_file else ""
        m = _NOQA.search(line)
        if m and (m.group("codes") is None or d.code in {c.strip().upper() for c in m.group("codes").split(",")}):
            continue
        kept.append(d)
    return kept
