"""A static bash interpreter over tree-sitter-bash: evaluates a script without running anything.

Assignments and the `${V:-d}`/`${V-d}`/`${V:=d}`/`${V=d}`/`${V:+w}`/`${V+w}` expansions, arrays and `+=`,
`"${ARR[@]}"`, quoting, concatenation and word splitting, `$(( ))` on known integers, `export`, `case`/`if` on
variables with compound conditions (`[ a ] && { [ b ] || [ c ]; }`, `[[ a && b ]]`, `!`, `test`), `exit`,
functions called by name. A value that cannot be evaluated holds a marker character standing for the construct, so
that callers can tell where it ends up. A condition that cannot be decided but guards something that can change
what a watched command receives is a free boolean: the variant's `decisions` say which way it goes, and a condition
met without one takes the `else` way and is recorded in `undecided`, so that the caller can evaluate the other way
as another variant. What is skipped although it can change what a watched command receives (a loop around one, a
`case` on a computed word, `source`) is recorded as unevaluated.
"""

from __future__ import annotations

import fnmatch
import re
import sys
from bisect import bisect_left
from functools import cache, lru_cache
from typing import NamedTuple

from ...core.budget import check_time
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
    copy = _FOUR_BYTE_CHAR.sub(lambda m: _LETTERS if m.group().decode("utf-8", "replace").isalnum() else _SYMBOLS,
                               src)
    return _parser().parse(_mask_nested_arithmetic(copy))


# tree-sitter-bash 0.25 misreads `$(( ... ))` inside `${V:-...}` when the expression holds parentheses, `?:` or
# `--` (`${V:-$(((a + b) * 2))}` is an ERROR; bash accepts it): it takes `$(` for a command substitution. The parser's
# copy has the body of each `$((...))` nested in `${...}` replaced by `0` and blanks (line breaks kept), so every
# node keeps its byte range and line; the interpreter evaluates every arithmetic expansion from its own text
# parsed alone (`_arithmetic`), where tree-sitter reads it right.
def _mask_nested_arithmetic(src: bytes) -> bytes:
    start = src.find(b"$((")
    if start < 0 or b"${" not in src:
        return src
    closing = _closing_parentheses(src)
    out = bytearray(src)
    braces = 0
    i = 0
    while i < len(src):
        if src.startswith(b"${", i):
            braces += 1
            i += 2
            continue
        if src[i] == ord("}") and braces:
            braces -= 1
        elif braces and src.startswith(b"$((", i):
            # the body ends at the `)` that closes the second `(`, if the first closes right after it (`$((a) (b))`
            # is a command substitution)
            end = closing.get(i + 2)
            if end is not None and end > i + 3 and closing.get(i + 1) == end + 1:
                out[i + 3:end] = b"0" + bytes(b if b == ord("\n") else ord(" ") for b in src[i + 4:end])
                i = end + 2
                continue
        i += 1
    return bytes(out)


def _closing_parentheses(src: bytes) -> dict[int, int]:
    """Where each `(` is closed, in one pass (searching from each `$((` anew took quadratic time)."""
    closing, open_at = {}, []
    for i, c in enumerate(src):
        if c == ord("("):
            open_at.append(i)
        elif c == ord(")") and open_at:
            closing[open_at.pop()] = i
    return closing


def node_location(path: str, lines: list[bytes], n) -> Location:
    """Where a node starts, with the column counted in characters. A node at the very end of a file that ends
    with a line break (a missing `fi` or quote) is put at the end of the last line, which is where it is missing."""
    row, col = n.start_point
    last = len(lines) - 1 - (len(lines) > 1 and lines[-1] == b"")
    if row > last:
        row, col = last, len(lines[last])
    return Location(path, row + 1, char_column(lines[row], col) + 1)


_CONTINUATION_BYTE = re.compile(rb"[\x80-\xbf]")


@lru_cache(maxsize=8)
def _continuation_bytes(line: bytes) -> tuple[int, ...]:
    """Where a UTF-8 line has the continuation bytes of its multi-byte characters (none in ASCII). A column in
    characters is found from them by bisection, not by decoding the line up to it: a trainer call of 20,000
    arguments on one line was decoded once per argument."""
    return () if line.isascii() else tuple(m.start() for m in _CONTINUATION_BYTE.finditer(line))


def char_column(line: bytes, byte: int) -> int:
    """How many characters the line's first `byte` bytes hold (a character cut short counts as one)."""
    return byte - bisect_left(_continuation_bytes(line), byte)


