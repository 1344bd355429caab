"""`sapo-lint schema export`: the recipe format's JSON Schema with the override keys of one verl, for editors that
speak YAML schemas (yaml-language-server: VS Code's YAML extension, Neovim, Helix) to complete and validate recipes
with no plug-in.

The export is `schemas/recipe.schema.json` with its `$defs.overrides` (the recipe's and every variant's `overrides:`)
given a property per key of the trainer config: every key of every tree selection (`model_engine=dp`, `megatron`,
...), with its type, its choices where verl has a closed set, its default, and a description saying where it comes
from. What the linter checks beyond a key's own type (another config group's keys, `+` on an existing key,
topology, memory) stays the linter's: the schema accepts every prefixed key (`+`, `++`, `~`), every config group
selection (`actor@actor_rollout_ref.actor`) and any value written as an interpolation (`${...}`). A key that no
selection has is refused (`additionalProperties: false`), as Hydra refuses it at compose. A key's description starts
with the comment verl's config YAML carries for it (`schemas/verl-docs/`, `verl_docs`), then gives its type, default,
choices and the consuming library.
"""

from __future__ import annotations

import json
from pathlib import Path

from .schema import SCHEMA_DIR, Snapshot, load_snapshot, resolve_verl_version
from .verl_docs import VerlDocs, load_docs

# JSON Schema's names for the snapshot's types (schemas/FORMAT.md, `ENTRY`); `any` accepts everything
_JSON_TYPES = {
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "str": "string",
    "list": "array",
    "dict": "object",
}
# A prefixed key (`+` adds, `++` forces, `~` deletes) and a config group selection are the linter's to judge.
_PASSED_KEYS = r"^(\+\+|\+|~)|@"
_INTERPOLATION = {"type": "string", "pattern": r"^\$\{"}


def recipe_schema(verl_version: str, config_name: str = "ppo_trainer") -> dict:
    """The recipe format's JSON Schema with the override keys of `config_name` in verl `verl_version` (a version or
    a reference `resolve_verl_version` takes). Raises `schema.SnapshotNotFound` for an unknown one."""
    snapshot = load_snapshot(resolve_verl_version(verl_version), config_name)
    document = json.loads((SCHEMA_DIR / "recipe.schema.json").read_text(encoding="utf-8"))
    overrides = document["$defs"]["overrides"]
    keys = _override_keys(snapshot)
    overrides["properties"] = keys
    overrides["patternProperties"] = {_PASSED_KEYS: {}}
    overrides["additionalProperties"] = False
    overrides["description"] += (
        f" Keys of verl {snapshot.label} `{config_name}` ({len(keys)}), from `sapo-lint schema export`."
    )
    document["$id"] = f"https://sapo-toolkit/schemas/recipe-verl-{snapshot.verl_version}-{config_name}.schema.json"
    return document


def _override_keys(snapshot: Snapshot) -> dict[str, dict]:
    """Every dotted key of every tree selection of the config, and every config group placement, each as a JSON
    Schema; a key whose entries differ between selections accepts what any of them does."""
    entries: dict[str, list[dict]] = {}
    comments: dict[str, str] = {}
    docs = load_docs(snapshot.verl_version)
    for selection in _selections(snapshot):
        for path, entry in snapshot.tree(selection).entries.items():
            if path and entry not in entries.setdefault(path, []):
                entries[path].append(entry)
            if path and path not in comments:
                said = _comment(docs, snapshot, selection, path)
                if said:
                    comments[path] = said
    keys = {
        path: _key_schema(found, snapshot.verl_version, comments.get(path)) for path, found in sorted(entries.items())
    }
    for placement, where in snapshot.placements.items():  # a group's selection, also where a key has its name
        group_schema: dict = {
            "description": f"config group `{where['group']}` placed at `{where['package'] or '(root)'}`: one of its "
            f"options (default {where['default']})"
        }
        options = snapshot.group_options.get(where["group"])
        if options:
            group_schema["enum"] = [*options, None]
        keys[placement] = group_schema
    return keys


def _comment(docs: VerlDocs | None, snapshot: Snapshot, selection: dict[str, str], path: str) -> str | None:
    """The comment verl's YAML carries for a key in a selection's tree (the default selection's where it has one)."""
    found = docs.comment(snapshot.config_name, selection, path) if docs is not None else None
    return found.text if found is not None else None


def _selections(snapshot: Snapshot) -> list[dict[str, str]]:
    """The default selection, then each option of each selecting group on its own (the trees the snapshot holds
    for the options verl documents: `model_engine=megatron`)."""
    default = snapshot.default_selection()
    out = [default]
    for group in snapshot.selecting:
        for option in snapshot.groups[group].get("options", []):
            chosen = {**default, group: option}
            if chosen not in out:
                out.append(chosen)
    return out


def _key_schema(entries: list[dict], version: str, comment: str | None = None) -> dict:
    """One key's JSON Schema from its snapshot entries (one per distinct entry among the selections) and the comment
    verl's YAML carries for it."""
    alternatives = [_entry_schema(e) for e in entries]
    merged = alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}
    first = entries[0]
    said = [first.get("type") or first.get("kind", "value")]
    if "default" in first:
        said.append(f"default {json.dumps(first['default'])}")
    if first.get("choices"):
        said.append("one of " + ", ".join(map(str, first["choices"])))
    if first.get("consumer"):
        said.append(f"passed to {first['consumer']}")
    if first.get("target"):
        said.append(f"builds {first['target']}")
    if first.get("declared_only"):
        said.append("a dataclass field not in verl's YAML: add it with `+`")
    described = f"verl {version}: " + "; ".join(said)
    schema = {**merged, "description": f"{comment}\n\n{described}" if comment else described}
    if "default" in first and len(entries) == 1:
        schema["default"] = first["default"]
    return schema


def _entry_schema(entry: dict) -> dict:
    """What one entry accepts: its choices, else its type (null where nullable), or an interpolation."""
    if entry.get("choices"):
        accepted: dict = {"enum": [*entry["choices"], *([None] if entry.get("nullable") else [])]}
    elif entry.get("kind") in ("node", "dict"):
        accepted = {"type": ["object", "null"]}
    else:
        names = [_JSON_TYPES[t] for t in (entry.get("type") or "any").split("|") if t in _JSON_TYPES]
        if not names or "any" in (entry.get("type") or "any").split("|"):
            return {}
        accepted = {"type": sorted(set(names + (["null"] if entry.get("nullable") else [])))}
    return {"anyOf": [accepted, _INTERPOLATION]}


def write_recipe_schema(path: Path, verl_version: str, config_name: str = "ppo_trainer") -> int:
    """Write `recipe_schema` to `path` atomically; the number of override keys it holds."""
    from .sources.files import write_atomically

    document = recipe_schema(verl_version, config_name)
    write_atomically(path, (json.dumps(document, indent=1, sort_keys=True) + "\n").encode("utf-8"))
    return len(document["$defs"]["overrides"]["properties"])
