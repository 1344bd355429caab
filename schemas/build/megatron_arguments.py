"""Megatron-LM's argparse flags (``megatron/training/arguments.py``), read with libcst, never imported.

Why they matter.  On Ascend NPU verl's MindspeedEngine hands ``override_transformer_config`` to
``mindspeed.megatron_adaptor.repatch``, which sets every key on Megatron's parsed arguments: ``setattr(full_args, k,
v)`` for each item, where ``full_args = get_full_args()`` is Megatron's ``get_args()`` namespace (github
momo609/mindspeed, a mirror of Ascend/MindSpeed, mindspeed/megatron_adaptor.py and mindspeed/args_utils.py @369907f).
MindSpeed's features then read that namespace: Megatron's own flags (``swiglu``, ``use_distributed_optimizer``, ...)
as well as MindSpeed's.  So on NPU a key is read when it is the destination of one of these flags.

What is recorded, per destination (``args.<dest>``): its ``type``, ``default`` and ``choices`` as argparse gives them,
and ``flag`` where the option is not spelled ``--<dest with dashes>`` (``--no-masked-softmax-fusion`` stores into
``masked_softmax_fusion``).  The first ``add_argument`` of a destination wins.  Groups that arguments.py builds from a
dataclass (``ArgumentGroupFactory(TrainingConfig)``) are listed by class under ``dataclass_groups``, with the module
the class comes from and whether the source tree holds it: their flags are the class's fields, and those of
megatron-core's ``TransformerConfig`` are in the same snapshot; ``megatron.training.config`` is not in a source
archive that ships only arguments.py.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from . import SchemaBuildError
from .annotations import sorted_choices
from .source_index import Index, code_of, dotted_name, literal_value, string_value

ARGUMENTS_PATH = "megatron/training/arguments.py"
ARGUMENTS_CLASS = "arguments"  # the snapshot's `classes` entry

# `action=` -> (type, the default argparse gives without `default=`)
_ACTIONS = {
    "store_true": ("bool", "False"),
    "store_false": ("bool", "True"),
    "argparse.BooleanOptionalAction": ("bool", None),
    "BooleanOptionalAction": ("bool", None),
    "append": ("list", None),
    "extend": ("list", None),
    "count": ("int", None),
}
_SCALAR_TYPES = {"int", "float", "str"}


class _Parser(cst.CSTVisitor):
    """Every ``<x>.add_argument(...)`` and ``ArgumentGroupFactory(<Class>, ...)`` call, and the names imported."""

    def __init__(self) -> None:
        self.flags: dict[str, dict] = {}
        self.groups: list[str] = []  # dataclass names, in order
        self.imported: dict[str, str] = {}  # local name -> module

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted_name(node.module) if node.module is not None and not node.relative else None
        if module is None or isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = alias.asname.name if alias.asname else alias.name
            if isinstance(name, cst.Name) and isinstance(alias.name, cst.Name):
                self.imported[name.value] = module

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "add_argument":
            self._add_argument(node)
        elif dotted_name(func) == "ArgumentGroupFactory" and node.args and isinstance(node.args[0].value, cst.Name):
            self.groups.append(node.args[0].value.value)

    def _add_argument(self, node: cst.Call) -> None:
        options = [string_value(a.value) for a in node.args if a.keyword is None]
        kw = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        long = next((o for o in options if o and o.startswith("--")), None)
        dest = string_value(kw.get("dest")) or (long[2:].replace("-", "_") if long else None)
        if dest is None or dest in self.flags:
            return
        entry = _entry(kw)
        if long is not None and long != "--" + dest.replace("_", "-"):
            entry["flag"] = long
        self.flags[dest] = entry


def _entry(kw: dict[str, cst.BaseExpression]) -> dict:
    """type / default / nullable / choices of one flag, from its keywords."""
    action = kw.get("action")
    action = string_value(action) or (dotted_name(action) if action is not None else None)
    typ, default = _ACTIONS.get(action, (None, None))
    if typ is None:
        named = dotted_name(kw["type"]) if "type" in kw else "str"
        typ = named if named in _SCALAR_TYPES else "any"  # a converter function takes what it parses
    nargs = kw.get("nargs")
    if nargs is not None and (string_value(nargs) in ("+", "*") or _int_above_one(nargs)):
        typ = "list"
    if "default" in kw:
        default = code_of(kw["default"])
    entry: dict = {"type": typ}
    if default is None or default == "None":
        entry["nullable"] = True
    if default is not None:
        entry["default"] = default
    if "choices" in kw:
        try:
            choices = literal_value(kw["choices"])
        except (ValueError, SyntaxError):  # a name (an enum's members): not recorded
            choices = None
        if isinstance(choices, (list, tuple)):
            entry["choices"] = sorted_choices(list(choices))
    return entry


def _int_above_one(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) and int(node.value) > 1


def megatron_arguments(root: Path, index: Index) -> dict:
    """The ``arguments`` class of a Megatron-LM source tree's snapshot (see the module docstring)."""
    path = root / ARGUMENTS_PATH
    try:
        module = cst.parse_module(path.read_bytes())
    except cst.ParserSyntaxError as e:
        raise SchemaBuildError(f"{ARGUMENTS_PATH}: not valid Python: {e.message}") from None
    parser = _Parser()
    module.visit(parser)
    if not parser.flags:
        raise SchemaBuildError(f"{ARGUMENTS_PATH}: no add_argument call found")
    groups = {}
    for name in parser.groups:
        where = parser.imported.get(name, "megatron.training.arguments")
        groups[name] = {"module": where, "read": index.lookup(where, name) is not None}
    return {"fields": parser.flags, "dataclass_groups": groups}
