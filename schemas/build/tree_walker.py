"""One composed verl config -> the flat ``{dotted.path: entry}`` tree of a snapshot (entries: FORMAT.md)."""

from __future__ import annotations

import re
from typing import Any

from .annotations import Annotation, analyze_annotation, infer_type, sorted_choices
from .registries import Choices
from .source_index import ClassRecord, Index

# `_target_` subtrees that verl never instantiates on the main_ppo path (unknown keys there are not a TypeError):
# `algorithm` (AlgoConfig) and `reward` (RewardConfig) are read as DictConfig (verl/trainer/ppo/ray_trainer.py,
# e.g. `config.algorithm.get("rollout_correction")`), `global_profiler` (ProfilerConfig) through
# `OmegaConf.select` (ray_trainer.py:857 in verl 0.9.1) and attribute access (verl/trainer/main_ppo.py).
NOT_INSTANTIATED_ROOTS = ("algorithm", "reward", "global_profiler")
# ... except `reward.reward_model.rollout` (RolloutConfig), which RolloutReplica converts with
# omega_conf_to_dataclass (verl/workers/rollout/replica.py:104) when a reward model is enabled.
INSTANTIATED_EXCEPTIONS = ("reward.reward_model.rollout",)

# Open dicts whose keys another library receives, matched on the path suffix (actor, ref and critic alike), but
# only where that role has a `megatron` engine node (see _mark_consumers).  In verl 0.9.1:
# override_transformer_config and override_ddp_config go to Megatron (verl/workers/engine/megatron/transformer_impl.py),
# override_optimizer_config into `OptimizerConfig(**...)` (verl/utils/megatron/optimizer.py), and mbridge_config is
# filtered against `Bridge.save_weights` (verl/utils/checkpoint/megatron_checkpoint_manager.py).
CONSUMERS = (
    ("megatron.override_transformer_config", "megatron-core:TransformerConfig"),
    ("megatron.override_ddp_config", "megatron-core:DistributedDataParallelConfig"),
    ("optim.override_optimizer_config", "megatron-core:OptimizerConfig"),
    ("checkpoint.mbridge_config", "mbridge:save_weights"),
)
# Open dicts at a fixed path whose keys another library receives.  `ray_kwargs.ray_init`: verl's main_ppo calls
# `ray.init(**OmegaConf.to_container(ray_init_kwargs))` with it (verl/trainer/main_ppo.py in verl 0.9.1 and main
# 1dda039; verl/trainer/main_eval.py likewise), so its keys are `ray.init` parameters.
FIXED_CONSUMERS = (("ray_kwargs.ray_init", "ray:init"),)

# A default that is exactly one interpolation of another key: ${a.b}, ${.sibling}, ${oc.select:a.b,default}
_POINTER = re.compile(r"^\$\{(?:oc\.select:)?\s*(\.*[A-Za-z_][A-Za-z0-9_.]*)\s*(?:,[^{}]*)?\}$")


def _pointer(path: str, value: str) -> str | None:
    """The absolute key an interpolation-only default points to, or None."""
    m = _POINTER.match(value.strip())
    if not m:
        return None
    ref = m.group(1)
    if not ref.startswith("."):
        return ref
    dots = len(ref) - len(ref.lstrip("."))
    base = path.split(".")[:-1]  # the node holding this key
    if dots - 1 > len(base):
        return None
    base = base[: len(base) - (dots - 1)]
    rest = ref[dots:]
    return ".".join(base + [rest]) if rest else ".".join(base) or None


def _kind_for(ann: Annotation | None, fallback: str) -> str:
    if ann is not None and ann.type in ("dict", "list"):
        return ann.type
    return fallback


