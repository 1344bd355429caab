"""Recipe-file rules (RF): reported by the recipe source while reading a file, before any override is checked."""

from ..core.budget import FILE_TIME_GUARD_S, FILE_WORK_UNITS
from ..core.device import device_kind
from ..core.diagnostics import Severity
from ..core.problems import (
    AcceleratorKindMismatch,
    DuplicateKey,
    FileUnreadable,
    InternalError,
    InvalidYaml,
    NoSnapshot,
    NotLintable,
    OverBudget,
    SchemaViolation,
    SnapshotNotBuilt,
    TooManyVariants,
    UnknownAcceleratorName,
    UnknownModel,
    VariantDeviceMismatch,
)
from ..rulekit.registry import reads, source_rule

MODEL_RULES = (
    "rules that need the model's shape: the topology rules from TP003, and the memory and checkpoint estimate "
    "(MEM001, MEM002, CK001, CK002)"
)

RECIPE_SCHEMA = source_rule(
    "RF001",
    "recipe-schema",
    Severity.ERROR,
    summary="recipe file violates schemas/recipe.schema.json",
    explanation="""A recipe is checked against `schemas/recipe.schema.json` (JSON Schema 2020-12, validated with
    jsonschema) before its overrides are: a misspelt top-level key (`overides:`), a variant without
    `overrides`/`env`, or a gate without a threshold would otherwise be ignored by the launcher. The
    diagnostic points at the YAML line of the offending value. Until the recipe is valid no config rule runs on
    it: they would judge a config the file does not describe.""",
    bad="""
    recipe: sapo-recipe/v1
    name: demo
    overides:
      trainer.nnodes: 2
    """,
    good="""
    recipe: sapo-recipe/v1
    name: demo
    overrides:
      trainer.nnodes: 2
    """,
    module=__name__,
)

INVALID_YAML = source_rule(
    "RF002",
    "invalid-yaml",
    Severity.ERROR,
    summary="recipe is not valid YAML, or YAML a recipe cannot hold",
    explanation="""The file could be read but not parsed as YAML (the message carries the parser's line and
    column); or it holds what a recipe cannot: anchors and aliases that expand to more than 50,000 nodes (an
    alias bomb), nesting deeper than 64 levels, custom tags (`!custom`), or lists and mappings used as keys.
    The other files are still linted.""",
    bad="""
    recipe: sapo-recipe/v1
    overrides: {trainer.nnodes: 2
    """,
    good="""
    recipe: sapo-recipe/v1
    overrides: {trainer.nnodes: 2}
    """,
    module=__name__,
)

UNREADABLE_FILE = source_rule(
    "RF003",
    "unreadable-file",
    Severity.ERROR,
    summary="file could not be read: I/O error, binary, not UTF-8, or too large",
    explanation="""sapo-lint reads recipes and scripts as UTF-8 text of a bounded size. A file it cannot read
    is reported here and makes the run exit with status 2; the other files are still linted.""",
    bad="""
    (a recipe saved as UTF-16, or a binary file named *.yaml)
    """,
    good="""
    (the same recipe saved as UTF-8)
    """,
    module=__name__,
)

UNKNOWN_VERSION = source_rule(
    "RF004",
    "unknown-schema-version",
    Severity.ERROR,
    summary="no schema snapshot for the verl version or config the recipe names",
    explanation="""Overrides are checked against a schema snapshot of the named verl version and trainer
    config. When no snapshot of the version is committed (or built with `sapo-lint schema build`), nothing can
    be checked, which is an error rather than a silent pass; the message lists the versions that have
    snapshots. A snapshot holds every trainer config its verl ships (`ppo_trainer`, `sft_trainer_engine`, the
    fully-async and one-step-off trainers, ...); a command that names another config (`--config-name`) is one
    info saying its overrides were not checked, and the file's other checks still run. A config directory of the
    command's own (`--config-path`, a wrapper module's `@hydra.main`) is composed as Hydra composes it and checked;
    one that cannot be (a directory not known statically or missing, a config Hydra cannot compose, no verl config
    files on this machine to compose it with) is that info too, saying why. A verl source tree of the repository, or
    an installed verl, that cannot be snapshotted is a warning saying why: the file is linted against the next verl
    found (docs/run-scripts.md, "Which verl").""",
    bad="""
    recipe: sapo-recipe/v1
    name: demo
    verl: "0.3.0"
    overrides:
      trainer.nnodes: 1
    """,
    good="""
    recipe: sapo-recipe/v1
    name: demo
    verl: "0.9.1"
    overrides:
      trainer.nnodes: 1
    """,
    module=__name__,
)

