"""Hydra's own config (`hydra.*` keys, `hydra/<group>=option`), read from the installed hydra-core's source.

Hydra composes its `hydra` node from the `HydraConf` dataclass in `hydra/conf/__init__.py`, and selects the
options of its own config groups (`hydra/job_logging`, `hydra/launcher`, ...) through that dataclass's
`defaults` list. This module reads that file with `ast` — nothing of hydra is imported, so nothing of it runs —
and answers whether an override addresses a real part of that config. A key under a field typed `Any` or
`Dict[...]` (`hydra.job_logging.*`, `hydra.launcher.*`) is open: anything below it is accepted, as Hydra does.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import lru_cache
from pathlib import Path

ROOT = "hydra"
_OPEN = {"Any", "Dict"}  # annotations whose children Hydra does not check


@lru_cache(maxsize=1)
def _hydra_conf() -> tuple[dict[str, dict[str, ast.expr]], frozenset[str]] | None:
    """(dataclass name -> {field: annotation}, the groups of HydraConf.defaults), or None without hydra-core."""
    spec = importlib.util.find_spec(ROOT)  # a top-level package: found, not imported
    if spec is None or not spec.submodule_search_locations:
        return None
    source = Path(next(iter(spec.submodule_search_locations)), "conf", "__init__.py")
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    classes: dict[str, dict[str, ast.expr]] = {}
    groups: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        fields = {
            s.target.id: s.annotation
            for s in node.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
        }
        classes[node.name] = fields
        if node.name == "HydraConf":
            groups.update(_default_groups(node))
    return classes, frozenset(groups)


def _default_groups(cls: ast.ClassDef) -> set[str]:
    """The group names in `defaults: List[Any] = field(default_factory=lambda: [{"output": "default"}, ...])`."""
    for s in cls.body:
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == "defaults":
            return {
                k.value
                for d in ast.walk(s)
                if isinstance(d, ast.Dict)
                for k in d.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            }
    return set()


def _type_name(annotation: ast.expr) -> str:
    """`Optional[RunDir]` -> `RunDir`, `Dict[str, Any]` -> `Dict`, `JobConfig.OverrideDirname` -> `OverrideDirname`."""
    if isinstance(annotation, ast.Subscript):
        outer = _type_name(annotation.value)
        if outer == "Optional":
            return _type_name(annotation.slice)
        return outer
    if isinstance(annotation, ast.Attribute):
        return annotation.attr
    if isinstance(annotation, ast.Name):
        return annotation.id
    return ""


def is_hydra_key(key: str) -> bool:
    """Whether `key` is a key of Hydra's config (`hydra.run.dir`, `hydra.job.chdir`, `hydra.searchpath`,
    `hydra.job_logging.root.level`) or one of Hydra's config groups (`hydra/job_logging`)."""
    conf = _hydra_conf()
    if conf is None:
        return False
    classes, groups = conf
    if key.startswith(ROOT + "/"):
        return key[len(ROOT) + 1 :] in groups
    parts = key.split(".")
    if parts[0] != ROOT or len(parts) < 2:
        return False
    fields = classes.get("HydraConf", {})
    for i, part in enumerate(parts[1:], 1):
        annotation = fields.get(part)
        if annotation is None:
            return False
        name = _type_name(annotation)
        if name in _OPEN:
            return True
        if name in classes:
            fields = classes[name]
            continue
        return i == len(parts) - 1  # a scalar or list field: nothing below it
    return True


__all__ = ["ROOT", "is_hydra_key"]
