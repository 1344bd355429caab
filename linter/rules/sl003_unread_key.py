import re

from ..core.diagnostics import Applicability, Severity
from ..engine import LintContext, Part
from ..rulekit.common import did_you_mean, first_missing, repository_code, runs_engine_workers, short_class
from ..rulekit.fixes import rename_key
from ..rulekit.registry import Finding, rule
from ..rulekit.sapo import is_nested_tau
from ..rulekit.versions import entry_read_elsewhere, path_elsewhere, read_elsewhere

# Values that turn a setting off: null, false, and the words verl's switches take for it. Not 0: a count of 0
# (`data.num_workers=0`) is a setting of its own, lost when nothing reads it.
_OFF_WORDS = frozenset({"disable", "disabled", "none", "off", "false", "no"})


def turns_off(value) -> bool:
    """Whether a value turns a setting off rather than on."""
    if value is None or value is False:
        return True
    return isinstance(value, str) and value.strip().lower() in _OFF_WORDS


def built_as_dataclass(ctx: LintContext, anchor: str) -> bool:
    """Whether the workers that run build the node as its dataclass: the snapshot says so for the engine workers;
    where a verl's default legacy workers build fewer (`schemas/facts.json`: `legacy-workers-dataclass-nodes`),
    the others stay plain configs."""
    legacy = ctx.fact("verl:legacy-workers-dataclass-nodes")
    if legacy is None or runs_engine_workers(ctx):
        return True
    return any(anchor == node or anchor.startswith(node + ".") for node in legacy)


# The module a recipe that names no `entrypoint` runs (schemas/recipe.schema.json).
_RECIPE_ENTRY_MODULE = "verl.trainer.main_ppo"
# What code names a config it takes a top-level node off, as the snapshot builder reads verl's
# (schemas/build/entry_reads.py): `config.reward_model`, `self.config`, `cfg`.
_CONFIG_NAME = re.compile(r"conf|cfg", re.IGNORECASE)


def node_unread_by_entry(ctx: LintContext, ro) -> str | None:
    """The top-level node of a key that composes, where the command's entry module never takes that node off its
    config while another of verl's entry modules does (`entry_reads`: verl 0.9's `main_ppo` never reads the legacy
    `reward_model.*` that only `fully_async_main` migrates) and the repository's own code does not either; else
    None."""
    op = ro.parsed.op
    composes = op == "force_add" or (op == "set" and ro.existed) or (op == "add" and not ro.existed)
    if not composes or ro.group is not None or ro.outside is not None:
        return None
    node = ro.path.split(".")[0]
    readers = ctx.snapshot.entry_reads.get(node)
    if readers is None or entry_module(ctx) in readers or ctx.tree.get(node) is None:
        return None
    code = repository_code(ctx)
    if code is not None and any(key == node and _CONFIG_NAME.search(left) for left, key in code.reads):
        return None
    return node


def entry_module(ctx: LintContext) -> str:
    return (ctx.command.entry_module if ctx.command is not None else None) or _RECIPE_ENTRY_MODULE


def unread_node_finding(ctx: LintContext, node: str, overrides: list) -> Finding:
    """One finding per unread node, at its first key, the others as related locations; a warning where every
    value turns something off."""
    readers = ctx.snapshot.entry_reads[node]
    module = entry_module(ctx)
    harmless = all(turns_off(ro.parsed.value) for ro in overrides)
    first, *more = overrides
    keys = f"`{first.path}`" + (f" and {len(more)} more key{'s' if len(more) > 1 else ''}" if more else "")
    others = ", ".join(f"`{m}`" for m in sorted(readers))
    return Finding(
        first,
        f"{keys} {'are' if more else 'is'} never read: `{module}` of verl {ctx.snapshot.label} never reads "
        f"`{node}` (only {others} "
        f"{'does' if len(readers) == 1 else 'do'}), so Hydra composes "
        f"{'them and they are' if more else 'it and it is'} silently ignored"
        f"{' (it turns something off, so nothing is lost)' if harmless else ''}."
        f"{entry_read_elsewhere(ctx, node, module)}",
        severity=Severity.WARNING if harmless else None,
        related=tuple(ro.location for ro in more),
    )


def read_by_repository(ctx: LintContext, anchor: str, name: str) -> bool:
    """Whether the repository's own code reads `name` off a node named like `anchor`'s last part
    (`self.config.algorithm.my_key`, `data_cfg.get("my_key")` for `data.my_key`)."""
    parent = anchor.rpartition(".")[2].lower()
    code = repository_code(ctx) if parent else None
    return code is not None and any(key == name and parent in left.lower() for left, key in code.reads)


