"""Text for a terminal: what a file name or file text puts in a report must not move the cursor, retitle the
window, fake a line of its own or reorder what is shown."""

from __future__ import annotations

import re

# C0 controls (newline, carriage return, ESC, BEL, ...), DEL and the C1 range; the line and paragraph separators;
# the bidi marks, embeddings, overrides and isolates (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069); the
# noncharacters U+FFFE and U+FFFF, which YAML refuses even in a comment (`convert` writes its notes as comments).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufffe\uffff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match) -> str:
    char = match[0]
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def printable(text: str) -> str:
    """`text` with every control, separator and bidi character written as a Python escape (`\\x1b`, `\\n`,
    `\\u202e`): one line, shown as it is stored."""
    return _UNPRINTABLE.sub(_escaped, text)
