"""bash's 64-bit integer arithmetic (`$(( ... ))`, `let`, `[[ a -lt b ]]`): constants as bash reads them, the binary
operators, and an arithmetic expansion's text parsed on its own. The evaluation over the parse tree is
`expansion.Expansion`'s; this is what it computes with."""

from __future__ import annotations

import re
from functools import cache

from .parse import parse

DECIMAL = re.compile(r"-?[0-9]+")
BASED = re.compile(r"([0-9]+)#([0-9A-Za-z@_]+)")
ASSIGNING = ("=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=")


def integer(text: str, base: int = 10) -> int | None:
    """A bash integer constant, wrapped to 64 bits as bash reads it; None for what is not one, and for a decimal
    beyond Python's int conversion limit (4,300 digits), which no real script writes."""
    try:
        if base == 0 and len(text) > 1 and text[0] == "0" and text[1:].isdigit():
            return wrap(int(text, 8))  # bash reads a leading 0 as octal
        return wrap(int(text, base))
    except ValueError:
        return None


def based(text: str) -> int | None:
    """`BASE#DIGITS` (`16#ff`, `2#101`)."""
    base, digits = text.split("#", 1)
    try:
        return wrap(int(digits, int(base))) if 2 <= int(base) <= 36 else None
    except ValueError:
        return None


def wrap(v: int) -> int:
    """`v` in bash's arithmetic: 64-bit two's complement."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def binary(op: str, a: int, c: int) -> int | None:
    """`a OP c` in bash's 64-bit arithmetic; None for an operator not evaluated or an error (division by zero)."""
    if op in ("/", "%"):
        if not c:
            return None
        q = abs(a) // abs(c) * (1 if (a < 0) == (c < 0) else -1)  # truncated toward zero, as in C
        return wrap(q if op == "/" else a - q * c)
    if op == "**":
        return wrap(pow(a, c, 1 << 64)) if c >= 0 else None
    if op in ("<<", ">>"):
        return wrap(a << (c & 63)) if op == "<<" else wrap(a >> (c & 63))
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
        "&": a & c,
        "|": a | c,
        "^": a ^ c,
    }.get(op)
    return None if fn is None else wrap(fn)


@cache
def arithmetic_nodes(text: str):
    """(source, expression nodes) of `$(( ... ))` text parsed on its own, or None when it is not arithmetic."""
    if not (text.startswith("$((") and text.endswith("))")):
        return None
    src = b"echo " + text.encode("utf-8")
    root = parse(src).root_node
    value = root.named_children[0].named_children[-1] if root.named_children else None
    if root.has_error or value is None or value.type != "arithmetic_expansion" or not value.named_children:
        return None
    return src, tuple(value.named_children)