UNKNOWN_MODEL = source_rule(
    "RF005",
    "unknown-model",
    Severity.INFO,
    summary="the model's architecture is unknown, so model-aware rules are skipped",
    explanation="""Topology rules need the model's shape (layers, heads, query groups, experts, FFN sizes). It
    comes, in this order, from `model.card` (a shipped card in `schemas/models/`); from `config.json` when the
    model path (`model.path` or `actor_rollout_ref.model.path`) is a local directory; from the config.json of the
    model the path names in the Hugging Face cache (`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
    `~/.cache/huggingface/hub`: `models--Org--Name/snapshots/<revision>`); else from the shipped card that the
    path's last two components (`Qwen/Qwen2.5-7B-Instruct`) or last one (`Qwen2.5-7B-Instruct`) name, compared
    without case or separators, release words (`-Instruct`, `-Base`, `-Chat`, `-it`, `-hf`, `-Thinking`, a date
    such as `-2507`) left out. A run script's path that is partly unknown statically is looked up by the whole
    components written after its last unknown part (`$HOME/models/Qwen3-8B`, `${MODEL_PATH:-$ROOT/DeepSeek-V3}`).
    With `--fetch-model-config` (or `[tool.sapo-lint] fetch-model-config = true`), a model none of these has is
    fetched from the Hugging Face Hub: only its config.json, into huggingface_hub's cache, where the next run finds
    it offline; a failed fetch (no answer, a gated model, a 404) is one line of this note. A path known only at run
    time (`$MODEL_PATH`) is named with `--override actor_rollout_ref.model.path=ID`, a `# sapo-lint: model=ID`
    comment in the file (which wins over the file's own path) or `[tool.sapo-lint] model = "ID"` (for files whose
    path names no model). `sapo-lint explain` says which of these found the model. When none applies, or a local
    config.json cannot describe a model (not a JSON object; a size missing, not an integer, or beyond any real
    model's: the note names the field), this note says what was tried, which rules were skipped (the topology rules
    from TP003, and the estimate's MEM001, MEM002, CK001 and CK002) and the three ways to name the model; it is never
    a silent skip. SFT trainers read their own key (`model.partial_pretrain` for `fsdp_sft_trainer`, `model.path`
    for `sft_trainer` and `sft_trainer_ray`), and their topology, memory and checkpoint rules need the shape too; a
    script whose entry module reaches none of those rules (`main_eval`, `main_generation_server`) gets no note:
    nothing there needs the shape.""",
    bad="""
    model: {path: my-org/private-model}
    overrides: {}
    """,
    good="""
    model: {path: my-org/private-model, card: qwen3-8b}
    overrides: {}
    """,
    module=__name__,
)

UNKNOWN_ACCELERATOR = source_rule(
    "RF006",
    "unknown-accelerator",
    Severity.ERROR,
    summary="an accelerator name (`hardware.accelerator`, --accelerator, [tool.sapo-lint]) that names no known "
    "accelerator",
    explanation="""The accelerator decides the memory per device that MEM001 checks against. Names are matched
    case-insensitively with the usual spellings (`910B3`, `Ascend910B3`, `H100`, `h100-80gb`, `A100-80G`); a name
    that matches none (usually a typo, or an ambiguous `A100`) is an error that lists the known names, and MEM001 is
    skipped for the variants it would apply to -- it is not replaced by an assumption. The checkpoint and host-RAM
    checks (CK001, CK002, MEM002) do not depend on the device's memory and still run.""",
    bad="""
    hardware: {accelerator: ascend-910b}
    overrides: {}
    """,
    good="""
    hardware: {accelerator: 910B3}
    overrides: {}
    """,
    module=__name__,
)

DUPLICATE_KEY = source_rule(
    "RF007",
    "duplicate-key",
    Severity.ERROR,
    summary="the same key twice in one YAML mapping: the last silently wins",
    explanation="""YAML loaders keep the last of two equal keys in a mapping and drop the first without a word, so
    a second `overrides:` block hides everything in the first (typos included), and a second `hardware:` replaces
    the first. The error is at the second key's line and names the first. Repeated keys inside an `overrides:`
    mapping are reported per command by SL008 instead, since there they are Hydra overrides applied in order.""",
    bad="""
    overrides:
      trainer.nnodes: 2
    overrides:
      trainer.n_gpus_per_node: 8
    """,
    good="""
    overrides:
      trainer.nnodes: 2
      trainer.n_gpus_per_node: 8
    """,
    module=__name__,
)

