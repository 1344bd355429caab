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
This module evaluates the statements; `Interpreter` subclasses `Conditions` (tests, in `conditions`), which
subclasses `Expansion` (words and arithmetic, in `expansion`).
"""

from __future__ import annotations

from typing import NamedTuple

from ...core.budget import check_time
from ...core.diagnostics import Location
from .conditions import Conditions, is_test
from .markers import Marks, markers

MAX_STEPS = 200_000
# The field that stands for the script's own arguments (`"$@"`) passed to a command.
PASSTHROUGH_FIELD = "\0@"


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


class Interpreter(Conditions):
    """Evaluates one variant of a script (one environment). A subclass names the commands it looks for
    (`watched_text`, `watched_name`) and receives every command's expanded fields (`on_command`)."""

    watched_text: bytes | None = None  # source text that marks a watched command
    watched_name = ""  # what a watched command is, for messages

    def __init__(
        self,
        path: str,
        src: bytes,
        lines: list[bytes],
        env: dict[str, str],
        marks: Marks,
        switches: frozenset[str] = frozenset(),
        free: frozenset[str] = frozenset(),
        decisions: dict[int, bool] | None = None,
        locations: dict | None = None,
    ):
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

    def warn(self, n, message: str) -> None:
        self.unevaluated.append(Unevaluated(self.loc(n), message))

    def on_command(
        self,
        n,
        fields: list[tuple[str, Location]],
        assignments: dict[str, tuple[str, Location]],
        passthrough: Location | None,
    ) -> None:
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
            self.unevaluated.append(
                Unevaluated(Location(self.path), "script too large or too deeply nested to evaluate statically")
            )

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
                self.warn(
                    n, f"loop `{self.text(n).splitlines()[0]}` is not evaluated; its body runs {self.watched_name}"
                )
        elif t in ("test_command", "negated_command"):
            self.status(n)
        # other statements (arithmetic commands, heredocs, ...) set nothing a later command receives

    def _has_watched_text(self, n) -> bool:
        return self.watched_text is not None and self.watched_text in self.src[n.start_byte : n.end_byte]

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
                    settles = self.status(right) if is_test(self, right) else None
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
            if x.type in ("variable_assignment", "declaration_command") or (
                x.type == "command" and self._has_watched_text(x)
            ):
                return True
            stack.extend(x.named_children)
        return False

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
                self.warn(
                    n,
                    f"`case {self.text(value_node) if value_node else ''}` is not evaluated statically; "
                    "no branch taken",
                )
            return
        fall = False
        for item in items:
            # children told apart by their field (`v0|v1|...|v49999)` looked each child up among the patterns)
            children = item.children
            hit = fall or any(
                self._case_match(subject, c) for i, c in enumerate(children) if item.field_name_for_child(i) == "value"
            )
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
            arr = (
                list(current)
                if isinstance(current, list)
                else ([(current, self.loc(n))] if current is not None else [])
            )
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
                base = (
                    current if isinstance(current, list) else ([(current, self.loc(n))] if current is not None else [])
                )
                value = list(base) + value
            elif isinstance(current, list):
                value = (
                    ([(current[0][0] + value, current[0][1])] + list(current[1:]))
                    if current
                    else [(value, self.loc(n))]
                )
            else:
                value = (current or "") + value
        elif isinstance(current, list) and isinstance(value, str) and local_env is None:
            value = [(value, self.loc(value_node or n))] + list(current[1:])
        target[name] = value
        if local_env is None:
            self.assigned.add(name)
        if export or name in self.exported:
            self._export(name, n)

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
            args_nodes = [
                c
                for c in n.named_children
                if c != name_node
                and c.type not in ("variable_assignment", "file_redirect", "herestring_redirect", "comment")
            ]
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


def _is_passthrough(ev: Interpreter, n) -> bool:
    t = ev.text(n)
    return t in ('"$@"', "$@", '"${@}"', "${@}", "$*", '"$*"')
