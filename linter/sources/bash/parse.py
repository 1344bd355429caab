"""Parsing a bash script with tree-sitter-bash, and where its nodes are.

The parser reads a copy of the script with three workarounds for tree-sitter-bash 0.25 (a crash on `{` followed by
a 4-byte character, `$((...))` misread inside `${...}`, and a backslash-newline read as a break between words); each
keeps every node's byte range, so that the text is read from the original by those ranges. A node's location
counts its column in characters.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from functools import cache, lru_cache

from ...core.diagnostics import Location


@cache
def _parser():
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


# tree-sitter-bash 0.25 reads out of bounds on `{` followed by a 4-byte UTF-8 character and can kill the process
# (tree-sitter/tree-sitter-bash#337). The parser gets a copy in which each such character is two 2-byte ones of the
# same kind (letters for a letter or digit, symbols otherwise): every node keeps its byte range, and the
# interpreter reads the text by those ranges from the original.
_FOUR_BYTE_CHAR = re.compile(rb"[\xf0-\xf4][\x80-\xbf]{3}")
_LETTERS, _SYMBOLS = "éé".encode(), "¤¤".encode()


def parse(src: bytes):
    """The tree-sitter-bash tree of a script (tree_sitter is imported on the first call only)."""
    copy = _FOUR_BYTE_CHAR.sub(lambda m: _LETTERS if m.group().decode("utf-8", "replace").isalnum() else _SYMBOLS, src)
    copy = _mask_nested_arithmetic(copy)
    copy, tree = _parse_joining_split_words(copy)
    joins = _word_joins(copy, tree.root_node)
    if not joins:
        return tree
    out = bytearray(copy)
    for i in joins:
        out[i : i + 2] = b"''"
    joined, tree = _parse_joining_split_words(bytes(out))
    # each `''` is told to be the backslash-newline it stands for, so that every node's line and column are the
    # original's (from the last join back: the points of those before it are still the copy's)
    breaks = [m.start() for m in re.finditer(b"\n", joined)]
    for i in reversed(joins):
        row = bisect_left(breaks, i)
        column = i - (breaks[row - 1] + 1 if row else 0)
        tree.edit(i, i + 2, i + 2, (row, column), (row, column + 2), (row + 1, 0))
    return tree


# tree-sitter-bash 0.25 splits a word after an expansion when a later `$NAME` in it is followed by one of
# `/.,+~^!-` (`$A/$B/train.parquet`, `c-$D/t`, `a=[$X/a]`; tree-sitter/tree-sitter-bash#315): it reads `$A/$` as one
# word, with a bare `$`, and `B/train.parquet` as the next. Where the tree has such a bare `$`, the parser's copy has
# `%` in place of the character after the name, which tree-sitter reads right (`$B%train.parquet`); every node keeps
# its byte range, so the interpreter reads `/train.parquet` from the original. A repair can expose the next `$NAME`
# of the word (`$A/$B/$C/x`): the copy is parsed again, a few times at most.
_NAME_THEN_SPLITTING = re.compile(rb"\$(?:[A-Za-z_]\w*|[0-9])[/.,+~^!-]")
_SPLIT_REPAIRS = 4


def _parse_joining_split_words(copy: bytes):
    """(the parser's copy with each word that tree-sitter splits at a `$NAME` repaired, its tree)."""
    tree = _parser().parse(copy)
    for _ in range(_SPLIT_REPAIRS):
        root = tree.root_node
        split = [m.end() - 1 for m in _NAME_THEN_SPLITTING.finditer(copy) if _bare_dollar(root, m.start(), m.end() - 1)]
        if not split:
            break
        out = bytearray(copy)
        for i in split:
            out[i] = ord("%")
        copy = bytes(out)
        tree = _parser().parse(copy)
    return copy, tree


def _bare_dollar(root, dollar: int, name_end: int) -> bool:
    """Whether tree-sitter read the `$` at `dollar` as a token of its own, not the start of `$NAME`."""
    token = root.descendant_for_byte_range(dollar, dollar + 1)
    if token is None or token.type != "$" or token.is_named:
        return False
    return root.descendant_for_byte_range(dollar, name_end).type != "simple_expansion"


# Bash removes a backslash-newline before it splits words, so that `X="a"\<newline>"b"` assigns `ab`; tree-sitter-bash
# 0.25 reads it as white space between two words (`X="a"` then a command `"b"`). Where one joins two words (no
# blank on either side, outside quotes and comments), the parser's copy has an empty `''` in its place: the words
# become one, every node keeps its byte range (and, told of the edit, its line and column), and the interpreter
# reads `''` from the original as nothing.
_CONTINUATION = re.compile(rb"(?<=[^\s\\])((?:\\\\)*)\\\n(?=[^\s])")
_INSIDE_TEXT = frozenset(
    ("string", "string_content", "raw_string", "ansi_c_string", "comment", "heredoc_body", "heredoc_content", "word")
)


def _word_joins(src: bytes, root) -> list[int]:
    """Where a backslash-newline between two words joins them (the backslash's offset)."""
    out = []
    for m in _CONTINUATION.finditer(src):
        at = m.end(1)
        inside = root.descendant_for_byte_range(at, at + 2)
        if inside is not None and inside.type not in _INSIDE_TEXT and not inside.has_error:
            out.append(at)
    return out


# tree-sitter-bash 0.25 misreads `$(( ... ))` inside `${V:-...}` when the expression holds parentheses, `?:` or
# `--` (`${V:-$(((a + b) * 2))}` is an ERROR; bash accepts it): it takes `$(` for a command substitution. The parser's
# copy has the body of each `$((...))` nested in `${...}` replaced by `0` and blanks (line breaks kept), so every
# node keeps its byte range and line; the interpreter evaluates every arithmetic expansion from its own text
# parsed alone (`arithmetic.arithmetic_nodes`), where tree-sitter reads it right.
def _mask_nested_arithmetic(src: bytes) -> bytes:
    start = src.find(b"$((")
    if start < 0 or b"${" not in src:
        return src
    closing = _closing_parentheses(src)
    out = bytearray(src)
    braces = 0
    i = 0
    while (m := _MASKING_TOKEN.search(src, i)) is not None:  # from token to token: the bytes between change nothing
        i = m.start()
        if m.group() == b"${":
            braces += 1
            i += 2
            continue
        if m.group() == b"}":
            braces -= 1 if braces else 0
        elif braces:
            # `$((`: the body ends at the `)` that closes the second `(`, if the first closes right after it
            # (`$((a) (b))` is a command substitution)
            end = closing.get(i + 2)
            if end is not None and end > i + 3 and closing.get(i + 1) == end + 1:
                out[i + 3 : end] = b"0" + bytes(b if b == ord("\n") else ord(" ") for b in src[i + 4 : end])
                i = end + 2
                continue
        i += 1
    return bytes(out)


_MASKING_TOKEN = re.compile(rb"\$\{|\}|\$\(\(")  # what `_mask_nested_arithmetic` acts on
_PARENTHESIS = re.compile(rb"[()]")


def _closing_parentheses(src: bytes) -> dict[int, int]:
    """Where each `(` is closed, in one pass (searching from each `$((` anew took quadratic time)."""
    closing, open_at = {}, []
    for m in _PARENTHESIS.finditer(src):
        if m.group() == b"(":
            open_at.append(m.start())
        elif open_at:
            closing[open_at.pop()] = m.start()
    return closing


def node_location(path: str, lines: list[bytes], n) -> Location:
    """Where a node starts, with the column counted in characters. A node at the very end of a file that ends
    with a line break (a missing `fi` or quote) is put at the end of the last line, which is where it is missing."""
    row, col = n.start_point
    last = len(lines) - 1 - (len(lines) > 1 and lines[-1] == b"")
    if row > last:
        row, col = last, len(lines[last])
    return Location(path, row + 1, char_column(lines[row], col) + 1)


_CONTINUATION_BYTE = re.compile(rb"[\x80-\xbf]")


@lru_cache(maxsize=8)
def _continuation_bytes(line: bytes) -> tuple[int, ...]:
    """Where a UTF-8 line has the continuation bytes of its multi-byte characters (none in ASCII). A column in
    characters is found from them by bisection, not by decoding the line up to it: a trainer call of 20,000
    arguments on one line was decoded once per argument."""
    return () if line.isascii() else tuple(m.start() for m in _CONTINUATION_BYTE.finditer(line))


def char_column(line: bytes, byte: int) -> int:
    """How many characters the line's first `byte` bytes hold (a character cut short counts as one)."""
    return byte - bisect_left(_continuation_bytes(line), byte)


def byte_column(line: bytes, chars: int) -> int:
    """Where the character after the line's first `chars` characters starts: `char_column`'s inverse."""
    continuations = _continuation_bytes(line)
    # the continuation bytes before it are the first k, for the least k with continuations[k] - k > chars (a
    # non-decreasing quantity: the positions increase by at least one each)
    lo, hi = 0, len(continuations)
    while lo < hi:
        mid = (lo + hi) // 2
        if continuations[mid] - mid > chars:
            hi = mid
        else:
            lo = mid + 1
    return chars + lo
