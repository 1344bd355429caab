"""YAML with node positions, OmegaConf's scalar typing, and a guard against alias bombs."""

from __future__ import annotations

import re
from typing import Any

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_EXPANDED_NODES = 50_000  # a large real recipe has a few thousand


class RecipeLoader(_Loader):  # type: ignore[misc,valid-type]
    """SafeLoader typed like OmegaConf's loader, which is how Hydra reads verl's config: `1e-6` is a float
    (YAML 1.1 says string) and timestamps stay strings."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """A value that a standard tag cannot be built from (`!!int x`, `!!bool maybe`, `!!value`) is
        `UnsupportedYaml` at its own node; PyYAML's constructors raise plain ValueError, KeyError, IndexError
        (`!!int ""`)... for it."""
        try:
            return super().construct_object(node, deep)
        except UnsupportedYaml:
            raise
        except yaml.MarkedYAMLError as exc:
            raise UnsupportedYaml(exc.problem or str(exc), node) from None
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError) as exc:
            tag = node.tag.replace(_STANDARD_TAG, "!!")
            raise UnsupportedYaml(f"not a valid `{tag}` value: {exc}", node) from None


# Python reads and prints integers of at most 4,300 decimal digits (`sys.get_int_max_str_digits`), and Hydra's
# override parser inherits the limit. A recipe's integer beyond it could be neither shown nor passed on.
MAX_INT_DIGITS = 4300
_BEYOND_PRINTABLE = 10**MAX_INT_DIGITS


def _construct_int(loader: RecipeLoader, node: yaml.ScalarNode) -> int:
    """PyYAML's integer (decimal, 0b, 0x, octal, base 60), refused as `UnsupportedYaml` beyond `MAX_INT_DIGITS`
    (Python's `int()` refuses a longer decimal itself). A base-60 integer of more parts than that has more digits
    too, and is refused before PyYAML computes it, in time quadratic in its parts. Integers beyond 64 bits but
    within the limit are read: SL004 reports them."""
    if node.value.count(":") < MAX_INT_DIGITS:
        value = _Loader.construct_yaml_int(loader, node)
        if -_BEYOND_PRINTABLE < value < _BEYOND_PRINTABLE:
            return value
    raise UnsupportedYaml(
        f"an integer of more than {MAX_INT_DIGITS:,} decimal digits, which Python cannot print: "
        "out of range for any setting",
        node,
    )


RecipeLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
RecipeLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _Loader.yaml_implicit_resolvers.items()
}
RecipeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:
         [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.VERBOSE,
    ),
    list("-+0123456789."),
)


MAX_DEPTH = 64  # real recipes nest a handful of levels; constructing deeper graphs recurses per level
_STANDARD_TAG = "tag:yaml.org,2002:"


class AliasBomb(ValueError):
    pass


class UnsupportedYaml(ValueError):
    """YAML that parses but that a recipe cannot hold: custom tags, non-scalar keys, absurd nesting. `node` is
    where, for the diagnostic's location."""

    def __init__(self, message: str, node: yaml.Node) -> None:
        super().__init__(message)
        self.node = node


def check_shape(root: yaml.Node) -> list[tuple[yaml.Node, yaml.Node, yaml.Node]]:
    """Walk the graph once, without recursion: raise `UnsupportedYaml` for what cannot be constructed safely,
    and return (mapping, first key, repeated key) for every duplicate mapping key (YAML keeps the last one
    silently)."""
    duplicates = []
    stack, seen = [(root, 1)], set()
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if depth > MAX_DEPTH:
            raise UnsupportedYaml(f"nesting deeper than {MAX_DEPTH} levels", node)
        if node.tag and not node.tag.startswith(_STANDARD_TAG):
            raise UnsupportedYaml(f"unsupported tag `{node.tag}` (a recipe holds plain YAML values)", node)
        if isinstance(node, yaml.MappingNode):
            first: dict[object, yaml.Node] = {}
            for key, _ in node.value:
                if not isinstance(key, yaml.ScalarNode):
                    raise UnsupportedYaml("a mapping key must be a plain scalar, not a list or mapping", key)
                if key.tag == _STANDARD_TAG + "merge":  # `<<: *base` merges; it is not a repeated key
                    continue
                if key.value in first:
                    duplicates.append((node, first[key.value], key))
                else:
                    first[key.value] = key
        stack.extend((c, depth + 1) for c in _children(node))
    return duplicates


def compose(text: str) -> tuple[yaml.Node | None, RecipeLoader]:
    """Parse to a node graph (raises yaml.YAMLError); rejects graphs whose aliases expand too far."""
    loader = RecipeLoader(text)
    try:
        node = loader.get_single_node()
    finally:
        loader.dispose()
    if node is not None and "*" in text:  # only aliases (`*name`) can make the graph expand
        _check_expansion(node)
    return node, loader


def _check_expansion(root: yaml.Node) -> None:
    # Size of the tree the graph expands to, memoised per node so a bomb is measured in linear time.
    sizes: dict[int, int] = {}
    order: list[yaml.Node] = []
    stack = [root]
    seen: set[int] = set()
    while stack:  # post-order without recursion (deep YAML must not overflow the stack)
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.extend(_children(node))
    for node in reversed(order):
        total = 1 + sum(sizes.get(id(c), 1) for c in _children(node))
        if total > MAX_EXPANDED_NODES:
            raise AliasBomb(f"anchors and aliases expand to more than {MAX_EXPANDED_NODES:,} nodes")
        sizes[id(node)] = total


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def construct(loader: RecipeLoader, node: yaml.Node) -> Any:
    return loader.construct_object(node, deep=True)


def mapping_pairs(node: yaml.Node | None) -> list[tuple[yaml.Node, yaml.Node]]:
    return list(node.value) if isinstance(node, yaml.MappingNode) else []


def child(node: yaml.Node | None, key: Any) -> yaml.Node | None:
    """The value node at `key` of a mapping (the last one, as YAML loading keeps) or index of a sequence."""
    if isinstance(node, yaml.MappingNode):
        found = None
        for k, v in node.value:
            if k.value == key or (isinstance(key, str) and str(k.value) == key):
                found = v
        return found
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
        return node.value[key]
    return None


class Index:
    """`child` and `key_node` for many lookups in the same graph: each mapping is indexed on its first lookup, so
    10,000 schema errors in one mapping do not scan it 10,000 times."""

    def __init__(self) -> None:
        self._values: dict[int, dict[str, yaml.Node]] = {}  # id of a mapping -> key text -> value (the last one)
        self._keys: dict[int, dict[str, yaml.Node]] = {}  # id of a mapping -> key text -> key node (the first one)

    def child(self, node: yaml.Node | None, key: Any) -> yaml.Node | None:
        if not isinstance(node, yaml.MappingNode):
            return child(node, key)
        if id(node) not in self._values:
            self._values[id(node)] = {k.value: v for k, v in node.value}
        return self._values[id(node)].get(key) if isinstance(key, str) else None  # key texts are strings

    def key_node(self, node: yaml.Node | None, key: Any) -> yaml.Node | None:
        if not isinstance(node, yaml.MappingNode):
            return None
        if id(node) not in self._keys:
            self._keys[id(node)] = {}
            for k, _ in node.value:
                self._keys[id(node)].setdefault(str(k.value), k)
        return self._keys[id(node)].get(str(key))


def key_node(node: yaml.Node | None, key: Any) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, _ in node.value:
            if str(k.value) == str(key):
                return k
    return None
