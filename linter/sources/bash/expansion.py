"""Word expansion: a word of the script -> its fields, as bash expands it, on the variables known so far.

Parameter expansion: `$V`, `${V}`, the defaults (`${V:-d}`, `${V-d}`, `${V:=d}`, `${V=d}`, `${V:+w}`, `${V+w}`,
`${V:?}`), `${#V}`, `${!V}`, case changes (`${V,,}`, `${V^^}`, `${V,}`, `${V^}`), pattern removal and
substitution (`${V#p}`, `${V##p}`, `${V%p}`, `${V%%p}`, `${V/p/r}`, `${V//p/r}`, `${V/#p/r}`, `${V/%p/r}`),
substrings (`${V:1:2}`, `${V: -1}`), arrays (`${A[i+1]}`, `${A[-1]}`, `"${A[@]}"`, `${#A[@]}`, `${!A[@]}`,
`${A[@]:1}`, each operator element by element) and the positional parameters (`$1`, `$#`, `"$@"`) of a function
call or of `set --`. Then quoting, concatenation and word splitting on IFS (`words`), `~`, and `$(( ))` in bash's
64-bit arithmetic, assignments (`=`, `+=`, `++`, ...) included. What cannot be expanded becomes a marker
(`markers`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ...core.diagnostics import Location
from .arithmetic import ASSIGNING, BASED, DECIMAL, arithmetic_nodes, based, binary, integer, wrap
from .markers import ARGUMENTS, NEVER_SET, markers, readable
from .parse import node_location
from .words import DEFAULT_IFS, FieldBuilder, ansi_c, glob_regex, unescape, unescape_double_quoted

# A value: a string, an array (its elements, None where an index is not set: bash's arrays are sparse), or None
# for an unset variable.
Element = tuple[str, Location] | None

# Variables bash sets itself, whatever the environment: their value is not known statically, but they are set.
BASH_VARIABLES = frozenset(
    "BASH BASHOPTS BASHPID BASH_SOURCE BASH_SUBSHELL BASH_VERSINFO BASH_VERSION EPOCHREALTIME EPOCHSECONDS EUID "
    "GROUPS HOSTNAME HOSTTYPE LINENO MACHTYPE OSTYPE PPID PWD RANDOM SECONDS SHELLOPTS SHLVL SRANDOM UID".split()
)


class _Param(NamedTuple):
    """A parameter as `${...}` names it: its value, whether it stands for several words (`A[@]`, `@`: "@", `A[*]`,
    `*`: "*"), and the marker that stands for it where its value is not known (None: it is known, maybe unset)."""

    value: str | list[Element] | None
    many: str | None = None
    unknown: str | None = None


class _Expanded:
    """The words of one script's source already expanded (`Expansion.word`): by word, the variables it reads (None:
    its expansion does more than read them, and is made each time); by word, location, IFS and the state of those
    variables, its fields and the variables it read on the way."""

    __slots__ = ("fields", "names")

    def __init__(self) -> None:
        self.names: dict[tuple, tuple[str, ...] | None] = {}
        self.fields: dict[tuple, tuple[tuple, tuple[str, ...]]] = {}


_UNSEEN = object()  # a word `_Expanded.names` has no entry for yet


class Expansion:
    """Expands words and arithmetic for the interpreter, which subclasses it and sets up in its `__init__` the
    state read and written here (`src`, `vars`, `marks`, `switches`, `assigned`, `exported`, `inputs_read`,
    `reading`, `locations`, `positional`, `associative`, `arith_nesting`)."""

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
        if self.reading is not None:
            self.reading.append(name)
        return self.vars.get(name)

    def mark(self, construct: str, why: str | None = None) -> str:
        """A marker character standing for an unresolved construct (its text; `why` adds the reason)."""
        return self.marks.marker(construct if why is None else f"{construct} ({why})")

    def set_var(self, name: str, value) -> None:
        self.vars[name] = value
        self.assigned.add(name)
        if name in self.exported:
            self._export(name, None)

    def _export(self, name: str, n) -> None:
        v = self.vars.get(name)
        if v is None:
            return
        s = as_string(v)
        where = self.loc(n) if n is not None else self.exported[name][1]
        self.exported[name] = (self.unmark(s), where)

    def unmark(self, s: str) -> str:
        return readable(s, self.marks)

    def ifs(self) -> str:
        v = self.vars.get("IFS")
        if v is None or not isinstance(v, str) or markers(v, self.marks):
            return DEFAULT_IFS
        return v

    # ------------------------------------------------------------------ words
    def word(self, n, split: bool, loc: Location | None = None) -> list[tuple[str, Location]]:
        """Expand one word into fields (text, location): the word's own location, or an array element's. A word
        that only reads variables (`key=${V:-x}`, most of a run script) is expanded once per script for the values
        it reads: the variants share that expansion (`Marks.expanded`), and each records the inputs it read."""
        where = loc or self.loc(n)
        expanded = self.marks.expanded.get(self.src)
        if expanded is None:
            expanded = self.marks.expanded[self.src] = _Expanded()
        span = (n.start_byte, n.end_byte, n.type)
        names = expanded.names.get(span, _UNSEEN)
        if names is _UNSEEN:
            names = expanded.names[span] = self._read_names(n)
        if names is None:
            return self._fields(n, split, where)
        ifs = self.ifs()
        state = tuple((self._frozen(name), name in self.assigned, name in self.switches) for name in names)
        key = (span, split, where, ifs, state)
        found = expanded.fields.get(key)
        if found is not None:
            fields, read = found
            for name in read:
                if name not in self.assigned:
                    self.inputs_read.add(name)
            return list(fields)
        outer, self.reading = self.reading, []
        try:
            fields = self._fields(n, split, where)
            expanded.fields[key] = (tuple(fields), tuple(dict.fromkeys(self.reading)))
        finally:
            self.reading = outer
        return fields

    def _fields(self, n, split: bool, loc: Location) -> list[tuple[str, Location]]:
        b = FieldBuilder(loc, self.ifs())
        self._word(n, b, quoted=False, split=split)
        return b.finish()

    def _frozen(self, name: str):
        value = self.vars.get(name)
        return tuple(value) if isinstance(value, list) else value

    def _read_names(self, n) -> tuple[str, ...] | None:
        """The variables a word reads, when reading them is all its expansion does: named variables (`$V`, `${V}`,
        `${V:-word}`, `${V-word}`, `${V:+word}`, `${V+word}`), quoted and literal text, a command substitution (a
        marker). None for anything else, whose expansion may read or change more: `~` ($HOME), arithmetic (which
        assigns), `${V:=x}` and `${V:?}`, the other operators, arrays, positional and special parameters."""
        names: list[str] = []
        stack = [n]
        while stack:
            x = stack.pop()
            t = x.type
            if t == "word":
                if self.text(x).startswith("~"):
                    return None
            elif t in ("string", "concatenation"):
                stack.extend(x.children)
            elif t == "simple_expansion":
                inner = x.named_children
                if inner:
                    if inner[0].type != "variable_name" or not self.text(inner[0]).isidentifier():
                        return None
                    names.append(self.text(inner[0]))
            elif t == "expansion":
                kids = [c for c in x.children if c.type not in ("${", "}")]
                if not kids:
                    continue
                if kids[0].type != "variable_name" or not self.text(kids[0]).isidentifier():
                    return None
                if len(kids) > 1:
                    if kids[1].type not in (":-", "-", ":+", "+"):
                        return None
                    stack.extend(kids[2:])
                names.append(self.text(kids[0]))
            elif t == "arithmetic_expansion" or (
                t == "command_substitution" and arithmetic_nodes(self.text(x)) is not None
            ):
                return None
        return tuple(dict.fromkeys(names))

    def _word(self, n, b: FieldBuilder, quoted: bool, split: bool) -> None:
        t = n.type
        if t == "word" and not quoted and b.cur is None and self.text(n).split("/", 1)[0] == "~":
            self._simple_value(self._parameter_named("HOME"), "~", b, quoted=False, split=False)  # `~` is $HOME
            b.literal(unescape(self.text(n)[1:]))
        elif t in ("word", "number", "extglob_pattern", "regex", "special_character"):
            b.literal(unescape(self.text(n)) if not quoted else self.text(n))
        elif t == "raw_string":
            # inside double quotes (`"${V:-'x'}"`) single quotes are characters, and bash keeps them
            b.literal(self.text(n) if quoted else self.text(n)[1:-1])
        elif t == "ansi_c_string":
            b.literal(ansi_c(self.text(n)[2:-1]))
        elif t == "string":
            b.quoted_start()
            prev_end = n.start_byte + 1
            for c in n.children[1:-1]:
                if c.start_byte > prev_end:  # whitespace/newlines not in a node
                    b.literal(unescape_double_quoted(self.src[prev_end : c.start_byte].decode("utf-8", "replace")))
                if c.type == "string_content":
                    b.literal(unescape_double_quoted(self.text(c)))
                elif c.is_named:
                    self._word(c, b, quoted=True, split=split)  # `split`: "${A[@]}" is still a field each
                else:
                    b.literal(self.text(c))
                prev_end = c.end_byte
            end = n.end_byte - 1
            if end > prev_end:
                b.literal(unescape_double_quoted(self.src[prev_end:end].decode("utf-8", "replace")))
        elif t == "concatenation":
            for c in n.children:
                self._word(c, b, quoted, split)
        elif t == "string_content":
            b.literal(self.text(n))
        elif t == "simple_expansion":
            self._simple(n, b, quoted, split)
        elif t == "expansion":
            self._braced(n, b, quoted, split)
        elif t == "arithmetic_expansion" or (
            t == "command_substitution" and arithmetic_nodes(self.text(n)) is not None
        ):
            v = self.arith_text(self.text(n))
            b.expanded(str(v) if v is not None else self.mark(self.text(n)), quoted, split)
        elif t in ("command_substitution", "process_substitution"):
            b.expanded(self.mark(self.text(n)), quoted, split)
        elif t == "brace_expression":
            b.literal(self.mark(self.text(n)))
        else:
            b.literal(self.text(n))

    # ------------------------------------------------------------------ parameters
    def _parameter_named(self, name: str) -> _Param:
        """A variable or positional parameter by name (`V`, `1`, `@`, `#`, ...)."""
        if name.isdigit():
            return self._positional(int(name), f"${name}")
        if name in ("@", "*"):
            if self.positional is None:
                return _Param([], name, self.mark(f"${name}", ARGUMENTS))
            return _Param(list(self.positional), name)
        if name == "#":
            if self.positional is None:
                return _Param(None, None, self.mark("$#", ARGUMENTS))
            return _Param(str(len(self.positional)))
        if not name.isidentifier():  # `$?`, `$$`, `$!`, `$-`, `$_`
            return _Param(None, None, self.mark(f"${name}"))
        v = self.get(name)
        if v is None and name in BASH_VARIABLES and name not in self.assigned:
            return _Param(None, None, self.mark(f"${name}"))
        if v is None and name not in self.switches:
            return _Param(None, None, self.mark(f"${name}", NEVER_SET))
        return _Param(v)

    def _positional(self, i: int, written: str) -> _Param:
        if i == 0:
            return _Param(None, None, self.mark(written))
        if self.positional is None:  # the script's own arguments: some, of unknown value (`${1:-x}` is x)
            return _Param(None, None, self.mark(written, ARGUMENTS))
        return _Param(self.positional[i - 1][0] if i <= len(self.positional) else None)

    def _parameter(self, target) -> _Param | None:
        """The parameter a `${...}` names (`V`, `1`, `@`, `A[2]`, `A[@]`); None when its index cannot be evaluated
        or the array is associative."""
        if target.type in ("variable_name", "special_variable_name"):
            return self._parameter_named(self.text(target))
        if target.type != "subscript":
            return None
        name_node, index_node = target.child_by_field_name("name"), target.child_by_field_name("index")
        name = self.text(name_node) if name_node is not None else ""
        index = self.text(index_node) if index_node is not None else ""
        if name in self.associative:
            return None
        whole = self._parameter_named(name)
        if index in ("@", "*"):
            if whole.unknown is not None and whole.value is None:
                return _Param(None, index, whole.unknown)
            return _Param(elements(whole.value), index)
        i = self.arith_text(f"$(({index}))")
        if i is None:
            return None
        if whole.value is None:
            return _Param(None, None, whole.unknown and self.mark(f"${{{self.text(target)}}}", "unset"))
        elems = elements(whole.value)
        if i < 0:
            i += len(elems)
        found = elems[i] if 0 <= i < len(elems) else None
        return _Param(found[0] if found is not None else None)

    def _simple(self, n, b: FieldBuilder, quoted: bool, split: bool) -> None:
        """`$V`, `$1`, `$@`, `$#`."""
        inner = n.named_children[0] if n.named_children else None
        if inner is None:
            b.literal(self.text(n))
            return
        self._simple_value(self._parameter_named(self.text(inner)), self.text(n), b, quoted, split)

    def _simple_value(self, p: _Param, raw: str, b: FieldBuilder, quoted: bool, split: bool) -> None:
        """Emit a parameter's value as `$P` (or `${P}`) would."""
        if p.many is not None:
            if p.value is None or p.unknown is not None:  # the script's own arguments: passed through, not read
                if quoted and p.many == "@":
                    b.vanish()
                return
            self._emit_many(p.value, p.many, b, quoted, split)
        elif p.value is None:
            b.expanded(p.unknown if p.unknown is not None else "", quoted, split)
        else:
            b.expanded(as_string(p.value), quoted, split)

    def _emit_many(self, value: list[Element], many: str, b: FieldBuilder, quoted: bool, split: bool) -> None:
        elems = [e for e in value if e is not None]
        if many == "*" and quoted:
            b.expanded(self.ifs()[:1].join(e for e, _ in elems), quoted, split)
        else:
            b.multi(elems, quoted, split, joiner=" " if many == "@" else self.ifs()[:1])

    def _braced(self, n, b: FieldBuilder, quoted: bool, split: bool) -> None:
        """`${...}`: the parameter, then its operator."""
        raw = self.text(n)
        kids = [c for c in n.children if c.type not in ("${", "}")]
        prefix = None
        if len(kids) >= 2 and not kids[0].is_named and kids[0].type in ("#", "!"):
            prefix, kids = kids[0].type, kids[1:]
        if not kids:
            b.literal(raw)
            return
        target, ops = kids[0], kids[1:]
        p = self._parameter(target)
        if p is None:
            b.expanded(self.mark(raw), quoted, split)
            return
        if prefix == "#" and not ops:
            self._length(p, raw, b, quoted, split)
            return
        if prefix == "!":
            p = self._indirect(p, target, raw, bool(ops))
            if p is None:
                b.expanded(self.mark(raw), quoted, split)
                return
        if not ops:
            self._simple_value(p, raw, b, quoted, split)
            return
        op = ops[0].type
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            self._default(p, op, ops[1:], target, raw, b, quoted, split)
            return
        if p.unknown is not None or any(markers(e, self.marks) for e in _texts(p.value)):
            b.expanded(self.mark(raw), quoted, split)
            return
        if op == ":" and p.many is not None:
            self._slice(p, ops, target, raw, b, quoted, split)
            return
        change = self._operator(op, ops, raw)
        if change is None:
            b.expanded(self.mark(raw), quoted, split)
            return
        if p.many is not None:
            elems = [None if e is None else (change(e[0]), e[1]) for e in elements(p.value)]
            self._emit_many(elems, p.many, b, quoted, split)
            return
        b.expanded(change("" if p.value is None else as_string(p.value)), quoted, split)

    def _slice(self, p: _Param, ops, target, raw: str, b: FieldBuilder, quoted: bool, split: bool) -> None:
        """`${A[@]:offset:length}`: the elements from index `offset` on (from the end when negative); for `${@:n}`
        the positional parameters from `$n` on."""
        offset, length = self._offset_length(ops)
        positional = target.type == "special_variable_name"
        if offset is None or (positional and offset == 0):
            b.expanded(self.mark(raw), quoted, split)
            return
        indexed = [(i, e) for i, e in enumerate(elements(p.value)) if e is not None]
        if positional:
            offset -= 1 if offset > 0 else 0
        if offset < 0:
            offset += len(elements(p.value))
        chosen = [e for i, e in indexed if i >= offset]
        if length is not None:
            chosen = chosen[:length] if length >= 0 else None
        if chosen is None:
            b.expanded(self.mark(raw), quoted, split)
            return
        self._emit_many(chosen, p.many, b, quoted, split)

    def _offset_length(self, ops) -> tuple[int | None, int | None]:
        """The offset and length of `${P:offset:length}` (length None when not written)."""
        parts = list(ops[1:])
        colon = next((i for i, c in enumerate(parts) if c.type == ":" and not c.is_named), None)
        offset = self._arith_nodes(parts if colon is None else parts[:colon])
        if colon is None:
            return offset, None
        length = self._arith_nodes(parts[colon + 1 :])
        return (offset, length) if length is not None else (None, None)

    def _length(self, p: _Param, raw: str, b: FieldBuilder, quoted: bool, split: bool) -> None:
        if p.many is not None:
            value = None if p.unknown is not None else str(len([e for e in elements(p.value) if e is not None]))
        elif p.unknown is not None and p.value is None:
            value = None
        else:
            value = str(len(as_string(p.value) if p.value is not None else ""))
        if value is None or (p.value is not None and p.many is None and markers(as_string(p.value), self.marks)):
            value = self.mark(raw)
        b.expanded(value, quoted, split)

    def _indirect(self, p: _Param, target, raw: str, has_operator: bool) -> _Param | None:
        """`${!V}` (the variable V names) and `${!A[@]}` (the array's indices)."""
        if p.many is not None and target.type == "subscript":
            if p.unknown is not None or has_operator:
                return None
            indices = [(str(i), None) for i, e in enumerate(elements(p.value)) if e is not None]
            return _Param(indices, p.many)
        if p.unknown is not None or p.value is None or p.many is not None:
            return None
        name = as_string(p.value)
        if not (name.isidentifier() or name.isdigit()):
            return None
        return self._parameter_named(name)

    def _default(self, p: _Param, op: str, word_nodes, target, raw: str, b: FieldBuilder, quoted: bool, split: bool):
        """`${V:-w}` and its kind: the word when the parameter is unset (or empty, with `:`), else the value; `=`
        also assigns it; `+` the other way round; `?` fails the script, which the caller must prevent by setting V."""
        kind = op.lstrip(":")
        if p.many is not None:
            value = None if p.unknown is not None else [e for e in elements(p.value) if e is not None]
            is_set, empty = bool(value), not any(e[0] for e in value or ())
        else:
            is_set, empty = p.value is not None, p.value is None or as_string(p.value) == ""
        unknown = p.unknown is not None and p.value is None and not _unset_when_unknown(p, target, self)
        if unknown:  # the script's own arguments (`${@:-x}`) or `$0`: cannot say which way it goes
            b.expanded(self.mark(raw), quoted, split)
            return
        use_word = (not is_set or (op.startswith(":") and empty)) if kind in ("-", "=", "?") else is_set
        if kind == "+" and op.startswith(":") and is_set and empty:
            use_word = False
        if kind == "?" and use_word:  # the caller must set it: an input like any unset variable, from here on too
            name = self.text(target) if target.type == "variable_name" else None
            if name:
                self.set_var(name, self.mark(f"${name}", NEVER_SET))
            b.expanded(self.mark(f"${name}", NEVER_SET) if name else self.mark(raw), quoted, split)
            return
        if not use_word:
            if kind == "+":
                b.expanded("", quoted, split)
            else:
                self._simple_value(p, raw, b, quoted, split)
            return
        wb = FieldBuilder(b.loc, self.ifs())
        for c in word_nodes:
            self._word(c, wb, quoted, split=False)
        word = "".join(wb.fields_text())
        if kind == "=" and target.type == "variable_name":
            self.set_var(self.text(target), word)
        if kind in ("-", "=", "+") and not quoted:
            # an unquoted default word keeps its own quoting: re-expand it as part of the outer word
            for c in word_nodes:
                self._word(c, b, quoted, split)
            if not word_nodes:
                b.expanded("", quoted, split)
            return
        b.expanded(word, quoted, split)

    def _operator(self, op: str, ops, raw: str):
        """The function of a value that `${V<op>...}` applies (to each element of an array), or None when it is not
        evaluated: case changes, pattern removal and substitution, substrings."""
        if op in (",,", "^^", ",", "^") and len(ops) == 1:
            return {",,": str.lower, "^^": str.upper, ",": _first(str.lower), "^": _first(str.upper)}[op]
        if op in ("#", "##", "%", "%%"):
            pattern = self._pattern(ops[1:])
            return None if pattern is None else _remover(op, pattern)
        if op in ("/", "//", "/#", "/%"):
            slash = next((i for i, c in enumerate(ops) if i > 0 and c.type == "/" and not c.is_named), len(ops))
            pattern = self._pattern(ops[1:slash])
            replacement = self._replacement(ops[slash + 1 :])
            if pattern is None or replacement is None:
                return None
            return _substituter(op, pattern, replacement)
        if op == ":":
            offset, length = self._offset_length(ops)
            return None if offset is None else _substring(offset, length)
        return None

    def _arith_nodes(self, nodes) -> int | None:
        if not nodes:
            return 0
        text = self.src[nodes[0].start_byte : nodes[-1].end_byte].decode("utf-8", "replace")
        return self.arith_text(f"$(({text}))")

    def _pattern(self, nodes) -> re.Pattern[str] | None:
        """A pattern operand as a regex; None where part of it cannot be evaluated. Unquoted text and unquoted
        expansions are patterns, quoted text matches itself."""
        segments: list[tuple[str, bool]] = []
        written = self.src[nodes[0].start_byte : nodes[-1].end_byte] if nodes else b""
        if re.search(rb"(?<!\\)(?:\\\\)*\\$", written):  # tree-sitter cut the pattern at an escaped `/`
            return None
        for n in nodes:
            if not self._pattern_segments(n, segments):
                return None
        if any(markers(text, self.marks) for text, _ in segments):
            return None
        return glob_regex(segments)

    def _pattern_segments(self, n, out: list[tuple[str, bool]]) -> bool:
        t = n.type
        if t in ("word", "regex", "extglob_pattern", "special_character", "number"):
            out.append((self.text(n), True))
        elif t == "concatenation":
            return all(self._pattern_segments(c, out) for c in n.children)
        elif t in ("string", "raw_string", "ansi_c_string"):
            out.append(("".join(f for f, _ in self.word(n, split=False)), False))
        elif t in ("simple_expansion", "expansion"):
            out.append(("".join(f for f, _ in self.word(n, split=False)), True))
        else:
            return False
        return True

    def _replacement(self, nodes) -> str | None:
        text = self.src[nodes[0].start_byte : nodes[-1].end_byte] if nodes else b""
        if b"&" in text:  # bash 5.2 puts the matched text where `&` is (patsub_replacement): not followed
            return None
        b = FieldBuilder(Location(self.path), self.ifs())
        for c in nodes:
            self._word(c, b, quoted=False, split=False)
        value = "".join(b.fields_text())
        return None if markers(value, self.marks) else value

    # ------------------------------------------------------------------ arithmetic
    def arith_text(self, text: str) -> int | None:
        """The value of `$(( ... ))` from a parse of its text on its own (see `parse._mask_nested_arithmetic`; inside
        `${V:-...}` tree-sitter-bash may also read it as a command substitution of a subshell); its assignments
        (`i++`, `n += 2`) take effect."""
        parsed = arithmetic_nodes(text)
        if parsed is None:
            return None
        src, nodes = parsed
        saved = self.src
        self.src = src
        try:
            value = None
            for node in nodes:  # `a = 1, b = 2`: each in turn, the value is the last one's
                value = self.arith_value(node)
            return value
        finally:
            self.src = saved

    def arith_value(self, n) -> int | None:
        """The value of an arithmetic expression, as bash computes it: in 64-bit integers that wrap (so that no
        script can make a number too large to print or to multiply); None when it cannot be evaluated."""
        if n is None:
            return None
        t = n.type
        if t == "number":
            return integer(self.text(n), base=0) if not BASED.fullmatch(self.text(n)) else based(self.text(n))
        if t in ("variable_name", "word"):
            return self._arith_variable(self.text(n))
        if t in ("simple_expansion", "expansion", "string", "concatenation"):
            s = "".join(f for f, _ in self.word(n, split=False)).strip()
            return integer(s) if DECIMAL.fullmatch(s) else None
        if t == "parenthesized_expression":
            value = None
            for c in n.named_children:
                value = self.arith_value(c)
            return value
        if t in ("unary_expression", "postfix_expression"):
            return self._arith_unary(n)
        if t == "binary_expression":
            op_node = n.child_by_field_name("operator")
            op = self.text(op_node) if op_node is not None else ""
            if op in ASSIGNING:
                return self._arith_assign(n, op)
            # `1+1+...+1` is a left-deep chain: folded in a loop, not one recursion per term
            chain = []
            while n.type == "binary_expression" and self._operator_text(n) not in ASSIGNING:
                chain.append(n)
                n = n.child_by_field_name("left")
            value = self.arith_value(n)
            for b in reversed(chain):
                op = self._operator_text(b)
                if op in ("&&", "||") and value is not None and bool(value) == (op == "||"):
                    value = int(op == "||")  # bash does not evaluate the other side
                    continue
                right = self.arith_value(b.child_by_field_name("right"))
                if value is None or right is None:
                    return None
                value = binary(op, value, right)
            return value
        if t == "ternary_expression":
            cond = self.arith_value(n.child_by_field_name("condition"))
            if cond is None:
                return None
            return self.arith_value(n.child_by_field_name("consequence" if cond else "alternative"))
        if t == "subscript":
            p = self._parameter(n)
            if p is None or p.many is not None or p.unknown is not None:
                return None
            return self._arith_of_text(as_string(p.value) if p.value is not None else "")
        return None

    def _operator_text(self, n) -> str:
        op = n.child_by_field_name("operator")
        return self.text(op) if op is not None else ""

    def _arith_variable(self, name: str) -> int | None:
        """A variable in arithmetic: its value, itself evaluated as an expression (`X=1+2; $((X*2))` is 6); an unset
        or empty one is 0 once the script has set or unset it, unknown when it comes from the environment."""
        if DECIMAL.fullmatch(name):
            return integer(name)
        if not name.isidentifier():
            return None
        v = self.get(name)
        if v is None:
            return 0 if name in self.assigned or name in self.switches else None
        return self._arith_of_text(as_string(v))

    def _arith_of_text(self, s: str) -> int | None:
        """A variable's value in arithmetic: a number, or an expression of its own, evaluated in turn (a variable
        that names itself is cut off at a depth of 8)."""
        s = s.strip()
        if not s:
            return 0
        if DECIMAL.fullmatch(s):
            return integer(s)
        if self.arith_nesting > 8:
            return None
        self.arith_nesting += 1
        try:
            return self.arith_text(f"$(({s}))")
        finally:
            self.arith_nesting -= 1

    def _arith_unary(self, n) -> int | None:
        kids = n.children
        if n.type == "postfix_expression" or (kids and kids[0].type in ("++", "--")):
            target = n.named_children[0] if n.named_children else None
            op = kids[-1].type if n.type == "postfix_expression" else kids[0].type
            if target is None or target.type != "variable_name":
                return None
            before = self._arith_variable(self.text(target))
            if before is None:
                return None
            after = wrap(before + (1 if op == "++" else -1))
            self.set_var(self.text(target), str(after))
            return before if n.type == "postfix_expression" else after
        op = kids[0].type if kids else ""
        v = self.arith_value(n.named_children[-1]) if n.named_children else None
        if v is None:
            return None
        result = {"-": -v, "+": v, "!": int(not v), "~": ~v}.get(op)
        return None if result is None else wrap(result)

    def _arith_assign(self, n, op: str) -> int | None:
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        if left is None or left.type != "variable_name":
            return None
        value = self.arith_value(right)
        if value is not None and op != "=":
            current = self._arith_variable(self.text(left))
            value = None if current is None else binary(op[:-1], current, value)
        name = self.text(left)
        self.set_var(name, str(value) if value is not None else self.mark(self.text(n)))
        return value