def byte_column(line: bytes, chars: int) -> int:
    """Where the character after the line's first `chars` characters starts: `char_column`'s inverse."""
    continuations = _continuation_bytes(line)
    # the continuation bytes before it are the first k, for the least k with continuations[k] - k > chars (a
    # non-decreasing quantity: the positions increase by at least one each)
    lo, hi = 0, len(continuations)
    while lo < hi:
        mid = (lo + hi) // 2
        if continuations[mid] - mid > chars:
            hi = mid
        else:
            lo = mid + 1
    return chars + lo


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


_MARKER = re.compile("[\U000F0000-\U0010FFFF]")  # where markers can be (`_MARK_BASE` up)


class Marks(dict):
    """Marker character -> the construct it stands for (its text, then the reason in parentheses), shared by the
    variants of a script; with the reverse index, so that a script of 50,000 constructs does not search them all
    for each one."""

    def __init__(self) -> None:
        super().__init__()
        self.of: dict[str, str] = {}  # construct -> its marker

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


def readable(s: str, marks: dict[str, str]) -> str:
    """The text with each marker replaced by the construct it stands for (without the reason)."""
    return _MARKER.sub(lambda m: construct_text(marks[m.group()]) if m.group() in marks else m.group(), s)


class Unevaluated(NamedTuple):
    """A statement skipped although it can change what a watched command receives, and why."""

    location: Location
    message: str


class Decision(NamedTuple):
    """A condition the variant took one way without being able to decide it: where it is and which way."""

    key: int  # the condition's start byte: the same condition in every variant
    location: Location
    value: bool


class _TooManySteps(Exception):
    pass


class _Exit(Exception):
    """`exit`: the script (or the subshell running it) ends here."""


