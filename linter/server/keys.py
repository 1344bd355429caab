"""What the language server says about override keys: the keys below a node, the values a key takes, and a key's
description, all from the tree of the verl snapshot its trainer command is linted against (`engine.LintContext`:
after its `model_engine` selection and config-group overrides, as the rules see it)."""

from __future__ import annotations

import json
from typing import NamedTuple

from ..core.dotted import ancestors
from ..engine import LintContext, group_overrides
from ..schema import SnapshotNotFound, available_verl_versions, load_snapshot, other_versions, version_key
from ..verl_docs import KeyComment, load_docs, markdown_quote


class Candidate(NamedTuple):
    """One completion: the text it inserts, what kind of thing it is, a one-line detail."""

    label: str
    kind: str  # "node" | "key" | "dict" | "choice" | "group" | "option"
    detail: str
    key: str = ""  # the whole key it completes, described when the editor asks (`describe_key`)


def key_candidates(ctx: LintContext, parent: str) -> list[Candidate]:
    """The keys directly below `parent` ('' for the top level, where the config-group placements are offered too:
    `actor@actor_rollout_ref.actor`), or a consumer's fields below an open dict another library receives
    (`...megatron.override_transformer_config.` offers megatron-core's TransformerConfig fields)."""
    tree = ctx.tree
    node = tree.get(parent) if parent else None
    if parent and node is None:
        return []
    found = []
    for leaf in sorted(tree.children(parent)):
        path = f"{parent}.{leaf}" if parent else leaf
        entry = tree.get(path) or {}
        kind = {"node": "node", "dict": "dict"}.get(entry.get("kind", ""), "key")
        found.append(Candidate(leaf, kind, entry_summary(entry), path))
    if not parent:
        for placement, where in ctx.snapshot.placements.items():
            if "@" in placement:  # a group at its own package is its key's own name, listed above
                group = f"config group `{where['group']}`"
                found.append(Candidate(placement, "group", group, placement))
    if node is not None and node.get("consumer"):
        fields = _fields(ctx, node["consumer"])
        found.extend(
            Candidate(name, "key", _field_summary(spec), f"{parent}.{name}") for name, spec in sorted(fields.items())
        )
    return found


def value_candidates(ctx: LintContext, key: str) -> list[Candidate]:
    """The values a key takes where they are few: its choices, true/false for a bool, a config group's options
    (`actor@actor_rollout_ref.actor=`, `model_engine=`), a consumer field's choices."""
    group = _group_of(ctx, key)
    if group is not None:
        options = ctx.snapshot.group_options.get(group, [])
        return [Candidate(o, "option", f"option of config group `{group}`") for o in options]
    entry = ctx.tree.get(key) or {}
    if entry.get("choices"):
        choices = [*entry["choices"], *([None] if entry.get("nullable") else [])]
        return [Candidate(_written(c), "choice", _default_mark(entry, c)) for c in choices]
    field = _consumer_field(ctx, key) or {}
    if field.get("choices"):
        return [Candidate(_written(c), "choice", "") for c in field["choices"]]
    if "bool" in (entry.get("type"), field.get("type")):
        return [Candidate(_written(c), "choice", _default_mark(entry, c)) for c in (True, False)]
    return []


def _default_mark(entry: dict, value) -> str:
    return "default" if "default" in entry and entry["default"] == value else ""


def _written(value) -> str:
    """A value as an override writes it: `null`, `true`, a string as it is."""
    return value if isinstance(value, str) else json.dumps(value)


def _group_of(ctx: LintContext, key: str) -> str | None:
    """The config group an override key selects an option of (`actor@actor_rollout_ref.actor`, `critic`), or
    None for a key of the config."""
    placement = ctx.snapshot.placements.get(key)
    if placement is not None:
        return placement["group"]
    group = key.partition("@")[0]
    return group if "@" in key and group in ctx.snapshot.group_options else None


