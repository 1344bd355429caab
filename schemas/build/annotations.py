"""Python type annotations (as source text) -> the snapshot's ``type`` / ``nullable`` / ``choices``."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import libcst as cst

from .source_index import ClassRecord, Index, dotted_name, literal_value, string_value

_SCALARS = {"int": "int", "float": "float", "bool": "bool", "str": "str"}
_LIST_NAMES = {"list", "List", "tuple", "Tuple", "Sequence", "MutableSequence", "set", "Set", "frozenset", "ListConfig"}
_DICT_NAMES = {"dict", "Dict", "Mapping", "MutableMapping", "DictConfig", "OrderedDict", "defaultdict"}
_ANY_NAMES = {"Any", "object"}


@dataclass(slots=True)
class Annotation:
    type: str = "any"
    nullable: bool = False
    choices: list | None = None
    dataclass: ClassRecord | None = None  # annotation names a dataclass (typed sub-config)


def analyze_annotation(index: Index, module: str, code: str | None) -> Annotation | None:
    """What the annotation ``code`` (in ``module``'s namespace) allows; None when there is no annotation."""
    if code is None:
        return None
    try:
        expr = _parsed(code)
    except Exception:  # noqa: BLE001 - an annotation libcst cannot parse allows anything
        return Annotation()
    return _annotation(index, module, expr, 0)


@cache
def _parsed(code: str) -> cst.BaseExpression:
    """libcst's tree of an annotation; a build walks the same dataclass fields for every tree it composes."""
    return cst.parse_expression(code)


def _union(parts: list[Annotation]) -> Annotation:
    nullable = any(p.nullable for p in parts)
    real = [p for p in parts if p.type != "none"]
    if not real:
        return Annotation("any", True)
    choices = None
    if all(p.choices is not None for p in real):
        choices = [c for p in real for c in p.choices]
    types = {p.type for p in real}
    if "any" in types:
        t = "any"
    else:
        if {"int", "float"} <= types:
            types.discard("int")  # an int is a float too
        t = "|".join(sorted(types))  # `str | float` -> "float|str" (FORMAT.md `type`)
    dc = real[0].dataclass if len(real) == 1 else None
    return Annotation(t, nullable or any(p.type == "none" for p in parts), choices, dc)


def _annotation(index: Index, module: str, expr: cst.BaseExpression, depth: int) -> Annotation:
    if depth > 10:
        return Annotation()
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):  # forward reference
        s = string_value(expr)
        if not s:
            return Annotation()
        try:
            return _annotation(index, module, cst.parse_expression(s), depth + 1)
        except Exception:  # noqa: BLE001 - as above, for a string annotation
            return Annotation()
    if isinstance(expr, cst.Name) and expr.value == "None":
        return Annotation("none", True)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        return _union(
            [_annotation(index, module, expr.left, depth + 1), _annotation(index, module, expr.right, depth + 1)]
        )
    if isinstance(expr, cst.Subscript):
        head = (dotted_name(expr.value) or "").split(".")[-1]
        elems = [e.slice.value for e in expr.slice if isinstance(e.slice, cst.Index)]
        if head == "Optional" and elems:
            a = _annotation(index, module, elems[0], depth + 1)
            a.nullable = True
            return a
        if head == "Union":
            return _union([_annotation(index, module, e, depth + 1) for e in elems])
        if head == "Literal":
            values = []
            for e in elems:
                try:
                    values.append(literal_value(e))
                except (ValueError, SyntaxError):
                    return Annotation()
            nullable = None in values
            values = [v for v in values if v is not None]
            kinds = {type(v).__name__ for v in values}
            t = _SCALARS.get(kinds.pop(), "any") if len(kinds) == 1 else "any"
            return Annotation(t, nullable, values)
        if head in ("Annotated", "Final") and elems:
            return _annotation(index, module, elems[0], depth + 1)
        return _annotation(index, module, expr.value, depth + 1)
    name = dotted_name(expr)
    if name is None:
        return Annotation()
    last = name.split(".")[-1]
    if last in _SCALARS:
        return Annotation(_SCALARS[last])
    if last in _LIST_NAMES:
        return Annotation("list")
    if last in _DICT_NAMES:
        return Annotation("dict")
    if last in _ANY_NAMES:
        return Annotation("any")
    cls = index.lookup(module, name)
    if cls is not None:
        if index.is_enum(cls):
            return Annotation("str", False, list(cls.enum_members))
        if cls.is_dataclass or index.fields_of(cls):
            return Annotation("dict", False, None, cls)
    return Annotation()


def sorted_choices(choices: list) -> list:
    """Deduplicated, in a stable order even for mixed types (``Literal[1, "a"]``)."""
    return sorted(set(choices), key=lambda c: (str(type(c)), c))


def infer_type(value: Any) -> str:
    """The snapshot ``type`` of a default value, where no annotation declares one."""
    if value is None:
        return "any"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "any" if "${" in value else "str"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return "any"
