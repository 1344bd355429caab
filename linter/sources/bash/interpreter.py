"""A static bash interpreter over tree-sitter-bash: evaluates a script without running anything.

Assignments and the `${V:-d}`/`${V-d}`/`${V:=d}`/`${V=d}`/`${V:+w}`/`${V+w}` expansions, arrays and `+=`,
`"${ARR[@]}"`, quoting, concatenation and word splitting, `$(( ))` on known integers, `export`, `case`/`if` on
variables, functions called by name. A value that cannot be evaluated holds a marker character standing for the
construct, so that callers can tell where it ends up; what is skipped although it can change what a watched
command receives (a loop around one, an undecided branch that assigns, `source`) is recorded as unevaluated.
"""

from __future__ import annotations

import fnmatch
import re
from functools import cache
from typing import NamedTuple

from ...core.diagnostics import Location
from .words import FieldBuilder, ansi_c, unescape, unescape_double_quoted

MAX_STEPS = 200_000
_MARK_BASE = 0xF0000  # private-use plane: one character per unresolved construct
GLOB_CHAR = re.compile(r"[*?\[]")  # a word holding one is a pattern
# The field that stands for the script's own arguments (`"$@"`) passed to a command.
PASSTHROUGH_FIELD = "\0@"


@cache
def _parser():
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


# tree-sitter-bash 0.25 reads out of bounds on `{` followed by a 4-byte UTF-8 character and can kill the process
# (tree-sitter/tree-sitter-bash#337). The parser gets a copy in which each such character is two 2-byte ones of the
# same kind (letters for a letter or digit, symbols otherwise): every node keeps its byte range, and the
# interpreter reads the text by those ranges from the original.
_FOUR_BYTE_CHAR = re.compile(rb"[\xf0-\xf4][\x80-\xbf]{3}")
_LETTERS, _SYMBOLS = "éé".encode(), "¤¤".encode()


def parse(src: bytes):
    """The tree-sitter-bash tree of a script (tree_sitter is imported on the first call only)."""
    return _parser().parse(_FOUR_BYTE_CHAR.sub(
        lambda m: _LETTERS if m.group().decode("utf-8", "replace").isalnum() else _SYMBOLS, src))


def node_location(path: str, lines: list[bytes], n) -> Location:
    """Where a node starts, with the column counted in characters. A node at the very end of a file that ends
    with a line break (a missing `fi` or quote) is put at the end of the last line, which is where it is missing."""
    row, col = n.start_point
    last = len(lines) - 1 - (len(lines) > 1 and lines[-1] == b"")
    if row > last:
        row, col = last, len(lines[last])
    return Location(path, row + 1, len(lines[row][:col].decode("utf-8", "replace")) + 1)


def readable(s: str, marks: dict[str, str]) -> str:
    """The text with each marker replaced by the construct it stands for (without the reason)."""
    return "".join(marks[ch].split(" (", 1)[0] if ch in marks else ch for ch in s)


class Unevaluated(NamedTuple):
    """A statement skipped although it can change what a watched command receives, and why."""

    location: Location
    message: str


class _TooManySteps(Exception):
    pass