NOT_LINTABLE = source_rule(
    "RF008",
    "not-a-recipe-or-script",
    Severity.WARNING,
    summary="a file named on the command line is neither YAML nor a run script",
    explanation="""`sapo-lint FILE` lints recipes (`*.yaml`/`*.yml` with a top-level `recipe:` key) and run scripts
    (`*.sh`). Any other file named explicitly is reported instead of passing silently, so a typo in a path does not
    look like a clean result. A YAML file without a top-level `recipe:` key (a CI workflow, a Hydra config) is
    skipped without a word, named or found in a directory: pre-commit and editors name every YAML file of a
    repository. A file that has the key but is not a valid recipe is linted, and its errors reported (RF001,
    RF002). Skipped files are not counted as checked; a run that finds nothing at all to lint under the
    directories it was given exits 2.""",
    bad="""
    (named on the command line) sapo-lint recipes/qwen3-8b-sapo.yaml.orig   # a backup copy, never linted
    """,
    good="""
    (named on the command line) sapo-lint recipes/qwen3-8b-sapo.yaml
    """,
    module=__name__,
)

TOO_MANY_VARIANTS = source_rule(
    "RF009",
    "too-many-variants",
    Severity.WARNING,
    summary="more variant combinations than are linted (64): the rest are sampled",
    explanation="""Every combination of a recipe's variant axes is linted, up to 64 per file; a recipe whose axes
    multiply to more is linted on a deterministic sample: the combination of every axis's default
    (`variant_defaults`, else its first value), each
    combination that changes one axis from it, then the rest in product order. The warning says how many there
    are; split the recipe, or lint a chosen combination with `sapo-launch --dry-run`, to check the others.""",
    bad="""
    (a recipe with 7 two-valued axes) 128 combinations
    """,
    good="""
    (a recipe with 6 two-valued axes) 64 combinations
    """,
    module=__name__,
)

ACCELERATOR_MISMATCH = source_rule(
    "RF010",
    "accelerator-device-mismatch",
    Severity.WARNING,
    summary="a device variant runs on one kind of device (NPU/GPU) but the accelerator named for it is the other kind",
    explanation="""A recipe or script whose variants run on NPU and on GPU (`device: {npu: ..., gpu: ...}`, a `case`
    on `DEVICE`, `trainer.device`, VERL_ENGINE_DEVICE) needs an accelerator per device kind: one name for the whole
    file (`hardware: {accelerator: nvidia-h100}`, --accelerator, `[tool.sapo-lint] accelerator = "..."`) would check
    the NPU variant's memory against a GPU's HBM ("8 x nvidia-h100 (80 GiB, npu)"). The variant is checked on the
    accelerator assumed for its own kind instead (ascend-910b3 for npu, nvidia-h100 for gpu), and this warning says
    so: name one per kind, `hardware: {accelerator: {npu: ascend-910b3, gpu: nvidia-h100}}` in a recipe or
    `accelerator = {npu = "ascend-910b3", gpu = "nvidia-h100"}` in `[tool.sapo-lint]`. A warning, not an error: the
    run itself is not affected, only which HBM the memory check of that variant uses.""",
    bad="""
    hardware: {accelerator: nvidia-h100}
    overrides: {}
    variants:
      device:
        npu: {overrides: {trainer.device: npu}}
        gpu: {overrides: {trainer.device: cuda}}
    """,
    good="""
    hardware: {accelerator: {npu: ascend-910b3, gpu: nvidia-h100}}
    overrides: {}
    variants:
      device:
        npu: {overrides: {trainer.device: npu}}
        gpu: {overrides: {trainer.device: cuda}}
    """,
    module=__name__,
)

WORK_BUDGET = source_rule(
    "RF011",
    "work-budget-exceeded",
    Severity.ERROR,
    summary=f"linting the file took more than its work budget ({FILE_WORK_UNITS:,} units): it was stopped, its "
    "findings are not reported",
    explanation=f"""Each recipe or run script may take {FILE_WORK_UNITS:,} units of work to lint: a unit is one
    override read, one rule run on one override of a command, or 1,024 steps of the bash evaluation. Real files take
    well under 1% of it, and the count is the same on any machine, however busy. A file that takes more (hundreds of
    thousands of overrides, a script generated to be slow) is stopped there, cooperatively, between two rules or two
    steps of the bash evaluation, and gets this one finding, which says what was being done then; none of its other
    findings is reported, and it does not pass. The other files are linted as usual. A wall-clock guard of
    {FILE_TIME_GUARD_S:g} s stops a file the same way, as a last resort that no bounded work reaches.""",
    bad="""
    (a generated recipe of 300,000 overrides)
    """,
    good="""
    (the overrides a run needs; split generated sweeps into one recipe per run)
    """,
    module=__name__,
)

