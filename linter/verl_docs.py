"""The comments verl's config YAML carries for its keys (`schemas/verl-docs/<version>.json`, FORMAT.md), for the
language server's hover and `sapo-lint schema export`'s descriptions. Never read on the lint path: linting loads only
the snapshot (`schema.py`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from typing import NamedTuple

from .schema import SCHEMA_DIR, selection_key

DOCS_DIR = SCHEMA_DIR / "verl-docs"
# A committed version names a file: letters, digits, dots, `+` and `-` only (as `schema._VERSION`).
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+-]*")


class KeyComment(NamedTuple):
    text: str  # the comment, without `#`, lines joined with "\n"
    file: str  # the config file that carries it, below the verl package (`trainer/config/actor/actor.yaml`)


class VerlDocs:
    """One verl version's comments document: each config file's comments on its keys, and where each file lands in
    each config's trees (the files of each selection in merge order; each group option's files)."""

    __slots__ = ("configs", "files", "options", "version")

    def __init__(self, data: dict) -> None:
        self.version: str = data["verl_version"]
        self.files: dict[str, dict[str, str]] = data["files"]
        self.configs: dict[str, dict[str, list[list[str]]]] = data["configs"]
        self.options: dict[str, list[list[str]]] = data["options"]

    def comment(
        self, config_name: str, selection: dict[str, str], path: str, changes: Iterable = (), packages: Iterable = ()
    ) -> KeyComment | None:
        """The comment on `path` in the tree of a config and group selection, after config-group overrides
        `changes` (`schema.GroupChange`s, in defaults-list order; `packages`: every placement's package, whose keys
        a replaced option's package keeps): that of the last config file in merge order that comments the key.
        None where no file does, or the config or selection is not in the document."""
        layers = self.configs.get(config_name, {}).get(selection_key(selection))
        if layers is None:
            return None
        packages = tuple(packages)
        for change in changes:
            layers = self._changed(layers, change, packages)
        for file, package in reversed(layers):
            key = _below(path, package)
            said = self.files.get(file, {}).get(key) if key else None
            if said is not None:
                return KeyComment(said, file)
        return None

    def _changed(self, layers: list[list[str]], change, packages: tuple[str, ...]) -> list[list[str]]:
        """The layers after one group override: the files at and below its package dropped (not those of another
        placement nested there: `~critic` keeps `critic.model`), unless it appends; the new option's files added."""
        at = change.package
        if not change.append:
            nested = [p for p in packages if p != at and _below(p, at)]
            layers = [
                [f, p] for f, p in layers if _below(p, at) is None or any(_below(p, n) is not None for n in nested)
            ]
        if change.option is not None:
            for file, relative in self.options.get(f"{change.group}/{change.option}", []):
                layers = [*layers, [file, f"{at}.{relative}" if at and relative else at or relative]]
        return layers


def _below(path: str, package: str) -> str | None:
    """`path` relative to `package` ('' for the package itself); None when it is not at or below it."""
    if not package:
        return path
    if path == package:
        return ""
    return path[len(package) + 1 :] if path.startswith(package + ".") else None


@cache
def load_docs(verl_version: str) -> VerlDocs | None:
    """The comments document of a committed verl snapshot; None for a snapshot built from a tree (a path), a version
    without one, or a file that cannot be read."""
    if not _VERSION.fullmatch(verl_version) or ".." in verl_version:
        return None
    try:
        return VerlDocs(json.loads((DOCS_DIR / f"{verl_version}.json").read_bytes()))
    except (OSError, ValueError, KeyError):
        return None


def markdown_quote(text: str) -> str:
    """A comment as a Markdown block quote, its own Markdown and HTML characters escaped."""
    escaped = re.sub(r"([\\`*_<>\[\]#|])", r"\\\1", text)
    return "\n".join(f"> {line}" if line else ">" for line in escaped.split("\n"))
