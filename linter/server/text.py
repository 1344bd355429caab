"""Where the cursor is in a run script or a recipe: the override key or value being written there, read from the
text alone (the document changes faster than it is linted), and how far the key a finding points at reaches.

Columns here are 0-based and count characters (code points), as Python indexes a line; the protocol's units are
converted at the server's edge.
"""

from __future__ import annotations

import re
from typing import NamedTuple

PREFIXES = ("++", "+", "~")  # Hydra's: force-add, add, delete
QUOTES = "\"'"
# A recipe line that opens a block mapping (`  overrides:`), and one that holds a key (`  key: value`)
_BLOCK_KEY = re.compile(
    r"^(?P<indent> *)(?P<quote>[\"']?)(?P<key>[^\s:#\"'{}\[\],][^:#\"'{}\[\]]*?)(?P=quote)\s*:\s*(#.*)?$"
)
_RECIPE_KEY = re.compile(
    r"^(?P<indent> *)(?P<quote>[\"']?)(?P<key>[^\s:#\"'{}\[\],][^:#\"'{}\[\]]*?)(?P=quote)\s*:(\s|$)"
)


class OverrideAt(NamedTuple):
    """The override written at the cursor: its key (a recipe's with the keys of the mappings it is nested in,
    dotted), where the key's own text is on the line, and where its value starts when the cursor is in the value."""

    key: str  # without its prefix and quotes: `actor_rollout_ref.actor.ppo_epochs`, `actor@actor_rollout_ref.actor`
    nested: str  # the keys of the mappings a recipe's key is nested in, each followed by a dot: `actor_rollout_ref.`
    prefix: str  # `+`, `++`, `~` or ''
    key_start: int  # where the key's text on the line starts (after the prefix; for a recipe, its last segments)
    key_end: int
    typed: str  # the key's text from `key_start` to the cursor (in the key), or the value's (in the value)
    value_start: int | None  # None: the cursor is in the key


def script_override_at(line: str, cursor: int) -> OverrideAt | None:
    """The `key=value` word of a run script's line at the cursor; None where the cursor is on no word (a blank)
    and the word before it is not being written."""
    start = cursor
    while start > 0 and not line[start - 1].isspace() and line[start - 1] not in "()":
        start -= 1
    end = cursor
    while end < len(line) and not line[end].isspace() and line[end] not in "()":
        end += 1
    while start < end and line[start] in QUOTES:
        start += 1
    word = line[start:end]
    prefix = next((p for p in PREFIXES if word.startswith(p)), "")
    key_start = start + len(prefix)
    equals = line.find("=", key_start, end)
    key_end = equals if equals >= 0 else len(line[:end].rstrip(QUOTES + "\\"))
    key = line[key_start:key_end]
    if equals >= 0 and cursor > equals:
        return OverrideAt(key, "", prefix, key_start, key_end, line[equals + 1 : cursor].lstrip(QUOTES), equals + 1)
    if cursor < key_start:
        return None
    return OverrideAt(key, "", prefix, key_start, key_end, line[key_start:cursor], None)


def recipe_override_at(lines: list[str], row: int, cursor: int) -> OverrideAt | None:
    """The override key of a recipe's `overrides:` block (top level, or a variant's) at the cursor, written in
    block style; a key nested in mappings below the block gets its parents' keys (`actor_rollout_ref:` /
    `  actor:` / `    ppo_epochs: 2` is `actor_rollout_ref.actor.ppo_epochs`). None outside such a block."""
    line = lines[row]
    indent = len(line) - len(line.lstrip(" "))
    parents = _parents(lines, row, indent)
    if parents is None:
        return None
    m = _RECIPE_KEY.match(line)
    if m is None:  # a key being typed: no colon yet
        start = indent + (1 if _quote_at(line, indent) else 0)
        if cursor <= start:
            return _with_parents(parents, "", cursor, cursor, "", None)
        written = line[start:].rstrip().rstrip(QUOTES)
        return _with_parents(parents, written, start, start + len(written), line[start:cursor], None)
    start, end = m.start("key"), m.end("key")
    colon = line.index(":", end)
    if cursor > colon:
        value = line[colon + 1 :]
        value_start = colon + 1 + len(value) - len(value.lstrip())
        typed = line[value_start:cursor].lstrip(QUOTES) if cursor >= value_start else ""
        return _with_parents(parents, m.group("key"), start, end, typed, max(value_start, colon + 1))
    return _with_parents(parents, m.group("key"), start, end, line[start:cursor], None)


def _with_parents(parents: list[str], written: str, start: int, end: int, typed: str, value_start) -> OverrideAt:
    prefix = next((p for p in PREFIXES if written.startswith(p)), "") if not parents else ""
    nested = "".join(f"{parent}." for parent in parents)
    typed_key = typed if value_start is not None else typed[len(prefix) :] if typed.startswith(prefix) else typed
    return OverrideAt(nested + written[len(prefix) :], nested, prefix, start + len(prefix), end, typed_key, value_start)


def _parents(lines: list[str], row: int, indent: int) -> list[str] | None:
    """The keys of the block mappings the line at `row` is nested in, below the nearest `overrides:` (a recipe's
    top-level one, or a variant's `variants.<axis>.<name>.overrides`); None when it is in no such block."""
    chain: list[str] = []  # outermost last
    limit = indent
    for above in range(row - 1, -1, -1):
        text = lines[above]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        own = len(text) - len(text.lstrip(" "))
        if own >= limit:
            continue
        m = _BLOCK_KEY.match(text)
        if m is None:
            return None  # a list item, a flow mapping, a scalar: no override key is written below it
        chain.append(m.group("key"))
        limit = own
        if own == 0:
            break
    chain.reverse()
    for i, key in enumerate(chain):
        if key == "overrides" and (i == 0 or (chain[0] == "variants" and i == 3)):
            return chain[i + 1 :]
    return None


def _quote_at(line: str, column: int) -> bool:
    return column < len(line) and line[column] in QUOTES


def key_end(line: str, column: int) -> int:
    """Where the key a finding's column points at ends: at `=`, at a YAML key's `:`, at a quote or a blank; the
    whole word where the column points at none (a command's first word, a value)."""
    start = column + 1 if _quote_at(line, column) else column
    end = start
    while end < len(line) and not line[end].isspace() and line[end] not in "=\"'":
        if line[end] == ":" and (end + 1 == len(line) or line[end + 1].isspace()):
            break
        end += 1
    if end == start:
        while end < len(line) and not line[end].isspace():
            end += 1
    return max(end, min(column + 1, len(line)))
