"""A static bash interpreter over tree-sitter-bash: evaluates a script without running anything.

Assignments (`+=`, arrays with computed, negative and sparse indices, `[k]=v` elements, `declare`/`local`/
`export`/`readonly` with `-a`/`-A`/`-i`/`-x`, `unset` of a variable or an element), the word expansions of
`expansion`, arithmetic commands (`(( n += 1 ))`, `let`), the builtins that assign (`printf -v`, and `read` and
`mapfile` from a here-string, split on IFS), `set --` and `shift`, `case`/`if` on variables with compound conditions
(`[ a ] && { [ b ] || [ c ]; }`, `[[ a && b ]]`, `!`, `test`), `exit`, `cd`/`pushd`/`popd` (the directory a
command runs in: `cwd`), functions called by name with their arguments as positional parameters, their `local`s
and `return`, and loops: a `for` once per item (a C-style `for` while its condition is known), with `break` and
`continue`, up to `MAX_LOOP_ITERATIONS` rounds in all; a loop whose rounds are not known (`while`, `until`, a `for`
over the script's own arguments) once where it runs the watched command. The statements tree-sitter still finds
inside a part it could not read (an ERROR node) are evaluated too. A value that cannot be evaluated holds a marker
character standing for the construct, so
that callers can tell where it ends up. A condition that cannot be decided but guards something that can change
what a watched command receives is a free boolean: the variant's `decisions` say which way it goes, and a condition
met without one takes the `else` way and is recorded in `undecided`, so that the caller can evaluate the other way
as another variant. A variable a test finds empty is recorded (`tested_empty`); one the variant evaluates as
`required` holds the caller's value from such a test on. What is skipped although it can change what a watched
command receives (rounds of a loop not followed, a `case` on a computed word, `source`) is recorded as unevaluated.
This module evaluates the statements; `Interpreter` subclasses `Loops` (in `loops`), which subclasses
`Conditions` (tests, in `conditions`), which subclasses `Expansion` (words and arithmetic, in `expansion`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ...core.budget import charge
from ...core.diagnostics import Location
from .builtin_text import builtin_options, printf_text, rest_of_line
from .conditions import is_test
from .expansion import as_string, elements
from .loops import Break, Continue, Loops
from .markers import Marks, markers
from .words import split_on_ifs

MAX_STEPS = 200_000
# Loop iterations evaluated in one evaluation of a script, all loops together: a `for` over a literal list is
# evaluated item by item, as bash runs it, up to this many.
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


class Interpreter(Loops):
    """Evaluates one variant of a script (one environment). A subclass names the commands it looks for
    (`watches`) and receives every command's expanded fields (`on_command`)."""

    @staticmethod
    def watches(text: bytes) -> bool:
        """Whether source text holds a watched command (or may: it is a cheap test on the text as written)."""
        return False

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
        required: frozenset[str] = frozenset(),
    ):
        self.path, self.src, self.lines = path, src, lines
        # (row, column) -> Location: the same in every variant of the script, so shared across them
        self.locations: dict[tuple[int, int], Location] = {} if locations is None else locations
        self.switches = switches  # enumerated variables: unset means empty in the variant that leaves them unset
        # enumerated variables whose own value cannot be evaluated: an unresolved assignment keeps the variant's value
        self.free = {name: env[name] for name in free if name in env}
        self.decisions = decisions or {}  # condition key -> the way this variant takes it
        # variables the caller gives: where a test finds one empty, it holds the caller's value (`emptiness_tested`)
        self.required = required
        self.tested_empty: dict[str, Location] = {}  # variables found empty by a test for it, and where first
        self.taken: dict[int, Decision] = {}  # the undecidable conditions met, in order, and the way taken
        self.undecided: list[int] = []  # keys of those met without a decision (taken as false)
        self.exited: Location | None = None  # where the script exited, if it did
        # The directory `cd` (`pushd`, `popd`) moved to, as written (relative: to where the script is started; a
        # marker where it is not known); None: where the script is started.
        self.cwd: str | None = None
        self.cwd_stack: list[str | None] = []  # `pushd`'s
        self.vars: dict[str, str | list[tuple[str, Location] | None]] = dict(env)
        self.positional: list[tuple[str, Location]] | None = None  # `$1`...: None for the script's own arguments
        self.associative: set[str] = set()  # arrays declared `-A`: their elements are not followed
        self.integers: set[str] = set()  # variables declared `-i`: assigned arithmetic
        self.arith_nesting = 0  # variables evaluated as arithmetic expressions within one another
        self.scopes: list[dict[str, object]] = []  # per function call: the values its `local`s hide
        self.exported: dict[str, tuple[str, Location]] = {}  # name -> (readable value, where it was exported)
        self.functions: dict[str, object] = {}
        self.marks = marks  # marker char -> construct description (shared across variants)
        self.unevaluated: list[Unevaluated] = []
        self.observed: dict[str, str | None] = {}  # switch variable -> value at its first switch
        self.unresolved_switches: set[str] = set()  # switch variables met holding an unresolved construct
        self.assigned: set[str] = set()  # variables the script has set (or unset) so far
        self.inputs_read: set[str] = set()  # variables read before the script set them: the variant's inputs
        self.reading: list[str] | None = None  # the variables read by the word being expanded (`Expansion.word`)
        self.steps = 0
        self.depth = 0
        self.loop_iterations = 0  # evaluated so far, against `MAX_LOOP_ITERATIONS`
        self.loop_depth = 0  # the loops being evaluated around the current statement: `break` leaves them
        self.loop_variables: list[str] = []  # what the loops around the current statement set each round (`for lr`)

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
        if not self.steps % 1024:  # the file's work budget: a unit for so many steps
            charge("evaluating the script")

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
            self.unset(n)
        elif t == "command":
            self.command(n)
        elif t == "subshell":
            cwd = self.cwd
            try:
                for c in n.named_children:
                    self.stmt(c)
            except (_Exit, Break):
                pass  # `exit` (or `break`) in ( ... ) ends the subshell only
            self.cwd = cwd  # so does a `cd` in it
        elif t == "compound_statement" and n.children and n.children[0].type == "((":
            self.arith_text(f"$(({self.text(n)[2:-2]}))")  # `(( n += 1 ))`: its assignments take effect
        elif t in ("redirected_statement", "pipeline", "compound_statement", "program", "do_group"):
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
        elif t == "for_statement":
            self.for_(n)
        elif t == "c_style_for_statement":
            self.c_style_for(n)
        elif t == "while_statement":
            self.while_(n)
        elif t in ("test_command", "negated_command"):
            self.status(n)
        elif t == "ERROR":  # what tree-sitter could not read: the statements it still found in it are evaluated
            for c in n.named_children:
                if c.type in _STATEMENTS:
                    self.stmt(c)
        # other statements (heredocs, ...) set nothing a later command receives

    def _has_watched_text(self, n) -> bool:
        return self.watches(self.src[n.start_byte : n.end_byte])

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
            except (_Exit, Break):
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
    def assign(self, n, export: bool = False) -> None:
        """`V=x`, `V+=x`, `A=(...)`, `A+=(...)`, `A[i]=x` (a computed index, from the end when negative); the value
        of a variable declared `-i` is arithmetic, and `+=` adds to it."""
        name_node = n.child_by_field_name("name")
        value_node = n.child_by_field_name("value")
        if name_node is None:
            return
        append = any(c.type == "+=" for c in n.children)
        index = None
        if name_node.type == "subscript":
            name = self.text(name_node.child_by_field_name("name"))
            idx = name_node.child_by_field_name("index")
            index = self.arith_text(f"$(({self.text(idx)}))") if idx is not None else None
            if index is None or name in self.associative:
                self.set_var(name, self.mark(self.text(n)))  # the element is unknown: so is the array
                return
        else:
            name = self.text(name_node)
        current = self.get(name) if append or index is not None else self.vars.get(name)
        where = self.loc(value_node or n)
        if value_node is not None and value_node.type == "array":
            value: str | list = self._array(value_node, name)
        else:
            value = "".join(f for f, _ in self.word(value_node, split=False)) if value_node is not None else ""
            if name in self.integers and index is None:
                added = f"{as_string(current) or 0} + " if append and current is not None else ""
                number = self.arith_text(f"$(({added}({value or 0})))")
                value, append = (str(number) if number is not None else self.mark(self.text(n))), False
            if name in self.free and index is None and markers(value, self.marks):
                value = self.free[name]  # a computed value (a device probe): the variant's value stands for it
        if index is not None:
            arr = elements(current)
            if index < 0:
                index += len(arr)
            if index < 0:
                return  # bash: bad array subscript
            arr += [None] * (index + 1 - len(arr))
            text = as_string(value) if isinstance(value, list) else value
            old = arr[index]
            arr[index] = ((old[0] if append and old is not None else "") + text, where)
            value = arr
        elif append and isinstance(value, list):
            value = elements(current) + value
        elif append:
            value = _append_text(current, value, where)
        elif isinstance(current, list) and isinstance(value, str):
            value = [(value, where), *current[1:]]  # `A=x` sets element 0 of an array
        self.set_var(name, value)
        if export or name in self.exported:
            self.exported[name] = ("", self.loc(n))
            self._export(name, n)

    def _array(self, node, name: str) -> list:
        """The elements of `(...)`: each word's fields, `[k]=v` at index k."""
        out: list = []
        for el in node.named_children:
            if el.type == "comment":
                continue
            text = self.text(el)
            m = _INDEXED.match(text) if el.type in ("word", "concatenation") else None
            if m is not None:
                if name in self.associative:
                    return [(self.mark(self.text(node)), self.loc(node))]
                index = self.arith_text(f"$(({m['index']}))")
                if index is None or index < 0:
                    return [(self.mark(self.text(node)), self.loc(node))]
                rest = _value_after_index(el, m.end())
                value = "".join(f for f, _ in self.word(rest, split=False)) if rest is not None else ""
                out += [None] * (index + 1 - len(out))
                out[index] = (value, self.loc(el))
                continue
            out += [(f, self.loc(el)) for f, _ in self.word(el, split=True)]
        return out

    def declaration(self, n) -> None:
        """`declare`, `typeset`, `local`, `export`, `readonly` with their flags (`-a`, `-A`, `-i`, `-x`)."""
        kw = n.children[0].type if n.children else ""
        flags = "".join(self.text(c)[1:] for c in n.named_children if c.type == "word" and self.text(c)[:1] == "-")
        export = kw == "export" or (kw in ("declare", "typeset", "local") and "x" in flags)
        for c in n.named_children:
            name_node = c.child_by_field_name("name") if c.type == "variable_assignment" else c
            if name_node is None or name_node.type not in ("variable_name", "subscript"):
                continue
            name = self.text(name_node if name_node.type == "variable_name" else name_node.child_by_field_name("name"))
            if kw == "local" and self.scopes and name not in self.scopes[-1]:
                self.scopes[-1][name] = self.vars.get(name)
            if "A" in flags:
                self.associative.add(name)
            if "i" in flags:
                self.integers.add(name)
            if c.type == "variable_assignment":
                self.assign(c, export=export)
                continue
            if kw == "local" and self.scopes:
                self.vars.pop(name, None)
                self.assigned.add(name)
            if export:
                self.exported[name] = ("", self.loc(c))
                self._export(name, c)
            elif name not in self.vars and ("a" in flags or "A" in flags):
                self.set_var(name, [])

    def unset(self, n) -> None:
        """`unset V`, `unset A[i]`, `unset "A[i]"` (`-v`; `-f` unsets functions)."""
        words = self._words_of(n.named_children)
        if "-f" in words:
            for name in words:
                self.functions.pop(name, None)
            return
        for word in words:
            element = _ELEMENT.fullmatch(word)
            if element is None:
                if not word.startswith("-"):
                    self.vars.pop(word, None)
                    self.assigned.add(word)
                continue
            arr = elements(self.vars.get(element["name"]))
            index = self.arith_text(f"$(({element['index']}))")
            if index is not None and index < 0:
                index += len(arr)
            if index is None or not 0 <= index < len(arr):
                continue
            arr[index] = None
            self.set_var(element["name"], arr)

    def _words_of(self, nodes) -> list[str]:
        """The words that nodes make, as bash splits them: nodes with no blank between them are one word (tree-sitter
        reads `A[1]` as a name then `[1]`)."""
        out: list[str] = []
        end = None
        for c in nodes:
            text = "".join(f for f, _ in self.word(c, split=False))
            if end is not None and c.start_byte == end and out:
                out[-1] += text
            else:
                out.append(text)
            end = c.end_byte
        return out

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
                    saved.setdefault(key, (self.vars.get(key), key in self.assigned))
                    self.assign(c)
                    v = self.vars.get(key)
                    assignments[key] = (self.unmark(v if isinstance(v, str) else ""), self.loc(c))
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
            fields = list(name_fields)
            passthrough = None
            for a in args_nodes:
                if self.positional is None and self.is_passthrough(a):
                    passthrough = self.loc(a)
                    fields.append((PASSTHROUGH_FIELD, self.loc(a)))
                    continue
                expanded = self.word(a, split=True, loc=self.loc(a))
                if passthrough is None and any(f == PASSTHROUGH_FIELD for f, _ in expanded):
                    passthrough = self.loc(a)  # a function's "$@" holding the script's own arguments
                fields.extend(expanded)
            if head in self.functions and self.depth < 8:
                self.call(head, fields[len(name_fields) :])
                return
            if head == "exit":
                raise _Exit(self.loc(n))
            if head in ("break", "continue") and self.loop_depth:
                words = [f for f, _ in fields[len(name_fields) :]]
                levels = int(words[0]) if words and words[0].isdigit() and int(words[0]) > 0 else 1
                raise (Break if head == "break" else Continue)(levels)
            if head == "return" and self.scopes:
                raise _Return()
            if head in ("source", "."):
                self.warn(n, f"`{self.text(n)}` is not followed; variables it sets are unknown")
                return
            if self.builtin(n, head, fields[len(name_fields) :]):
                return
            self.on_command(n, fields, assignments, passthrough)
        finally:
            for k, (v, was_assigned) in saved.items():
                if v is None:
                    self.vars.pop(k, None)
                else:
                    self.vars[k] = v
                if not was_assigned:
                    self.assigned.discard(k)

    def call(self, name: str, args: list[tuple[str, Location]]) -> None:
        """A function called with `args`: its positional parameters, and its `local`s restored when it returns."""
        saved_positional = self.positional
        self.positional = args
        self.scopes.append({})
        self.depth += 1
        try:
            self.stmt(self.functions[name])
        except _Return:
            pass
        finally:
            self.depth -= 1
            for var, value in self.scopes.pop().items():
                if value is None:
                    self.vars.pop(var, None)
                else:
                    self.vars[var] = value
            self.positional = saved_positional

    def builtin(self, n, head: str, args: list[tuple[str, Location]]) -> bool:
        """The builtins that set variables (`set --`, `shift`, `let`, `printf -v`, `read`, `mapfile`): evaluated
        where their input is known, else the variables they set hold a marker. True when `head` is one of them."""
        words = [a for a, _ in args]
        if head == "set":
            if "--" in words:
                self.positional = args[words.index("--") + 1 :]
            return True
        if head == "shift":
            count = int(words[0]) if words and words[0].isdigit() else 1
            if self.positional is not None:
                self.positional = self.positional[count:]
            return True
        if head in ("cd", "pushd", "popd"):
            self.change_directory(n, head, [w for w in words if not w.startswith("-") or w == "-"])
            return True
        if head == "let":
            for w in words:
                self.arith_text(f"$(({w}))")
            return True
        if head == "printf" and len(words) >= 3 and words[0] == "-v":
            formatted = printf_text(words[2], words[3:]) if not any(markers(w, self.marks) for w in words[2:]) else None
            self.set_var(words[1], formatted if formatted is not None else self.mark(self.text(n)))
            return True
        if head in ("read", "mapfile", "readarray"):
            self.read(n, head, words)
            return True
        return False

    def change_directory(self, n, head: str, words: list[str]) -> None:
        """`cd DIR`, `pushd DIR`, `popd`: the directory the commands after it run in (`cwd`)."""
        if head == "popd":
            if self.cwd_stack:
                self.cwd = self.cwd_stack.pop()
            return
        if head == "pushd":
            self.cwd_stack.append(self.cwd)
        target = words[0] if words else None
        if target is None or target == "-" or target.startswith("~"):
            self.cwd = self.mark(self.text(n))  # `$HOME` or the one before: not followed
        elif target.startswith("/") or self.cwd is None:
            self.cwd = target
        else:
            self.cwd = f"{self.cwd.rstrip('/')}/{target}"

    def read(self, n, head: str, words: list[str]) -> None:
        """`read [-r] [-a A] NAMES <<< word` and `mapfile -t A <<< word`: the here-string split as bash splits it;
        from any other input the variables hold a marker."""
        herestring = next((c for c in n.named_children if c.type == "herestring_redirect"), None)
        text = None
        if herestring is not None and herestring.named_children:
            text = "".join(f for f, _ in self.word(herestring.named_children[-1], split=False)) + "\n"
            if markers(text, self.marks):
                text = None
        options, names = builtin_options(words, takes_value="adinNptu" if head == "read" else "dnOsuCc")
        if head != "read":
            array = names[0] if names else "MAPFILE"
            lines = None if text is None else text.splitlines(keepends="t" not in options)
            self.set_var(
                array, [(line, self.loc(n)) for line in lines] if lines is not None else self.mark(self.text(n))
            )
            return
        if "a" in options:
            names = [options["a"]]
        names = names or ["REPLY"]
        if text is None or "d" in options:
            for name in names:
                self.set_var(name, self.mark(self.text(n)))
            return
        line = text.split("\n", 1)[0]
        if "r" not in options:
            line = re.sub(r"\\(.)", r"\1", line)
        fields = split_on_ifs(line, self.ifs())
        if "a" in options:
            self.set_var(names[0], [(f, self.loc(n)) for f in fields])
            return
        for i, name in enumerate(names):
            if i == len(names) - 1 and len(fields) > len(names):
                self.set_var(name, rest_of_line(line, len(names) - 1, self.ifs()))
            else:
                self.set_var(name, fields[i] if i < len(fields) else "")


