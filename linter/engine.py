"""Resolve one trainer command (config + ordered overrides) against a schema snapshot and run the rules.

Overrides are applied in order, the way Hydra applies them at compose time, so that a `+key` followed by
`key=...` or a `~key` followed by `+key` is judged against the config as it stands at that point.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from .core import hydra_keys
from .core.budget import charge
from .core.command import Command, LocatedOverride, Stack
from .core.diagnostics import Diagnostic, Location
from .core.dotted import ancestors
from .core.model import Accelerator, ModelShape
from .core.overrides import MISSING, ParsedOverride
from .schema import DEFAULT_RAY, Consumer, GroupChange, Snapshot, Tree, fact, load_consumer

_NOT_FOUND = object()
# The integers verl can use: its sizes and counts end up in torch, NumPy and Ray, which hold 64-bit integers.
INT64 = range(-(1 << 63), 1 << 63)
# What the rules see instead of an integer beyond `INT64` (SL004 reports it, from the override as written): an
# interpolation, which no rule computes with or prints, as for a run script's value that cannot be evaluated.
OUT_OF_RANGE = "${oc.env:SAPO_LINT_OUT_OF_RANGE}"
# The target's leading dots (relative) and its first name character are disjoint, so that a failed match cannot
# try every way of splitting a run of dots between them (`${` and 20,000 dots took 9 s).
_INTERPOLATION = re.compile(r"^\$\{(?:oc\.select:)?(\.*[A-Za-z0-9_][A-Za-z0-9_.]*)(?:,(.*))?\}$")


def beyond_int64(value: Any) -> bool:
    """Whether the value is, or holds, an integer beyond `INT64`."""
    if isinstance(value, int):
        return value not in INT64
    if isinstance(value, (list, dict)):
        return any(beyond_int64(v) for v in (value.values() if isinstance(value, dict) else value))
    return False


def _within_int64(value: Any) -> Any:
    """The value with every integer beyond `INT64` replaced by `OUT_OF_RANGE`."""
    if isinstance(value, int):
        return value if value in INT64 else OUT_OF_RANGE
    if isinstance(value, dict):
        return {k: _within_int64(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_within_int64(v) for v in value]
    return value


class ResolvedOverride(NamedTuple):
    override: LocatedOverride  # as written (SL004 reads an integer beyond 64 bits there)
    parsed: ParsedOverride  # as the rules see it: an integer beyond 64 bits is `OUT_OF_RANGE`
    entry: dict | None  # the schema entry of the key (declared_only fields included)
    existed: bool  # the key was in the config when this override was applied
    current: Any  # its value then (None when absent)
    anchor: str  # for an absent key, its deepest existing ancestor ('' = root)
    group: dict | None = None  # the config-group spec when the key selects a group
    # The root of the subtree this key lies in when the snapshot cannot judge it ('' = the whole config): a config
    # group option from a directory `hydra.searchpath` adds (`actor@actor_rollout_ref.actor=mlite_actor`), or
    # Hydra's own `hydra` node. The schema rules (SL001, SL003-SL006) skip such keys; SL011 reports the options.
    outside: str | None = None
    refused: str | None = None  # a config-group override Hydra refuses at the defaults list: its message (SL012)
    # A key the config lacks because a group override replaced the option that has it: which, for SL001
    # (`exists in `actor/megatron_actor`, not in `actor/dp_actor` (...)`).
    replaced: str | None = None

    @property
    def path(self) -> str:
        return self.parsed.key

    @property
    def location(self) -> Location:
        return self.override.location

    @property
    def assigns(self) -> bool:
        return self.parsed.op != "delete"


class ConfigView:
    """The composed config after overrides: schema defaults plus what the overrides set, added or deleted."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self._set: dict[str, Any] = {}
        self._deleted: set[str] = set()
        self._mappings: set[str] = set()  # keys set to a mapping: their children exist too
        self._values: dict[str, Any] = {}  # value() results; cleared whenever an override is applied

    def _is_deleted(self, path: str) -> bool:
        if not self._deleted:
            return False
        return path in self._deleted or any(a in self._deleted for a in ancestors(path))

    def lookup(self, path: str) -> tuple[bool, Any]:
        """(whether the key is in the config, its raw value)."""
        found, value, _ = self._lookup(path)
        return found, value

    def merges_into(self, path: str) -> bool:
        """Whether a mapping set on `path` is merged into the node there key by key, as Hydra's
        `OmegaConf.update(cfg, key, value, merge=True)` does for a config node or a non-null dict (struct mode then
        refuses a key the node lacks), rather than set whole, as on a null, a value, a list or an interpolation."""
        found, value, from_tree = self._lookup(path)
        if not found or not isinstance(value, dict):
            return False
        return not from_tree or self.tree.get(path).get("default", {}) is not None

    def _lookup(self, path: str) -> tuple[bool, Any, bool]:
        """lookup(), and whether the value is the schema's (no override set it)."""
        if self._is_deleted(path):
            return False, None, False
        if path in self._set:
            return True, self._set[path], False
        if self._mappings:  # a mapping set on an ancestor
            for prefix in ancestors(path):
                if prefix in self._set:
                    value = self._set[prefix]
                    for part in path[len(prefix) + 1 :].split("."):
                        if not isinstance(value, dict) or part not in value:
                            return False, None, False
                        value = value[part]
                    return True, value, False
        entry = self.tree.get(path)
        if entry is None or entry.get("declared_only"):
            return False, None, True
        value = entry.get("default") if entry["kind"] in ("value", "list") or "interpolation" in entry else {}
        return True, value, True

    def exists(self, path: str) -> bool:
        return self.lookup(path)[0]

    def raw(self, path: str) -> Any:
        return self.lookup(path)[1]

    def value(self, path: str, _depth: int = 0) -> Any:
        """The value with `${path}`/`${oc.select:path,default}` interpolations followed (None if unresolvable)."""
        if path not in self._values:
            self._values[path] = self._resolve_value(path, _depth)
        return self._values[path]

    def _resolve_value(self, path: str, _depth: int) -> Any:
        found, value = self.lookup(path)
        if not found:
            inherited = self._through_interpolated_ancestor(path, _depth)
            if inherited is not _NOT_FOUND:
                return inherited
            entry = self.tree.get(path)
            return entry.get("default") if entry else None
        if isinstance(value, str) and _depth < 16:
            m = _INTERPOLATION.match(value)
            if m:
                target, default = _absolute(path, m.group(1)), m.group(2)
                if self.exists(target):
                    return self.value(target, _depth + 1)
                return _scalar(default) if default is not None else None
        return value

    def _through_interpolated_ancestor(self, path: str, depth: int) -> Any:
        """`ref.megatron.override_transformer_config.x` when that node is `${...actor...override_transformer_config}`:
        the value of `x` under the node it points to."""
        for ancestor in ancestors(path):
            found, raw = self.lookup(ancestor)
            if not found:
                continue
            m = _INTERPOLATION.match(raw) if isinstance(raw, str) and depth < 16 else None
            if m is None:
                return _NOT_FOUND
            target = _absolute(ancestor, m.group(1))
            return self.value(f"{target}.{path[len(ancestor) + 1 :]}", depth + 1)
        return _NOT_FOUND

    def apply(self, parsed: ParsedOverride) -> None:
        self._values.clear()
        if parsed.op == "delete":
            self._deleted.add(parsed.key)
            self._set = {k: v for k, v in self._set.items() if k != parsed.key and not k.startswith(parsed.key + ".")}
            self._mappings = {k for k in self._mappings if k in self._set}
        else:
            self._deleted.discard(parsed.key)
            self._set[parsed.key] = parsed.value
            if isinstance(parsed.value, dict):
                self._mappings.add(parsed.key)
            else:
                self._mappings.discard(parsed.key)

    def anchor(self, path: str) -> str:
        return next((prefix for prefix in ancestors(path) if self.exists(prefix)), "")


