"""One version of a document, analysed off the server's event loop: the findings `sapo-lint` reports for its text
(the CLI's own `lint_text`, with the `[tool.sapo-lint]` of the file's project and the verl the CLI would find for
its path), and its trainer commands resolved as the rules see them, which completion and hover read keys from."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from .. import api
from ..core.budget import FILE_WORK_UNITS, work_budget
from ..core.command import Command, Stack
from ..core.diagnostics import Diagnostic, Location
from ..core.problems import FileUnreadable
from ..engine import LintContext
from ..lint import lint_text
from ..rules import findings
from ..schema import DEFAULT_MBRIDGE, DEFAULT_MEGATRON_CORE, SnapshotNotFound
from ..settings import Settings, SettingsError, SettingsFinder
from ..sources.files import TextFile, UnreadableFile, decode_text

# A script whose loops and switches make more trainer commands than this has its keys read from the first ones:
# completion and hover need one command's tree, not every variant's.
MAX_RESOLVED_COMMANDS = 32
_CONFIG_NAME = re.compile(r"^config_name\s*:\s*[\"']?([\w.-]+)", re.MULTILINE)


class CommandKeys(NamedTuple):
    """One trainer command as the rules see it, and the lines of the document it is written on."""

    context: LintContext
    lines: frozenset[int]  # 1-based: its call, its continued lines, the lines its overrides come from


class Analysis(NamedTuple):
    """What one version of a document gave."""

    version: int | None
    text: str
    diagnostics: list[Diagnostic]
    commands: tuple[CommandKeys, ...]
    # Keys for a document with no command to resolve (a recipe that does not yet read as one): its verl's config
    fallback: LintContext | None
    verl: tuple[str, ...]  # how the verl and the libraries it is checked with were chosen (`stack.ResolvedStack.why`)
    settings_error: str | None = None  # a bad `[tool.sapo-lint]`: nothing is linted, as the CLI exits 2

    def keys_at(self, line: int) -> CommandKeys | None:
        """The command written on a 1-based line, else the first one."""
        return next((c for c in self.commands if line in c.lines), self.commands[0] if self.commands else None)

    def context_at(self, line: int) -> LintContext | None:
        found = self.keys_at(line)
        return found.context if found is not None else self.fallback


def analyse(path: str, text: str, version: int | None) -> Analysis:
    """Lint `text` as the file at `path` (a fresh `SettingsFinder` each time: an edited pyproject.toml counts from the
    next change) and resolve its trainer commands."""
    try:
        settings = SettingsFinder().for_path(Path(path))
    except SettingsError as exc:
        return Analysis(version, text, [], (), None, (), str(exc))
    try:
        source = decode_text(path, text.encode("utf-8"))  # the CLI's terms for standard input: size, no NUL bytes
    except UnreadableFile as exc:
        return Analysis(
            version, text, findings([FileUnreadable(location=Location(path), reason=str(exc))]), (), None, ()
        )
    result = lint_text(source, settings)
    commands, fallback = _resolved(source, settings)
    stack = result.verl.get(path)
    return Analysis(version, text, result.diagnostics, commands, fallback, stack.why if stack is not None else ())


def _resolved(source: TextFile, settings: Settings) -> tuple[tuple[CommandKeys, ...], LintContext | None]:
    """The document's trainer commands resolved against their snapshots, within the work budget of one file (a file
    that spends it gets no completions; its lint already said RF011)."""
    try:
        with work_budget(FILE_WORK_UNITS):
            loaded = api.load_text(source, api.read_options(settings))
            if loaded is None:
                return (), None
            resolved = []
            for command in loaded.commands[:MAX_RESOLVED_COMMANDS]:
                try:
                    context = api.resolve(command, loaded.verl_version, loaded)
                except SnapshotNotFound:
                    continue
                resolved.append(CommandKeys(context, _lines(command, source.path)))
            if resolved:
                return tuple(resolved), None
            config_name = _CONFIG_NAME.search(source.text) if loaded.kind == "recipe" else None
            stack = (
                loaded.stack.libraries if loaded.stack is not None else Stack(DEFAULT_MEGATRON_CORE, DEFAULT_MBRIDGE)
            )
            bare = Command(config_name.group(1) if config_name else "ppo_trainer", (), stack)
            return (), api.resolve(bare, loaded.verl_version, loaded)
    except Exception:  # noqa: BLE001 - the lint already reported it (RF011, RF012); a document without keys stays open
        return (), None


def _lines(command: Command, path: str) -> frozenset[int]:
    """The lines a command's overrides are written on, and for a script's call, every line from the call to the
    line after its last override (where the next one is being typed)."""
    own = {o.location.line for o in command.overrides if o.location.path == path}
    if command.origin is None or command.origin.path != path:
        return frozenset(own)
    last = max((line for line in own if line >= command.origin.line), default=command.origin.line)
    return frozenset(own | set(range(command.origin.line, last + 2)))
