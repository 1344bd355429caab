"""Word expansion: a word of the script -> its fields, as bash expands it, on the variables known so far.

Parameter expansion (`$V`, `${V}`, `${V:-d}`/`${V-d}`/`${V:=d}`/`${V=d}`/`${V:+w}`/`${V+w}`/`${V:?}`, `${#V}`,
arrays and `"${ARR[@]}"`), quoting, concatenation and word splitting (`words`), `~`, and `$(( ))` in bash's 64-bit
arithmetic on known integers. What cannot be expanded becomes a marker (`markers`).
"""

from __future__ import annotations

import re
from functools import cache

from ...core.diagnostics import Location
from .markers import ARGUMENTS, NEVER_SET, readable
from .parse import node_location, parse
from .words import FieldBuilder, ansi_c, unescape, unescape_double_quoted


class Expansion:
    """Expands words and arithmetic for the interpreter, which subclasses it and sets up in its `__init__` the
    state read and written here (`src`, `vars`, `marks`, `switches`, `assigned`, `exported`, `inputs_read`,
    `locations`)."""

    # ------------------------------------------------------------------ helpers
    def text(self, n) -> str:
        return self.src[n.start_byte : n.end_byte].decode("utf-8", "replace")

    def loc(self, n) -> Location:
        point = n.start_point
        found = self.locations.get(point)
        if found is None:
            found = self.locations[point] = node_location(self.path, self.lines, n)
        return found

    def get(self, name: str):
        """A variable's value as the script reads it (recording it as an input when the script has not set it)."""
        if name not in self.assigned:
            self.inputs_read.add(name)
        return self.vars.get(name)

    def mark(self, construct: str, why: str | None = None) -> str:
        """A marker character standing for an unresolved construct (its text; `why` adds the reason)."""
        return self.marks.marker(construct if why is None else f"{construct} ({why})")

    def _export(self, name: str, n) -> None:
        v = self.vars.get(name)
        if v is None:
            return
        s = v if isinstance(v, str) else (v[0][0] if v else "")
        self.exported[name] = (self.unmark(s), self.loc(n))

    def unmark(self, s: str) -> str:
        return readable(s, self.marks)

    # ------------------------------------------------------------------ words
    def word(self, n, split: bool, loc: Location | None = None) -> list[tuple[str, Location]]:
        """Expand one word into fields (text, location): the word's own location, or an array element's."""
        b = FieldBuilder(loc or self.loc(n))
        self._word(n, b, quoted=False, split=split)
        return b.finish()

    def _word(self, n, b: FieldBuilder, quoted: bool, split: bool) -> None:
        t = n.type
        if t == "word" and not quoted and b.cur is None and self.text(n).split("/", 1)[0] == "~":
            self._var("HOME", "~", b, quoted=False, split=False, index=None)  # tilde expansion: `~` is $HOME
            b.literal(unescape(self.text(n)[1:]))
        elif t in ("word", "number", "extglob_pattern", "regex", "special_character"):
            b.literal(unescape(self.text(n)) if not quoted else self.text(n))
        elif t == "raw_string":
            b.literal(self.text(n)[1:-1])
        elif t == "ansi_c_string":
            b.literal(ansi_c(self.text(n)[2:-1]))
        elif t == "string":
            b.quoted_start()
            prev_end = n.start_byte + 1
            for c in n.children[1:-1]:
                if c.start_byte > prev_end:  # whitespace/newlines not in a node
                    b.literal(self.src[prev_end : c.start_byte].decode("utf-8", "replace"))
                if c.type == "string_content":
                    b.literal(unescape_double_quoted(self.text(c)))
                elif c.is_named:
                    self._word(c, b, quoted=True, split=False)
                else:
                    b.literal(self.text(c))
                prev_end = c.end_byte
            end = n.end_byte - 1
            if end > prev_end:
                b.literal(self.src[prev_end:end].decode("utf-8", "replace"))
        elif t == "concatenation":
            for c in n.children:
                self._word(c, b, quoted, split)
        elif t == "string_content":
            b.literal(self.text(n))
        elif t in ("simple_expansion", "expansion"):
            self._expansion(n, b, quoted, split)
        elif t == "arithmetic_expansion" or (t == "command_substitution" and _arithmetic(self.text(n)) is not None):
            v = self._arith_text(self.text(n))
            b.expanded(str(v) if v is not None else self.mark(self.text(n)), quoted, split)
        elif t in ("command_substitution", "process_substitution"):
            b.expanded(self.mark(self.text(n)), quoted, split)
        elif t == "brace_expression":
            b.literal(self.mark(self.text(n)))
        else:
            b.literal(self.text(n))

    def _expansion(self, n, b: FieldBuilder, quoted: bool, split: bool) -> None:
        raw = self.text(n)
        if n.type == "simple_expansion":
            inner = n.named_children[0] if n.named_children else None
            if inner is None:
                b.literal(raw)
                return
            name = self.text(inner)
            if inner.type == "special_variable_name" or name.isdigit():
                if name in ("@", "*"):
                    if quoted and name == "@":
                        b.vanish()
                    return  # "$@" expands to nothing: the trainer call's passthrough is reported on its own
                if name == "#" or (name.isdigit() and name != "0"):
                    b.expanded(self.mark(raw, ARGUMENTS), quoted, split)
                    return
                b.expanded(self.mark(raw), quoted, split)
                return
            self._var(name, raw, b, quoted, split, index=None)
            return
        # ${...}
        kids = [c for c in n.children if c.type not in ("${", "}")]
        if not kids:
            b.literal(raw)
            return
        length = kids[0].type == "#" and len(kids) == 2 and kids[0].is_named is False
        if length:
            target = kids[1]
            v = self._lookup(target)
            if v is _UNKNOWN:
                b.expanded(self.mark(raw), quoted, split)
            elif isinstance(v, list) and target.type == "subscript" and self._index_text(target) in ("@", "*"):
                b.expanded(str(len(v)), quoted, split)
            else:
                s = v if isinstance(v, str) else (v[0][0] if v else "")
                b.expanded(str(len(s)) if s is not None else "0", quoted, split)
            return
        target = kids[0]
        if target.type not in ("variable_name", "subscript", "special_variable_name"):
            b.expanded(self.mark(raw), quoted, split)
            return
        if target.type == "special_variable_name":
            nm = self.text(target)
            if nm in ("@", "*") and len(kids) == 1:
                if quoted and nm == "@":
                    b.vanish()
                return
            b.expanded(self.mark(raw), quoted, split)
            return
        ops = kids[1:]
        if not ops:
            name = (
                self.text(target) if target.type == "variable_name" else self.text(target.child_by_field_name("name"))
            )
            self._var(name, raw, b, quoted, split, index=target if target.type == "subscript" else None)
            return
        op = ops[0].type
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            v = self._lookup(target)
            if v is _UNKNOWN:
                b.expanded(self.mark(raw), quoted, split)
                return
            is_set = v is not None
            s = None if v is None else (v if isinstance(v, str) else (v[0][0] if v else ""))
            colon = op.startswith(":")
            use_word = (
                (not is_set or (colon and s == ""))
                if op.lstrip(":") in ("-", "=", "?")
                else (is_set and not (colon and s == ""))
            )
            if op.lstrip(":") == "?" and use_word:  # the caller must set it: an input like any unset variable
                name = self.text(target) if target.type == "variable_name" else None
                b.expanded(self.mark(f"${name}", NEVER_SET) if name else self.mark(raw), quoted, split)
                return
            if use_word:
                wb = FieldBuilder(b.loc)
                for c in ops[1:]:
                    self._word(c, wb, quoted, split=False)
                word = "".join(wb.fields_text())
                if op.lstrip(":") == "=":
                    name = self.text(target)
                    self.vars[name] = word
                    self.assigned.add(name)
                    if name in self.exported:
                        self._export(name, n)
                if op.lstrip(":") in ("-", "=", "+") and not quoted:
                    # an unquoted default word keeps its own quoting: re-expand it as part of the outer word
                    for c in ops[1:]:
                        self._word(c, b, quoted, split)
                    if not ops[1:]:
                        b.expanded("", quoted, split)
                    return
                b.expanded(word, quoted, split)
                return
            if op.lstrip(":") == "+":
                b.expanded("", quoted, split)
                return
            name = (
                self.text(target) if target.type == "variable_name" else self.text(target.child_by_field_name("name"))
            )
            self._var(name, raw, b, quoted, split, index=target if target.type == "subscript" else None)
            return
        b.expanded(self.mark(raw), quoted, split)

    def _index_text(self, sub) -> str:
        idx = sub.child_by_field_name("index")
        return self.text(idx) if idx is not None else ""

    def _lookup(self, target):
        """The variable's value (str or list), None when unset, _UNKNOWN when the index cannot be evaluated."""
        if target.type == "variable_name":
            return self.get(self.text(target))
        name = self.text(target.child_by_field_name("name"))
        v = self.get(name)
        idx = self._index_text(target)
        if idx in ("@", "*"):
            return v if v is None or isinstance(v, list) else [(v, None)]
        i = self.arith_value(target.child_by_field_name("index"))
        if i is None:
            return _UNKNOWN
        if v is None:
            return None
        if isinstance(v, str):
            return v if i == 0 else None
        return v[i][0] if 0 <= i < len(v) else None

    def _var(self, name: str, raw: str, b: FieldBuilder, quoted: bool, split: bool, index) -> None:
        v = self.get(name)
        if index is not None:
            idx = self._index_text(index)
            if idx in ("@", "*"):
                if v is None:
                    if quoted and idx == "@":
                        b.vanish()
                    return
                elems = v if isinstance(v, list) else [(v, None)]
                if idx == "@" or not quoted:
                    b.multi(elems, quoted)
                else:
                    b.expanded(" ".join(e for e, _ in elems), quoted, split)
                return
            got = self._lookup(index)
            if got is _UNKNOWN:
                b.expanded(self.mark(raw), quoted, split)
                return
            if got is None:
                b.expanded(self.mark(raw, "unset") if self._unset_is_problem(name) else "", quoted, split)
                return
            b.expanded(got, quoted, split)
            return
        if v is None:
            if name.isdigit():
                b.expanded(self.mark(raw, ARGUMENTS), quoted, split)
                return
            b.expanded("" if name in self.switches else self.mark(f"${name}", NEVER_SET), quoted, split)
            return
        b.expanded(v if isinstance(v, str) else (v[0][0] if v else ""), quoted, split)

    def _unset_is_problem(self, name: str) -> bool:
        return name not in self.vars

    # ------------------------------------------------------------------ arithmetic
    def _arith_text(self, text: str) -> int | None:
        """The value of `$(( ... ))` from a parse of its text on its own (see `parse._mask_nested_arithmetic`; inside
        `${V:-...}` tree-sitter-bash may also read it as a command substitution of a subshell)."""
        parsed = _arithmetic(text)
        if parsed is None:
            return None
        src, node = parsed
        saved = self.src
        self.src = src
        try:
            return self.arith_value(node)
        finally:
            self.src = saved

    def arith_value(self, n) -> int | None:
        """The value of an arithmetic expression, as bash computes it: in 64-bit integers that wrap (so that no
        script can make a number too large to print or to multiply); None when it cannot be evaluated."""
        if n is None:
            return None
        t = n.type
        if t == "number":
            return _integer(self.text(n), base=0)
        if t in ("variable_name", "word"):
            s = self.text(n)
            if _DECIMAL.fullmatch(s):
                return _integer(s)
            v = self.get(s)
            if v is None:
                return None
            v = v if isinstance(v, str) else (v[0][0] if v else "")
            return _integer(v) if _DECIMAL.fullmatch(v.strip()) else None
        if t in ("simple_expansion", "expansion", "string", "concatenation"):
            s = "".join(f for f, _ in self.word(n, split=False)).strip()
            return _integer(s) if _DECIMAL.fullmatch(s) else None
        if t == "parenthesized_expression":
            return self.arith_value(n.named_children[0]) if n.named_children else None
        if t == "unary_expression":
            op = n.children[0].type
            v = self.arith_value(n.named_children[-1]) if n.named_children else None
            if v is None:
                return None
            result = {"-": -v, "+": v, "!": int(not v), "~": ~v}.get(op)
            return None if result is None else _wrap(result)
        if t == "binary_expression":
            # `1+1+...+1` is a left-deep chain: folded in a loop, not one recursion per term
            chain = []
            while n.type == "binary_expression":
                chain.append(n)
                n = n.child_by_field_name("left")
            value = self.arith_value(n)
            for b in reversed(chain):
                op_node = b.child_by_field_name("operator")
                right = self.arith_value(b.child_by_field_name("right"))
                if op_node is None or value is None or right is None:
                    return None
                value = _binary(self.text(op_node), value, right)
            return value
        if t == "ternary_expression":
            cond = self.arith_value(n.child_by_field_name("condition"))
            if cond is None:
                return None
            return self.arith_value(n.child_by_field_name("consequence" if cond else "alternative"))
        return None


