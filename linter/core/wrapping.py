"""Prose wrapped at a terminal's width, a number never split from the word after it ("15.3 GiB", "8 x", "~61 s"):
the text format's notes (`reporters`) and `explain`'s plan."""

from __future__ import annotations

import re

# The number and the word after it are joined while the text is wrapped, by a character textwrap does not break at:
# a noncharacter that `printable` text never holds.
_NUMBER_THEN_WORD = re.compile(r"(?<![\w.])(~?\d[\d.,]*%?) (?=\S)")
_GLUE = "\uffff"


def wrap_prose(text: str, width: int, first_indent: str = "", indent: str = "") -> list[str]:
    """`text` wrapped at `width` between words (`first_indent` before its first line, `indent` before the others),
    never inside a word nor between a number and the word after it."""
    import textwrap  # only when a terminal is narrower than a line

    lines = textwrap.wrap(
        _NUMBER_THEN_WORD.sub(rf"\1{_GLUE}", text),
        width,
        initial_indent=first_indent,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [line.replace(_GLUE, " ") for line in lines]
