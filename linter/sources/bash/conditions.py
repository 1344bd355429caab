"""Conditions: `[ ]`, `[[ ]]`, `test` and `case` patterns, decided on the expanded words when they hold no marker.

Each evaluates to True/False when that is known statically and to None otherwise; the interpreter decides what an
undecidable condition does. A switch variable's value met in a test is recorded (`observed`,
`unresolved_switches`), so that the script's reader can enumerate the variants; so is a variable found empty where a
test asks whether it is (`tested_empty`): a guard (`[ -z "$DATA" ] && exit 1`) on a parameter the caller must give.
"""

from __future__ import annotations

import fnmatch
import re
from functools import cache

from ...core.command import DeviceSignal
from ...core.device import device_kind, device_kinds, device_word, device_words
from .expansion import Expansion
from .markers import NEVER_SET, markers

GLOB_CHAR = re.compile(r"[*?\[]")  # a word holding one is a pattern


class Conditions(Expansion):
    """Evaluates tests for the interpreter, which subclasses it: it sets up `observed`, `unresolved_switches`,
    `required` and `tested_empty`, and each test counts a step toward its limit (`_step`)."""

    def emptiness_tested(self, n) -> None:
        """`n` is an operand of a test for emptiness (`-z "$X"`, `-n`, `[ "$X" ]`, `"$X" == ""`). A variable empty
        there is recorded (`tested_empty`): when the way through the script then exits, it is a parameter the caller
        must give. In a variant evaluated with it `required`, this is the way on which the caller gave it: from here
        on it holds the caller's value, unknown like any variable the script never sets."""
        var = switch_variable(self, n)
        if var is None or "".join(f for f, _ in self.word(n, split=False)):
            return
        if var in self.required:
            self.set_var(var, self.mark(f"${var}", NEVER_SET))
        else:
            self.tested_empty.setdefault(var, self.loc(n))

    def test_command(self, n) -> bool | None:
        """`[ ... ]` / `[[ ... ]]`: True/False when decidable, else None."""
        self._step()
        inner = n.named_children
        return self.test(inner[0]) if len(inner) == 1 else None

    def test_words(self, n) -> bool | None:
        """The `test` (or `[`) command, on its expanded words."""
        self._step()
        args = [c for c in n.named_children if c != n.child_by_field_name("name") and c.type != "file_redirect"]
        bracket = self.text(n.child_by_field_name("name")) == "["
        for c in _emptiness_operands(self, args, bracket):
            self.emptiness_tested(c)
        for c in args:
            if switch_variable(self, c) is not None:
                self.scalar(c)  # records the value a switch variable is tested with
        words = [f for c in args for f, _ in self.word(c, split=True)]
        if bracket:
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
                self.emptiness_tested(operand)
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
            if op in ("==", "=", "!="):
                for operand, other in ((left, right), (right, left)):
                    if _empty_literal(self, other):
                        self.emptiness_tested(operand)
            a, b = self.scalar(left), self.scalar(right)
            if a is None or b is None:
                return None
            if op in ("==", "=", "!="):
                pattern_ok = right.type in ("word", "extglob_pattern", "regex")
                same = fnmatch.fnmatchcase(a, b) if pattern_ok and GLOB_CHAR.search(b) else a == b
                return same if op != "!=" else not same
            return _compare(a, op, b)
        if t in ("word", "string", "raw_string", "concatenation", "simple_expansion", "expansion", "number"):
            self.emptiness_tested(n)
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


def _empty_literal(ev: Expansion, n) -> bool:
    """Whether a test operand is written as the empty string (`""`, `''`)."""
    return ev.text(n) in ('""', "''")


