"""How snapshots are laid out as JSON: the verl format 2 document (one file per verl version, the model_engine
trees stored as a base plus differences) and a deterministic text with one entry per line, so that the committed
files, and two versions' files, diff well."""

from __future__ import annotations

import json
from typing import Any

VERL_FORMAT = 2
CONSUMER_FORMAT = 1

# Containers written one item per line (nested: a child's own layout; "*": any key); all else is one compact line.
_VERL_LAYOUT: dict = {"base": {}, "configs": {}, "engines": {"*": {"set": {}, "unset": {}}}, "entrypoints": {},
                      "read_set": {}}
_CONSUMER_LAYOUT: dict = {"classes": {"*": {"fields": {}}}}


def _entry_key(entry: dict | None) -> str | None:
    return None if entry is None else json.dumps(entry, sort_keys=True)


def split_engine_trees(trees: dict[str, dict[str, dict]]) -> tuple[dict[str, dict], dict[str, dict]]:
    """``(base, engines)`` from one full tree per model_engine option.

    Each path's base entry is the one most options share (absent when most options lack the path; on a tie, the
    earliest option's), so each option's difference is small: ``{"set": {path: entry}`` for the entries it adds
    or changes, ``"unset": [path, ...]}`` for the base paths it lacks.  The linter's loader
    (``sapo_toolkit.linter.schema``) applies them.
    """
    paths = sorted({p for tree in trees.values() for p in tree})
    base: dict[str, dict] = {}
    for path in paths:
        keys = [_entry_key(tree.get(path)) for tree in trees.values()]
        common = max(keys, key=lambda k: (keys.count(k), -keys.index(k)))
        if common is not None:
            base[path] = json.loads(common)
    engines = {}
    for option, tree in trees.items():
        changed = {p: e for p, e in tree.items() if _entry_key(base.get(p)) != _entry_key(e)}
        engines[option] = {"set": changed, "unset": [p for p in base if p not in tree]}
    return base, engines


def verl_document(version: str, source: str, configs: dict[str, dict], trees: dict[str, dict[str, dict]],
                  read_set: list[str], entrypoints: dict[str, str]) -> dict:
    """The format 2 snapshot of one verl version (FORMAT.md)."""
    base, engines = split_engine_trees(trees)
    return {"format": VERL_FORMAT, "verl_version": version, "source": source, "configs": configs, "base": base,
            "engines": engines, "read_set": read_set, "entrypoints": entrypoints}


def _dumps(obj: Any, layout: dict | None) -> str:
    """``obj`` one item per line where ``layout`` names it (None: one compact line)."""
    if layout is not None and obj and isinstance(obj, (dict, list)):
        if isinstance(obj, list):
            return "[\n" + ",\n".join(_dumps(v, None) for v in obj) + "\n]"
        items = [f"{json.dumps(str(k))}:{_dumps(obj[k], layout.get(k, layout.get('*')))}" for k in sorted(obj)]
        return "{\n" + ",\n".join(items) + "\n}"
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def snapshot_text(snapshot: dict) -> str:
    """Deterministic JSON text: sorted keys, one entry (tree path, consumer field, read-set name) per line."""
    return _dumps(snapshot, _VERL_LAYOUT if "engines" in snapshot else _CONSUMER_LAYOUT) + "\n"
