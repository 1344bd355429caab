"""`[tool.sapo-lint]` in the linted repository's pyproject.toml, merged with command-line options."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class SettingsError(ValueError):
    """Bad configuration; the message is shown as is and the run exits 2."""


# key in pyproject -> (attribute, expected type, help)
KEYS = {
    "select": ("select", list, "rule codes or prefixes to enable (default: all)"),
    "ignore": ("ignore", list, "rule codes or prefixes to disable"),
    "exclude": ("exclude", list, "glob patterns of paths not to lint"),
    "verl-version": ("verl_version", str, "verl schema snapshot when a recipe names none"),
    "megatron-core-version": ("megatron_core", str, "megatron-core snapshot for pass-through dict checks"),
    "mbridge-version": ("mbridge", str, "mbridge snapshot (a release such as 0.15.1, or git-main)"),
    "warnings-as-errors": ("warnings_as_errors", bool, "exit 1 on warnings too"),
}


@dataclass
class Settings:
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    verl_version: str | None = None
    megatron_core: str | None = None
    mbridge: str | None = None
    warnings_as_errors: bool = False

    def enabled(self, code: str) -> bool:
        selected = not self.select or any(code.startswith(p) for p in self.select)
        return selected and not any(code.startswith(p) for p in self.ignore)


def find_pyproject(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_settings(start: Path) -> tuple[Settings, Path | None]:
    path = find_pyproject(start.resolve())
    settings = Settings()
    if path is None:
        return settings, None
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("sapo-lint", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read [tool.sapo-lint]: {exc}") from None
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise SettingsError(
            f"{path}: unknown key(s) in [tool.sapo-lint]: {', '.join(unknown)}; valid keys: {', '.join(KEYS)}"
        )
    for key, value in table.items():
        attribute, expected, _ = KEYS[key]
        if not isinstance(value, expected) or (expected is list and not all(isinstance(v, str) for v in value)):
            kind = "a list of strings" if expected is list else expected.__name__
            raise SettingsError(f"{path}: [tool.sapo-lint] {key} must be {kind}")
        setattr(settings, attribute, value)
    return settings, path
