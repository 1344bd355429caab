"""How bash turns the parts of one word into fields: quoted text joins, unquoted expansions split on IFS,
`"${A[@]}"` gives one field per element; and the escapes of unquoted, double-quoted and `$'...'` text."""

from __future__ import annotations

import re

from ...core.diagnostics import Location


class FieldBuilder:
    """Builds the fields of one word the way bash does: quoted text joins, unquoted expansions split on IFS,
    `"${A[@]}"` gives one field per element (none for an empty array)."""

    def __init__(self, loc: Location):
        self.loc = loc
        self.fields: list[tuple[str, Location]] = []
        self.cur: str | None = None
        self.cur_loc: Location | None = None
        self.quoted_empty = False  # a quoted part was seen: the field exists even when empty
        self.vanished = False  # a quoted "${A[@]}" of no elements: the empty field vanishes with it

    def quoted_start(self) -> None:
        self.quoted_empty = True

    def literal(self, s: str) -> None:
        self.cur = (self.cur or "") + s

    def expanded(self, s: str, quoted: bool, split: bool) -> None:
        if quoted or not split:
            self.cur = (self.cur or "") + s
            return
        if not s:
            return
        for i, p in enumerate(re.split(r"[ \t\n]+", s)):
            if i > 0:
                self._end()
            if p:
                self.cur = (self.cur or "") + p

    def multi(self, elems: list[tuple[str, Location | None]], quoted: bool) -> None:
        if not elems:
            if quoted:
                self.vanished = True
            return
        for i, (e, loc) in enumerate(elems):
            if i > 0:
                self._end()
            if quoted:
                self.cur = (self.cur or "") + e
                self.quoted_empty = True
                self.cur_loc = loc or self.cur_loc
                continue
            for j, p in enumerate(re.split(r"[ \t\n]+", e)):
                if j > 0:
                    self._end()
                if p:
                    self.cur = (self.cur or "") + p
                    self.cur_loc = loc or self.cur_loc

    def vanish(self) -> None:
        self.vanished = True

    def _end(self) -> None:
        if self.cur is None and self.quoted_empty and not self.vanished:
            self.cur = ""
        if self.cur is not None:
            self.fields.append((self.cur, self.cur_loc or self.loc))
        self.cur, self.cur_loc, self.quoted_empty, self.vanished = None, None, False, False

    def finish(self) -> list[tuple[str, Location]]:
        self._end()
        return self.fields

    def fields_text(self) -> list[str]:
        return [f for f, _ in self.finish()]


_ESC = re.compile(r"\\(.)", re.DOTALL)


def unescape(s: str) -> str:
    """Unquoted text: a backslash-newline joins lines, any other backslash keeps the next character."""
    s = s.replace("\\\n", "")
    return _ESC.sub(lambda m: m.group(1), s)


def unescape_double_quoted(s: str) -> str:
    """Text inside "...": a backslash escapes only `$`, a backtick, `"`, a backslash and a newline."""
    s = s.replace("\\\n", "")
    return re.sub(r'\\([$`"\\])', r"\1", s)


def ansi_c(s: str) -> str:
    """The body of a `$'...'` string with its C escapes decoded."""
    table = {
        "n": "\n",
        "t": "\t",
        "r": "\r",
        "\\": "\\",
        "'": "'",
        '"': '"',
        "a": "\a",
        "b": "\b",
        "e": "\x1b",
        "f": "\f",
        "v": "\v",
    }

    def one(m: re.Match) -> str:
        c = m.group(1)
        if c[0] == "x":
            return chr(int(c[1:], 16)) if len(c) > 1 else "\\x"
        if c[0] in "01234567":
            return chr(int(c, 8) & 0xFF)
        return table.get(c, "\\" + c)

    return re.sub(r"\\(x[0-9A-Fa-f]{0,2}|[0-7]{1,3}|.)", one, s, flags=re.DOTALL)