_STATEMENTS = frozenset(
    (
        "variable_assignment", "variable_assignments", "declaration_command", "unset_command", "command", "subshell",
        "redirected_statement", "pipeline", "compound_statement", "list", "if_statement", "case_statement",
        "function_definition", "for_statement", "c_style_for_statement", "while_statement", "test_command",
        "negated_command", "ERROR",
    )
)  # fmt: skip


class _Return(Exception):
    """`return` in a function: the function ends here."""


_INDEXED = re.compile(r"\[(?P<index>[^\]]*)\]=")
_ELEMENT = re.compile(r"(?P<name>[A-Za-z_]\w*)\[(?P<index>.+)\]")


def _value_after_index(el, offset: int):
    """The node holding the value of an array element written `[k]=value` (None when it is empty)."""
    for c in el.children if el.type == "concatenation" else [el]:
        if c.end_byte - el.start_byte > offset:
            return c if c.start_byte - el.start_byte >= offset else _Slice(c, el.start_byte + offset)
    return None


class _Slice:
    """The end of a word node, from a byte on: what `[k]=value` leaves when it is one word."""

    type = "word"
    named_children = children = ()

    def __init__(self, node, start: int):
        self.start_byte, self.end_byte, self.start_point = start, node.end_byte, node.start_point


def _append_text(current, value: str, where: Location):
    """`V+=x`: appended to the value, or to an array's element 0."""
    if isinstance(current, list):
        first = current[0] if current else None
        return [((first[0] if first is not None else "") + value, where), *current[1:]]
    return (current or "") + value
