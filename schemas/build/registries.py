"""Closed sets of values that verl checks at run time, read from its registries with libcst.

verl/trainer/ppo/core_algos.py: `@register_policy_loss("...")` (policy_loss.loss_mode), `@register_adv_est(...)`
(algorithm.adv_estimator; names or AdvantageEstimator members) and the modes `agg_loss` compares loss_agg_mode
with; verl/workers/rollout/base.py: the keys of `_ROLLOUT_REGISTRY` ((rollout name, mode) tuples). A loss mode that
the callers of `get_policy_loss_fn` handle before they look the registry up is one too (verl 0.4-0.5's actors:
`if self.config.policy_loss.loss_mode == "vanilla": compute_policy_loss(...) else: get_policy_loss_fn(loss_mode)`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst import matchers

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


class _LossModeCallerVisitor(cst.CSTVisitor):
    """The string literals that functions calling `get_policy_loss_fn` compare a `loss_mode` with."""

    def __init__(self) -> None:
        self.loss_mode: list[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        calls = matchers.findall(node.body, matchers.Call(func=matchers.Name("get_policy_loss_fn")))
        if calls:
            for comparison in matchers.findall(node.body, matchers.Comparison()):
                operands = [comparison.left] + [c.comparator for c in comparison.comparisons]
                if any((dotted_name(o) or "").split(".")[-1] == "loss_mode" for o in operands):
                    self.loss_mode.extend(s for o in operands if (s := string_value(o)) is not None)
        return not calls  # nested functions are inside the body already searched


def _special_cased_loss_modes(package_dir: Path) -> list[str]:
    visitor = _LossModeCallerVisitor()
    for path in sorted(package_dir.rglob("*.py")):
        source = path.read_bytes()
        if b"get_policy_loss_fn(" in source:
            cst.parse_module(source).visit(visitor)
    return visitor.loss_mode


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
    if core_algos.loss_mode:
        core_algos.loss_mode.extend(_special_cased_loss_modes(package_dir))
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