def as_string(v) -> str:
    """A value read as a string: an array's element 0."""
    if isinstance(v, str):
        return v
    first = v[0] if v else None
    return first[0] if first is not None else ""


def elements(v) -> list[Element]:
    """A value as an array's elements (a string is element 0)."""
    if v is None:
        return []
    return [(v, None)] if isinstance(v, str) else list(v)


def _texts(v) -> list[str]:
    return [e[0] for e in elements(v) if e is not None]


def _unset_when_unknown(p: _Param, target, ev: Expansion) -> bool:
    """Whether a parameter whose value is not known is taken as unset by the defaults: a variable the script
    never sets, and its own positional arguments (`${1:-vllm}` is vllm), but not the variables bash sets itself."""
    name = ev.text(target) if target.type in ("variable_name", "special_variable_name") else ""
    if target.type == "subscript":
        return True
    return name not in BASH_VARIABLES and name not in ("@", "*", "#", "0", "?", "$", "!", "-", "_")


def _first(change):
    return lambda s: change(s[:1]) + s[1:]


def _remover(op: str, pattern: re.Pattern[str]):
    """`${V#p}` removes the shortest prefix that matches, `##` the longest, `%` the shortest suffix, `%%` the
    longest."""
    if op in ("#", "##"):

        def prefix(s: str) -> str:
            order = range(len(s) + 1) if op == "#" else range(len(s), -1, -1)
            return next((s[k:] for k in order if pattern.fullmatch(s, 0, k)), s)

        return prefix

    def suffix(s: str) -> str:
        order = range(len(s), -1, -1) if op == "%" else range(len(s) + 1)
        return next((s[:k] for k in order if pattern.fullmatch(s, k)), s)

    return suffix


