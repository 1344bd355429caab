"""Recipe YAML (`sapo-recipe/v1`) -> located overrides, one command per variant combination."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ..catalog import ModelNotFound, find_model, model_naming, model_path_key
from ..core.budget import charge
from ..core.command import RESOURCE_KEYS, Command, EnvVar, LocatedOverride, merge_overrides, site_limits
from ..core.diagnostics import Location
from ..core.gates import GateNeeds, gate_needs
from ..core.overrides import MISSING, OverrideSyntaxError, ParsedOverride, parse_override
from ..core.problems import DuplicateKey, InvalidYaml, ReadProblem, SchemaViolation, TooManyVariants, UnknownModel
from ..core.redaction import REDACTED, is_secret_name
from ..core.variants import collapse_variants, expand
from ..core.written import LONGEST_FIXABLE_LINE, Written
from ..schema import SCHEMA_DIR
from ..stack import Declared, ResolvedStack, resolve_stack
from . import yaml_nodes
from .files import TextFile
from .hardware import accelerator_levels, choose
from .options import DEFAULT_CONFIG_NAME, ReadOptions

RECIPE_MARKER = re.compile(r"^recipe\s*:", re.MULTILINE)


def looks_like_recipe(text: str) -> bool:
    """Recipes are YAML files with a top-level `recipe:` key; other YAML (CI files, Hydra configs) is skipped."""
    return RECIPE_MARKER.search(text) is not None


@dataclass(slots=True)
class Recipe:
    path: str
    data: dict
    commands: list[Command] = field(default_factory=list)
    verl_version: str | None = None  # as the recipe names it
    config_name: str = DEFAULT_CONFIG_NAME
    # `variant_defaults:` as label tokens (`RECOMPUTE=selective`): what a launch runs for an axis it does not choose
    variant_defaults: tuple[str, ...] = ()


@dataclass(slots=True)
class RecipeRead:
    recipe: Recipe | None
    problems: list[ReadProblem]  # turned into findings by the RF rules (`rules/rf_recipe.py`)
    stack: ResolvedStack | None = None  # what its commands are checked against; None: no recipe was read


@cache
def recipe_schema() -> dict:
    return json.loads((SCHEMA_DIR / "recipe.schema.json").read_text(encoding="utf-8"))


def _location(path: str, node: yaml.Node | None) -> Location:
    if node is None:
        return Location(path, 1, 1)
    return Location(path, node.start_mark.line + 1, node.start_mark.column + 1)


def _mark_location(source: TextFile, mark: yaml.Mark) -> Location:
    """Where a YAML error mark points. libyaml puts the end of the stream on a line of its own after a last line
    (with or without a line break), which is not a line of the file: that is the end of the last line."""
    lines = source.text.splitlines() or [""]
    if mark.line < len(lines):
        return Location(source.path, mark.line + 1, mark.column + 1)
    return Location(source.path, len(lines), len(lines[-1]) + 1)


def _schema_errors(source: TextFile, root: yaml.Node, data: Any) -> tuple[list[SchemaViolation], list[tuple]]:
    """RF001 for every schema violation, and the paths of the values that violate it."""
    from sapo_toolkit.schemas.recipe_validator import (  # generated; stdlib only
        JsonSchemaValueException,
        validate,
    )

    try:
        validate(data)
        return [], []
    except JsonSchemaValueException:
        pass
    import jsonschema  # the reference validator (~90 ms to import): reports every error, with its path

    validator = jsonschema.Draft202012Validator(recipe_schema())
    out, paths = [], []
    nodes = yaml_nodes.Index()
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        paths.append(tuple(error.absolute_path))
        node = root
        for part in error.absolute_path:
            node = nodes.child(node, part)
        where = ".".join(map(str, error.absolute_path)) or "top level"
        message = error.message
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            extra = [k for k in error.instance if k not in error.schema.get("properties", {})]
            node = nodes.key_node(node, extra[0]) or node
            message = f"unknown key `{extra[0]}`; allowed: {', '.join(error.schema.get('properties', {}))}"
        elif error.validator == "anyOf" and all(set(alt) == {"required"} for alt in error.validator_value):
            message = "needs at least one of " + ", ".join(k for alt in error.validator_value for k in alt["required"])
        elif error.validator == "propertyNames":
            node = nodes.key_node(node, error.instance) or node
        if is_secret_name(where):  # jsonschema quotes the value: `['hf_...'] is not of type 'string', ...`
            message = message.replace(repr(error.instance), REDACTED)
        out.append(SchemaViolation(location=_location(source.path, node), where=where, message=message))
    return out, paths


def _without(data: dict, paths: list[tuple]) -> dict:
    """`data` minus the values at `paths` (what the schema rejected, already reported): nothing downstream reads
    a value of a type it does not expect. A violation of the whole document (a missing key) removes nothing."""
    import copy

    data = copy.deepcopy(data)
    for path in sorted({p for p in paths if p}, key=len):
        parent = data
        for part in path[:-1]:
            parent = parent[part] if isinstance(parent, (dict, list)) and _has(parent, part) else None
        if isinstance(parent, dict) and path[-1] in parent:
            del parent[path[-1]]
        elif isinstance(parent, list) and _has(parent, path[-1]):
            parent[path[-1]] = None
    return data


def _has(container, part) -> bool:
    return part in container if isinstance(container, dict) else isinstance(part, int) and 0 <= part < len(container)


def _override_mappings(root: yaml.Node):
    """The `overrides:` mappings of the recipe and of each variant."""
    yield yaml_nodes.child(root, "overrides")
    for _, axis in yaml_nodes.mapping_pairs(yaml_nodes.child(root, "variants")):
        for _, body in yaml_nodes.mapping_pairs(axis):
            yield yaml_nodes.child(body, "overrides")


def _overrides(path: str, lines: list[str], loader, mapping: yaml.Node | None) -> list[LocatedOverride]:
    """Each `key: value` of an overrides mapping (`lines`: the recipe's), in file order, duplicates kept (SL008
    reports them)."""
    out = []
    for key_node, value_node in yaml_nodes.mapping_pairs(mapping):
        charge("reading the overrides")
        key_text = str(key_node.value)
        location = _location(path, key_node)
        value = yaml_nodes.construct(loader, value_node)
        try:
            # The key goes through Hydra's grammar; the value is the YAML value, already typed.
            head = parse_override(key_text if key_text.startswith("~") else key_text + "=0")
        except OverrideSyntaxError as exc:
            out.append(
                LocatedOverride(location, key_text, None, f"`{key_text}` is not a valid Hydra key: {exc.message}")
            )
            continue
        if head.op == "delete":
            value = MISSING if value is None else value
        parsed = ParsedOverride(head.op, head.key, head.package, value)
        inner = tuple(_inner_locations(path, value_node).items()) if isinstance(value, dict) else ()
        written = _written_entry(lines, key_node, value_node)
        out.append(LocatedOverride(location, key_text, parsed, inner_locations=inner, written=written))
    return out


def _written_entry(lines: list[str], key_node: yaml.Node, value_node: yaml.Node) -> Written | None:
    """A `key: value` entry as written, where its value ends on the key's line (not a block, nor an alias of a
    node written elsewhere)."""
    start, value_start, end = key_node.start_mark, value_node.start_mark, value_node.end_mark
    if not (start.line == value_start.line == end.line < len(lines) and start.column <= value_start.column):
        return None
    line = lines[start.line]
    if len(line) > LONGEST_FIXABLE_LINE:
        return None
    return Written(line[: start.column], line[start.column : end.column], line[end.column :], False)


def _inner_locations(path: str, mapping: yaml.Node, below: str = "") -> dict[str, Location]:
    """Where each key inside a mapping value was written, by dotted path; a key written twice is where YAML
    keeps it from (the last one), and a key a `<<: *anchor` merge brings is at the anchor unless written here."""
    merged: dict[str, Location] = {}
    written: dict[str, dict[str, Location]] = {}  # each key written here -> where it and the keys inside it are
    for key_node, value_node in yaml_nodes.mapping_pairs(mapping):
        if key_node.tag == "tag:yaml.org,2002:merge":
            sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            for source in sources:  # the first source listed wins, as PyYAML merges
                for rel, location in _inner_locations(path, source, below).items():
                    merged.setdefault(rel, location)
            continue
        rel = f"{below}.{key_node.value}" if below else str(key_node.value)
        written[rel] = {rel: _location(path, key_node), **_inner_locations(path, value_node, rel)}
    # a merge is shallow: what it brings under a key written here is gone
    kept = {k: v for k, v in merged.items() if not _within(k, written)}
    return {**kept, **{k: v for inner in written.values() for k, v in inner.items()}}


def _within(key: str, tops) -> bool:
    """Whether a dotted key is one of `tops` or below one (`a.b.c` is below `a.b`); in time linear in the key."""
    while key:
        if key in tops:
            return True
        key = key.rpartition(".")[0]
    return False


def _label_token(axis, name) -> str:
    """How a variant label names a variant: `DEVICE=npu`."""
    return f"{str(axis).upper()}={name}"


def _variant_defaults(
    path: str, root: yaml.Node, data: dict, axis_names: list[str], axes: list
) -> tuple[list[int | None], list[SchemaViolation]]:
    """For each axis, the index of the variant `variant_defaults:` names for it (None: no default), and a schema
    violation for each entry that names an axis or a variant the recipe does not have (JSON Schema cannot say it)."""
    wanted = data.get("variant_defaults") if isinstance(data.get("variant_defaults"), dict) else {}
    node = yaml_nodes.child(root, "variant_defaults")
    defaults: list[int | None] = [None] * len(axes)
    problems = []
    for axis, value in wanted.items():
        where = f"variant_defaults.{axis}"
        if axis not in axis_names:
            have = ", ".join(axis_names) or "none"
            message = f"the recipe has no variant axis `{axis}` (its axes: {have})"
            problems.append(
                SchemaViolation(location=_location(path, yaml_nodes.key_node(node, axis)), where=where, message=message)
            )
            continue
        i = axis_names.index(axis)
        names = [token.split("=", 1)[1] for token, _ in axes[i]]
        if value in names:
            defaults[i] = names.index(value)
        else:
            message = f"`{value}` is not a variant of {axis} (one of {', '.join(names)})"
            problems.append(
                SchemaViolation(location=_location(path, yaml_nodes.child(node, axis)), where=where, message=message)
            )
    return defaults, problems


def _gates(path: str, root: yaml.Node, data: dict) -> tuple[GateNeeds, ...]:
    """The `gates:` entries the schema accepted (`_without` left the others None), each where it is written."""
    entries = data.get("gates") if isinstance(data.get("gates"), list) else []
    node = yaml_nodes.child(root, "gates")
    return tuple(
        gate_needs(entry, _location(path, yaml_nodes.child(node, i)))
        for i, entry in enumerate(entries)
        if isinstance(entry, dict) and "metric" in entry
    )


def _env(path: str, loader, mapping: yaml.Node | None) -> dict[str, EnvVar]:
    out = {}
    for key_node, value_node in yaml_nodes.mapping_pairs(mapping):
        value = yaml_nodes.construct(loader, value_node)
        out[str(key_node.value)] = EnvVar(str(key_node.value), str(value), _location(path, key_node))
    return out


def _model(
    source: TextFile, root, data: dict, base: list[LocatedOverride], options: ReadOptions, problems: list[ReadProblem]
):
    """The recipe's model, from the first of: an `--override` of the model key; the file's `# sapo-lint: model=`
    comment; `model.card`; `model.path` (else the key in `overrides`); where the recipe names none,
    `[tool.sapo-lint] model`. None, with RF005 in `problems`, when it is not found."""
    model = data.get("model") if isinstance(data.get("model"), dict) else {}
    entry = data.get("entrypoint") if isinstance(data.get("entrypoint"), str) else None
    key = model_path_key(entry, None)
    naming = model_naming(source.text, options.model, Path(options.model_dir), options.fetch_model_config)
    path, card, base_dir, by = model.get("path"), model.get("card"), Path(source.path).parent, ""
    for lo in base:
        if lo.parsed and lo.parsed.key == key and isinstance(lo.parsed.value, str):
            path = path or lo.parsed.value
    where = _location(source.path, yaml_nodes.key_node(root, "model") or yaml_nodes.key_node(root, "overrides"))
    cli = next((lo for lo in reversed(options.cli_overrides) if lo.parsed and lo.parsed.key == key), None)
    if cli is not None and isinstance(cli.parsed.value, str):
        path, card, where = cli.parsed.value, None, cli.location
    elif naming.directive is not None:
        path, card, by = naming.directive, None, "the `# sapo-lint: model=` comment"
        where = Location(source.path, naming.directive_line, 1)
    elif path is None and card is None and naming.setting is not None:
        path, base_dir, by = naming.setting, naming.setting_dir, "[tool.sapo-lint] model"
    try:
        return find_model(path, card, base_dir, naming.fetch)
    except ModelNotFound as exc:
        reason = f"{by}: {exc}" if by else str(exc)
        remedy = f"Name a shipped card with `model.card`, or point `model.path` at one. {naming.remedy(key, path)}"
        problems.append(UnknownModel(location=where, reason=reason, remedy=remedy))
        return None


def _accelerator_locator(path: str, root) -> Callable[[str | None], Location]:
    """Where the recipe's `hardware.accelerator` names the accelerator for a device kind (None: its single name)."""
    accelerator_node = yaml_nodes.child(yaml_nodes.child(root, "hardware"), "accelerator")

    def in_recipe(kind: str | None) -> Location:
        node = accelerator_node if kind is None else yaml_nodes.child(accelerator_node, kind)
        return _location(path, node or accelerator_node)

    return in_recipe