def _emptiness_operands(ev: Expansion, args: list, bracket: bool) -> list:
    """The operands that a `test` command's arguments (`[`'s when `bracket`, the last of them `]`) test for emptiness:
    `-z X`, `-n X`, `X`, `! X`, `X = ""` (also `==`, `!=`, either way round)."""
    words = args[:-1] if bracket and args and ev.text(args[-1]) == "]" else args
    if words and ev.text(words[0]) == "!":
        words = words[1:]
    texts = [ev.text(w) for w in words]
    if len(words) == 1:
        return words
    if len(words) == 2 and texts[0] in ("-z", "-n"):
        return words[1:]
    if len(words) == 3 and texts[1] in ("=", "==", "!="):
        return [operand for operand, other in ((words[0], words[2]), (words[2], words[0])) if _empty_literal(ev, other)]
    return []


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


# ---------------------------------------------------------------------------------------------- device branches
# The nodes whose children can be statements: only these are walked for device tests (not words, not arrays).
_HOLDS_STATEMENTS = frozenset(
    (
        "program",
        "compound_statement",
        "subshell",
        "function_definition",
        "if_statement",
        "elif_clause",
        "else_clause",
        "case_statement",
        "case_item",
        "list",
        "pipeline",
        "negated_command",
        "redirected_statement",
        "while_statement",
        "for_statement",
        "c_style_for_statement",
        "do_group",
    )
)
_Implied = tuple[str | None, str | None]  # the device kind a condition implies when it is true, and when false


@cache
def _device_text() -> re.Pattern[bytes]:
    """What every device test mentions: a word that names a device kind (`npu`, `ascend`, `gpu`, `cuda`, `nvidia`);
    each kind's software names one of them as well (`torch_npu`, `/usr/local/Ascend`, `nvidia-smi`)."""
    words = sorted(device_words(), key=len, reverse=True)
    return re.compile("|".join(re.escape(w) for w in words).encode(), re.IGNORECASE)


def device_regions(ev: Expansion, root) -> dict[int, DeviceSignal]:
    """The conditional regions of a script that run on one device kind only, by the start byte that names a region
    in `LocatedOverride.branches`: the `then` part of an `if` whose condition tests for a device, an `elif` whose own
    test does (or after tests whose failure does), an `else` after them, a `case` item whose patterns all name one
    kind (`npu|ascend)`), the right of `&&`/`||` after such a test. A test for a device compares with a device word
    (`[ "$device" == npu ]`, `[[ $D != cuda ]]`, `test "$D" = gpu`) or probes Ascend software
    (`python3 -c 'import torch_npu'`, `[ -d /usr/local/Ascend ]`, `command -v npu-smi`); its failure is the other
    kind."""
    out: dict[int, DeviceSignal] = {}
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "if_statement":
            _if_regions(ev, n, out)
        elif n.type == "case_item":
            patterns = [c for c in n.children[: _case_item_colon(n)] if c.is_named]
            kinds = {device_word(ev.text(p)) for p in patterns}
            if len(kinds) == 1 and None not in kinds:
                subject = n.parent.child_by_field_name("value")
                shown = "|".join(ev.text(p) for p in patterns)
                where = f"`{shown})` of `case {brief(ev, subject)}` (line {n.start_point[0] + 1})"
                out[n.start_byte] = DeviceSignal(kinds.pop(), where)
        elif n.type == "list" and len(n.children) >= 3:
            left, op, right = n.children[:3]
            kind = _implied(ev, left)[0 if op.type == "&&" else 1]
            if kind is not None:
                where = f"`{brief(ev, left)} {op.type}` (line {left.start_point[0] + 1})"
                out[right.start_byte] = DeviceSignal(kind, where)
        if n.type in _HOLDS_STATEMENTS:  # a test for a device mentions one: walk only what does
            stack.extend(c for c in n.named_children if _device_text().search(ev.src, c.start_byte, c.end_byte))
    return out


def _case_item_colon(item) -> int:
    """The index of the `)` that ends a `case` item's patterns."""
    return next((i for i, c in enumerate(item.children) if c.type == ")"), 0)