class TreeWalker:
    """Walks one composed config against verl's dataclasses; ``problems`` collects what does not match them."""

    def __init__(self, index: Index, choices: Choices, groups: dict[str, dict], problems: list[str]) -> None:
        self.index = index
        self.choices = choices
        self.groups = groups  # override key -> {"default", "options"} (compose.py)
        self.problems = problems
        self.entries: dict[str, dict] = {}
        self.rollout_nodes: set[str] = set()

    def walk(self, tree: dict) -> dict[str, dict]:
        self._children(tree, "", None, False)
        self._mark_consumers()
        self._follow_interpolations()
        self._registry_choices()
        for e in self.entries.values():
            e.pop("_annotated", None)
            if "choices" in e:
                e["choices"] = sorted_choices(e["choices"])
        return self.entries

    def _children(
        self, mapping: dict, path: str, cls: ClassRecord | None, open_dict: bool, typed_by: ClassRecord | None = None
    ) -> None:
        """``cls``: the node's `_target_` dataclass; ``typed_by``: the dataclass its field annotation names when
        it has no `_target_` (keys take their annotations from it, no field is added); ``open_dict``: the node
        is inside an open dict."""
        fields = self.index.fields_of(cls or typed_by) if (cls or typed_by) is not None else {}
        for key, value in mapping.items():
            key = str(key)
            p = f"{path}.{key}" if path else key
            f = fields.get(key)
            ann = analyze_annotation(self.index, f.module, f.ann) if f is not None else None
            if cls is not None and f is None and key != "_target_":
                self.problems.append(f"{p}: key in YAML but not a field of {cls.module}.{cls.name}")
            self._visit(value, p, ann, open_dict)
        if cls is not None:
            for name, f in fields.items():
                if name in mapping:
                    continue
                ann = analyze_annotation(self.index, f.module, f.ann) or Annotation()
                # a dataclass-typed field is a node (its keys are the dataclass's); a dict-typed one is open
                kind = "node" if ann.dataclass is not None else _kind_for(ann, "value")
                e: dict[str, Any] = {
                    "declared_only": True,
                    "kind": kind,
                    "type": ann.type if ann.type != "none" else "any",
                }
                if ann.nullable:
                    e["nullable"] = True
                if ann.choices:
                    e["choices"] = ann.choices
                self.entries[f"{path}.{name}"] = e

    def _visit(self, value: Any, path: str, ann: Annotation | None, open_dict: bool) -> None:
        e: dict[str, Any] = {}
        if isinstance(value, dict):
            target = value.get("_target_")
            has_target = isinstance(target, str)
            if ann is not None and ann.type == "dict" and ann.dataclass is None and not has_target:
                kind = "dict"  # dict-typed field: open, whatever the YAML shows
            elif open_dict and not has_target:
                # A mapping inside an open dict is open too: `fsdp_config.turbo_config` (`dict[str, Any]`) goes
                # whole to fsdp_turbo's `_dict_to_dataclass(FSDPTurboConfig, ...)` (verl/workers/engine/fsdp/
                # fsdp_turbo_impl.py in verl main 1dda039), so keys under `turbo_config.distributed` are its.
                kind = "dict"
            elif has_target or value:
                kind = "node"
            else:
                kind = "dict"
            e["kind"] = kind
            e["type"] = ann.type if ann is not None and ann.type != "none" else "dict"
            if ann is not None and ann.nullable:
                e["nullable"] = True
            cls = None
            if has_target:
                e["target"] = target
                e["instantiated"] = self._instantiated(path)
                cls = self.index.resolve_target(target)
                if cls is None:
                    self.problems.append(f"{path}: _target_ {target} not found in the verl sources")
                else:
                    e["fields"] = sorted(self.index.fields_of(cls))
                    if cls.name == "RolloutConfig":
                        self.rollout_nodes.add(path)
            self.entries[path] = e
            typed_by = ann.dataclass if ann is not None and cls is None and kind == "node" else None
            self._children(value, path, cls, kind == "dict", typed_by)
            return
        if isinstance(value, (list, tuple)):
            e["kind"] = "list"
            e["default"] = list(value)
            e["type"] = ann.type if ann is not None and ann.type not in ("none", "any") else "list"
        else:
            is_interp = isinstance(value, str) and "${" in value
            e["kind"] = _kind_for(ann, "value") if (value is None or is_interp) else "value"
            e["default"] = value
            if is_interp:
                e["interpolation"] = value
            if ann is not None and ann.type != "none":
                e["type"] = ann.type
            else:
                e["type"] = infer_type(value)
                if e["type"] != "any":
                    e["inferred"] = True  # from the default: verl reads the key without a declared type
        if (ann is not None and ann.nullable) or value is None:
            e["nullable"] = True
        if ann is not None and ann.choices:
            e["choices"] = list(ann.choices)
        e["_annotated"] = ann is not None  # until _follow_interpolations: may it take the type it points to?
        self.entries[path] = e

    @staticmethod
    def _instantiated(path: str) -> bool:
        def under(root: str) -> bool:
            return path == root or path.startswith(root + ".")

        if any(under(r) for r in INSTANTIATED_EXCEPTIONS):
            return True
        return not any(under(r) for r in NOT_INSTANTIATED_ROOTS)

    def _mark_consumers(self) -> None:
        for path, consumer in FIXED_CONSUMERS:
            e = self.entries.get(path)
            if e is not None and e.get("kind") == "node" and not e.get("target"):
                self._open_consumer(path, consumer)
        for path in list(self.entries):
            for suffix, consumer in CONSUMERS:
                if not path.endswith("." + suffix):
                    continue
                role = path[: -len(suffix) - 1]
                # Only where the role (actor/ref/critic) runs the Megatron engine: the dp/veomni optim nodes have an
                # `override_optimizer_config` too (torch optimizer kwargs) and verl 0.8.0's generic CheckpointConfig
                # carries `mbridge_config` for every engine.
                if self.entries.get(f"{role}.megatron", {}).get("kind") not in ("node", "dict"):
                    continue
                self._open_consumer(path, consumer)

    def _open_consumer(self, path: str, consumer: str) -> None:
        """The library takes the mapping at ``path`` whole: it is open, and so is every mapping under it, whatever
        the YAML shows (verl 0.5's `override_transformer_config` has keys and no dataclass types it)."""
        e = self.entries[path]
        e["consumer"] = consumer
        if e.get("kind") in ("value", "node") and not e.get("target"):
            e["kind"] = "dict"
        for child, ce in self.entries.items():
            if child.startswith(path + ".") and ce.get("kind") == "node" and not ce.get("target"):
                ce["kind"] = "dict"

    def _follow_interpolations(self) -> None:
        """An interpolation of another key takes that key's kind/consumer (and type, when unannotated)."""
        for _ in range(10):  # chains of interpolations settle in a few rounds
            changed = False
            for path, e in self.entries.items():
                interp = e.get("interpolation")
                if not interp:
                    continue
                ref = _pointer(path, interp)
                src = self.entries.get(ref) if ref else None
                if src is None or src is e:
                    continue
                before = dict(e)
                if src.get("kind") in ("node", "dict"):
                    e["kind"] = src["kind"]
                    if "consumer" in src:
                        e["consumer"] = src["consumer"]
                if not e.get("_annotated") and e.get("type") == "any" and src.get("type"):
                    e["type"] = src["type"]
                changed |= e != before
            if not changed:
                break

    def _registry_choices(self) -> None:
        """Closed sets from verl's registries (registries.py) and the group's options."""
        for path, e in self.entries.items():
            last = path.rsplit(".", 1)[-1]
            parent = path.rpartition(".")[0]
            if path.endswith(".policy_loss.loss_mode") and self.choices.loss_mode:
                e["choices"] = self.choices.loss_mode
            elif path == "algorithm.adv_estimator" and self.choices.adv_estimator:
                e["choices"] = self.choices.adv_estimator
            elif last == "loss_agg_mode" and self.choices.loss_agg_mode:
                e["choices"] = self.choices.loss_agg_mode
            elif parent in self.rollout_nodes and last == "name" and self.choices.rollout_name:
                e["choices"] = self.choices.rollout_name
            elif parent in self.rollout_nodes and last == "mode" and self.choices.rollout_mode:
                e["choices"] = self.choices.rollout_mode
            elif path in self.groups and e.get("kind") == "value":  # `model_engine: dp`, written by its group
                e["choices"] = list(self.groups[path]["options"])