_DECIMAL = re.compile(r"-?[0-9]+")


def _integer(text: str, base: int = 10) -> int | None:
    """A bash integer constant, wrapped to 64 bits as bash reads it; None for what is not one, and for a decimal
    beyond Python's int conversion limit (4,300 digits), which no real script writes."""
    try:
        return _wrap(int(text, base))
    except ValueError:
        return None


def _wrap(v: int) -> int:
    """`v` in bash's arithmetic: 64-bit two's complement."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _binary(op: str, a: int, c: int) -> int | None:
    """`a OP c` in bash's 64-bit arithmetic; None for an operator not evaluated or an error (division by zero)."""
    if op in ("/", "%"):
        if not c:
            return None
        q = abs(a) // abs(c) * (1 if (a < 0) == (c < 0) else -1)  # truncated toward zero, as in C
        return _wrap(q if op == "/" else a - q * c)
    if op == "**":
        return _wrap(pow(a, c, 1 << 64)) if c >= 0 else None
    fn = {
        "+": a + c,
        "-": a - c,
        "*": a * c,
        "<": int(a < c),
        ">": int(a > c),
        "<=": int(a <= c),
        ">=": int(a >= c),
        "==": int(a == c),
        "!=": int(a != c),
        "&&": int(bool(a and c)),
        "||": int(bool(a or c)),
    }.get(op)
    return None if fn is None else _wrap(fn)


_UNKNOWN = object()  # an array element whose index cannot be evaluated


@cache
def _arithmetic(text: str):
    """(source, expression node) of `$(( ... ))` text parsed on its own, or None when it is not arithmetic."""
    if not (text.startswith("$((") and text.endswith("))")):
        return None
    src = b"echo " + text.encode("utf-8")
    root = parse(src).root_node
    value = root.named_children[0].named_children[-1] if root.named_children else None
    if root.has_error or value is None or value.type != "arithmetic_expansion" or not value.named_children:
        return None
    return src, value.named_children[0]