def _absolute(path: str, target: str) -> str:
    """OmegaConf relative interpolation: `.x` is a sibling of `path`, `..x` a sibling of its parent."""
    dots = len(target) - len(target.lstrip("."))
    if not dots:
        return target
    base = path.split(".")[:-dots]
    return ".".join([*base, target[dots:]])


def _scalar(text: str) -> Any:
    lowered = text.strip().lower()
    if lowered in ("null", "none"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return _within_int64(cast(text))  # an `oc.select` default is read like an override's value
        except ValueError:
            pass
    return text.strip()


# A did-you-mean suggestion is a fuzzy search of the key tree or of a library's fields, milliseconds each: 331,000
# unknown keys in one recipe took 103 s with one each. A file gets suggestions for this many names; the findings
# about the others say that none is given (`rulekit.common.NO_SUGGESTION`).
MAX_SUGGESTIONS = 100


@dataclass(slots=True)
class Suggestions:
    """The names one file gets suggestions for: the first `MAX_SUGGESTIONS` distinct names asked about, in every
    command (variant) of the file, which share one."""

    names: set[str] = field(default_factory=set)

    def allowed(self, name: str) -> bool:
        if name not in self.names:
            if len(self.names) >= MAX_SUGGESTIONS:
                return False
            self.names.add(name)
        return True


@dataclass(slots=True)
class LintContext:
    """What rules see: the resolved overrides of one command and the config they produce."""

    snapshot: Snapshot
    tree: Tree
    model_engine: str
    overrides: list[ResolvedOverride]
    config: ConfigView
    stack: Stack
    unparsed: list[LocatedOverride] = field(default_factory=list)  # overrides that are not valid Hydra syntax
    command: Command | None = None
    derived: dict = field(default_factory=dict)  # views several rules derive from the config (per-role sizes)
    selection: dict[str, str] = field(default_factory=dict)  # the option of each group that picked the tree
    suggestions: Suggestions = field(default_factory=Suggestions)
    _explicit: dict[str, ResolvedOverride] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for ro in self.overrides:
            if ro.assigns and ro.group is None:
                self._explicit[ro.path] = ro

    def explicit(self, path: str) -> ResolvedOverride | None:
        """The last override that set `path`, if any."""
        return self._explicit.get(path)

    @property
    def model(self) -> ModelShape | None:
        return self.command.model if self.command else None

    @property
    def accelerator(self) -> Accelerator | None:
        return self.command.accelerator if self.command else None

    def blame(self, *paths: str, otherwise: Iterable[str] = ()) -> Location | ResolvedOverride:
        """Where to report a finding about these keys: the last override that set one of `paths` (the keys whose
        values break the check), else the last that set one of `otherwise` (the other keys it depends on), else
        the command's origin (the recipe's `overrides:` line)."""
        for keys in (paths, otherwise):
            set_here = [ro for ro in (self.explicit(p) for p in keys) if ro is not None]
            if set_here:
                return max(set_here, key=lambda ro: (ro.location.line, ro.location.column))
        return (self.command.origin if self.command and self.command.origin else None) or Location("<config>")

    def set_at(self, *paths: str) -> tuple[Location, ...]:
        """Where the command sets these keys, in the order written: a finding's related locations (`Finding`
        drops the one it is reported at)."""
        set_here = {ro.location for ro in (self.explicit(p) for p in paths) if ro is not None}
        return tuple(sorted(set_here, key=lambda loc: (loc.path, loc.line, loc.column)))

    def number(self, path: str) -> int | None:
        """The effective value of `path` if it is a whole number (an int, or a float with a whole value such as
        `2.0`; bools excluded), else None. Every caller reads a size, count, length or frequency: a fraction, NaN
        or infinity there is SL004's to report, and no arithmetic of the rules can take it."""
        value = self.config.value(path)
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 1e300 is whole too: beyond 64 bits, as no size is
        return value if isinstance(value, int) and not isinstance(value, bool) and value in INT64 else None

    def consumer(self, spec: str) -> tuple[Consumer, str]:
        """`megatron-core:OptimizerConfig` -> (the consumer snapshot for this command's stack, 'OptimizerConfig')."""
        package, _, cls = spec.partition(":")
        version = {"megatron-core": self.stack.megatron_core, "ray": DEFAULT_RAY}.get(package, self.stack.mbridge)
        return load_consumer(package, version), cls

    def fact(self, spec: str):
        """`verl:default-engine-workers` -> that fact of `schemas/facts.json` for the verl this command
        is checked against; `megatron-core:...` for its megatron-core (`schema.fact`)."""
        package, _, name = spec.partition(":")
        if package == "verl" and name in (decided := dict(self.stack.code_facts)):
            return decided[name]  # a source tree's own code says
        version = self.snapshot.verl_version if package == "verl" else self.stack.megatron_core
        return fact(package, name, version)

    def consumer_dict(self, path: str) -> tuple[str, dict] | None:
        """The nearest ancestor of `path` that is an open dict with a known consumer."""
        for prefix in ancestors(path):
            entry = self.tree.get(prefix)
            if entry is not None and entry.get("consumer"):
                return prefix, entry
        return None


def searchpath(command: Command) -> list[str]:
    """The config directories `hydra.searchpath` adds (the last setting wins)."""
    found: list[str] = []
    for lo in command.overrides:
        p = lo.parsed
        if p is not None and p.key == "hydra.searchpath" and p.op != "delete":
            found = [str(v) for v in p.value] if isinstance(p.value, list) else [str(p.value)]
    return found


def outside_verl(entry: str) -> bool:
    """Whether a `hydra.searchpath` entry may hold configs verl does not: verl's experimental configs name verl's own
    directory (`pkg://verl.trainer.config`, `file://verl/trainer/config` from the checkout), which adds none."""
    for scheme, sep in (("pkg://", "."), ("file://", "/")):
        if entry.startswith(scheme):
            rest = entry[len(scheme) :]
            return not (rest == "verl" or rest.startswith("verl" + sep))
    return True


def _package_root(p: ParsedOverride) -> str:
    """Where a group option lands: its package; `_global_` (or an empty package) is the root, `_group_` and no
    package the group's own path (`a/b` -> `a.b`), as Hydra places them."""
    group_path = p.key.replace("/", ".")
    if p.package is None:
        return group_path
    parts = [group_path if part == "_group_" else part for part in p.package.split(".") if part != "_global_"]
    return ".".join(part for part in parts if part)


def _outside(key: str, roots) -> str | None:
    return next((r for r in roots if r == "" or key == r or key.startswith(r + ".")), None)


class GroupOverride(NamedTuple):
    """What one config-group override does, decided as Hydra applies it to the defaults list (hydra-core
    `_internal/defaults_list.py`, `Overrides`), before any key is set."""

    spec: dict  # ResolvedOverride.group: {"default": the option selected before it (None: none), "options": [...]}
    change: GroupChange | None = None  # what it changes in the tree (None: nothing, or refused)
    refused: str | None = None  # Hydra's refusal at the defaults list (SL012)
    outside: str | None = None  # the subtree it fills from a config outside verl (SL011)


def _is_group_override(p: ParsedOverride, snapshot: Snapshot) -> bool:
    """Hydra's test: the key names a config group on the search path and the value is not a mapping (a mapping is
    set on the config's key of that name)."""
    return p.key in snapshot.group_options and not p.is_sweep and not (p.op != "delete" and isinstance(p.value, dict))


def _group_override(
    lo: LocatedOverride, snapshot: Snapshot, selection: dict[str, str], added: bool
) -> GroupOverride | None:
    """The verdict on one override that Hydra takes as a config-group override (None for any other); `added`:
    `hydra.searchpath` names a directory outside verl, where options verl lacks may come from."""
    p = lo.parsed
    key = p.key + (f"@{p.package}" if p.package is not None else "")
    if not _is_group_override(p, snapshot):
        if p.package is None or hydra_keys.is_hydra_key(p.key):
            return None
        if added:  # the group may be in the added directory
            return GroupOverride({"default": None, "options": []}, outside=_package_root(p))
        return GroupOverride(
            {"default": None, "options": []},
            refused=f"Override {lo.key_text}={p.value} looks like a config group override, but config group "
            f"'{p.key}' does not exist.",
        )
    options = snapshot.group_options[p.key]
    placement = snapshot.placements.get(key)
    current = snapshot.selected(key, selection) if placement is not None else None
    spec = {"default": current, "options": options}
    value = p.value
    if p.op == "force_add":
        return GroupOverride(spec, refused=f"force-add of config groups is not supported: '{lo.key_text}={value}'")
    if p.op == "delete":
        wanted = None if value is MISSING else value
        if placement is None or (wanted is not None and wanted != current):
            named = key if wanted is None else f"{key}={wanted}"
            return GroupOverride(spec, refused=f"Could not delete '{named}'. No match in the defaults list")
        return GroupOverride(spec, GroupChange(key, p.key, placement["package"], None))
    if isinstance(value, list):  # several options at once: merged in order, which the snapshot does not rebuild
        return GroupOverride(spec, outside=placement["package"] if placement else _package_root(p))
    if not isinstance(value, str):
        return GroupOverride(
            spec, refused=f"Config group override must be a string or a list. Got {type(value).__name__}"
        )
    if p.op == "set" and placement is None:
        same_group = sorted(k for k, pl in snapshot.placements.items() if pl["group"] == p.key)
        hint = (
            f" Did you mean to override {'one of ' if len(same_group) > 1 else ''}{', '.join(same_group)}?"
            if same_group
            else " No match in the defaults list."
        )
        return GroupOverride(
            spec, refused=f"Could not override '{key}'.{hint} To append to your default list use +{key}={value}"
        )
    if value not in options:  # SL005 (Hydra: Could not find 'group/option'), or from an added directory
        package = placement["package"] if p.op == "set" and placement else _package_root(p)
        return GroupOverride(spec, outside=package if added else None)
    if p.op == "add":
        if placement is not None and value == current and f"{p.key}/{value}" in snapshot.repeatable:
            return GroupOverride({"default": None, "options": options})  # Hydra takes the same option again
        if placement is not None:  # SL002: Hydra's `Multiple values for ...`
            return GroupOverride(spec)
        if snapshot.subtree(p.key, value) is None:  # does not compose on its own: not rebuilt
            return GroupOverride(spec, outside=_package_root(p))
        return GroupOverride(spec, GroupChange(key, p.key, _package_root(p), value, append=True))
    if value == current or key in snapshot.selecting:  # the tree's own selection (model_engine) picks the tree
        return GroupOverride(spec)
    return GroupOverride(spec, GroupChange(key, p.key, placement["package"], value))


def group_overrides(command: Command, snapshot: Snapshot, selection: dict[str, str]) -> dict[int, GroupOverride]:
    """`id(override)` -> its verdict, for each override that Hydra takes as a config-group override or as a
    `group@package` whose group does not exist. Hydra applies all of them to the defaults list before any key
    override, whatever their place in the command; a later one of the same key replaces an earlier one."""
    added = any(outside_verl(entry) for entry in searchpath(command))
    out: dict[int, GroupOverride] = {}
    last: dict[str, int] = {}
    for lo in command.overrides:
        if lo.parsed is None:
            continue
        verdict = _group_override(lo, snapshot, selection, added)
        if verdict is None:
            continue
        if verdict.change is not None:
            refusal = snapshot.refusal(selection, verdict.change)
            if refusal is not None:  # composes nowhere in this selection (`~model_engine`)
                verdict = verdict._replace(change=None, refused=refusal)
            else:
                earlier = last.get(verdict.change.key)
                if earlier is not None and out[earlier].change is not None:
                    out[earlier] = out[earlier]._replace(change=None)
                last[verdict.change.key] = id(lo)
        out[id(lo)] = verdict
    return out


def _changes(snapshot: Snapshot, verdicts: Iterable[GroupOverride]) -> tuple[GroupChange, ...]:
    """The changes to the tree, in defaults-list order (appends last, as Hydra appends them)."""
    order = {key: n for n, key in enumerate(snapshot.placements)}
    changes = [v.change for v in verdicts if v.change is not None]
    return tuple(sorted(changes, key=lambda c: (c.append, order.get(c.key, len(order)))))


def _replaced(path: str, base: Tree, changes: tuple[GroupChange, ...], snapshot: Snapshot, selection) -> str | None:
    """For a key the changed tree lacks but the selection's own tree has: which override took it away, as
    SL001 says it (`exists in `actor/megatron_actor`, not in `actor/dp_actor``)."""
    entry = base.get(path)
    if entry is None or entry.get("declared_only"):
        return None
    for c in reversed(changes):
        if c.append or not (path == c.package or path.startswith(c.package + ".") or not c.package):
            continue
        old = f"{c.group}/{snapshot.selected(c.key, selection)}"
        if c.option is None:
            return f"exists in `{old}`, which `~{c.key}` removes"
        return f"exists in `{old}`, not in `{c.group}/{c.option}` (`{c.key}={c.option}`)"
    return None


def _merged(overrides, view: ConfigView, group: dict[int, GroupOverride]):
    """The overrides as Hydra applies them: a mapping value set on a config node or a non-null dict is merged key
    by key (`OmegaConf.update(..., merge=True)`), so each key in it is checked as the dotted override it amounts
    to, at the line it was written; `+`/`++` merge without struct mode, as `++` does. Expanded lazily: whether a
    mapping merges depends on the overrides applied before it."""
    for lo in overrides:
        p = lo.parsed
        if (
            p is None
            or id(lo) in group
            or p.op == "delete"
            or not isinstance(p.value, dict)
            or hydra_keys.is_hydra_key(p.key)
            or not view.merges_into(p.key)
        ):
            yield lo
            continue
        op = "set" if p.op == "set" else "force_add"
        yield from _merged_keys(lo, op, dict(lo.inner_locations), "", p.value, view)


def _merged_keys(lo: LocatedOverride, op: str, inner: dict, below: str, mapping: dict, view: ConfigView):
    """The dotted overrides of `mapping`, the part of `lo`'s value at `below`; `inner`: where each key was written."""
    for name, value in mapping.items():
        rel = f"{below}.{name}" if below else str(name)
        path = f"{lo.parsed.key}.{rel}"
        if isinstance(value, dict) and view.merges_into(path):
            yield from _merged_keys(lo, op, inner, rel, value, view)
            continue
        unresolved = lo.unresolved if isinstance(value, str) and "${" in value else ()
        yield LocatedOverride(
            inner.get(rel, lo.location),
            ("++" if op == "force_add" else "") + path,
            ParsedOverride(op, path, None, value),
            None,
            unresolved,
            lo.branches,
            merged_from=lo.key_text,
        )


def resolve(command: Command, snapshot: Snapshot) -> LintContext:
    """Apply the command's overrides as Hydra does at compose time: the config-group overrides to the defaults
    list first, then every other override in order."""
    groups = snapshot.groups
    selection = snapshot.default_selection()  # the groups that pick the tree: model_engine; engine, optim (SFT)
    for lo in command.overrides:
        p = lo.parsed
        if (
            p is not None
            and p.key in selection
            and p.package is None
            and p.op == "set"
            and p.value in groups[p.key]["options"]
        ):
            selection[p.key] = p.value
    verdicts = group_overrides(command, snapshot, selection)
    changes = _changes(snapshot, verdicts.values())
    base = snapshot.tree(selection)
    tree = snapshot.tree(selection, changes)
    view = ConfigView(tree)
    # Subtrees filled from a config outside verl: `model_engine`'s package is the root (it picks every role's
    # config: `${model_engine}_actor`), so an option of it verl lacks leaves the whole config unchecked.
    external = {v.outside for v in verdicts.values() if v.outside is not None}
    resolved: list[ResolvedOverride] = []
    broken: list[LocatedOverride] = []
    for lo in _merged(command.overrides, view, verdicts):
        p = lo.parsed
        if p is None:
            broken.append(lo)
            continue
        if beyond_int64(p.value):  # no rule computes with it, nor prints it (one of 100,000 digits cannot be)
            p = p._replace(value=_within_int64(p.value))
        if hydra_keys.is_hydra_key(p.key):
            resolved.append(ResolvedOverride(lo, p, None, True, None, "", None, hydra_keys.ROOT))
            continue
        verdict = verdicts.get(id(lo))
        if verdict is not None:
            current, spec = verdict.spec["default"], verdict.spec
            resolved.append(ResolvedOverride(lo, p, None, True, current, "", spec, verdict.outside, verdict.refused))
            continue
        outside = _outside(p.key, external)
        existed, current = view.lookup(p.key)
        if outside is not None:  # the key may well be in the external config: keep its value for the other rules
            resolved.append(
                ResolvedOverride(lo, p, tree.get(p.key), existed, current, view.anchor(p.key), None, outside)
            )
            view.apply(p)
            continue
        anchor = "" if existed else view.anchor(p.key)
        replaced = None if existed or not changes else _replaced(p.key, base, changes, snapshot, selection)
        resolved.append(ResolvedOverride(lo, p, tree.get(p.key), existed, current, anchor, replaced=replaced))
        if p.op == "delete" or (existed or p.op != "set"):
            view.apply(p)
    # A config without a `model_engine` group (verl <= 0.7): the actor's `strategy`, as the overrides leave it; an
    # SFT trainer's: its `engine` group (sft_trainer_engine), else `model.strategy` (sft_trainer: FSDP only)
    strategy = view.value("actor_rollout_ref.actor.strategy")
    if snapshot.config_name == "sft_trainer":
        strategy = view.value("model.strategy")
    model_engine = (
        selection.get("model_engine")
        or _ENGINE_OPTION.get(selection.get("engine") or "", selection.get("engine") or "")
        or _STRATEGY_ENGINE.get(strategy if isinstance(strategy, str) else "", "")
    )
    return LintContext(
        snapshot, tree, model_engine, resolved, view, command.stack, broken, command, selection=selection
    )


class Part(Enum):
    """A part of verl that a run may or may not reach. Each rule declares the part whose code it quotes
    (`@rule(..., part=...)`); a run of an entry module reaches the rule when the module runs that part
    (`ENTRY_MODULE_PARTS`)."""

    # The entry module starts: every run reaches it, and a run of a `verl.` module that verl does not have reaches
    # nothing else (`lint_command`): its command is not checked against a config it never composes.
    ENTRY = "entry"
    CONFIG = "config"  # Hydra composes the config: every entry module
    # The rollout servers: RolloutConfig (verl/workers/rollout/replica.py, omega_conf_to_dataclass), the model loaded
    # with rollout TP over the trainer's devices, HCCL's environment on Ascend.
    ROLLOUT = "rollout"
    WORKERS = "workers"  # PPO's workers (actor, ref, critic), their optimizer and checkpoints, the dataset filter
    # A step's train batch of `data.train_batch_size` prompts: the driver's `validate_config` (verl/utils/config.py)
    # and ActorConfig.validate's train-batch >= mini-batch.
    TRAIN_BATCH = "train_batch"
    # The rollout inside the actor's worker group, whose mesh asserts `world_size % infer_world_size == 0`.
    COLOCATED_ROLLOUT = "colocated_rollout"
    # An SFT trainer's one model on its training engine (verl/trainer/sft_trainer.py and sft_trainer_ray.py:
    # TrainingWorker over sft_trainer_engine's `engine`, `optim` and `checkpoint`; verl <= 0.6's
    # fsdp_sft_trainer.py: FSDP with Ulysses over sft_trainer's `model`), its optimizer and its checkpoints. No
    # rollout, reference model or critic; its devices are torchrun's (sft_trainer_ray's: `trainer.nnodes` x
    # `trainer.n_gpus_per_node`).
    SFT = "sft"


EVERY_PART = frozenset(Part) - {Part.SFT}  # what a PPO trainer (or an entry module verl does not name) runs

# verl main's trainers with a separate rollout (verl/experimental/separation): the rollout runs as standalone
# servers on its own `rollout.nnodes x rollout.n_gpus_per_node` devices, never in the actor's worker group.
SEPARATED_ROLLOUT_ENTRY_MODULES = (
    "verl.experimental.fully_async_policy.fully_async_main",
    "verl.experimental.one_step_off_policy.main_ppo",
)

# The verl entry modules that do not run every part, with the parts they run. Any other entry module runs all of
# them but the SFT trainer's: main_ppo, a team's wrapper, a recipe that names none.
ENTRY_MODULE_PARTS: dict[str, frozenset[Part]] = {
    # verl/trainer/main_generation_server.py composes ppo_trainer, then only starts rollout servers:
    # get_rollout_replica_class(rollout.name)(config=rollout, ...) builds RolloutConfig, and the servers load the
    # model with rollout TP over trainer.nnodes x n_gpus_per_node devices; HCCL reads its environment on Ascend.
    # No actor, ref, critic, dataset filter, checkpoint or optimizer.
    "verl.trainer.main_generation_server": frozenset({Part.ENTRY, Part.CONFIG, Part.ROLLOUT}),
    # verl/trainer/main_eval.py composes `evaluation` and scores a parquet of responses with Ray tasks.
    "verl.trainer.main_eval": frozenset({Part.ENTRY, Part.CONFIG}),
    # verl/trainer/sft_trainer.py and sft_trainer_ray.py compose sft_trainer_engine: no PPO roles, no rollout; and
    # verl <= 0.6's fsdp_sft_trainer.py composes sft_trainer: one FSDP model, its devices given by torchrun.
    "verl.trainer.sft_trainer": frozenset({Part.ENTRY, Part.CONFIG, Part.SFT}),
    "verl.trainer.sft_trainer_ray": frozenset({Part.ENTRY, Part.CONFIG, Part.SFT}),
    "verl.trainer.fsdp_sft_trainer": frozenset({Part.ENTRY, Part.CONFIG, Part.SFT}),
    # fully_async_main.py goes straight to run_ppo without the driver's `validate_config`, and its rollouter asserts
    # `data.train_batch_size == 0` ("train_batch_size must be zero"): the train batch is `require_batches`
    # mini-batches instead. Its rollout is standalone: the actor's worker group builds no rollout mesh
    # (verl/workers/rollout/llm_server.py floor-divides the rollout's devices into replicas instead).
    "verl.experimental.fully_async_policy.fully_async_main": EVERY_PART - {Part.TRAIN_BATCH, Part.COLOCATED_ROLLOUT},
    # one_step_off_policy/main_ppo.py calls validate_config, but its rollout is standalone too.
    "verl.experimental.one_step_off_policy.main_ppo": EVERY_PART - {Part.COLOCATED_ROLLOUT},
}


# The training backends, as verl's `model_engine` group names them (verl >= 0.8); before it, the actor's `strategy`
# chose the backend (`ppo_megatron_trainer`: `strategy: megatron`; FSDP's `fsdp`/`fsdp2`).
MEGATRON, DATA_PARALLEL = "megatron", "dp"
MEGATRON_ONLY = frozenset({MEGATRON})  # `@rule(..., engines=MEGATRON_ONLY)`: the Megatron parallel and recompute rules
_STRATEGY_ENGINE = {"megatron": MEGATRON, "fsdp": DATA_PARALLEL, "fsdp2": DATA_PARALLEL}
# sft_trainer_engine's `engine` group options that are these backends (its others keep their own names: veomni, ...)
_ENGINE_OPTION = {"megatron": MEGATRON, "fsdp": DATA_PARALLEL}


def parts_run(entry_module: str | None) -> frozenset[Part]:
    """The parts of verl that a run of this entry module reaches."""
    return ENTRY_MODULE_PARTS.get(entry_module or "", EVERY_PART)


# The parts of verl whose rules include one that needs the model's shape (`@rule(..., needs_model=True)`), for
# `reaches_model_rules` to answer before any rule module is imported (importing them all would slow
# `--select SL`); tests/test_rule_reach.py keeps it equal to the rules' declarations.
MODEL_PARTS = frozenset({Part.ROLLOUT, Part.WORKERS, Part.SFT})


def reaches_model_rules(entry_module: str | None) -> bool:
    """Whether a run of this entry module reaches a rule that needs the model's shape: whether a source looks the
    model up (and reports RF005 when it cannot)."""
    return not MODEL_PARTS.isdisjoint(parts_run(entry_module))


def lint_command(
    command: Command, snapshot: Snapshot, rules: Iterable, suggestions: Suggestions | None = None
) -> list[Diagnostic]:
    """The findings of every rule that a run of the command reaches. `suggestions`: shared by the file's commands."""
    ctx = resolve(command, snapshot)
    if suggestions is not None:
        ctx.suggestions = suggestions
    out: list[Diagnostic] = []
    module = command.entry_module or ""
    starts = not module.startswith("verl.") or module in snapshot.main_modules
    parts = parts_run(command.entry_module) if starts else frozenset({Part.ENTRY})
    for rule in rules:
        if not rule.parts.isdisjoint(parts) and (rule.engines is None or ctx.model_engine in rule.engines):
            charge(f"running {rule.code} on {command.variant or 'the command'}", 1 + len(command.overrides))
            out.extend(rule.run(ctx))
    return [d.with_variant(command.variant) for d in out]


__all__ = [
    "ENTRY_MODULE_PARTS",
    "EVERY_PART",
    "INT64",
    "DATA_PARALLEL",
    "MAX_SUGGESTIONS",
    "MEGATRON",
    "MEGATRON_ONLY",
    "MODEL_PARTS",
    "OUT_OF_RANGE",
    "SEPARATED_ROLLOUT_ENTRY_MODULES",
    "ConfigView",
    "GroupOverride",
    "LintContext",
    "Part",
    "ResolvedOverride",
    "Suggestions",
    "beyond_int64",
    "group_overrides",
    "lint_command",
    "outside_verl",
    "parts_run",
    "reaches_model_rules",
    "resolve",
]
