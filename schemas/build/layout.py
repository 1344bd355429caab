"""How snapshots are laid out as JSON: the verl format 4 document (one file per verl version; each tree set's trees
stored as a base plus differences, each group option's subtree once, each single group override as a correction of
the tree it is rebuilt as) and a deterministic text with one entry per line, so that the committed files, and two
versions' files, diff well. The tree operations here are the ones the linter's loader applies
(`sapo_toolkit.linter.schema`): the build stores what they do not give."""

from __future__ import annotations

import json
import math
import re
from typing import Any

VERL_FORMAT = 4
CONSUMER_FORMAT = 1

# Containers written one item per line (nested: a child's own layout; "*": any key); all else is one compact line.
_VERL_LAYOUT: dict = {
    "configs": {},
    "entry_reads": {},
    "entrypoints": {},
    "main_modules": {},
    "read_set": {},
    "repeatable": {},
    "subtrees": {"*": {"entries": {}, "set": {}, "unset": {}}},
    "tree_sets": {
        "*": {
            "base": {},
            "trees": {"*": {"set": {}, "unset": {}}},
            "corrections": {"*": {"*": {"set": {}, "unset": {}}}},
        }
    },
}
_CONSUMER_LAYOUT: dict = {"classes": {"*": {"fields": {}}}}
VERL_PARTS = tuple(sorted(_VERL_LAYOUT))  # the parts of a verl document written one item per line


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


