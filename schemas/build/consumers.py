"""Snapshots of the libraries that receive verl's pass-through dicts: megatron-core config dataclasses (and, from a
Megatron-LM source tree, Megatron's argparse flags: megatron_arguments.py), mbridge's ``Bridge.save_weights``
parameters and ray's ``ray.init`` parameters (format: FORMAT.md, ``schemas/consumers/``)."""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

import libcst as cst

from . import SchemaBuildError
from .annotations import analyze_annotation, infer_type, sorted_choices
from .distributions import extract_source_archive, extract_wheel, normalise_name, parse_metadata
from .layout import CONSUMER_FORMAT
from .megatron_arguments import ARGUMENTS_CLASS, ARGUMENTS_PATH, megatron_arguments
from .source_index import ClassRecord, Index, code_of, literal_value, scan_source, signature_params, string_value

# megatron-core classes recorded in a consumer snapshot: name -> module.
MCORE_CLASSES = {
    "TransformerConfig": "megatron.core.transformer.transformer_config",
    "MLATransformerConfig": "megatron.core.transformer.transformer_config",
    "OptimizerConfig": "megatron.core.optimizer.optimizer_config",
    "DistributedDataParallelConfig": "megatron.core.distributed.distributed_data_parallel_config",
}
MBRIDGE_METHOD = ("mbridge.core.bridge", "Bridge", "save_weights")
MCORE_VERSION_FILE = "megatron/core/package_info.py"
# `ray.init` is `ray._private.worker.init` (ray/__init__.py imports it from there).
RAY_INIT = ("ray/_private/worker.py", "init")

# mbridge git main is not on PyPI (pyproject there still says 0.15.1), so it cannot be rebuilt from a wheel.  Its
# signature is transcribed from ISEEKYAN/mbridge main, mbridge/core/bridge.py:602-647, and parsed with the same code
# as a real wheel.
MBRIDGE_GIT_MAIN_VERSION = "git-main"
MBRIDGE_GIT_MAIN_SOURCE = "github ISEEKYAN/mbridge main, mbridge/core/bridge.py:602-647 (transcribed; not on PyPI)"
MBRIDGE_GIT_MAIN_SIGNATURE = """
class Bridge:
    def save_weights(
        self,
        models: list,
        weights_path: str,
        memory_efficient: bool = False,
        distributed_filesystem: bool = False,
        strict: bool = True,
    ) -> None:
        ...
"""


def _consumer_entry(index: Index, module: str, ann: str | None, default: str | None) -> dict:
    a = analyze_annotation(index, module, ann)
    e: dict[str, Any] = {}
    if a is not None:
        e["type"] = a.type if a.type != "none" else "any"
        if a.nullable:
            e["nullable"] = True
        if a.choices:
            e["choices"] = sorted_choices(a.choices)
    else:
        t = "any"
        if default is not None:
            try:
                t = infer_type(ast.literal_eval(default))
            except (ValueError, SyntaxError):
                t = "any"
        e["type"] = t
    if default is not None:
        e["default"] = default
        if default == "None":
            e["nullable"] = True
    return e


def _method_fields(index: Index, cls: ClassRecord, method: str) -> dict[str, dict]:
    params = cls.methods.get(method)
    if params is None:
        raise SchemaBuildError(f"{cls.module}.{cls.name} has no method {method}")
    out = {}
    for p in params[1:]:  # drop self
        if p.get("var"):
            out[p["name"]] = {"type": "list" if p["var"] == "positional" else "dict", "var": p["var"]}
        else:
            out[p["name"]] = _consumer_entry(index, cls.module, p["ann"], p["default"])
    return out


class _HiddenKwargs(cst.CSTVisitor):
    """``name: ann = kwargs.pop("name", default)`` statements: the keywords a ``**kwargs`` function takes by name."""

    def __init__(self) -> None:
        self.found: dict[str, tuple[str | None, str | None]] = {}  # name -> (annotation, default) source

    def _record(self, call: cst.BaseExpression | None, ann: str | None) -> None:
        if not (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "pop"
            and isinstance(call.func.value, cst.Name)
            and call.func.value.value == "kwargs"
            and call.args
        ):
            return
        name = string_value(call.args[0].value)
        if name is not None:
            self.found.setdefault(name, (ann, code_of(call.args[1].value) if len(call.args) > 1 else None))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._record(node.value, code_of(node.annotation.annotation))

    def visit_Assign(self, node: cst.Assign) -> None:
        self._record(node.value, None)


def _ray_init_fields(root: Path) -> dict[str, dict]:
    """``ray.init``'s keywords: its named parameters and the hidden ones it pops from ``**kwargs``
    (``_temp_dir``, ``_system_config``, ...). Any other keyword raises ``RuntimeError: Unknown keyword
    argument(s)`` (ray/_private/worker.py, ``init``), so ``**kwargs`` itself is not recorded."""
    rel, fname = RAY_INIT
    path = root / rel
    if not path.is_file():
        raise SchemaBuildError(f"ray wheel: no {rel}")
    module = "ray._private.worker"
    fn = next(
        (
            s
            for s in cst.parse_module(path.read_bytes()).body
            if isinstance(s, cst.FunctionDef) and s.name.value == fname
        ),
        None,
    )
    if fn is None:
        raise SchemaBuildError(f"ray wheel: {rel} defines no {fname}()")
    index = Index(root, packages=["ray"])
    out = {
        p["name"]: _consumer_entry(index, module, p["ann"], p["default"])
        for p in signature_params(fn)
        if not p.get("var")
    }
    hidden = _HiddenKwargs()
    fn.body.visit(hidden)
    for name, (ann, default) in hidden.found.items():
        out.setdefault(name, {**_consumer_entry(index, module, ann, default), "hidden": True})
    return out


