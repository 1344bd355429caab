"""The linter's one door: `load` a recipe or run script into trainer commands, `check` them.

`sapo-lint` (`lint.py`: discovery, shellcheck, reporting), `explain`, `convert` and a launcher go through here;
what they get back are the records of `core` (commands with located overrides, diagnostics) and the engine's
resolved view of one command. Nothing here prints or exits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .core.checked import NotChecked, not_checked_because
from .core.command import Command, LocatedOverride, Stack, locate_override, site_limits
from .core.device import variant_device
from .core.diagnostics import COMMAND_LINE, Diagnostic, Location
from .core.problems import NoSnapshot, ReadProblem
from .core.variants import collapse_variants, matches
from .custom_configs import config_for
from .engine import LintContext, Suggestions, lint_command
from .engine import resolve as resolve_against
from .rules import findings, load_rules, one_finding_per_cause, without_superseded
from .rules.rf_recipe import RECIPE_SCHEMA
from .schema import (
    ConfigNotInSnapshot,
    Snapshot,
    SnapshotNotFound,
    load_snapshot,
    newest_release,
    resolve_verl_version,
)
from .settings import Settings
from .sources.files import TextFile, UnreadableFile, read_text
from .sources.options import ReadOptions
from .stack import ResolvedStack
from .verl_source import VerlChoice

if TYPE_CHECKING:  # the YAML reader only when a recipe is read: a script's lint imports no YAML parser
    from .sources.recipe import Recipe

RECIPE_SUFFIXES = (".yaml", ".yml")
SCRIPT_SUFFIXES = (".sh",)
NOQA = re.compile(r"#\s*sapo-lint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*))?", re.IGNORECASE)


@dataclass(slots=True)
class Loaded:
    """One file read into trainer commands, one per variant."""

    source: TextFile
    kind: str  # "recipe" | "script"
    commands: list[Command]
    diagnostics: list[Diagnostic]  # about the file itself (RF, SH); `check` adds the rules over the commands
    verl_version: str  # the schema snapshot the commands are checked against
    version_location: Location  # where a missing snapshot is reported
    recipe: Recipe | None = None  # a recipe's data; None for scripts and for recipes that could not be read
    # The variant each axis takes when a run chooses none, as label tokens (`RECOMPUTE=selective`): a recipe's
    # `variant_defaults`, the values a script's switch variables have when its caller sets none
    variant_defaults: tuple[str, ...] = ()
    problems: tuple[ReadProblem, ...] = ()  # what `diagnostics` were made from: why nothing may be checked
    stack: ResolvedStack | None = None  # what it is checked against, and why (`stack`); None: nothing to check

    @property
    def verl(self) -> VerlChoice | None:
        """Which verl, found where (`verl_source`); None: a script with no trainer call."""
        return self.stack.verl if self.stack is not None else None


class FileCheck(NamedTuple):
    """`check_file`'s answer: every finding, and why no trainer command of the file was checked (None: one was)."""

    diagnostics: list[Diagnostic]
    not_checked: NotChecked | None


def command_line_overrides(texts: Iterable[str]) -> tuple[LocatedOverride, ...]:
    """`--override` / launch-time `key=value` arguments, located as `--override:N`."""
    return tuple(locate_override(text, Location(COMMAND_LINE, i, 1)) for i, text in enumerate(texts, 1))


def read_options(
    settings: Settings,
    cli_overrides: Iterable[str] = (),
    cli_verl: str | None = None,
    cli_accelerator: str | None = None,
    cli_resources: dict | None = None,
) -> ReadOptions:
    """Defaults for every file of a run: the command line first, then `[tool.sapo-lint]`, then the built-in
    defaults; each file's verl is found in `verl_source`'s order. `cli_resources`: site limits from the command line
    (they win over a recipe's `hardware` and `[tool.sapo-lint]`)."""
    return ReadOptions(
        default_verl=newest_release(),
        verl_pin=settings.verl_version,
        stack=Stack(settings.megatron_core, settings.mbridge),
        cli_verl=resolve_verl_version(cli_verl) if cli_verl else None,
        cli_verl_named=cli_verl,
        cli_overrides=command_line_overrides(cli_overrides),
        cli_accelerator=cli_accelerator,
        accelerator=settings.accelerator,
        resources=site_limits(settings.resources()),
        cli_resources=site_limits(cli_resources or {}),
        model=settings.model,
        model_dir=str(settings.config.parent) if settings.config is not None else ".",
        fetch_model_config=settings.fetch_model_config,
    )


def load(path: Path, options: ReadOptions) -> Loaded | None:
    """Read a recipe (`*.yaml`/`*.yml` with a top-level `recipe:` key) or a run script (`*.sh`) into commands;
    None for any other file. Raises `UnreadableFile` (its message says why, in one line)."""
    if path.suffix not in RECIPE_SUFFIXES + SCRIPT_SUFFIXES:
        return None
    return load_text(read_text(path), options)


