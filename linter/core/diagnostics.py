"""Diagnostics: what a rule reports, where, and how bad it is.

Record rule for the whole project: an immutable record is a `typing.NamedTuple` (defining a frozen dataclass
costs ~1.4 ms at import, a NamedTuple ~0.2 ms, and every `sapo-lint` run pays for each class it imports); a
mutable record is a `dataclass(slots=True)`; no immutable record holds a mutable container.
"""

from __future__ import annotations

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


class Diagnostic(NamedTuple):
    location: Location
    code: str
    name: str
    severity: Severity
    message: str
    variant: str | None = None
    # Replacement text for the override's key (or the whole override for CLI text) when the fix is mechanical.
    fix: str | None = None
    # The text the fix replaces at `location` (the override's key as written); not part of any output format.
    replaces: str | None = None

    def with_variant(self, variant: str | None) -> Diagnostic:
        return self._replace(variant=variant)

    def as_dict(self) -> dict:
        """The JSON record of a finding (README, "Usage": the `json` format's `diagnostics` items)."""
        return {
            "path": self.location.path, "line": self.location.line, "column": self.location.column,
            "code": self.code, "name": self.name, "severity": self.severity.value, "message": self.message,
            "variant": self.variant, "fix": self.fix,
        }

    def text_line(self, code: str | None = None) -> str:
        """`path:line:col: CODE message [variant] (fix: ...)`; `code` replaces the code's text (e.g. coloured)."""
        variant = f" [{self.variant}]" if self.variant else ""
        fix = f" (fix: {self.fix})" if self.fix else ""
        where = f"{self.location.path}:{self.location.line}:{self.location.column}"
        return f"{where}: {code or self.code} {self.message}{variant}{fix}"

    def sort_key(self) -> tuple:
        return (self.location.path, self.location.line, self.location.column, self.code, self.variant or "")
