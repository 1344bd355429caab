"""How bash turns the parts of one word into fields: quoted text joins, unquoted expansions split on IFS,
`"${A[@]}"` gives one field per element; and the escapes of unquoted, double-quoted and `$'...'` text."""

from __future__ import annotations

import re

from ...core.diagnostics import Location

DEFAULT_IFS = " \t\n"
_IFS_WHITESPACE = " \t\n"


class FieldBuilder:
    """Builds the fields of one word the way bash does: quoted text joins, unquoted expansions split on IFS (bash's
    field splitting: IFS white space runs are one separator and trimmed at the ends, each other IFS character is a
    separator of its own, so `a,,b` with IFS=, is three fields), `"${A[@]}"` gives one field per element (none for
    an empty array). Where the word is not split (an assignment's value, `[[ ]]`, `case`), the elements of
    `${A[@]}` join with a space and nothing splits."""

    def __init__(self, loc: Location, ifs: str = DEFAULT_IFS):
        self.loc = loc
        self.ifs = ifs
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
        elif s:
            self._split(s)

    def multi(self, elems: list[tuple[str, Location | None]], quoted: bool, split: bool, joiner: str = " ") -> None:
        """The elements of an array (or of the positional parameters): a field each where the word splits (also
        split on IFS when unquoted), else joined by `joiner`."""
        if not split:
            self.cur = (self.cur or "") + joiner.join(e for e, _ in elems)
            return
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
            if e:
                self.cur_loc = loc or self.cur_loc
                self._split(e)

    def vanish(self) -> None:
        self.vanished = True

    def _split(self, s: str) -> None:
        """Append an unquoted expansion's value, split on IFS: its first piece joins the field being built, its last
        stays open for what follows."""
        ifs = self.ifs
        if not ifs:
            self.cur = (self.cur or "") + s
            return
        white = "".join(c for c in ifs if c in _IFS_WHITESPACE)
        other = "".join(c for c in ifs if c not in _IFS_WHITESPACE)
        if not other:
            for i, p in enumerate(re.split(f"[{re.escape(white)}]+", s)):
                if i > 0:
                    self._end()
                if p:
                    self.cur = (self.cur or "") + p
            return
        # a separator is an IFS white space run, or one other IFS character with the white space around it
        white_run = f"[{re.escape(white)}]*" if white else ""
        separator = re.compile(
            f"{white_run}[{re.escape(other)}]{white_run}|[{re.escape(white)}]+" if white else f"[{re.escape(other)}]"
        )
        pos = 0
        for m in separator.finditer(s):
            if m.start() > pos:
                self.cur = (self.cur or "") + s[pos : m.start()]
            if m.group().strip(white):  # an IFS character other than white space: ends a field, even an empty one
                self.fields.append((self.cur or "", self.cur_loc or self.loc))
                self.cur, self.cur_loc, self.quoted_empty, self.vanished = None, None, False, False
            else:
                self._end()
            pos = m.end()
        if pos < len(s):
            self.cur = (self.cur or "") + s[pos:]

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


def split_on_ifs(s: str, ifs: str) -> list[str]:
    """A value split into fields as an unquoted expansion of it is."""
    b = FieldBuilder(Location(""), ifs)
    b.expanded(s, quoted=False, split=True)
    return b.fields_text()


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


def glob_regex(segments: list[tuple[str, bool]]) -> re.Pattern[str]:
    """A bash pattern as a regex: `segments` are (text, whether it is a pattern); quoted text matches itself. In a
    pattern, `*` is any text, `?` one character, `[...]` (`[!...]`, `[^...]`) a class, `\\x` the character x."""
    out = []
    for text, is_pattern in segments:
        if not is_pattern:
            out.append(re.escape(text))
            continue
        i = 0
        while i < len(text):
            c = text[i]
            if c == "\\" and i + 1 < len(text):
                out.append(re.escape(text[i + 1]))
                i += 2
                continue
            if c == "*":
                out.append(".*")
            elif c == "?":
                out.append(".")
            elif c == "[":
                end = text.find("]", i + 2 if text[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
                if end < 0:
                    out.append(re.escape(c))
                else:
                    body = text[i + 1 : end]
                    negate = body[:1] in ("!", "^")
                    body = body[1:] if negate else body
                    out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\").replace("[", "\\[") + "]")
                    i = end + 1
                    continue
            else:
                out.append(re.escape(c))
            i += 1
    return re.compile("".join(out), re.DOTALL)