def load_text(source: TextFile, options: ReadOptions) -> Loaded | None:
    """`load` of text already read (standard input): its path's suffix says recipe or script."""
    suffix = Path(source.path).suffix
    if suffix not in RECIPE_SUFFIXES + SCRIPT_SUFFIXES:
        return None
    if suffix in SCRIPT_SUFFIXES:
        from .sources.bash import read_script  # tree-sitter only when a script is linted

        script = read_script(source, options)
        return Loaded(
            source,
            "script",
            script.commands,
            findings(script.problems),
            script.verl_version or options.cli_verl or options.default_verl,
            Location(source.path),
            variant_defaults=tuple(f"{var}={value or 'unset'}" for var, value in script.defaults.items()),
            problems=tuple(script.problems),
            stack=script.stack,
        )
    from .sources.recipe import looks_like_recipe, read_recipe

    if not looks_like_recipe(source.text):
        return None
    read = read_recipe(source, options)
    recipe = read.recipe
    return Loaded(
        source,
        "recipe",
        recipe.commands if recipe else [],
        findings(read.problems),
        recipe.verl_version if recipe else options.default_verl,
        _verl_key_location(source),
        recipe,
        recipe.variant_defaults if recipe else (),
        tuple(read.problems),
        read.stack if recipe else None,
    )


def check(loaded: Loaded, settings: Settings, extra: Iterable[Diagnostic] = ()) -> list[Diagnostic]:
    """Every finding for one loaded file (`check_file`)."""
    return check_file(loaded, settings, extra).diagnostics


def check_file(loaded: Loaded, settings: Settings, extra: Iterable[Diagnostic] = ()) -> FileCheck:
    """Every finding for one loaded file, variants collapsed, `# sapo-lint: noqa` applied: the file's own
    diagnostics, `extra` ones found elsewhere (shellcheck), the naming rules for scripts, and every enabled rule
    over every command; and whether any command was checked against a snapshot (`core.checked`). Not filtered by
    `select`/`ignore` (the caller decides). A recipe that violates its schema (RF001) gets no config rule: the rules
    would judge a config the recipe does not describe (a recipe of only `recipe:` has no overrides, so every
    required setting looks missing)."""
    found = [*loaded.diagnostics, *extra]
    if loaded.kind == "script" and loaded.commands:  # a run script; a helper without a trainer call is no example
        from .rules.nm_naming import naming_diagnostics

        found.extend(naming_diagnostics(Path(loaded.source.path), settings.naming_scope()))
    problems = list(loaded.problems)
    checked = 0
    if loaded.commands and not any(d.code == RECIPE_SCHEMA.code for d in loaded.diagnostics):
        checked, unchecked, linted = _lint_commands(loaded, load_rules(settings.enabled))
        problems.extend(unchecked)
        found.extend(findings(unchecked) + linted)
    diagnostics = _without_noqa(loaded.source, without_superseded(found), continued_lines=loaded.kind == "script")
    return FileCheck(diagnostics, None if checked else not_checked_because(problems))


def reported(found: Iterable[Diagnostic], settings: Settings) -> list[Diagnostic]:
    """What a run reports of one file's findings (`check`): sorted, the codes `settings` enable, one finding per
    cause (`rules.one_finding_per_cause`)."""
    return one_finding_per_cause(sorted((d for d in found if settings.enabled(d.code)), key=Diagnostic.sort_key))


def resolve(command: Command, verl_version: str, loaded: Loaded | None = None) -> LintContext:
    """One command resolved against its snapshot, as the rules see it; `loaded`: the file it comes from, where it
    names a config directory of its own (`custom_configs.config_for`). Raises `schema.SnapshotNotFound`."""
    file = loaded.source.path if loaded is not None else ""
    reference, name = config_for(verl_version, loaded.verl if loaded is not None else None, command, file)
    return resolve_against(command, load_snapshot(reference, name))


def select(commands: list[Command], wanted: Iterable[str]) -> list[Command]:
    """The commands whose variant has every `AXIS=value` of one of the wanted selections (all when none)."""
    wanted = tuple(wanted)
    return [c for c in commands if matches(c.variant, wanted)]


