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


# The path of a finding about a command-line override (`--override`); its line is the override's number.
COMMAND_LINE = "--override"


class Location(NamedTuple):
    """A 1-based line and column in a file (column points at the override's first character)."""

    path: str
    line: int = 1
    column: int = 1


class Applicability(str, Enum):
    """How far a fix can be trusted (ruff's levels): `--fix` applies SAFE ones, `--fix --unsafe-fixes` UNSAFE ones
    too (the fix may change what the run does: a guess at the key meant), and a DISPLAY_ONLY fix is only shown
    (its text is not written where the finding is, e.g. a key inside a merged mapping)."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


class Edit(NamedTuple):
    """Replace `replaces`, written at `line`:`column` of the finding's file, with `content`; `replaces` is None
    where the text to replace is not written there as such (only a DISPLAY_ONLY fix has such an edit). A `replaces`
    that ends in a line break takes the line's own break with it (a removed line); a line break in `content` is
    written as the line's own (a line added after it)."""

    line: int
    column: int
    replaces: str | None
    content: str


class Fix(NamedTuple):
    """What a finding's fix changes in its file, and how far it can be trusted."""

    edits: tuple[Edit, ...]
    applicability: Applicability
    # How the fix reads where its edits' text would not say it: the override a new line adds, ``remove `k=v` ``
    title: str | None = None

    @property
    def text(self) -> str:
        """The suggested replacement text (the JSON `fix`): its title, else the edits' contents."""
        return self.title or "; ".join(e.content for e in self.edits)

    def applied(self, unsafe: bool) -> bool:
        """Whether `--fix` applies it (`unsafe`: with --unsafe-fixes)."""
        return self.applicability is Applicability.SAFE or (unsafe and self.applicability is Applicability.UNSAFE)


FIX_LABEL = {Applicability.SAFE: "fix", Applicability.UNSAFE: "unsafe fix", Applicability.DISPLAY_ONLY: "hint"}


class Diagnostic(NamedTuple):
    location: Location
    code: str
    name: str
    severity: Severity
    message: str
    variant: str | None = None
    fix: Fix | None = None  # the new text of the override's key (or of the whole override for CLI text)
    # The other settings the finding depends on, where they are written (a topology error's world-size lines):
    # the finding itself is at the setting whose value breaks the check.
    related: tuple[Location, ...] = ()
    # The other findings of the same cause (`rules.one_finding_per_cause`): its family's rules failing at the same
    # setting, each a complete finding with its own code and message, reported inside this one.
    also: tuple[Diagnostic, ...] = ()

    def with_variant(self, variant: str | None) -> Diagnostic:
        return self._replace(variant=variant)

    def as_dict(self) -> dict:
        """The JSON record of a finding (README, "Usage": the `json` format's `diagnostics` items)."""
        return {
            "path": self.location.path,
            "line": self.location.line,
            "column": self.location.column,
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "variant": self.variant,
            "fix": self.fix and self.fix.text,
            "fix_applicability": self.fix and self.fix.applicability.value,
            "related": [{"path": r.path, "line": r.line, "column": r.column} for r in self.related],
            "also": [d.as_dict() for d in self.also],
        }

    @property
    def codes(self) -> tuple[str, ...]:
        """Its code and those of the findings of the same cause it reports (`also`)."""
        return (self.code, *(d.code for d in self.also))

    @property
    def fixes(self) -> tuple[Fix, ...]:
        """Its fix and those of the findings of the same cause it reports."""
        return tuple(d.fix for d in (self, *self.also) if d.fix is not None)

    def text_line(self, code: str | None = None) -> str:
        """`path:line:col: CODE message [variant] (fix: ...) (see also ...) (also CODE, ...)` (`unsafe fix:`, or
        `hint:` for a fix that is only shown; `see also` the related locations; `also` the codes of the same cause,
        whose messages JSON and SARIF give); `code` replaces the code's text (e.g. coloured)."""
        variant = f" [{self.variant}]" if self.variant else ""
        fix = f" ({FIX_LABEL[self.fix.applicability]}: {self.fix.text})" if self.fix else ""
        see_also = f" ({self.see_also()})" if self.related else ""
        where = f"{self.location.path}:{self.location.line}:{self.location.column}"
        return f"{where}: {code or self.code} {self.message}{variant}{fix}{see_also}{self.also_text()}"

    def also_text(self) -> str:
        """` (also fails TP003 heads-tp, TP009 ffn-tp at this setting)`, or nothing without findings of the same
        cause."""
        if not self.also:
            return ""
        return " (also fails " + ", ".join(f"{d.code} {d.name}" for d in self.also) + " at this setting)"

    def also_messages(self) -> str:
        """` Also TP003 heads-tp: <its message>` for each finding of the same cause: where a format has room for one
        message (GitHub annotations, SARIF results)."""
        return "".join(f" Also {d.code} {d.name}: {d.message}" for d in self.also)

    def see_also(self) -> str:
        """`see also lines 10, 11`: the related locations, by line in the finding's own file, else by `path:line`
        (JSON and SARIF give their columns too)."""
        here = list(dict.fromkeys(r.line for r in self.related if r.path == self.location.path))
        elsewhere = list(dict.fromkeys(f"{r.path}:{r.line}" for r in self.related if r.path != self.location.path))
        lines = [("line " if len(here) == 1 else "lines ") + ", ".join(map(str, here))] if here else []
        return "see also " + ", ".join(lines + elsewhere)

    def sort_key(self) -> tuple:
        return (self.location.path, self.location.line, self.location.column, self.code, self.variant or "")