def entry_summary(entry: dict) -> str:
    """`int, default 1`; `str, one of vllm, sglang`; `node`: one line for a completion's detail."""
    said = [entry.get("type") or entry.get("kind", "value")]
    if entry.get("nullable"):
        said[0] += " | None"
    if "default" in entry and entry.get("kind") not in ("node", "dict"):
        said.append(f"default {_written(entry['default'])}")
    if entry.get("declared_only"):
        said.append("add with `+`")
    return ", ".join(said)


def describe_key(ctx: LintContext, key: str) -> str:
    """A key's description in Markdown: its type, default, the comment verl's YAML carries for it, its choices, what
    consumes it, the verl it is checked against, and which verl added or removed it where not all committed verl
    snapshots have it."""
    group = _group_of(ctx, key)
    if group is not None:
        return _describe_group(ctx, key, group)
    checked = f"verl {ctx.snapshot.label} `{ctx.snapshot.config_name}` ({_selection(ctx)})"
    entry = ctx.tree.get(key)
    consumed = _consumer_line(ctx, key)
    if entry is None:
        if consumed:
            spec = _consumer_field(ctx, key)
            return "\n\n".join([f"**`{key}`**: {_field_summary(spec)}", consumed, f"Checked against {checked}."])
        lines = [f"**`{key}`** is not a key of {checked}."]
        lines.extend(_elsewhere(ctx, key, present=False))
        return "\n\n".join(lines)
    lines = [f"**`{key}`**: {entry_summary(entry)}"]
    comment = key_comment(ctx, key)
    if comment is not None:
        lines.append(markdown_quote(comment.text) + f"\n\n(verl's comment, `{comment.file}`)")
    if entry.get("choices"):
        lines.append("One of " + ", ".join(f"`{_written(c)}`" for c in entry["choices"]) + ".")
    if entry.get("interpolation"):
        lines.append(f"Its default follows `{entry['interpolation']}`.")
    if entry.get("consumer"):
        consumer, cls = ctx.consumer(entry["consumer"])
        lines.append(f"Its keys go to {consumer.package} {consumer.version} `{cls}`.")
    if entry.get("target"):
        lines.append(f"Builds `{entry['target']}`.")
    if entry.get("declared_only"):
        lines.append("A dataclass field that is not in verl's YAML: set it with `+`.")
    if consumed:
        lines.append(consumed)
    lines.append(f"Checked against {checked}.")
    lines.extend(_elsewhere(ctx, key, present=True))
    return "\n\n".join(lines)


def _describe_group(ctx: LintContext, key: str, group: str) -> str:
    placement = ctx.snapshot.placements.get(key)
    options = ", ".join(f"`{o}`" for o in ctx.snapshot.group_options.get(group, []))
    lines = [
        f"**`{key}`**: config group `{group}`" + (f", at `{placement['package'] or '(root)'}`" if placement else "")
    ]
    if placement is not None:
        selected = ctx.snapshot.selected(key, ctx.selection)
        lines.append(f"Default `{placement['default']}`: `{selected}` in this command's selection.")
    lines.append(f"Options: {options}.")
    lines.append(f"Checked against verl {ctx.snapshot.label} `{ctx.snapshot.config_name}`.")
    return "\n\n".join(lines)


def _selection(ctx: LintContext) -> str:
    return ", ".join(f"{g}={o}" for g, o in sorted(ctx.selection.items())) or "its one tree"


def key_comment(ctx: LintContext, key: str) -> KeyComment | None:
    """The comment verl's YAML carries for a key of the context's tree (`verl_docs`): for a committed snapshot only
    (the one `load_snapshot` gives for its version; a repository's verl tree, snapshotted on the fly under the same
    version, may have other files and has no comments document)."""
    docs = load_docs(ctx.snapshot.verl_version)
    if docs is None or not _committed(ctx):
        return None
    changes: list = []
    if ctx.command is not None:
        order = {k: n for n, k in enumerate(ctx.snapshot.placements)}
        verdicts = group_overrides(ctx.command, ctx.snapshot, ctx.selection).values()
        changes = sorted(
            (v.change for v in verdicts if v.change is not None),
            key=lambda c: (c.append, order.get(c.key, len(order))),
        )
    packages = [p["package"] for p in ctx.snapshot.placements.values()]
    return docs.comment(ctx.snapshot.config_name, ctx.selection, key, changes, packages)