def _lint_commands(loaded: Loaded, rules) -> tuple[int, list[NoSnapshot], list[Diagnostic]]:
    """Every command (variant) against its config's snapshot (a config directory of its own composed as Hydra would:
    `custom_configs.config_for`): how many were checked, the configs (or the version) without one, and the findings,
    collapsed over the variants."""
    snapshots: dict[tuple[str | None, str], Snapshot | None] = {}  # (config directory, name) -> its snapshot
    unchecked: list[NoSnapshot] = []
    version = loaded.verl_version
    if loaded.verl is not None and loaded.verl.unbuilt is not None:
        return 0, [], []  # the verl it runs cannot be snapshotted (reported once, RF004): no other verl judges it
    try:
        for command in loaded.commands:
            config = (command.config_path, command.config_name)
            if config in snapshots:
                continue
            snapshots[config] = None
            try:
                reference, name = config_for(version, loaded.verl, command, loaded.source.path)
                snapshots[config] = load_snapshot(reference, name)
            except ConfigNotInSnapshot as exc:  # the version is known: the other configs are still checked
                unchecked.append(
                    NoSnapshot(
                        location=loaded.version_location,
                        reason=str(exc),
                        config_only=True,
                        verl_version=version,
                        config_name=command.config_name,
                        placeholder=getattr(exc, "placeholder", False),
                    )
                )
    except SnapshotNotFound as exc:
        return 0, [NoSnapshot(location=loaded.version_location, reason=str(exc), verl_version=version)], []
    checked = [c for c in loaded.commands if snapshots[c.config_path, c.config_name] is not None]
    suggestions = Suggestions()  # the file's variants share its did-you-mean suggestions
    # A variant whose command is another's but for its label, and whose label names the same device (all that a rule
    # reads of it: `core.device.variant_device`), has that one's findings, under its own label: linted once. Commands
    # are compared whole only where what is quick to compare agrees (hashing every override took longer than the
    # variants it spared on the shipped recipes).
    linted: dict[tuple, list[tuple[Command, list[Diagnostic]]]] = {}
    per_variant = []
    for c in checked:
        unlabelled = c._replace(variant=None)
        alike = linted.setdefault((variant_device(c.variant), c.accelerator, len(c.overrides)), [])
        found = next((findings for other, findings in alike if other == unlabelled), None)
        if found is None:
            found = without_superseded(lint_command(c, snapshots[c.config_path, c.config_name], rules, suggestions))
            alike.append((unlabelled, found))
        per_variant.append([d.with_variant(c.variant) for d in found])
    return len(checked), unchecked, collapse_variants(per_variant, [c.variant for c in checked])


def _verl_key_location(source: TextFile) -> Location:
    m = re.search(r"^verl\s*:", source.text, re.MULTILINE)
    return Location(source.path, source.text.count("\n", 0, m.start()) + 1, 1) if m else Location(source.path)


def continued(line: str) -> bool:
    """Whether a line of a script ends in an odd number of backslashes: the command goes on to the next line."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def noqa_lines(lines: list[str], continued_lines: bool) -> list[int]:
    """For each line's index, the index of the line whose `# sapo-lint: noqa` covers it: the line itself, or in a
    bash script, for a line continued with `\\` (which cannot end in a comment), the line where the continued
    command ends. Found in one pass from the end: a command of 20,000 continued lines is walked once, not once per
    finding on it."""
    ends = list(range(len(lines)))
    if continued_lines:
        for index in range(len(lines) - 2, -1, -1):
            if continued(lines[index]):
                ends[index] = ends[index + 1]
    return ends


def _without_noqa(source: TextFile, diagnostics: list[Diagnostic], continued_lines: bool = False) -> list[Diagnostic]:
    """Drop diagnostics whose line carries `# sapo-lint: noqa` (all codes) or `# sapo-lint: noqa: CODE,...`
    (`noqa_lines`: on a script's continued line, also where its command ends)."""
    if not diagnostics:
        return diagnostics
    lines = source.text.splitlines()
    ends = noqa_lines(lines, continued_lines)
    suppressed: dict[int, frozenset[str] | None] = {}  # line index -> the codes its noqa names; None: every code

    def covers(index: int, code: str) -> bool:
        if index not in suppressed:  # each line read once, however many findings are on it
            m = NOQA.search(lines[index])
            suppressed[index] = (
                frozenset()
                if m is None
                else None
                if m.group("codes") is None
                else frozenset(c.strip().upper() for c in m.group("codes").split(","))
            )
        codes = suppressed[index]
        return codes is None or code in codes

    kept = []
    for d in diagnostics:
        if d.location.path == source.path and 0 < d.location.line <= len(lines):
            index = d.location.line - 1
            if covers(index, d.code) or covers(ends[index], d.code):
                continue
        kept.append(d)
    return kept


__all__ = [
    "FileCheck",
    "Loaded",
    "UnreadableFile",
    "check",
    "check_file",
    "command_line_overrides",
    "load",
    "read_options",
    "reported",
    "resolve",
    "select",
]


def read_yaml_data(path: Path) -> object:
    """The data of a YAML file a user names for the launcher (`--runtime-env`): read as the linter reads a recipe
    (a regular file up to `MAX_BYTES`, UTF-8; standard tags only; anchors and aliases expanding to at most
    `MAX_EXPANDED_NODES` nodes, nesting to `MAX_DEPTH` levels). Raises `UnreadableFile` with a one-line reason."""
    import yaml

    from .sources.yaml_nodes import AliasBomb, UnsupportedYaml, check_shape, compose, construct

    text = read_text(path).text
    try:
        node, loader = compose(text)
        if node is None:
            return None
        check_shape(node)
        return construct(loader, node)
    except (yaml.YAMLError, AliasBomb, UnsupportedYaml) as exc:
        raise UnreadableFile(" ".join(str(exc).split())) from None
