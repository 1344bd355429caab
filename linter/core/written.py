"""How an override is written in its file, and how a new value is written there: YAML's quoting in a recipe, the
shell's around a run script's word (Hydra's own syntax kept inside it). What `--fix` needs to rewrite an override
in the file's own form."""

from __future__ import annotations

import re
import shlex
from typing import NamedTuple

from .overrides import format_value

# A fix is written only on a line of at most this many characters: a record of an override keeps its line's text
# around it, and a hostile file of 300,000 overrides on one 4 MB line would otherwise hold that line once per
# override (quadratic memory); an override on a longer line gets its fix as a hint only.
LONGEST_FIXABLE_LINE = 4096


class Written(NamedTuple):
    """An override exactly as its file writes it, all on the line where it starts: the text a fix rewrites."""

    before: str  # the line's text before it: only indentation where it starts its line
    text: str  # a script's whole word, quotes included (`'key=[1,2]'`); a recipe's `key: value`, to the value's end
    after: str  # the rest of the line, without its line break: a ` \` continuation, a comment, more words
    script: bool  # a run script's word (else a recipe's YAML entry)


_WORD_BREAK = set(" \t\r\n;&|<>()")
# What `shlex.split` reads as more than the character itself (it is called without comments): quotes, its escape
# and its white space. A word of none of these is one argument, itself, as shlex would split it (and 20x faster).
_SHLEX_SPECIAL = frozenset("'\"\\ \t\r\n")


def shell_word_end(text: str, start: int) -> int:
    """Index after the shell word that starts at `start` (bash's quoting: '...', "...", \\x, $(...), ${...})."""
    i, depth, quote_char = start, 0, ""
    while i < len(text):
        c = text[i]
        if quote_char == "'":
            quote_char = "" if c == "'" else quote_char
        elif c == "\\":
            if text.startswith("\n", i + 1) and not quote_char and depth == 0:
                break  # a line continuation ends the word
            i += 1
        elif c == '"':
            quote_char = "" if quote_char == '"' else '"'
        elif c == "'" and not quote_char:
            quote_char = "'"
        elif c == "$" and text.startswith(("(", "{"), i + 1):
            depth += 1
            i += 1
        elif c in ")}" and depth:
            depth -= 1
        elif not quote_char and depth == 0 and c in _WORD_BREAK:
            break
        i += 1
    return min(i, len(text))


def written_word(line: str, column: int, evaluated: str) -> Written | None:
    """The shell word at `column` (1-based) of a script's `line`, where it is literal: its quotes removed, it is
    `evaluated`, the argument bash passes. None where bash makes the argument of more than the text (a variable,
    a command substitution) or the word goes on past the line."""
    if len(line) > LONGEST_FIXABLE_LINE:
        return None
    line = line.rstrip("\r")
    start = column - 1
    end = shell_word_end(line, start)
    text = line[start:end]
    if _SHLEX_SPECIAL.isdisjoint(text):  # nothing for shlex to remove or split: the word is its own argument
        literal = text == evaluated and text != ""
    else:
        try:
            literal = shlex.split(text) == [evaluated]
        except ValueError:  # a quote closed on a later line
            return None
    return Written(line[:start], text, line[end:], True) if literal else None


# A recipe entry's key and the separator before its value: `key: `, `"key":  `
_YAML_KEY = re.compile(r"[^:]*:[ \t]*")


def yaml_value(value: object) -> str:
    """`value` as a YAML flow value, quoted where a plain scalar would read as something else (`'[1,2]'`, `'1'`)."""
    import yaml

    dumped = yaml.safe_dump(value, default_flow_style=True, width=float("inf"), allow_unicode=True)
    return dumped.removesuffix("\n").removesuffix("\n...")


def yaml_entry(key: str, value: object) -> str:
    """A recipe's `key: value` override entry."""
    return f"{yaml_value(key)}: {yaml_value(value)}"


def yaml_key_part(written: Written) -> str | None:
    """A recipe entry's key as written, with the separator before its value (`key: `); None if it has none."""
    m = _YAML_KEY.match(written.text)
    return m[0] if m else None


def shell_word(key: str, value: object) -> str:
    """A script's `key=value` word: Hydra's syntax for the value, quoted for bash where bash would change it
    (single quotes, or double quotes around a Hydra-quoted value that holds `'`)."""
    word = f"{key}={format_value(value, allow_interpolation=True)}"
    if shlex.quote(word) == word:
        return word
    if "'" not in word:
        return f"'{word}'"
    if not re.search(r'["$`\\!]', word):
        return f'"{word}"'
    return shlex.quote(word)


def hydra_override(key: str, value: object) -> str:
    """`key=value` as Hydra reads it from a command line (`--override`)."""
    return f"{key}={format_value(value, allow_interpolation=True)}"
