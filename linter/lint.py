"""Lint files: discover them, read and check each through `api`, add shellcheck's findings, filter and sort."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import api
from .core.diagnostics import Diagnostic, Location
from .rules.rf_recipe import NOT_LINTABLE, UNREADABLE_FILE
from .rules.sh_shellcheck import reported_by_default
from .settings import Settings
from .sources.files import UnreadableFile, is_regular_file
from .sources.recipe import Recipe

SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache", "build", "dist"}


@dataclass(slots=True)
class LintResult:
    diagnostics: list[Diagnostic]
    files: int  # files linted (recipes and scripts), unreadable ones included
    unreadable: int  # files and directories that could not be read
    recipes: list[Recipe] = field(default_factory=list)
    named_but_skipped: int = 0  # files named on the command line that are neither a recipe nor a script


def discover(paths: list[Path], exclude: list[str]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Recipe and run-script candidates under the given paths, sorted and de-duplicated (a path named explicitly
    is always a candidate, whatever its suffix), and the directories that could not be listed, with why."""
    found: dict[Path, None] = {}
    unlisted: list[tuple[Path, str]] = []

    def excluded(p: Path) -> bool:
        text = p.as_posix()
        return any(fnmatch.fnmatch(text, pat) or fnmatch.fnmatch(p.name, pat) for pat in exclude)

    for root in paths:
        if not root.is_dir():
            if not excluded(root):
                found[root] = None
            continue
        for directory, subdirs, files in os.walk(root, onerror=lambda e: unlisted.append((Path(e.filename), e.strerror))):
            subdirs[:] = sorted(d for d in subdirs if d not in SKIP_DIRS and not excluded(Path(directory, d)))
            for name in sorted(files):
                p = Path(directory, name)
                if p.suffix in api.RECIPE_SUFFIXES + api.SCRIPT_SUFFIXES and not excluded(p):
                    found[p] = None
    return list(found), unlisted


def lint_paths(paths: list[Path], settings: Settings, cli_overrides: list[str] = (), cli_verl: str | None = None,
               cli_accelerator: str | None = None) -> LintResult:
    options = api.read_options(settings, cli_overrides, cli_verl, cli_accelerator)
    diagnostics: list[Diagnostic] = []
    result = LintResult(diagnostics, 0, 0)
    files, unlisted = discover(paths, settings.exclude)
    for directory, why in unlisted:
        result.unreadable += 1
        diagnostics.append(UNREADABLE_FILE.diagnostic(Location(str(directory)), f"cannot list directory: {why}"))
    explicit = set(paths)
    scripts = [p for p in files if p.suffix in api.SCRIPT_SUFFIXES and is_regular_file(p)]
    shellcheck = _shellcheck(scripts) if settings.shellcheck and scripts else {}
    for path in files:
        try:
            loaded = api.load(path, options)
        except UnreadableFile as exc:
            result.files += 1
            result.unreadable += 1
            diagnostics.append(UNREADABLE_FILE.diagnostic(Location(str(path)), str(exc)))
            continue
        if loaded is None:
            if path in explicit:  # named on the command line but nothing to lint: say so rather than pass silently
                result.named_but_skipped += 1
                diagnostics.append(NOT_LINTABLE.diagnostic(Location(str(path)), f"no recipe or script: {path} "
                                   "(recipes are *.yaml/*.yml with a top-level `recipe:` key, run scripts *.sh)"))
            continue
        if loaded.recipe is not None:
            result.recipes.append(loaded.recipe)
        result.files += 1
        diagnostics.extend(api.check(loaded, settings, _shown(shellcheck.get(str(path), ()), loaded, settings)))
    result.diagnostics = sorted(
        {(d.sort_key(), d.message): d for d in diagnostics if settings.enabled(d.code)}.values(),
        key=Diagnostic.sort_key,
    )
    return result


def _shown(found: list[Diagnostic], loaded: api.Loaded, settings: Settings) -> list[Diagnostic]:
    """The shellcheck findings in the default set (linter/rules/sh_shellcheck.py), and the opt-in ones selected."""
    splits = _split_lines(loaded)
    return [d for d in found if settings.explicitly_selected(d.code)
            or reported_by_default(d.code, d.severity, d.location.line in splits)]


def _split_lines(loaded: api.Loaded) -> set[int]:
    """Lines where the bash reader split one word into several and one piece is not an override (the value of an
    unquoted `$VAR` held whitespace): every such piece keeps the location of the word it came from."""
    lines = set()
    for command in loaded.commands:
        pieces: dict[tuple[int, int], list] = {}
        for o in command.overrides:
            if o.location.path == loaded.source.path:
                pieces.setdefault((o.location.line, o.location.column), []).append(o)
        lines.update(line for (line, _), words in pieces.items()
                     if len(words) > 1 and any(w.syntax_error for w in words))
    return lines


def _shellcheck(scripts: list[Path]) -> dict[str, list[Diagnostic]]:
    from .sources.shellcheck import shellcheck_diagnostics  # only when scripts are linted

    return shellcheck_diagnostics(scripts)
