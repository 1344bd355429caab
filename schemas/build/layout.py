"""How snapshots are laid out as JSON: the verl format 3 document (one file per verl version; each tree set's trees
stored as a base plus differences) and a deterministic text with one entry per line, so that the committed files,
and two versions' files, diff well."""

from __future__ import annotations

import json
from typing import Any

VERL_FORMAT = 3
CONSUMER_FORMAT = 1

# Containers written one item per line (nested: a child's own layout; "*": any key); all else is one compact line.
_VERL_LAYOUT: dict = {
    "configs": {},
    "entrypoints": {},
    "main_modules": {},
    "read_set": {},
    "tree_sets": {"*": {"base": {}, "trees": {"*": {"set": {}, "unset": {}}}}},
}
_CONSUMER_LAYOUT: dict = {"classes": {"*": {"fields": {}}}}


def _entry_key(entry: dict | None) -> str | None:
    return None if entry is None else json.dumps(entry, sort_keys=True)


def split_trees(trees: dict[str, dict[str, dict]]) -> tuple[dict[str, dict], dict[str, dict]]:
    """``(base, differences)`` from one full tree per selection (of a tree set).

    Each path's base entry is the one most trees share (absent when most trees lack the path; on a tie, the
    earliest tree's), so each tree's difference is small: ``{"set": {path: entry}`` for the entries it adds
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
    return base, {selection: _difference(base, tree) for selection, tree in trees.items()}


def _difference(base: dict[str, dict], tree: dict[str, dict]) -> dict:
    return {
        "set": {p: e for p, e in tree.items() if _entry_key(base.get(p)) != _entry_key(e)},
        "unset": [p for p in base if p not in tree],
    }


def verl_document(
    version: str,
    source: str,
    commit: str | None,
    configs: dict[str, dict],
    tree_sets: dict[str, dict[str, dict[str, dict]]],
    read_set: list[str],
    entrypoints: dict[str, str],
    main_modules: list[str],
) -> dict:
    """The format 3 snapshot of one verl version (FORMAT.md); ``tree_sets``: name -> selection key -> full tree."""
    stored: dict[str, dict] = {}
    for name, trees in tree_sets.items():
        base, differences = split_trees(trees)
        stored[name] = {"base": base, "trees": differences}
        size = len(base) + sum(len(d["set"]) + len(d["unset"]) for d in differences.values())
        for other in list(stored)[:-1]:  # stored as differences from an earlier set's trees, when that is smaller
            if other in tree_sets and set(tree_sets[other]) == set(trees) and "extends" not in stored[other]:
                extended = {k: _difference(tree_sets[other][k], tree) for k, tree in trees.items()}
                if sum(len(d["set"]) + len(d["unset"]) for d in extended.values()) < size:
                    stored[name] = {"extends": other, "trees": extended}
                    break
    doc = {
        "format": VERL_FORMAT,
        "verl_version": version,
        "source": source,
        "configs": configs,
        "tree_sets": stored,
        "read_set": read_set,
        "entrypoints": entrypoints,
        "main_modules": main_modules,
    }
    if commit:
        doc["commit"] = commit
    return doc


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
    return _dumps(snapshot, _VERL_LAYOUT if "tree_sets" in snapshot else _CONSUMER_LAYOUT) + "\n"