class Interpreter:
    """Evaluates one variant of a script (one environment). A subclass names the commands it looks for
    (`watched_text`, `watched_name`) and receives every command's expanded fields (`on_command`)."""

    watched_text: bytes | None = None  # source text that marks a watched command
    watched_name = ""  # what a watched command is, for messages

    def __init__(self, path: str, src: bytes, lines: list[bytes], env: dict[str, str], marks: dict[str, str],
                 switches: frozenset[str] = frozenset()):
        self.path, self.src, self.lines = path, src, lines
        self.switches = switches  # enumerated variables: unset means empty in the variant that leaves them unset
        self.vars: dict[str, str | list[tuple[str, Location]]] = dict(env)
        self.exported: dict[str, tuple[str, Location]] = {}  # name -> (readable value, where it was exported)
        self.functions: dict[str, object] = {}
        self.marks = marks  # marker char -> construct description (shared across variants)
        self.unevaluated: list[Unevaluated] = []
        self.observed: dict[str, str | None] = {}  # switch variable -> value at its first switch
        self.steps = 0
        self.depth = 0

    # ------------------------------------------------------------------ helpers
    def text(self, n) -> str:
        return self.src[n.start_byte:n.end_byte].decode("utf-8", "replace")

    def loc(self, n) -> Location:
        return node_location(self.path, self.lines, n)

    def mark(self, construct: str, why: str | None = None) -> str:
        """A marker character standing for an unresolved construct (its text; `why` adds the reason)."""
        key = construct if why is None else f"{construct} ({why})"
        for ch, c in self.marks.items():
            if c == key:
                return ch
        ch = chr(_MARK_BASE + len(self.marks))
        self.marks[ch] = key
        return ch

    def warn(self, n, message: str) -> None:
        self.unevaluated.append(Unevaluated(self.loc(n), message))

    def on_command(self, n, fields: list[tuple[str, Location]], assignments: dict[str, tuple[str, Location]],
                   passthrough: Location | None) -> None:
        """A simple command, expanded: its fields (`PASSTHROUGH_FIELD` where the script's arguments go), its
        prefix assignments (name -> (readable value, location)) and where `"$@"` is passed, if it is."""

    # ------------------------------------------------------------------ statements
    def run(self, root) -> None:
        """Evaluate the whole script; one past the step limit or Python's recursion limit is recorded."""
        try:
            for child in root.named_children:
                self.stmt(child)
        except (_TooManySteps, RecursionError):
            self.unevaluated.append(Unevaluated(Location(self.path), "script too large or too deeply nested to "
                                                "evaluate statically"))

    def stmt(self, n) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _TooManySteps()
        t = n.type
        if t in ("comment",):
            return
        if t == "variable_assignment":
            self.assign(n)
        elif t == "variable_assignments":
            for c in n.named_children:
                self.stmt(c)
        elif t == "declaration_command":
            self.declaration(n)
        elif t == "unset_command":
            for c in n.named_children:
                if c.type in ("variable_name", "word"):
                    self.vars.pop(self.text(c), None)
        elif t == "command":
            self.command(n)
        elif t in ("redirected_statement", "pipeline", "compound_statement", "subshell", "program"):
            for c in n.named_children:
                if c.type not in ("file_redirect", "heredoc_redirect", "herestring_redirect", "heredoc_body"):
                    self.stmt(c)
        elif t == "list":
            self.list_(n)
        elif t == "if_statement":
            self.if_(n)
        elif t == "case_statement":
            self.case(n)
        elif t == "function_definition":
            name = n.child_by_field_name("name")
            body = n.child_by_field_name("body")
            if name is not None and body is not None:
                self.functions[self.text(name)] = body
        elif t in ("for_statement", "c_style_for_statement", "while_statement"):
            body = n.child_by_field_name("body")
            if body is not None and self._has_watched_text(body):
                self.warn(n, f"loop `{self.text(n).splitlines()[0]}` is not evaluated; its body runs "
                          f"{self.watched_name}")
        elif t in ("test_command", "negated_command"):
            pass
        # other statements (arithmetic commands, heredocs, ...) set nothing a later command receives

    def _has_watched_text(self, n) -> bool:
        return self.watched_text is not None and self.watched_text in self.src[n.start_byte:n.end_byte]

    def list_(self, n) -> None:
        kids = n.children
        self.stmt(kids[0])
        i = 1
        last = self.cond_value(kids[0])
        while i + 1 < len(kids):
            op, right = kids[i].type, kids[i + 1]
            if last is None:
                if self._assigns(right):
                    self.warn(n, f"condition `{self.text(kids[0])}` is not evaluated statically; assumed "
                              f"{'false' if op == '&&' else 'true'}")
                last = op != "&&"
            elif (op == "&&") == last:
                self.stmt(right)
                last = self.cond_value(right)
            i += 2

    def _assigns(self, n) -> bool:
        stack = [n]
        while stack:
            x = stack.pop()
            if x.type in ("variable_assignment", "declaration_command") or (x.type == "command" and self._has_watched_text(x)):
                return True
            stack.extend(x.named_children)
        return False

    def cond_value(self, n) -> bool | None:
        """Truth of a condition: True/False when decidable, else None."""
        t = n.type
        if t == "test_command":
            inner = [c for c in n.named_children]
            return self.test(inner[0]) if len(inner) == 1 else None
        if t == "list":
            kids = n.children
            left = self.cond_value(kids[0])
            for i in range(1, len(kids) - 1, 2):
                right = self.cond_value(kids[i + 1])
                if kids[i].type == "&&":
                    left = False if left is False or right is False else (None if None in (left, right) else True)
                else:
                    left = True if left is True or right is True else (None if None in (left, right) else False)
            return left
        if t == "negated_command":
            inner = self.cond_value(n.named_children[0]) if n.named_children else None
            return None if inner is None else not inner
        if t == "command":
            name = n.child_by_field_name("name")
            if name is not None and self.text(name) in ("true", ":"):
                return True
            if name is not None and self.text(name) == "false":
                return False
        if t == "variable_assignment":
            return True
        return None

    def test(self, n) -> bool | None:
        t = n.type
        if t == "parenthesized_expression" and n.named_children:
            return self.test(n.named_children[0])
        if t == "unary_expression":
            op = n.children[0].type if n.children else ""
            operand = n.named_children[-1] if n.named_children else None
            if op == "!" and operand is not None:
                v = self.test(operand)
                return None if v is None else not v
            if op in ("-n", "-z") and operand is not None:
                s = self.scalar(operand)
                if s is None:
                    return None
                return bool(s) if op == "-n" else not s
            return None
        if t == "binary_expression":
            op_node = n.child_by_field_name("operator")
            left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
            if op_node is None or left is None or right is None:
                return None
            op = self.text(op_node)
            if op in ("&&", "||", "-a", "-o"):
                a, b = self.test(left), self.test(right)
                if op in ("&&", "-a"):
                    return False if False in (a, b) else (None if None in (a, b) else True)
                return True if True in (a, b) else (None if None in (a, b) else False)
            a, b = self.scalar(left), self.scalar(right)
            if a is None or b is None:
                return None
            if op in ("==", "=", "!="):
                pattern_ok = right.type in ("word", "extglob_pattern", "regex")
                same = fnmatch.fnmatchcase(a, b) if pattern_ok and GLOB_CHAR.search(b) else a == b
                return same if op != "!=" else not same
            if op in ("-eq", "-ne", "-lt", "-gt", "-le", "-ge"):
                try:
                    x, y = int(a), int(b)
                except ValueError:
                    return None
                return {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-gt": x > y, "-le": x <= y, "-ge": x >= y}[op]
            return None
        return None

    def scalar(self, n) -> str | None:
        """A test operand as one string; None when it holds an unresolved construct. Records switch values."""
        var = switch_variable(self, n)
        fields = self.word(n, split=False)
        s = "".join(f for f, _ in fields) if fields else ""
        if any(ch in self.marks for ch in s):
            return None
        if var is not None and var not in self.observed:
            self.observed[var] = s
        return s

    def if_(self, n) -> None:
        clauses = []  # (condition nodes, body nodes)
        cond, body, seen_then = [], [], False
        for c in n.children:
            if c.type in ("if", "fi", "then", ";", "\n"):
                if c.type == "then":
                    seen_then = True
                continue
            if c.type == "elif_clause":
                clauses.append(self._clause(c))
                continue
            if c.type == "else_clause":
                clauses.append((None, [x for x in c.named_children]))
                continue
            (body if seen_then else cond).append(c)
        clauses.insert(0, (cond, body))
        for cond_nodes, body_nodes in clauses:
            if cond_nodes is None:
                for b in body_nodes:
                    self.stmt(b)
                return
            value = None
            for c in cond_nodes:
                if c.type != "test_command":
                    self.stmt(c)
                value = self.cond_value(c)
            if value is None:
                if any(self._assigns(b) for b in body_nodes):
                    self.warn(cond_nodes[0] if cond_nodes else n,
                              f"condition `{self.text(cond_nodes[-1]) if cond_nodes else '?'}` is not evaluated "
                              "statically; assumed false")
                continue
            if value:
                for b in body_nodes:
                    self.stmt(b)
                return

    def _clause(self, c):
        cond, body, seen_then = [], [], False
        for x in c.children:
            if x.type in ("elif", ";", "\n"):
                continue
            if x.type == "then":
                seen_then = True
                continue
            (body if seen_then else cond).append(x)
        return cond, body

    def case(self, n) -> None:
        value_node = n.child_by_field_name("value")
        subject = self.scalar(value_node) if value_node is not None else None
        items = [c for c in n.named_children if c.type == "case_item"]
        if subject is None:
            if any(self._assigns(i) for i in items):
                self.warn(n, f"`case {self.text(value_node) if value_node else ''}` is not evaluated statically; "
                          "no branch taken")
            return
        fall = False
        for item in items:
            patterns = [item.children[i] for i in range(item.child_count) if item.field_name_for_child(i) == "value"]
            hit = fall or any(self._case_match(subject, p) for p in patterns)
            if not hit:
                continue
            for b in item.named_children:
                if b in patterns or item.field_name_for_child(_index(item, b)) in ("value", "termination"):
                    continue
                self.stmt(b)
            term = item.child_by_field_name("termination") or item.child_by_field_name("fallthrough")
            kind = self.text(term) if term is not None else ";;"
            if kind == ";&":
                fall = True
                continue
            if kind == ";;&":
                fall = False
                continue
            return

    def _case_match(self, subject: str, p) -> bool:
        pat = "".join(f for f, _ in self.word(p, split=False)) if p.type not in ("extglob_pattern",) else self.text(p)
        return fnmatch.fnmatchcase(subject, pat)

    # ------------------------------------------------------------------ assignments
    def assign(self, n, export: bool = False, local_env: dict | None = None) -> None:
        name_node = n.child_by_field_name("name")
        value_node = n.child_by_field_name("value")
        if name_node is None:
            return
        op = "+=" if any(c.type == "+=" for c in n.children) else "="
        index = None
        if name_node.type == "subscript":
            idx = name_node.child_by_field_name("index")
            name = self.text(name_node.child_by_field_name("name"))
            index = self.arith_value(idx) if idx is not None else None
        else:
            name = self.text(name_node)
        if value_node is None:
            value: str | list = ""
        elif value_node.type == "array":
            value = []
            for el in value_node.named_children:
                if el.type == "comment":
                    continue
                for f, _ in self.word(el, split=True):
                    value.append((f, self.loc(el)))
        else:
            fields = self.word(value_node, split=False)
            value = "".join(f for f, _ in fields)
        target = local_env if local_env is not None else self.vars
        current = target.get(name, self.vars.get(name))
        if index is not None:
            arr = list(current) if isinstance(current, list) else ([(current, self.loc(n))] if current is not None else [])
            v = value if isinstance(value, str) else " ".join(f for f, _ in value)
            if op == "+=" and index < len(arr):
                v = arr[index][0] + v
            while len(arr) < index:
                arr.append(("", self.loc(n)))
            if index < len(arr):
                arr[index] = (v, self.loc(value_node or n))
            else:
                arr.append((v, self.loc(value_node or n)))
            target[name] = arr
            return
        if op == "+=":
            if isinstance(value, list):
                base = current if isinstance(current, list) else ([(current, self.loc(n))] if current is not None else [])
                value = list(base) + value
            elif isinstance(current, list):
                value = ([(current[0][0] + value, current[0][1])] + list(current[1:])) if current else [(value, self.loc(n))]
            else:
                value = (current or "") + value
        elif isinstance(current, list) and isinstance(value, str) and local_env is None:
            value = [(value, self.loc(value_node or n))] + list(current[1:])
        target[name] = value
        if export or name in self.exported:
            self._export(name, n)

    def _export(self, name: str, n) -> None:
        v = self.vars.get(name)
        if v is None:
            return
        s = v if isinstance(v, str) else (v[0][0] if v else "")
        self.exported[name] = (self.unmark(s), self.loc(n))

    def unmark(self, s: str) -> str:
        return readable(s, self.marks)

    def declaration(self, n) -> None:
        kw = n.children[0].type if n.children else ""
        flags = {self.text(c) for c in n.named_children if c.type == "word" and self.text(c).startswith("-")}
        export = kw == "export" or (kw in ("declare", "typeset", "local") and any("x" in f for f in flags))
        for c in n.named_children:
            if c.type == "variable_assignment":
                self.assign(c, export=export)
            elif c.type == "variable_name":
                name = self.text(c)
                if export:
                    if name in self.vars:
                        self.exported[name] = ("", self.loc(c))
                        self._export(name, c)
                    else:
                        self.exported[name] = ("", self.loc(c))
                elif name not in self.vars and any("a" in f for f in flags):
                    self.vars[name] = []

    # ------------------------------------------------------------------ commands
    def command(self, n) -> None:
        name_node = n.child_by_field_name("name")
        assignments: dict[str, tuple[str, Location]] = {}
        saved = {}
        for c in n.named_children:
            if c.type == "variable_assignment":
                nm = c.child_by_field_name("name")
                if nm is not None:
                    key = self.text(nm)
                    saved.setdefault(key, self.vars.get(key))
                    self.assign(c)
                    v = self.vars.get(key)
                    s = v if isinstance(v, str) else ""
                    assignments[key] = (self.unmark(s), self.loc(c))
        try:
            if name_node is None:
                # a bare assignment list (`A=1 B=2`) keeps its values
                saved.clear()
                return
            args_nodes = [c for c in n.named_children
                          if c != name_node and c.type not in ("variable_assignment", "file_redirect",
                                                                    "herestring_redirect", "comment")]
            name_fields = self.word(name_node.named_children[0] if name_node.named_children else name_node, split=True)
            head = name_fields[0][0] if name_fields else ""
            if head in self.functions and len(name_fields) == 1 and self.depth < 8:
                self.depth += 1
                try:
                    self.stmt(self.functions[head])
                finally:
                    self.depth -= 1
                return
            if head in ("source", "."):
                self.warn(n, f"`{self.text(n)}` is not followed; variables it sets are unknown")
                return
            if head == "shift" or head == "set":
                return
            fields = list(name_fields)
            passthrough = None
            for a in args_nodes:
                if _is_passthrough(self, a):
                    passthrough = self.loc(a)
                    fields.append((PASSTHROUGH_FIELD, self.loc(a)))
                    continue
                fields.extend(self.word(a, split=True, loc=self.loc(a)))
            self.on_command(n, fields, assignments, passthrough)
        finally:
            for k, v in saved.items():
                if v is None:
                    self.vars.pop(k, None)
                else:
                    self.vars[k] = v

    # ------------------------------------------------------------------ words
    def word(self, n, split: bool, loc: Location | None = None) -> list[tuple[str, Location]]:
        """Expand one word into fields (text, location): the word's own location, or an array element's."""
        b = FieldBuilder(loc or self.loc(n))
        self._word(n, b, quoted=False, split=split)
        return b.finish()

    def _word(self, n, b: FieldBuilder, quoted: bool, split: bool) -> None:
        t = n.type
        if t in ("word", "number", "extglob_pattern", "regex", "special_character"):
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
                    b.literal(self.src[prev_end:c.start_byte].decode("utf-8", "replace"))
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
        elif t == "arithmetic_expansion":
            inner = n.named_children[0] if n.named_children else None
            v = self.arith_value(inner) if inner is not None else None
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
                    return  # no positional parameters: "$@" expands to nothing
                if name == "#":
                    b.expanded("0", quoted, split)
                    return
                if name.isdigit() and name != "0":
                    b.expanded("", quoted, split)
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
            name = self.text(target) if target.type == "variable_name" else self.text(target.child_by_field_name("name"))
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
            use_word = (not is_set or (colon and s == "")) if op.lstrip(":") in ("-", "=", "?") else (is_set and not (colon and s == ""))
            if op.lstrip(":") == "?" and use_word:
                b.expanded(self.mark(raw), quoted, split)
                return
            if use_word:
                wb = FieldBuilder(b.loc)
                for c in ops[1:]:
                    self._word(c, wb, quoted, split=False)
                word = "".join(wb.fields_text())
                if op.lstrip(":") == "=":
                    name = self.text(target)
                    self.vars[name] = word
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
            name = self.text(target) if target.type == "variable_name" else self.text(target.child_by_field_name("name"))
            self._var(name, raw, b, quoted, split, index=target if target.type == "subscript" else None)
            return
        b.expanded(self.mark(raw), quoted, split)

    def _index_text(self, sub) -> str:
        idx = sub.child_by_field_name("index")
        return self.text(idx) if idx is not None else ""

    def _lookup(self, target):
        """The variable's value (str or list), None when unset, _UNKNOWN when the index cannot be evaluated."""
        if target.type == "variable_name":
            return self.vars.get(self.text(target))
        name = self.text(target.child_by_field_name("name"))
        v = self.vars.get(name)
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
        v = self.vars.get(name)
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
            b.expanded("" if name in self.switches else self.mark(f"${name}", "never set in the script"), quoted, split)
            return
        b.expanded(v if isinstance(v, str) else (v[0][0] if v else ""), quoted, split)

    def _unset_is_problem(self, name: str) -> bool:
        return name not in self.vars

    # ------------------------------------------------------------------ arithmetic
    def arith_value(self, n) -> int | None:
        if n is None:
            return None
        t = n.type
        if t == "number":
            try:
                return int(self.text(n), 0)
            except ValueError:
                return None
        if t in ("variable_name", "word"):
            s = self.text(n)
            if re.fullmatch(r"-?\d+", s):
                return int(s)
            v = self.vars.get(s)
            if v is None:
                return None
            v = v if isinstance(v, str) else (v[0][0] if v else "")
            return int(v) if re.fullmatch(r"\s*-?\d+\s*", v) else None
        if t in ("simple_expansion", "expansion", "string", "concatenation"):
            s = "".join(f for f, _ in self.word(n, split=False))
            return int(s) if re.fullmatch(r"\s*-?\d+\s*", s) else None
        if t == "parenthesized_expression":
            return self.arith_value(n.named_children[0]) if n.named_children else None
        if t == "unary_expression":
            op = n.children[0].type
            v = self.arith_value(n.named_children[-1]) if n.named_children else None
            if v is None:
                return None
            return {"-": -v, "+": v, "!": int(not v), "~": ~v}.get(op)
        if t == "binary_expression":
            op_node = n.child_by_field_name("operator")
            a = self.arith_value(n.child_by_field_name("left"))
            c = self.arith_value(n.child_by_field_name("right"))
            if op_node is None or a is None or c is None:
                return None
            op = self.text(op_node)
            try:
                if op == "/":
                    return int(a / c) if c else None
                if op == "%":
                    return (abs(a) % abs(c)) * (1 if a >= 0 else -1) if c else None
                fn = {"+": a + c, "-": a - c, "*": a * c, "**": a ** c if 0 <= c < 64 else None,
                      "<": int(a < c), ">": int(a > c), "<=": int(a <= c), ">=": int(a >= c),
                      "==": int(a == c), "!=": int(a != c), "&&": int(bool(a and c)), "||": int(bool(a or c))}
                return fn.get(op)
            except OverflowError:
                return None
        if t == "ternary_expression":
            cond = self.arith_value(n.child_by_field_name("condition"))
            if cond is None:
                return None
            return self.arith_value(n.child_by_field_name("consequence" if cond else "alternative"))
        return None


_UNKNOWN = object()  # an array element whose index cannot be evaluated


def _index(parent, child) -> int:
    for i in range(parent.child_count):
        if parent.children[i] == child:
            return i
    return -1


def switch_variable(ev: Interpreter, n) -> str | None:
    """The variable a test operand or case subject is: `$X`, `"$X"`, `${X}`, `"${X}"`, `${X:-d}`."""
    if n is None:
        return None
    if n.type == "string":
        named = [c for c in n.named_children]
        if len(named) != 1 or n.child_count != 3:
            return None
        n = named[0]
    if n.type == "simple_expansion":
        inner = n.named_children[0] if n.named_children else None
        return ev.text(inner) if inner is not None and inner.type == "variable_name" else None
    if n.type == "expansion":
        kids = [c for c in n.children if c.type not in ("${", "}")]
        if kids and kids[0].type == "variable_name" and (len(kids) == 1 or kids[1].type in (":-", "-")):
            return ev.text(kids[0])
    return None


def _is_passthrough(ev: Interpreter, n) -> bool:
    t = ev.text(n)
    return t in ('"$@"', "$@", '"${@}"', "${@}", "$*", '"$*"')

