"""Diagnostics: what a rule reports, where, and how bad it is."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import NamedTuple


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Location(NamedTuple):
    """A 1-based line and column in a file (column points at the override's first character)."""

    path: str
    line: int = 1
    column: int = 1


@dataclass(frozen=True)
class Diagnostic:
    location: Location
    code: str
    name: str
    severity: Severity
    message: str
    variant: str | None = None
    # Replacement text for the override's key (or the whole override for CLI text) when the fix is mechanical.
    fix: str | None = None
    # The text the fix replaces at `location` (the override's key as written); not part of any output format.
    replaces: str | None = field(default=None, compare=False)

    def with_variant(self, variant: str | None) -> Diagnostic:
        return replace(self, variant=variant)

    def sort_key(self) -> tuple:
        return (self.location.path, self.location.line, self.location.column, self.code, self.variant or "")