def read_recipe(source: TextFile, options: ReadOptions) -> RecipeRead:
    try:
        root, loader = yaml_nodes.compose(source.text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        loc = _mark_location(source, mark) if mark else Location(source.path)
        problem = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        return RecipeRead(None, [InvalidYaml(location=loc, problem=problem)])
    except (yaml.YAMLError, yaml_nodes.AliasBomb, RecursionError) as exc:
        return RecipeRead(None, [InvalidYaml(location=Location(source.path), problem=str(exc))])
    try:
        duplicates = yaml_nodes.check_shape(root) if root is not None else []
        data = yaml_nodes.construct(loader, root) if root is not None else None
    except yaml_nodes.UnsupportedYaml as exc:
        return RecipeRead(None, [InvalidYaml(location=_location(source.path, exc.node), problem=str(exc))])
    if not isinstance(data, dict):
        return RecipeRead(None, [SchemaViolation(location=Location(source.path), message="a recipe is a YAML mapping")])
    problems, invalid = _schema_errors(source, root, data)
    if problems and not isinstance(data.get("overrides"), (dict, type(None))):
        return RecipeRead(None, problems)
    data = _without(data, invalid)
    override_maps = {id(m) for m in _override_mappings(root)}  # SL008 reports repeated overrides, per command
    problems.extend(
        DuplicateKey(location=_location(source.path, again), key=again.value, first_line=first.start_mark.line + 1)
        for mapping, first, again in duplicates
        if id(mapping) not in override_maps
    )

    stack_data = data.get("stack") if isinstance(data.get("stack"), dict) else {}

    def named(key: str) -> str | None:
        return str(stack_data[key]) if stack_data.get(key) is not None else None

    resolved = resolve_stack(
        source.path,
        Declared(
            verl=str(data["verl"]) if data.get("verl") else None,
            megatron_core=named("megatron_core"),
            mbridge=named("mbridge"),
            mindspeed=named("mindspeed"),
        ),
        options,
    )
    problems.extend([resolved.verl.unbuilt] if resolved.verl.unbuilt else [])
    stack = resolved.libraries
    verl_version = resolved.snapshot
    config_name = (
        data.get("config_name")
        if data.get("config_name") in ("ppo_trainer", "ppo_megatron_trainer")
        else DEFAULT_CONFIG_NAME
    )
    recipe = Recipe(
        source.path,
        data,
        verl_version=verl_version,
        config_name=config_name,
    )

    lines = source.text.splitlines()
    base = _overrides(source.path, lines, loader, yaml_nodes.child(root, "overrides"))
    origin = _location(source.path, yaml_nodes.key_node(root, "overrides"))
    model = _model(source, root, data, base, options, problems)
    hardware = data.get("hardware") if isinstance(data.get("hardware"), dict) else {}
    levels, found = accelerator_levels(
        source.path, options, hardware.get("accelerator"), _accelerator_locator(source.path, root)
    )
    problems.extend(found)
    axes, axis_names = [], []
    variants_node = yaml_nodes.child(root, "variants")
    for axis_key, axis_node in yaml_nodes.mapping_pairs(variants_node):
        choices = []
        for name_node, body in yaml_nodes.mapping_pairs(axis_node):
            label = _label_token(axis_key.value, name_node.value)
            choices.append(
                (
                    label,
                    (
                        _overrides(source.path, lines, loader, yaml_nodes.child(body, "overrides")),
                        _env(source.path, loader, yaml_nodes.child(body, "env")),
                    ),
                )
            )
        if choices:
            axes.append(choices)
            axis_names.append(str(axis_key.value))
    defaults, found = _variant_defaults(source.path, root, data, axis_names, axes)
    problems.extend(found)
    recipe.variant_defaults = tuple(axes[i][d][0] for i, d in enumerate(defaults) if d is not None)
    base_env = _env(source.path, loader, yaml_nodes.child(root, "env"))
    resources = {
        **dict(options.resources),
        **{k: hardware[k] for k in RESOURCE_KEYS if k in hardware},
        **dict(options.cli_resources),
    }
    gates = _gates(source.path, root, data)
    combinations, total = expand(axes, [d or 0 for d in defaults])
    if total > len(combinations):
        problems.append(
            TooManyVariants(
                location=_location(source.path, yaml_nodes.key_node(root, "variants")),
                total=total,
                linted=len(combinations),
            )
        )
    mismatches: list[list[ReadProblem]] = []
    for label, chosen in combinations:
        overrides, env = list(base), dict(base_env)
        for extra, extra_env in chosen:
            overrides = list(merge_overrides(overrides, extra))
            env.update(extra_env)
        command = Command(
            config_name,
            merge_overrides(overrides, list(options.cli_overrides)),
            stack,
            label,
            origin,
            model,
            None,
            tuple(env.values()),
            site_limits(resources),
            data.get("entrypoint") if isinstance(data.get("entrypoint"), str) else None,
            gates=gates,
        )
        accelerator, mismatch = choose(command, levels)
        recipe.commands.append(command._replace(accelerator=accelerator))
        mismatches.append([mismatch] if mismatch else [])
    problems.extend(collapse_variants(mismatches, [c.variant for c in recipe.commands]))
    return RecipeRead(recipe, problems, resolved)