def _same(a: Any, b: Any) -> bool:
    """Whether two JSON values are written the same (`json.dumps` with sorted keys, without the cost of writing
    them: a build compares a million entries): a bool is no number, an int no float, -0.0 no 0.0, NaN is NaN."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float):
        return (a == b and math.copysign(1.0, a) == math.copysign(1.0, b)) or (a != a and b != b)
    return a == b


def _difference(base: dict[str, dict], tree: dict[str, dict]) -> dict:
    return {
        "set": {p: e for p, e in tree.items() if p not in base or not _same(base[p], e)},
        "unset": [p for p in base if p not in tree],
    }


def applied(tree: dict[str, dict], difference: dict) -> dict[str, dict]:
    """`tree` without the difference's `unset` paths, with its `set` entries added or replaced (either may be
    left out)."""
    unset = set(difference.get("unset", ()))
    out = {p: e for p, e in tree.items() if p not in unset}
    out.update(difference.get("set", {}))
    return out


def _under(path: str, package: str) -> bool:
    return not package or path == package or path.startswith(package + ".")


def subtree_at(tree: dict[str, dict], package: str) -> dict[str, dict]:
    """The entries at and below `package`, relative to it (`""`: the package's own entry)."""
    cut = len(package) + 1 if package else 0
    return {(p[cut:] if p != package else ""): e for p, e in tree.items() if _under(p, package)}


def selected_option(written: str, selection: dict[str, str]) -> str:
    """The option a placement's default (`defaults`, as written) selects in a tree selection: `${group}` read from
    it (`${model_engine}_actor` -> `megatron_actor`)."""
    return re.sub(r"\$\{([^}]*)\}", lambda m: selection.get(m.group(1), m.group(0)), written)


def override_text(key: str, option: str | None) -> str:
    """A single group override as Hydra writes it, the key of its correction: ``actor@actor_rollout_ref.actor=
    dp_actor``, ``~critic``."""
    return f"~{key}" if option is None else f"{key}={option}"


def nested_in(package: str, packages) -> tuple[str, ...]:
    """The placements' `packages` strictly below `package` (a root placement has none: it is everywhere)."""
    return tuple(p for p in packages if package and p.startswith(package + "."))


PLAIN_NODE = {"kind": "node", "type": "dict"}  # a mapping verl's dataclasses say nothing about


def region_without(subtree: dict[str, dict], nested: list[str]) -> dict[str, dict]:
    """A subtree without the relative packages `nested` (what placements nested below its package add)."""
    return {r: e for r, e in subtree.items() if not any(_under(r, n) for n in nested)}


def placed(
    tree: dict[str, dict],
    package: str,
    subtree: dict[str, dict] | None,
    replace: bool,
    nested: tuple[str, ...] = (),
) -> dict[str, dict]:
    """`tree` with a group option's `subtree` (relative entries, as it composes on its own) at `package`, as the
    linter rebuilds a group override: replacing what is there (`replace`: a selection `group@package=option`, or a
    deletion when `subtree` is None) or merged into it (`+group@package=option`). What the placements `nested`
    below the package put there stays (`model@critic.model`'s `critic.model` under `critic`), above the option's
    own keys there; after a deletion, under a plain node. Mappings above `package` that the tree lacks become
    plain nodes, as Hydra creates them."""

    def kept(path: str) -> bool:
        return any(_under(path, n) for n in nested)

    out = {p: e for p, e in tree.items() if not (replace and _under(p, package) and not kept(p))}
    if replace and subtree is None and any(_under(p, package) for p in out):
        out[package] = PLAIN_NODE
    if subtree is not None:
        names = package.split(".") if package else []
        for depth in range(1, len(names)):
            out.setdefault(".".join(names[:depth]), PLAIN_NODE)
        for rel, e in subtree.items():
            path = f"{package}.{rel}" if package and rel else (rel or package)
            if not (replace and kept(path) and path in out):
                out[path] = e
    return out


def difference(rebuilt: dict[str, dict], exact: dict[str, dict]) -> dict:
    """What turns one tree into another: the corrections of the trees the linter rebuilds (`placed`) into the ones
    Hydra composes, and the subtrees stored as another's (`like`)."""
    return _difference(rebuilt, exact)


def _shared_corrections(by_selection: dict[str, dict[str, dict]]) -> dict[str, dict[str, dict]]:
    """Selection -> group override -> correction, with each override's most common correction (when not empty and
    shared) under `"*"`, for every selection that does not list its own; empty ones are left out otherwise."""
    empty = {"set": {}, "unset": []}
    shared: dict[str, dict] = {}
    for text in sorted({t for fixes in by_selection.values() for t in fixes}):
        keys = [_entry_key(fixes[text]) for fixes in by_selection.values() if text in fixes]
        common = max(keys, key=lambda k: (keys.count(k), -keys.index(k)))
        if keys.count(common) > 1 and common != _entry_key(empty):
            shared[text] = json.loads(common)
    out: dict[str, dict[str, dict]] = {"*": shared} if shared else {}
    for selection, fixes in by_selection.items():
        own = {t: f for t, f in fixes.items() if f != shared.get(t, empty)}
        if own:
            out[selection] = own
    return out


def verl_document(
    version: str,
    source: str,
    commit: str | None,
    configs: dict[str, dict],
    tree_sets: dict[str, dict[str, dict[str, dict]]],
    corrections: dict[str, dict[str, dict[str, dict]]],
    subtrees: dict[str, dict],
    repeatable: list[str],
    read_set: list[str],
    entrypoints: dict[str, str],
    main_modules: list[str],
    entry_reads: dict[str, list[str]],
) -> dict:
    """The format 4 snapshot of one verl version (FORMAT.md); ``tree_sets``: name -> selection key -> full tree;
    ``corrections``: name -> selection key -> group override -> correction (every override the build composed);
    ``subtrees``: `group/option` -> its subtree (a tree set's tree's region, changed, or the entries);
    ``repeatable``: the `group/option`s Hydra takes a second time where they already are."""
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
        shared = _shared_corrections(corrections[name])
        if shared:
            stored[name]["corrections"] = shared
    doc = {
        "format": VERL_FORMAT,
        "verl_version": version,
        "source": source,
        "configs": configs,
        "repeatable": repeatable,
        "subtrees": subtrees,
        "tree_sets": stored,
        "read_set": read_set,
        "entrypoints": entrypoints,
        "entry_reads": entry_reads,
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