def _committed(ctx: LintContext) -> bool:
    try:
        return load_snapshot(ctx.snapshot.verl_version, ctx.snapshot.config_name) is ctx.snapshot
    except SnapshotNotFound:
        return False


def _elsewhere(ctx: LintContext, key: str, present: bool) -> list[str]:
    """Which verl added or removed the key, among the committed verl snapshots (of the same config and selection)
    that have its top-level node, where not all of them have it; for a key this verl lacks, the ones that have it."""
    having = other_versions(ctx.snapshot, ctx.selection, path=key)
    if present:
        comparable = other_versions(ctx.snapshot, ctx.selection, path=key.partition(".")[0])
        return _history(ctx, comparable, {v.version for v in having})
    if not having:
        return [f"No other committed verl snapshot ({len(available_verl_versions()) - 1}) has it either."]
    return [f"In verl {', '.join(v.label for v in having)}."]


def _history(ctx: LintContext, comparable, having: set[str]) -> list[str]:
    """`Added in verl 0.6.1 (not in 0.4.1, 0.5.0).`, `Removed after verl 0.8.0 (not in 0.9.1).`, both, or where the
    versions that have it are not one run, `Not in verl ...`: the key's history among the comparable snapshots."""
    here = ctx.snapshot
    versions = sorted(
        [*((v.version, v.label) for v in comparable), (here.verl_version, here.label)], key=lambda v: version_key(v[0])
    )
    has = [v in having or v == here.verl_version for v, _ in versions]
    lacking = [label for (_, label), h in zip(versions, has, strict=True) if not h]
    if not lacking:
        return []
    first, last = has.index(True), len(has) - 1 - has[::-1].index(True)
    if not all(has[first : last + 1]):
        return [f"Not in verl {', '.join(lacking)}."]
    said = []
    if first > 0:
        said.append(f"Added in verl {versions[first][1]} (not in {', '.join(lacking[:first])}).")
    if last < len(has) - 1:
        said.append(f"Removed after verl {versions[last][1]} (not in {', '.join(lacking[first:])}).")
    return [" ".join(said)]


def _fields(ctx: LintContext, spec: str) -> dict[str, dict]:
    try:
        consumer, cls = ctx.consumer(spec)
    except SnapshotNotFound:
        return {}
    return consumer.classes.get(cls, {}).get("fields", {})


def _consumer_field(ctx: LintContext, key: str) -> dict | None:
    """The consumer's field a key below an open dict names (`...override_transformer_config.recompute_method`)."""
    consumed = ctx.consumer_dict(key)
    if consumed is None:
        return None
    prefix, entry = consumed
    name = key[len(prefix) + 1 :]
    if "." in name:
        return None
    return _fields(ctx, entry["consumer"]).get(name)


def _consumer_line(ctx: LintContext, key: str) -> str:
    """`Passed to megatron-core 0.16.1 `TransformerConfig.recompute_method` (str | None, default None) through
    `...override_transformer_config`.` for a key that names a consumer's field; '' for any other."""
    spec = _consumer_field(ctx, key)
    if spec is None:
        return ""
    prefix, entry = ctx.consumer_dict(key)
    consumer, cls = ctx.consumer(entry["consumer"])
    name = key[len(prefix) + 1 :]
    field = f"`{cls}.{name}` ({_field_summary(spec)})"
    return f"Passed to {consumer.package} {consumer.version} {field} through `{prefix}`."


def _field_summary(spec: dict) -> str:
    said = [spec.get("type") or "any"]
    if spec.get("nullable"):
        said[0] += " | None"
    if "default" in spec:
        said.append(f"default {spec['default']}")
    if spec.get("choices"):
        said.append("one of " + ", ".join(map(str, spec["choices"])))
    return ", ".join(said)


def parent_of(key: str) -> str:
    """The node a key being typed is below: `a.b.c` -> `a.b`; `a.b.` -> `a.b`; `a` -> ''."""
    found = ancestors(key + "x") if key.endswith(".") else ancestors(key)
    return found[0] if found else ""