class Interpreter:
    """Evaluates one variant of a script (one environment). A subclass names the commands it looks for
    (`watched_text`, `watched_name`) and receives every command's expanded fields (`on_command`)."""

    watched_text: bytes | None = None  # source text that marks a watched command
    watched_name = ""  # what a watched command is, for messages

    def __init__(self, path: str, src: bytes, lines: list[bytes], env: dict[str, str], marks: Marks,
                 switches: frozenset[str] = frozenset(), free: frozenset[str] = frozenset(),
                 decisions: dict[int, bool] | None = None, locations: dict | None = None):
        self.path, self.src, self.lines = path, src, lines
        # (row, column) -> Location: the same in every variant of the script, so shared across them
        self.locations: dict[tuple[int, int], Location] = {} if locations is None else locations
        self.switches = switches  # enumerated variables: unset means empty in the variant that leaves them unset
        # enumerated variables whose own value cannot be evaluated: an unresolved assignment keeps the variant's value
        self.free = {name: env[name] for name in free if name in env}
        self.decisions = decisions or {}  # condition key -> the way this variant takes it
        self.taken: dict[int, Decision] = {}  # the undecidable conditions met, in order, and the way taken
        self.undecided: list[int] = []  # keys of those met without a decision (taken as false)
        self.exited: Location | None = None  # where the script exited, if it did
        self.vars: dict[str, str | list[tuple[str, Location]]] = dict(env)
        self.exported: dict[str, tuple[str, Location]] = {}  # name -> (readable value, where it was exported)
        self.functions: dict[str, object] = {}
        self.marks = marks  # marker char -> construct description (shared across variants)
        self.unevaluated: list[Unevaluated] = []
        self.observed: dict[str, str | None] = {}  # switch variable -> value at its first switch
        self.unresolved_switches: set[str] = set()  # switch variables met holding an unresolved construct
        self.assigned: set[str] = set()  # variables the script has set (or unset) so far
        self.inputs_read: set[str] = set()  # variables read before the script set them: the variant's inputs
        self.steps = 0
        self.depth = 0

    # ------------------------------------------------------------------ helpers
    def text(self, n) -> str:
        return self.src[n.start_byte:n.end_byte].decode("utf-8", "replace")

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
        except _Exit as exc:
            self.exited = exc.args[0]
        except (_TooManySteps, RecursionError):
            self.unevaluated.append(Unevaluated(Location(self.path), "script too large or too deeply nested to "
                                                "evaluate statically"))

    def _step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _TooManySteps()
        if not self.steps % 1024:  # the file's time budget, every so many steps (a clock read costs a step's time)
            check_time("evaluating the script")

    def stmt(self, n) -> None:
        self._step()
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
                    self.assigned.add(self.text(c))
        elif t == "command":
            self.command(n)
        elif t == "subshell":
            try:
                for c in n.named_children:
                    self.stmt(c)
            except _Exit:
                pass  # `exit` in ( ... ) ends the subshell only
        elif t in ("redirected_statement", "pipeline", "compound_statement", "program"):
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
            self.status(n)
        # other statements (arithmetic commands, heredocs, ...) set nothing a later command receives

    def _has_watched_text(self, n) -> bool:
        return self.watched_text is not None and self.watched_text in self.src[n.start_byte:n.end_byte]

    def status(self, n) -> bool | None:
        """Run one statement and say whether it succeeds: True/False when that is known statically, else None."""
        t = n.type
        if t == "list":
            return self.list_(n)
        if t == "test_command":
            return self.test_command(n)
        if t == "negated_command":
            inner = self.status(n.named_children[0]) if n.named_children else None
            return None if inner is None else not inner
        if t in ("compound_statement", "subshell"):
            last: bool | None = True
            try:
                for c in n.named_children:
                    last = self.status(c)
            except _Exit:
                if t == "compound_statement":
                    raise
                return None
            return last
        if t in ("variable_assignment", "variable_assignments"):
            self.stmt(n)
            return True
        if t == "command":
            name = n.child_by_field_name("name")
            head = self.text(name) if name is not None else ""
            if head in ("test", "["):
                return self.test_words(n)
            self.stmt(n)
            return {"true": True, ":": True, "false": False}.get(head)
        self.stmt(n)
        return None

    def decide(self, n) -> bool:
        """The way this variant takes a condition it cannot decide (the `else` way unless `decisions` say)."""
        key = n.start_byte
        if key in self.taken:
            return self.taken[key].value
        value = self.decisions.get(key)
        if value is None:
            value = False
            self.undecided.append(key)
        self.taken[key] = Decision(key, self.loc(n), value)
        return value

    def list_(self, n) -> bool | None:
        """`a && b || c`: each right-hand side runs when the outcome so far allows it. An outcome that cannot be
        decided is a free boolean (`decide`) when what follows it assigns or runs the watched command; otherwise a
        test that follows still settles it where it can (`unknown && false` is false), and anything else that
        follows is skipped with the outcome left unknown."""
        kids = n.children
        last = self.status(kids[0])
        assigning: list[bool] | None = None  # by operand: whether it or one after it assigns (`_assigns_from`)
        for i in range(1, len(kids) - 1, 2):
            op, right = kids[i].type, kids[i + 1]
            if last is None:
                if assigning is None:
                    assigning = self._assigns_from([[kids[j]] for j in range(0, len(kids), 2)])
                if assigning[(i + 1) // 2]:
                    last = self.decide(kids[i - 1])
                else:
                    settles = self.status(right) if _is_test(self, right) else None
                    last = settles if settles is (op == "||") else None
                    continue
            if (op == "&&") == last:
                last = self.status(right)
        return last

    def _assigns_from(self, groups: list[list]) -> list[bool]:
        """For each group of statements, whether it or a later group assigns or runs the watched command: one walk
        over them all, however many `elif`s ask."""
        out = [False] * (len(groups) + 1)
        for i in range(len(groups) - 1, -1, -1):
            out[i] = out[i + 1] or any(self._assigns(n) for n in groups[i])
        return out

    def _assigns(self, n) -> bool:
        stack = [n]
        while stack:
            x = stack.pop()
            if x.type in ("variable_assignment", "declaration_command") or (x.type == "command" and self._has_watched_text(x)):
                return True
            stack.extend(x.named_children)
        return False

    def test_command(self, n) -> bool | None:
        """`[ ... ]` / `[[ ... ]]`: True/False when decidable, else None."""
        self._step()
        inner = n.named_children
        return self.test(inner[0]) if len(inner) == 1 else None

    def test_words(self, n) -> bool | None:
        """The `test` (or `[`) command, on its expanded words."""
        self._step()
        args = [c for c in n.named_children if c != n.child_by_field_name("name") and c.type != "file_redirect"]
        for c in args:
            if switch_variable(self, c) is not None:
                self.scalar(c)  # records the value a switch variable is tested with
        words = [f for c in args for f, _ in self.word(c, split=True)]
        if self.text(n.child_by_field_name("name")) == "[":
            if not words or words[-1] != "]":
                return None
            words = words[:-1]
        if any(markers(w, self.marks) for w in words):
            return None
        return posix_test(words)

    def test(self, n) -> bool | None:
        t = n.type
        if t == "parenthesized_expression" and n.named_children:
            return self.test(n.named_children[0])
        if t == "unary_expression":
            op = self.text(n.children[0]) if n.children else ""
            operand = n.named_children[-1] if n.named_children else None
            if operand is None:
                return None
            if op == "!":
                v = self.test(operand)
                return None if v is None else not v
            if op in ("-n", "-z"):
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
            return _compare(a, op, b)
        if t in ("word", "string", "raw_string", "concatenation", "simple_expansion", "expansion", "number"):
            s = self.scalar(n)  # a lone operand: true when not empty
            return None if s is None else bool(s)
        return None

    def scalar(self, n) -> str | None:
        """A test operand as one string; None when it holds an unresolved construct. Records switch values."""
        var = switch_variable(self, n)
        fields = self.word(n, split=False)
        s = "".join(f for f, _ in fields) if fields else ""
        if markers(s, self.marks):
            if var is not None:
                self.unresolved_switches.add(var)
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
        assigning: list[bool] | None = None  # by clause: whether it or a later one assigns (`_assigns_from`)
        for i, (cond_nodes, body_nodes) in enumerate(clauses):
            if cond_nodes is None:
                for b in body_nodes:
                    self.stmt(b)
                return
            value = None
            for c in cond_nodes:
                value = self.status(c)
            if value is None:
                if assigning is None:
                    assigning = self._assigns_from([later for _, later in clauses])
                if not assigning[i]:
                    continue  # nothing that follows changes a later command: skip it all
                value = self.decide(cond_nodes[0] if cond_nodes else n)
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
            # children told apart by their field (`v0|v1|...|v49999)` looked each child up among the patterns)
            children = item.children
            hit = fall or any(self._case_match(subject, c) for i, c in enumerate(children)
                              if item.field_name_for_child(i) == "value")
            if not hit:
                continue
            for i, c in enumerate(children):
                if c.is_named and item.field_name_for_child(i) not in ("value", "termination"):
                    self.stmt(c)
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
        # a literal is compared as it is: fnmatch compiles each pattern to a regex, in a cache that a `case` of
        # 50,000 items would only churn
        return fnmatch.fnmatchcase(subject, pat) if GLOB_CHAR.search(pat) else subject == pat

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
            if name in self.free and index is None and markers(value, self.marks):
                value = self.free[name]  # a computed value (a device probe): the variant's value stands for it
        target = local_env if local_env is not None else self.vars
        current = target.get(name, self.vars.get(name))
        if op == "+=" or index is not None:
            self.get(name)  # appending reads the current value: an input when the script has not set it
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
            if local_env is None:
                self.assigned.add(name)
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
        if local_env is None:
            self.assigned.add(name)
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
            if head == "exit":
                raise _Exit(self.loc(n))
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
        """The value of `$(( ... ))` from a parse of its text on its own (see `_mask_nested_arithmetic`; inside
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
    fn = {"+": a + c, "-": a - c, "*": a * c,
          "<": int(a < c), ">": int(a > c), "<=": int(a <= c), ">=": int(a >= c),
          "==": int(a == c), "!=": int(a != c), "&&": int(bool(a and c)), "||": int(bool(a or c))}.get(op)
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


_BINARY_TESTS = ("=", "==", "!=", "-eq", "-ne", "-lt", "-gt", "-le", "-ge", "-nt", "-ot", "-ef", "<", ">")


def _is_test(ev: Interpreter, n) -> bool:
    """Whether a statement only tests (evaluating it changes nothing): `[ ]`, `[[ ]]`, `test`, `true`, `false`,
    and `!`, `{ }`, `( )` and `&&`/`||` lists of those."""
    if n.type == "test_command":
        return True
    if n.type == "command":
        name = n.child_by_field_name("name")
        return name is not None and ev.text(name) in ("test", "[", "true", "false", ":")
    if n.type in ("negated_command", "compound_statement", "subshell", "list"):
        return all(_is_test(ev, c) for c in n.named_children)
    return False


def _compare(a: str, op: str, b: str) -> bool | None:
    """`a OP b` for the string and integer operators of `test`; None for an operator or operand it cannot judge."""
    if op in ("=", "=="):
        return a == b
    if op == "!=":
        return a != b
    if op in ("-eq", "-ne", "-lt", "-gt", "-le", "-ge"):
        try:
            x, y = int(a), int(b)
        except ValueError:
            return None
        return {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-gt": x > y, "-le": x <= y, "-ge": x >= y}[op]
    return None


def posix_test(words: list[str]) -> bool | None:
    """`test WORDS...` by POSIX's rules on the number of arguments; None for file tests and other operators
    whose outcome depends on the machine the script runs on."""
    if not words:
        return False
    if len(words) == 1:
        return bool(words[0])
    if len(words) == 2:
        op, x = words
        if op == "!":
            return not x
        return bool(x) if op == "-n" else (not x if op == "-z" else None)
    if len(words) == 3:
        if words[1] in _BINARY_TESTS:
            return _compare(*words)
        if words[0] == "!":
            v = posix_test(words[1:])
            return None if v is None else not v
        return bool(words[1]) if words[0] == "(" and words[2] == ")" else None
    if len(words) == 4 and words[0] == "!":
        v = posix_test(words[1:])
        return None if v is None else not v
    return None


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

