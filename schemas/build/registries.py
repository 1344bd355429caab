"""Closed sets of values that verl checks at run time, read from its registries with libcst.

verl/trainer/ppo/core_algos.py: `@register_policy_loss("...")` (policy_loss.loss_mode), `@register_adv_est(...)`
(algorithm.adv_estimator; names or AdvantageEstimator members) and the modes `agg_loss` compares loss_agg_mode
with; verl/workers/rollout/base.py: the keys of `_ROLLOUT_REGISTRY` ((rollout name, mode) tuples).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from .source_index import Index, dotted_name, string_value

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Choices:
    loss_mode: list[str]
    adv_estimator: list[str]
    loss_agg_mode: list[str]
    rollout_name: list[str]
    rollout_mode: list[str]


class _CoreAlgosVisitor(cst.CSTVisitor):
    def __init__(self, enum_value) -> None:
        self.enum_value = enum_value  # "AdvantageEstimator.GAE" -> "gae"
        self.loss_mode: list[str] = []
        self.adv_estimator: list[str] = []
        self.loss_agg_mode: list[str] = []
        self.in_agg_loss = 0

    def visit_Decorator(self, node: cst.Decorator) -> None:
        d = node.decorator
        if not isinstance(d, cst.Call) or not d.args:
            return
        fname = (dotted_name(d.func) or "").split(".")[-1]
        arg = d.args[0].value
        s = string_value(arg)
        if fname == "register_policy_loss":
            if s is not None:
                self.loss_mode.append(s)
        elif fname == "register_adv_est":
            if s is None and dotted_name(arg):
                s = self.enum_value(dotted_name(arg))
            if s is not None:
                self.adv_estimator.append(s)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == "agg_loss":
            self.in_agg_loss += 1

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == "agg_loss":
            self.in_agg_loss -= 1

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if not self.in_agg_loss:
            return
        operands = [node.left] + [c.comparator for c in node.comparisons]
        if not any(isinstance(o, cst.Name) and o.value == "loss_agg_mode" for o in operands):
            return
        for o in operands:
            s = string_value(o)
            if s is not None:
                self.loss_agg_mode.append(s)
            elif isinstance(o, (cst.List, cst.Tuple, cst.Set)):
                for el in o.elements:
                    s = string_value(el.value)
                    if s is not None:
                        self.loss_agg_mode.append(s)


def _rollout_registry(source: bytes) -> tuple[list[str], list[str]]:
    """(names, modes) from the keys of the module-level ``_ROLLOUT_REGISTRY`` dict literal."""
    names: list[str] = []
    modes: list[str] = []
    for stmt in cst.parse_module(source).body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            targets = []
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, cst.AnnAssign):
                targets = [small.target]
            if not any(isinstance(t, cst.Name) and t.value == "_ROLLOUT_REGISTRY" for t in targets):
                continue
            if not isinstance(small.value, cst.Dict):
                continue
            for el in small.value.elements:
                if not isinstance(el, cst.DictElement):
                    continue
                k = el.key
                if isinstance(k, cst.Tuple) and k.elements:
                    n = string_value(k.elements[0].value)
                    if n is not None:
                        names.append(n)
                    if len(k.elements) > 1:
                        m = string_value(k.elements[1].value)
                        if m is not None:
                            modes.append(m)
                else:
                    n = string_value(k)
                    if n is not None:
                        names.append(n)
    return names, modes


def registry_choices(package_dir: Path, index: Index) -> Choices:
    """The closed sets of the verl package in ``package_dir`` (a warning for each set that comes out empty)."""
    core = package_dir / "trainer" / "ppo" / "core_algos.py"
    rollout_base = package_dir / "workers" / "rollout" / "base.py"
    core_module = f"{package_dir.name}.trainer.ppo.core_algos"

    def enum_value(ref: str) -> str | None:
        cls_name, _, member = ref.rpartition(".")
        cls = index.lookup(core_module, cls_name)
        v = cls.enum_members.get(member) if cls is not None else None
        return v if isinstance(v, str) else None

    core_algos = _CoreAlgosVisitor(enum_value)
    if core.is_file():
        cst.parse_module(core.read_bytes()).visit(core_algos)
    names, modes = _rollout_registry(rollout_base.read_bytes()) if rollout_base.is_file() else ([], [])
    for label, vals in (
        ("register_policy_loss", core_algos.loss_mode),
        ("register_adv_est", core_algos.adv_estimator),
        ("agg_loss", core_algos.loss_agg_mode),
        ("_ROLLOUT_REGISTRY", names),
    ):
        if not vals:
            log.warning("schema build: found no %s values in %s", label, package_dir)
    return Choices(core_algos.loss_mode, core_algos.adv_estimator, core_algos.loss_agg_mode, names, modes)
