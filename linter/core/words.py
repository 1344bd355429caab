"""Counted nouns in what the command lines print: `1 error`, `2 errors`, `0 warnings`, never `error(s)`."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and `noun`, plural unless `n` is 1 (`plural`, else the noun with an `s`)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
