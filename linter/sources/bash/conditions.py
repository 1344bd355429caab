"""Conditions: `[ ]`, `[[ ]]`, `test` and `case` patterns, decided on the expanded words when they hold no marker.

Each evaluates to True/False when that is known statically and to None otherwise; the interpreter decides what an
undecidable condition does. A switch variable's value met in a test is recorded (`observed`,
`unresolved_switches`), so that the script's reader can enumerate the variants.
"""

from __future__ import annotations

import fnmatch
import re

from .expansion import Expansion
from .markers import markers

GLOB_CHAR = re.compile(r"[*?\[]")  # a word holding one is a pattern


class Conditions(Expansion):
    """Evaluates tests for the interpreter, which subclasses it: it sets up `observed` and `unresolved_switches`,
    and each test counts a step toward its limit (`_step`)."""

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

    def _case_match(self, subject: str, p) -> bool:
        pat = "".join(f for f, _ in self.word(p, split=False)) if p.type not in ("extglob_pattern",) else self.text(p)
        # a literal is compared as it is: fnmatch compiles each pattern to a regex, in a cache that a `case` of
        # 50,000 items would only churn
        return fnmatch.fnmatchcase(subject, pat) if GLOB_CHAR.search(pat) else subject == pat


_BINARY_TESTS = ("=", "==", "!=", "-eq", "-ne", "-lt", "-gt", "-le", "-ge", "-nt", "-ot", "-ef", "<", ">")


def is_test(ev: Expansion, n) -> bool:
    """Whether a statement only tests (evaluating it changes nothing): `[ ]`, `[[ ]]`, `test`, `true`, `false`,
    and `!`, `{ }`, `( )` and `&&`/`||` lists of those."""
    if n.type == "test_command":
        return True
    if n.type == "command":
        name = n.child_by_field_name("name")
        return name is not None and ev.text(name) in ("test", "[", "true", "false", ":")
    if n.type in ("negated_command", "compound_statement", "subshell", "list"):
        return all(is_test(ev, c) for c in n.named_children)
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


def switch_variable(ev: Expansion, n) -> str | None:
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