INTERNAL_ERROR = source_rule(
    "RF012",
    "internal-error",
    Severity.ERROR,
    summary="sapo-lint failed on this file (a bug): the file is not checked, the other files are",
    explanation="""An unexpected error while reading or checking one file is reported on that file, with the
    exception's type and where in sapo-lint it was raised (not its message, which may quote a value from the
    file), and the run goes on with the other files. The file is counted as not checked, so the run exits with
    status 2, as for a file that could not be read (RF003). Please report it, with the file if you can share it.""",
    bad="""
    (any file sapo-lint fails on)
    """,
    good="""
    (the same file, once the bug is fixed)
    """,
    module=__name__,
)


@reads(SchemaViolation)
def _schema_violation(p: SchemaViolation):
    return RECIPE_SCHEMA.diagnostic(p.location, f"{p.where}: {p.message}" if p.where else p.message)


@reads(InvalidYaml)
def _invalid_yaml(p: InvalidYaml):
    return INVALID_YAML.diagnostic(p.location, f"invalid YAML: {p.problem}")


@reads(DuplicateKey)
def _duplicate_key(p: DuplicateKey):
    return DUPLICATE_KEY.diagnostic(
        p.location,
        f"duplicate key `{p.key}` (first at line {p.first_line}): YAML keeps "
        "only the last one, so the first is ignored",
    )


@reads(UnknownModel)
def _unknown_model(p: UnknownModel):
    return UNKNOWN_MODEL.diagnostic(p.location, f"{p.reason}; skipped the {MODEL_RULES}. {p.remedy}")


@reads(TooManyVariants)
def _too_many_variants(p: TooManyVariants):
    return TOO_MANY_VARIANTS.diagnostic(
        p.location,
        f"{p.total:,} variant combinations; linted {p.linted}: the default (else the first) "
        "value of every axis, each single-axis change from it, then the rest in order",
    )


@reads(UnknownAcceleratorName)
def _unknown_accelerator(p: UnknownAcceleratorName):
    return UNKNOWN_ACCELERATOR.diagnostic(
        p.location, f"{p.source}: {p.reason} MEM001 is skipped where it applies; CK001, CK002 and MEM002 still run"
    )


@reads(AcceleratorKindMismatch)
def _accelerator_kind_mismatch(p: AcceleratorKindMismatch):
    return ACCELERATOR_MISMATCH.diagnostic(
        p.location,
        f"{p.source} names {p.accelerator}, "
        f"{device_kind(p.accelerator_kind).article}, for {p.kind}: the {p.kind} variants are "
        f"checked on {p.assumed} (assumed) instead",
    )


@reads(VariantDeviceMismatch)
def _variant_device_mismatch(p: VariantDeviceMismatch):
    return ACCELERATOR_MISMATCH.diagnostic(
        p.location,
        f"this variant runs on {device_kind(p.kind).article} ({p.evidence}) but {p.source} names {p.accelerator}, "
        f"{device_kind(p.accelerator_kind).article}: its memory is checked on {p.assumed} (assumed for {p.kind}) "
        "instead. "
        f"Name one accelerator per device kind: {p.fix_form}",
    )


@reads(FileUnreadable)
def _file_unreadable(p: FileUnreadable):
    return UNREADABLE_FILE.diagnostic(p.location, f"cannot list directory: {p.reason}" if p.directory else p.reason)


@reads(NoSnapshot)
def _no_snapshot(p: NoSnapshot):
    if p.config_only:
        return UNKNOWN_VERSION.diagnostic(
            p.location,
            f"{p.reason}: the overrides of its commands are not checked",
            severity=Severity.WARNING if p.placeholder else Severity.INFO,
        )
    return UNKNOWN_VERSION.diagnostic(p.location, p.reason)


@reads(SnapshotNotBuilt)
def _snapshot_not_built(p: SnapshotNotBuilt):
    return UNKNOWN_VERSION.diagnostic(
        p.location,
        f"the verl at {p.tree}, which this file runs, cannot be snapshotted ({p.reason}): its keys are not checked "
        "against another verl",
        severity=Severity.WARNING,
    )


@reads(NotLintable)
def _not_lintable(p: NotLintable):
    return NOT_LINTABLE.diagnostic(
        p.location,
        f"no recipe or script: {p.location.path} (recipes are *.yaml/*.yml "
        "with a top-level `recipe:` key, run scripts *.sh)",
    )


@reads(OverBudget)
def _over_budget(p: OverBudget):
    return WORK_BUDGET.diagnostic(
        p.location, f"linting stopped after {p.bound}, while {p.stage}; none of the file's findings is reported"
    )


@reads(InternalError)
def _internal_error(p: InternalError):
    return INTERNAL_ERROR.diagnostic(
        p.location, f"internal error ({p.raised_where}); the file is not checked: please report it"
    )