def build_consumer_snapshot(path: Path) -> dict:
    """Snapshot of a megatron-core, mbridge or ray wheel (or its extracted directory), or of a Megatron-LM source
    checkout or ``git archive`` tarball of one (megatron-core's classes and Megatron's argparse flags), read with
    libcst."""
    path = Path(path)
    if path.is_file() and not path.name.endswith(".whl"):
        root, commit = extract_source_archive(path)
        return _megatron_source_snapshot(root, f"git archive {path.name}" + (f" of commit {commit}" if commit else ""))
    if path.is_dir() and not any(path.glob("*.dist-info")) and (path / MCORE_VERSION_FILE).is_file():
        return _megatron_source_snapshot(path, f"Megatron-LM source checkout {path.name}")
    if path.is_dir():
        root = path
    elif path.is_file():
        root = extract_wheel(path, "sapo-lint-consumer-")
    else:
        raise SchemaBuildError(f"not found: {path}")
    source = path.name
    metas = sorted(root.glob("*.dist-info/METADATA"))
    if not metas:
        raise SchemaBuildError(f"{path}: no *.dist-info/METADATA; not a wheel?")
    meta = parse_metadata(metas[0].read_text(encoding="utf-8", errors="replace"))
    package, version = normalise_name(meta.get("Name", "")), meta.get("Version", "")
    tops = sorted({m.split(".")[0] for m in MCORE_CLASSES.values()} | {MBRIDGE_METHOD[0].split(".")[0]})
    index = Index(root, packages=tops)
    classes: dict[str, dict] = {}
    if package == "megatron-core":
        classes = _mcore_classes(index, source)
    elif package == "ray":
        classes["init"] = {"fields": _ray_init_fields(root)}
    elif package == "mbridge":
        module, cname, method = MBRIDGE_METHOD
        cls = index.lookup(module, cname)
        if cls is None:
            raise SchemaBuildError(f"{source}: class {module}.{cname} not found")
        classes[method] = {"fields": _method_fields(index, cls, method)}
    else:
        raise SchemaBuildError(f"{source}: package {package!r} is not megatron-core, mbridge or ray")
    return {"format": CONSUMER_FORMAT, "package": package, "version": version, "source": source, "classes": classes}


def _mcore_classes(index: Index, source: str) -> dict[str, dict]:
    classes = {}
    for cname, module in MCORE_CLASSES.items():
        cls = index.lookup(module, cname)
        if cls is None:
            raise SchemaBuildError(f"{source}: class {module}.{cname} not found")
        fields = index.fields_of(cls)
        classes[cname] = {"fields": {n: _consumer_entry(index, f.module, f.ann, f.default) for n, f in fields.items()}}
    return classes


def _megatron_source_snapshot(root: Path, source: str) -> dict:
    """megatron-core's classes and, where the tree has it, Megatron's argument list, from a Megatron-LM source tree
    (`git archive` of a release tag: no dist-info, the version is megatron/core/package_info.py's)."""
    version_file = root / MCORE_VERSION_FILE
    if not version_file.is_file():
        raise SchemaBuildError(f"{source}: no {MCORE_VERSION_FILE}; not a Megatron-LM source tree?")
    index = Index(root, packages=["megatron"])
    classes = _mcore_classes(index, source)
    if (root / ARGUMENTS_PATH).is_file():
        classes[ARGUMENTS_CLASS] = megatron_arguments(root, index)
    return {
        "format": CONSUMER_FORMAT,
        "package": "megatron-core",
        "version": _package_info_version(version_file),
        "source": source,
        "classes": classes,
    }


def _package_info_version(path: Path) -> str:
    """``MAJOR.MINOR.PATCH`` + ``PRE_RELEASE`` as megatron/core/package_info.py assigns them (literals, read with
    libcst)."""
    try:
        module = cst.parse_module(path.read_bytes())
    except cst.ParserSyntaxError as e:
        raise SchemaBuildError(f"{MCORE_VERSION_FILE}: not valid Python: {e.message}") from None
    parts: dict[str, object] = {}
    for stmt in module.body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Name) and target.value in ("MAJOR", "MINOR", "PATCH", "PRE_RELEASE"):
                    parts[target.value] = literal_value(small.value)
    if not {"MAJOR", "MINOR", "PATCH"} <= parts.keys():
        raise SchemaBuildError(f"{path}: no MAJOR/MINOR/PATCH assignments")
    return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}{parts.get('PRE_RELEASE') or ''}"


def mbridge_git_main_snapshot() -> dict:
    """The mbridge git-main ``save_weights`` snapshot, from the transcribed signature (see the constant above)."""
    module, cname, method = MBRIDGE_METHOD
    index = Index(Path(os.devnull), packages=())
    index.modules[module] = scan_source(MBRIDGE_GIT_MAIN_SIGNATURE.encode(), module, False)
    cls = index.lookup(module, cname)
    return {
        "format": CONSUMER_FORMAT,
        "package": "mbridge",
        "version": MBRIDGE_GIT_MAIN_VERSION,
        "source": MBRIDGE_GIT_MAIN_SOURCE,
        "classes": {method: {"fields": _method_fields(index, cls, method)}},
    }