def _if_regions(ev: Expansion, n, out: dict[int, DeviceSignal]) -> None:
    """The device regions of one `if`: its `then` part (named by the `if`), each `elif` and the `else`."""
    then = next((i for i, c in enumerate(n.children) if c.type == "then"), None)
    condition = [c for c in n.children[1:then] if c.is_named] if then is not None else []
    if not condition:
        return
    clauses = [(n.start_byte, condition[-1], "if")]
    clauses += [(c.start_byte, _clause_test(c), "elif") for c in n.children if c.type == "elif_clause"]
    clauses += [(c.start_byte, None, "else") for c in n.children if c.type == "else_clause"]
    failed: dict[str, str] = {}  # device kind -> the earlier test whose failure implies it
    for key, test, keyword in clauses:
        when_true, when_false = _implied(ev, test) if test is not None else (None, None)
        written = f"`{keyword} {brief(ev, test)}`" if test is not None else "`else`"
        if when_true is not None:
            out[key] = DeviceSignal(when_true, f"{written} (line {test.start_point[0] + 1})")
        elif len(failed) == 1:
            kind, after = next(iter(failed.items()))
            out[key] = DeviceSignal(kind, f"{written} after {after}")
        if when_false is not None and test is not None:
            failed.setdefault(when_false, f"`{keyword} {brief(ev, test)}` (line {test.start_point[0] + 1})")


def _clause_test(clause):
    """The last command of an `elif`'s condition: the one whose status decides."""
    test = None
    for c in clause.children:
        if c.type == "then":
            break
        if c.is_named:
            test = c
    return test


def _implied(ev: Expansion, n) -> _Implied:
    """What a condition implies about the device when it succeeds and when it fails."""
    t = n.type
    if t in ("test_command", "parenthesized_expression", "redirected_statement") and n.named_children:
        inner = [c for c in n.named_children if c.type not in ("file_redirect", "heredoc_redirect")]
        return _implied(ev, inner[0]) if len(inner) == 1 else (None, None)
    if t in ("negated_command",) or (t == "unary_expression" and n.children and ev.text(n.children[0]) == "!"):
        when_true, when_false = _implied(ev, n.named_children[-1]) if n.named_children else (None, None)
        return when_false, when_true
    if t in ("compound_statement", "subshell") and n.named_children:
        return _implied(ev, n.named_children[-1])
    if t in ("list", "binary_expression") and len(n.children) == 3:
        left, op, right = n.children
        if op.type in ("&&", "||", "-a", "-o"):
            a, b = _implied(ev, left), _implied(ev, right)
            return _and(a, b) if op.type in ("&&", "-a") else _and(b[::-1], a[::-1])[::-1]
        return _compared(ev.text(left), ev.text(op), ev.text(right))
    if t == "command":
        name = n.child_by_field_name("name")
        args = [ev.text(c) for c in n.named_children if c != name]
        if name is not None and ev.text(name) in ("test", "["):
            args = args[:-1] if args and args[-1] == "]" else args
            negated = bool(args) and args[0] == "!"
            args = args[1:] if negated else args
            implied = _compared(*args) if len(args) == 3 else (None, None)
            return implied[::-1] if negated else implied
    text = ev.text(n)
    for kind in device_kinds().values():
        if kind.software is not None and kind.software.search(text):
            return kind.name, kind.other
    return None, None


def _compared(left: str, op: str, right: str) -> _Implied:
    """`left OP right` where one side is a device word: equal is that kind, unequal the other."""
    kinds = {k for k in (device_word(left), device_word(right)) if k is not None}
    if len(kinds) != 1 or op not in ("=", "==", "!="):
        return None, None
    kind = kinds.pop()
    other = device_kind(kind).other  # a test's failure: the other kind, where there is one
    return (kind, other) if op != "!=" else (other, kind)


def _and(a: _Implied, b: _Implied) -> _Implied:
    """`a && b`: true says what either says (when they agree), false only what both say."""
    trues = {k for k in (a[0], b[0]) if k is not None}
    return (trues.pop() if len(trues) == 1 else None), (a[1] if a[1] == b[1] else None)


def brief(ev: Expansion, n) -> str:
    """A construct as messages quote it: its first line, at most 60 characters."""
    text = ev.text(n).splitlines()[0] if n is not None and ev.text(n) else ""
    return text if len(text) <= 60 else text[:59] + "…"
