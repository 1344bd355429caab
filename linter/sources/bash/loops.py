"""Loops, as the interpreter evaluates them: a `for` once per item (a C-style `for` while its condition is known),
with `break` and `continue`, up to `MAX_LOOP_ITERATIONS` rounds in all; a loop whose rounds are not known (`while`,
`until`, a `for` over the script's own arguments) once where it runs the watched command. `Loops` is a part of
`interpreter.Interpreter`, whose statements (`stmt`, `status`) and variables its methods use."""

from __future__ import annotations

import itertools
import re

from .conditions import Conditions
from .markers import ARGUMENTS

MAX_LOOP_ITERATIONS = 64
_LOOP_LIMIT = f"the script's loops are evaluated for {MAX_LOOP_ITERATIONS} rounds in all"
# The variables a C-style `for`'s initializer sets (`i=0, j=1`; not `i==0`)
_ASSIGNED = re.compile(r"([A-Za-z_]\w*)\s*=(?!=)")
# The script's own arguments passed on as a word: `"$@"`, `$*`, `"${@}"`, and the slices from one of them on
# (`"${@:1}"` is all of them, `"${@:2}"` all but the first, `"${@:2:3}"` three of them; `${@:0}` starts with $0,
# the script's own name, which is no argument).
_SCRIPT_ARGUMENTS = re.compile(r'(?P<quote>"?)\$(?:[@*]|\{[@*](?::[1-9][0-9]{0,8}(?::[0-9]{1,9})?)?\})(?P=quote)')


class Break(Exception):
    """`break N`: the loop ends here, and so do the N - 1 loops around it (`levels`)."""

    def __init__(self, levels: int):
        super().__init__(levels)
        self.levels = levels


class Continue(Break):
    """`continue N`: the loop goes on with its next item after leaving the N - 1 loops inside it."""


class Loops(Conditions):
    def is_passthrough(self, n) -> bool:
        """Whether a word is the script's own arguments passed on (`"$@"`, `$*`, `"${@:2}"`, ...)."""
        return _SCRIPT_ARGUMENTS.fullmatch(self.text(n)) is not None

    def for_(self, n) -> None:
        """`for NAME in WORDS; do ...; done`: the body once per item, NAME set to it, as bash runs it. The script's
        own arguments (`for a in "$@"`, `for a`) are some of unknown value: the body runs once with NAME standing
        for one of them when it runs the watched command, else not at all (as `${1:-x}` is x)."""
        name_node, body = n.child_by_field_name("variable"), n.child_by_field_name("body")
        if name_node is None or body is None:
            return
        name = self.text(name_node)
        items: list[str] = []
        arguments = not any(c.type == "in" for c in n.children)
        if arguments and self.positional is not None:
            items, arguments = [a for a, _ in self.positional], False
        for i, c in enumerate(n.children):
            if n.field_name_for_child(i) != "value":
                continue
            if self.positional is None and self.is_passthrough(c):
                arguments = True
            else:
                items.extend(f for f, _ in self.word(c, split=True))
        if arguments and self._has_watched_text(body):
            items.append(self.mark(f"${name}", ARGUMENTS))

        def rounds():
            for item in items:
                self.set_var(name, item)
                yield True

        self._iterate(n, body, rounds(), name)

    def c_style_for(self, n) -> None:
        """`for ((INIT; CONDITION; UPDATE)); do ...; done`: evaluated while its condition is known. One that is not
        from the start (`for ((;;))`, `i < $N`) is evaluated for one round when it runs the watched command."""
        body = n.child_by_field_name("body")
        parts = c_style_parts(self.src, n)
        if body is None or parts is None:
            return
        initializer, condition, update = parts

        def rounds():
            self.arith_text(f"$(({initializer or 0}))")
            for done in itertools.count():
                holds = self.arith_text(f"$(({condition}))") if condition.strip() else None
                if holds is None:
                    if not done and self._has_watched_text(body):
                        yield True
                    yield "its condition is not known statically"
                    return
                if not holds:
                    return
                yield True
                self.arith_text(f"$(({update or 0}))")

        self._iterate(n, body, rounds(), *_ASSIGNED.findall(initializer))

    def while_(self, n) -> None:
        """`while`/`until CONDITION; do ...; done`: how many times it runs is not followed (an argument-parsing loop
        shifts through arguments of unknown value). One that runs the watched command has its condition and then
        its body evaluated once, unless the condition is known to end the loop before."""
        body = n.child_by_field_name("body")
        if body is None or not self._has_watched_text(n):
            return
        until = n.children[0].type == "until"
        conditions = [c for i, c in enumerate(n.children) if n.field_name_for_child(i) == "condition" and c.is_named]

        def rounds():
            holds = None
            for c in conditions:
                holds = self.status(c)
            if holds is not None and holds == until:
                return
            yield True
            yield "how many times it runs is not followed"

        self._iterate(n, body, rounds())

    def _iterate(self, n, body, rounds, *variables: str) -> None:
        """Evaluate a loop's body once per round that `rounds` yields (True). A reason it yields instead says why
        the rounds after those are not followed: reported where the body can change what the watched command
        receives, as is a loop cut at `MAX_LOOP_ITERATIONS`. `variables`: what the loop sets each round (`for
        lr in ...`: lr), which tell one round's trainer call from another's."""
        self.loop_depth += 1
        self.loop_variables.extend(variables)
        try:
            for done in itertools.count():
                step = next(rounds, False) if self.loop_iterations < MAX_LOOP_ITERATIONS else _LOOP_LIMIT
                if step is False:
                    return
                if step is not True:
                    if self._assigns(body):
                        rounds_done = "one round" if done == 1 else f"its first {done} rounds"
                        evaluated = f"evaluated for {rounds_done} only" if done else "not evaluated"
                        self.warn(n, f"loop `{self.text(n).splitlines()[0]}` is {evaluated}: {step}")
                    return
                self.loop_iterations += 1
                try:
                    self.stmt(body)
                except Break as exc:  # `continue` too
                    if exc.levels > 1:
                        raise type(exc)(exc.levels - 1) from None
                    if not isinstance(exc, Continue):
                        return
        finally:
            self.loop_depth -= 1
            del self.loop_variables[len(self.loop_variables) - len(variables) :]


def c_style_parts(src: bytes, n) -> tuple[str, str, str] | None:
    """The initializer, condition and update of `for ((...; ...; ...))` as written (empty where left out)."""
    opening = next((c for c in n.children if c.type == "(("), None)
    closing = next((c for c in n.children if c.type == "))"), None)
    if opening is None or closing is None:
        return None
    semicolons = [c for c in n.children if c.type == ";" and opening.end_byte <= c.start_byte < closing.start_byte]
    if len(semicolons) != 2:
        return None
    initializer, condition, update = (
        src[a.end_byte : b.start_byte].decode("utf-8", "replace")
        for a, b in itertools.pairwise([opening, *semicolons, closing])
    )
    return initializer, condition, update