@rule(
    "SL003",
    "unread-key",
    Severity.ERROR,
    part=Part.CONFIG,
    summary="`+key` adds a key that nothing reads, or a key sits under a node the entry module never reads",
    bad="""
    overrides:
      +actor_rollout_ref.rollout.sampling_temperature: 0.7
      +trainer.checkpoint_every: 50
    """,
    good="""
    overrides:
      actor_rollout_ref.rollout.temperature: 0.7
      trainer.save_freq: 50
    """,
    fix=Applicability.UNSAFE,
)
def check(ctx: LintContext):
    """`+` bypasses Hydra's struct check, so an added key always composes. What happens next depends on the
    node it lands in. Under a node with a `_target_` that verl instantiates (the actor, ref, rollout, critic
    and their typed children), a key that is not a field of the dataclass makes `hydra.utils.instantiate`
    raise `TypeError: __init__() got an unexpected keyword argument` at start-up (where a verl's default legacy
    workers build fewer nodes as dataclasses, verl 0.7.x's ref, that one is a plain config). Under a plain node
    (`data`, `trainer`, `ray_kwargs`, ...) or a `_target_` node that `main_ppo` never instantiates
    (`algorithm`, `reward`, `global_profiler`), verl accepts anything: the key is reported when no code in
    verl, nor in the code of the repository the file is in (a wrapper's trainer subclass reading
    `config.algorithm.my_key`), reads a key of that name (the read-set collected from verl's source; the
    repository's Python read as text, counting a name read off a node named like the key's parent), because then
    the setting is silently ignored; a warning where the value turns something off (null, false, `disable`),
    since then nothing is lost. Keys under open pass-through dicts are checked by SL007, and keys under a declared
    dict-typed field (`fsdp_config.mixed_precision`) are the field's value. When another committed verl snapshot
    has the field, or reads the name, the message says which. Nested SAPO taus are SP001. Renaming the key to the
    nearest real one is an unsafe fix (`--fix --unsafe-fixes`): the near spelling is a guess at the key meant.

    The read-set is per entry point: a key, set or added, under a top-level node that the command's entry module
    never takes off its config is reported whatever another entry module does with it (verl 0.9's `main_ppo` never
    reads the legacy `reward_model.reward_manager` and `reward_model.reward_kwargs`, which only `fully_async_main`
    migrates to `reward.*`, so a DAPO reward and its overlong penalty never apply); which entry modules read a node
    is built from verl's source (`entry_reads`, FORMAT.md), so verl 0.7-0.8, whose `main_ppo` migrated them, gets
    no finding. A recipe that names no `entrypoint` runs `main_ppo`; the repository's own code taking the node off a
    config (`config.reward_model`) counts as a read. One finding per node and command, at its first key."""
    unread: dict[str, list] = {}
    for ro in ctx.overrides:
        node = node_unread_by_entry(ctx, ro)
        if node is not None:
            unread.setdefault(node, []).append(ro)
    for node, overrides in unread.items():
        yield unread_node_finding(ctx, node, overrides)
    reported = {id(ro) for overrides in unread.values() for ro in overrides}
    for ro in ctx.overrides:
        if id(ro) in reported:
            continue
        if ro.parsed.op not in ("add", "force_add") or ro.existed or ro.group is not None or ro.outside is not None:
            continue
        if ro.entry is not None or is_nested_tau(ro.path):  # a declared dataclass field, or SP001's case
            continue
        anchor = ctx.tree.get(ro.anchor) if ro.anchor else None
        if anchor is None or anchor["kind"] != "node":
            continue
        name = first_missing(ro)
        field = ctx.tree.get(f"{ro.anchor}.{name}" if ro.anchor else name)
        if field is not None and field["kind"] == "dict":
            # A declared dict-typed field that the YAML does not list: `+` creates it, and the dataclass takes the
            # mapping (FSDPEngineConfig.mixed_precision: Optional[dict], verl/workers/config/engine.py).
            continue
        hint, fix = did_you_mean(ctx, ro.path)
        if anchor.get("target") and anchor.get("instantiated") and built_as_dataclass(ctx, ro.anchor):
            elsewhere = path_elsewhere(ctx, f"{ro.anchor}.{name}" if ro.anchor else name)
            yield Finding(
                ro,
                f"`{ro.path}`: verl builds {short_class(anchor['target'])} from `{ro.anchor}`, which has "
                f"no field `{name}`; the `+` gets past Hydra, then instantiation fails at start-up with "
                f"TypeError (unexpected keyword argument '{name}').{elsewhere or hint}",
                fix=None if elsewhere or fix is None else rename_key(fix, Applicability.UNSAFE),
            )
        elif name not in ctx.snapshot.read_set and not read_by_repository(ctx, ro.anchor, name):
            kind = (
                f"{short_class(anchor['target'])}, which main_ppo never instantiates (read as a plain dict)"
                if anchor.get("target")
                else "a plain config node without a dataclass"
            )
            elsewhere = read_elsewhere(ctx, name)
            # Turning off what nothing reads changes nothing (`+trainer.use_legacy_worker_impl=disable` where
            # only that worker exists, a null threshold): right to mention, wrong to block a launch.
            harmless = turns_off(ro.parsed.value)
            yield Finding(
                ro,
                f"`{ro.path}`: `{ro.anchor}` is {kind}, so verl accepts the key, but nothing in "
                f"verl {ctx.snapshot.label}{' or in this repository' if ctx.stack.repository else ''} reads "
                f"a key named `{name}`: the setting is silently "
                f"ignored{' (it turns something off, so nothing is lost)' if harmless else ''}.{elsewhere or hint}",
                fix=None if elsewhere or fix is None else rename_key(fix, Applicability.UNSAFE),
                severity=Severity.WARNING if harmless else None,
            )