def _substituter(op: str, pattern: re.Pattern[str], replacement: str):
    """`${V/p/r}` replaces the first longest match, `//` every one, `/#` one at the start, `/%` one at the end (the
    last two may match empty text: `${V/#/x}` prefixes x)."""

    def substitute(s: str) -> str:
        if op == "/#":
            end = next((e for e in range(len(s), -1, -1) if pattern.fullmatch(s, 0, e)), None)
            return s if end is None else replacement + s[end:]
        if op == "/%":
            start = next((k for k in range(len(s) + 1) if pattern.fullmatch(s, k)), None)
            return s if start is None else s[:start] + replacement
        out, i = [], 0
        while i < len(s):
            end = next((e for e in range(len(s), i, -1) if pattern.fullmatch(s, i, e)), None)
            if end is None:
                out.append(s[i])
                i += 1
                continue
            out.append(replacement)
            i = end
            if op == "/":
                break
        return "".join(out) + s[i:]

    return substitute


def _substring(offset: int, length: int | None):
    """`${V:offset:length}`: a negative offset counts from the end, a negative length is an end counted from it."""

    def cut(s: str) -> str:
        start = offset if offset >= 0 else max(len(s) + offset, 0)
        if length is None:
            return s[start:]
        end = start + length if length >= 0 else len(s) + length
        return s[start:end] if end >= start else ""

    return cut
