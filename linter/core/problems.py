"""What a source found wrong while reading a file, as facts: the sources (`linter/sources/`) return these records
and the rule each one belongs to turns it into a finding (`rulekit.registry.finding_of`), so that a rule's file is
the one place that says what it reports and why. A record is hashable, and carries the variant it was found in
(None: every variant) so that `core.variants.collapse_variants` can merge it like a diagnostic."""

from __future__ import annotations

from .diagnostics import Location
from .records import Record


class ReadProblem(Record):
    location: Location
    variant: str | None = None

    def with_variant(self, variant: str | None) -> ReadProblem:
        return self.replace(variant=variant)


class SchemaViolation(ReadProblem):
    """The recipe breaks schemas/recipe.schema.json at `where` (a dotted path; None: the document as a whole)."""

    message: str
    where: str | None = None


class InvalidYaml(ReadProblem):
    """The parser's (or the shape check's) complaint."""

    problem: str


class DuplicateKey(ReadProblem):
    key: str
    first_line: int


class UnknownModel(ReadProblem):
    """Why the model's shape is unknown, and how to supply it."""

    reason: str
    remedy: str


class TooManyVariants(ReadProblem):
    total: int
    linted: int


class UnknownAcceleratorName(ReadProblem):
    """`source` (e.g. "--accelerator") names an accelerator not in schemas/devices.json; `reason` lists the known."""

    source: str
    reason: str


class AcceleratorKindMismatch(ReadProblem):
    """A `{kind: name}` entry whose accelerator is of the other kind; `assumed`: the one used instead."""

    source: str
    kind: str
    accelerator: str
    accelerator_kind: str
    assumed: str


class VariantDeviceMismatch(ReadProblem):
    """A single name for every variant, but this variant states the other device kind (`evidence`)."""

    source: str
    kind: str
    evidence: str
    accelerator: str
    accelerator_kind: str
    assumed: str
    fix_form: str  # how to name one per kind there, filled in


class BashSyntaxError(ReadProblem):
    """Where bash stops reading the script: at a token it did not expect, or at the end, still missing `missing`."""

    missing: str | None  # what the text ended without (`fi`, `"`); None: an unexpected token
    unexpected: str | None = None  # the token bash did not expect (`fi`, `)`, `newline`)


class BrokenContinuation(ReadProblem):
    """A command that a line break cut from the command it belongs to: one named like a Hydra override
    (`command`), or one whose name is an option that holds the trainer call (`trainer_never_runs`: `ray job submit
    ... \\`, a blank line, then `-- python3 -m verl...`)."""

    command: str  # its name, as written
    # the line where the command it was cut from ended (the trainer command; for `trainer_never_runs`, the command
    # before it); None: no command it could belong to lies before it
    ended_at: int | None = None
    # what ended that command: a line after its trailing `\` ("a comment line", "a blank line"); on its own last
    # line, what follows its `\` ("a comment", "a blank"), no `\` at the end ("no backslash"), or the separator
    # between the two commands on one line ("`;`")
    cause: str = ""
    overrides: int = 0  # the words of the cut-off command
    trainer_never_runs: bool = False  # the cut-off command holds the trainer call: bash runs its option as a command


class Passthrough(ReadProblem):
    """The trainer call passes the script's arguments through (`"$@"`)."""


class EnvironmentInputs(ReadProblem):
    """What the trainer's arguments take from outside the script (each as written, in order)."""

    names: tuple[str, ...]  # environment variables
    arguments: tuple[str, ...]  # the script's own arguments
    computed: tuple[str, ...]  # what it computes when it runs


class Unevaluated(ReadProblem):
    """What the bash interpreter could not evaluate, in its words."""

    message: str


class NotAnOverride(ReadProblem):
    argument: str  # as written, for messages


class UnresolvedKey(ReadProblem):
    key: str  # as written, for messages
    constructs: tuple[str, ...]  # the constructs it uses


class VariantsSampled(ReadProblem):
    total: int
    axes: tuple[str, ...]
    linted: int


class UndecidedConditions(ReadProblem):
    limit: int  # the variants evaluated at most
    cut: int  # the ways through them not linted


class UnknownEntryModule(ReadProblem):
    module: str
    verl_version: str
    assumed: str  # the config name assumed instead


class UnresolvedEntryModule(ReadProblem):
    """A trainer call starts a module of the script's own (`python3 -m recipe.x.main_ppo`, `python3 train.py`) whose
    config cannot be found: `reason` says why. Its overrides are not checked."""

    module: str
    reason: str


class ExitsBeforeTrainer(ReadProblem):
    """Every way through a run script exits (at `location`) before its trainer command (at `trainer_line`)."""

    trainer_line: int


class ShellcheckComment(ReadProblem):
    """One of shellcheck's findings, as its JSON gives it."""

    number: int  # SC number
    level: str  # "error" | "warning" | "info" | "style"
    message: str


class ShellcheckNotRun(ReadProblem):
    """shellcheck did not check the file: missing, failing, or not given the file (`reason`, one line)."""

    reason: str
    info: bool = False  # not given the file on purpose (too large): a note, not an error


class FileUnreadable(ReadProblem):
    reason: str  # the one-line reason (`sources.files.UnreadableFile`, or the OS's)
    directory: bool = False  # a directory that could not be listed


class NotLintable(ReadProblem):
    """A file named on the command line that is neither a recipe nor a run script (the location's path)."""


class OverBudget(ReadProblem):
    bound: str  # which budget was spent (`core.budget`): its units, or the last-resort time guard
    stage: str  # what was being done when it was spent


class InternalError(ReadProblem):
    raised_where: str  # the exception's type and where in sapo-lint it was raised, not its message


class NoSnapshot(ReadProblem):
    reason: str  # `schema.SnapshotNotFound`'s or `ConfigNotInSnapshot`'s message
    config_only: bool = False  # the version is known, one trainer config is not: its commands alone go unchecked
    verl_version: str = ""  # the version looked up, and the config (the summary names them: `core.checked`)
    config_name: str = ""
    placeholder: bool = False  # the config's directory is a template's blank left unfilled: a warning


class SnapshotNotBuilt(ReadProblem):
    """A verl source tree (or installed verl) the file would be linted against cannot be snapshotted: `reason` says
    why; the next verl in `verl_source`'s order is used instead."""

    tree: str  # the package directory
    reason: str
