"""Snapshots of the libraries that receive verl's pass-through dicts: megatron-core config dataclasses and
mbridge's ``Bridge.save_weights`` parameters (format: FORMAT.md, ``schemas/consumers/``)."""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

from . import SchemaBuildError
from .annotations import analyze_annotation, infer_type, sorted_choices
from .distributions import extract_wheel, normalise_name, parse_metadata
from .layout import CONSUMER_FORMAT
from .source_index import ClassRecord, Index, scan_source

# megatron-core classes recorded in a consumer snapshot: name -> module.
MCORE_CLASSES = {
    "TransformerConfig": "megatron.core.transformer.transformer_config",
    "MLATransformerConfig": "megatron.core.transformer.transformer_config",
    "OptimizerConfig": "megatron.core.optimizer.optimizer_config",
    "DistributedDataParallelConfig": "megatron.core.distributed.distributed_data_parallel_config",
}
MBRIDGE_METHOD = ("mbridge.core.bridge", "Bridge", "save_weights")

# mbridge git main is not on PyPI (pyproject there still says 0.15.1), so it cannot be rebuilt from a wheel.  Its
# signature is transcribed from ISEEKYAN/mbridge main, mbridge/core/bridge.py:602-647, and parsed with the same code
# as a real wheel.
MBRIDGE_GIT_MAIN_VERSION = "git-main"
MBRIDGE_GIT_MAIN_SOURCE = "github ISEEKYAN/mbridge main, mbridge/core/bridge.py:602-647 (transcribed; not on PyPI)"
MBRIDGE_GIT_MAIN_SIGNATURE = '''
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
'''


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


def build_consumer_snapshot(wheel_or_dir: Path) -> dict:
    """Snapshot of a megatron-core or mbridge wheel (or its extracted directory), read with libcst."""
    wheel_or_dir = Path(wheel_or_dir)
    if wheel_or_dir.is_dir():
        root = wheel_or_dir
    elif wheel_or_dir.is_file():
        root = extract_wheel(wheel_or_dir, "sapo-lint-consumer-")
    else:
        raise SchemaBuildError(f"not found: {wheel_or_dir}")
    source = wheel_or_dir.name
    metas = sorted(root.glob("*.dist-info/METADATA"))
    if not metas:
        raise SchemaBuildError(f"{wheel_or_dir}: no *.dist-info/METADATA; not a wheel?")
    meta = parse_metadata(metas[0].read_text(encoding="utf-8", errors="replace"))
    package, version = normalise_name(meta.get("Name", "")), meta.get("Version", "")
    tops = sorted({m.split(".")[0] for m in MCORE_CLASSES.values()} | {MBRIDGE_METHOD[0].split(".")[0]})
    index = Index(root, packages=tops)
    classes: dict[str, dict] = {}
    if package == "megatron-core":
        for cname, module in MCORE_CLASSES.items():
            cls = index.lookup(module, cname)
            if cls is None:
                raise SchemaBuildError(f"{source}: class {module}.{cname} not found")
            fields = index.fields_of(cls)
            classes[cname] = {"fields": {n: _consumer_entry(index, f.module, f.ann, f.default)
                                         for n, f in fields.items()}}
    elif package == "mbridge":
        module, cname, method = MBRIDGE_METHOD
        cls = index.lookup(module, cname)
        if cls is None:
            raise SchemaBuildError(f"{source}: class {module}.{cname} not found")
        classes[method] = {"fields": _method_fields(index, cls, method)}
    else:
        raise SchemaBuildError(f"{source}: package {package!r} is neither megatron-core nor mbridge")
    return {"format": CONSUMER_FORMAT, "package": package, "version": version, "source": source, "classes": classes}


def mbridge_git_main_snapshot() -> dict:
    """The mbridge git-main ``save_weights`` snapshot, from the transcribed signature (see the constant above)."""
    module, cname, method = MBRIDGE_METHOD
    index = Index(Path(os.devnull), packages=())
    index.modules[module] = scan_source(MBRIDGE_GIT_MAIN_SIGNATURE.encode(), module, False, False)
    cls = index.lookup(module, cname)
    return {"format": CONSUMER_FORMAT, "package": "mbridge", "version": MBRIDGE_GIT_MAIN_VERSION,
            "source": MBRIDGE_GIT_MAIN_SOURCE, "classes": {method: {"fields": _method_fields(index, cls, method)}}}
