"""Markers: a value that cannot be evaluated holds a private-use character standing for the construct (its text
and why it cannot be evaluated), so that callers can tell where it ends up and report it as written."""

from __future__ import annotations

import re
import sys

_MARK_BASE = 0xF0000  # private-use plane: one character per unresolved construct

NEVER_SET = "never set in the script"
ARGUMENTS = "an argument the script is given"  # the script is read as called without knowing its arguments


def construct_text(description: str) -> str:
    """The construct a marker stands for, as written (its description without the reason)."""
    return description.split(" (", 1)[0]


def environment_name(description: str) -> str | None:
    """The variable a marker stands for when it is one the script reads but never sets ($HOME), else None."""
    text = construct_text(description)
    if description.endswith(f"({NEVER_SET})") and text.startswith("$"):
        return text.lstrip("${").rstrip("}")
    return None


_MARKER = re.compile("[\U000f0000-\U0010ffff]")  # where markers can be (`_MARK_BASE` up)


class Marks(dict):
    """Marker character -> the construct it stands for (its text, then the reason in parentheses), shared by the
    variants of a script; with the reverse index, so that a script of 50,000 constructs does not search them all
    for each one."""

    def __init__(self) -> None:
        super().__init__()
        self.of: dict[str, str] = {}  # construct -> its marker
        # script source -> its words already expanded (`expansion._Expanded`): shared by the variants as the markers
        # in their fields are, so that a word is expanded once for the values it reads
        self.expanded: dict[bytes, object] = {}

    def marker(self, construct: str) -> str:
        """The construct's marker, made on first use; the last private-use character stands for every construct
        past the 131,071st."""
        found = self.of.get(construct)
        if found is None:
            if _MARK_BASE + len(self) >= sys.maxunicode:
                construct = _TOO_MANY_CONSTRUCTS
                found = self.of.get(construct)
            if found is None:
                found = chr(_MARK_BASE + len(self))
                self[found] = construct
                self.of[construct] = found
        return found


_TOO_MANY_CONSTRUCTS = f"… (one of more than {sys.maxunicode - _MARK_BASE:,} constructs that cannot be evaluated)"


def markers(s: str, marks: dict[str, str]) -> list[str]:
    """The marker characters in a text, in order."""
    return [ch for ch in _MARKER.findall(s) if ch in marks]


def after_markers(s: str, marks: dict[str, str]) -> str | None:
    """The text after the last marker (`python3` of `${CONDA_BIN}python3`); None when there is no marker."""
    found = markers(s, marks)
    return None if not found else s[s.rfind(found[-1]) + 1 :]


def readable(s: str, marks: dict[str, str]) -> str:
    """The text with each marker replaced by the construct it stands for (without the reason)."""
    return _MARKER.sub(lambda m: construct_text(marks[m.group()]) if m.group() in marks else m.group(), s)
