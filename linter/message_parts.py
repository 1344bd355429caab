"""A finding's message as the text format shows it (ruff's and rustc's form): a short headline, then `note:` (why)
and `help:` (what to do) lines.

Every rule writes its message as one text (JSON and SARIF keep it whole), in one house style that this module reads:
the message opens with what is wrong (`unknown key `x``, `actor: world size 8 is not divisible by ...`), then says
why after `: ` or `; `, and ends with what to do in sentences in the imperative (`Set ...`, `Remove ...`, `Fix:
...`). Only top-level punctuation counts: what is inside parentheses, brackets, backticks or double quotes (a quoted
assertion, a path) never splits. A first clause over `HEADLINE_LIMIT` characters is shown without its top-level
`(...)` asides, and whole in the note. `tests/test_message_parts.py` holds every rule's documented finding to a
short, balanced headline.
"""

from __future__ import annotations

import re
from typing import NamedTuple

HEADLINE_LIMIT = 160  # longer, its top-level asides go to the note (the key a headline names can be 80)

# The first words of a sentence or clause that tells the user what to do (`...: drop the `+``).
_IMPERATIVES = frozenset(
    "add avoid choose consider delete drop give install keep lint lower move name pass point put raise reduce "
    "remove rename replace run save select set split state turn unset use write".split()
)
_OPENING = {"(": ")", "[": "]", "{": "}"}
_QUOTES = frozenset('`"')
# A message that opens with the part of the run it is about (`actor: ...`) keeps that word in its headline.
_SUBJECT = re.compile(r"[A-Za-z][\w.-]*( [A-Za-z][\w-]*)?|`[^`]+`")  # a word or two, or a key


class MessageParts(NamedTuple):
    headline: str
    note: str  # why, as written (empty when the headline says it all)
    helps: tuple[str, ...]  # what to do, one sentence each


def message_parts(message: str) -> MessageParts:
    """`message` split into its headline, its note and its help sentences (the module's house style)."""
    clauses = _top_level_clauses(message)
    first = 1
    if len(clauses) > 1 and clauses[0][1] == ": " and _SUBJECT.fullmatch(clauses[0][0]):
        first = 2  # `actor: world size ...`: the subject and what is wrong with it
    headline = "".join(text + sep for text, sep in clauses[: first - 1]) + clauses[first - 1][0]
    short = _without_parentheticals(headline) if len(headline) > HEADLINE_LIMIT else headline
    rest = clauses[first:] if short == headline else clauses
    note, helps = [], []
    helping = False  # a help runs from its first clause to the end of its sentence (`Fix: a; together: b.`)
    for text, sep in rest:
        if helping:
            helps[-1] += text + sep
        elif _is_help(text):
            helps.append(re.sub(r"^Fix:\s*", "", text) + sep)
            helping = True
        else:
            note.append(text + sep)
        if sep == " ":  # the sentence ends
            helping = False
    helps = [_sentence(h) for h in helps]
    why = "".join(note).strip().rstrip(":;").strip()
    return MessageParts(short.strip().rstrip("."), why + "." if why[-1:].isalnum() else why, tuple(helps))


def _sentence(text: str) -> str:
    """A help as a sentence: capitalised, ending in a full stop (or its own `?`)."""
    text = text.strip().rstrip(":;").strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "?", "!")) else ".")


def _is_help(clause: str) -> bool:
    word = clause.split(maxsplit=1)[0] if clause.strip() else ""
    return word == "Fix:" or word.lower() in _IMPERATIVES or clause.startswith(("To ", "Did you mean"))


def _top_level_clauses(message: str) -> list[tuple[str, str]]:
    """(clause, the separator after it) at each top-level `: `, `; ` and sentence end (`. `, `! `, `? ` before an
    upper-case letter or a backtick), the last with an empty separator."""
    clauses: list[tuple[str, str]] = []
    closing: list[str] = []
    start = i = 0
    n = len(message)
    while i < n:
        c = message[i]
        if closing and c == closing[-1]:
            closing.pop()
            quoted_stop = not closing and c in _QUOTES and message[i - 1 : i] in (".", "!", "?")
            if quoted_stop and message[i + 1 : i + 2] == " " and message[i + 2 : i + 3].isupper():
                clauses.append((message[start : i + 1], " "))  # `... raises "X failed." Set ...`
                start = i + 2
                i += 2
                continue
        elif closing and closing[-1] in _QUOTES:
            pass  # inside a quote, brackets do not nest
        elif c in _OPENING:
            closing.append(_OPENING[c])
        elif c in _QUOTES:
            closing.append(c)
        elif not closing and i + 1 < n and message[i + 1] == " ":
            ends_sentence = c in ".!?" and i + 2 < n and (message[i + 2].isupper() or message[i + 2] == "`")
            fix_label = c == ":" and message[start:i].strip() == "Fix"  # `Fix: ...` is one help sentence
            if (c in ":;" and not fix_label) or ends_sentence:
                clauses.append((message[start : i + 1], " ") if ends_sentence else (message[start:i], c + " "))
                start = i + 2
                i += 2
                continue
        i += 1
    clauses.append((message[start:], ""))
    return [(text, sep) for text, sep in clauses if text.strip()] or [(message, "")]


def _without_parentheticals(text: str) -> str:
    """`text` less its top-level ` (...)` asides: a long headline keeps what is wrong, the note keeps the rest."""
    out, depth = [], 0
    for c in text:
        if c == "(":
            depth += 1
        elif c == ")" and depth:
            depth -= 1
            continue
        if depth == 0:
            out.append(c)
    return re.sub(r"\s+([,.;:])", r"\1", re.sub(r"\s{2,}", " ", "".join(out))).strip()
