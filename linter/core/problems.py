"""What a source found wrong while reading a file, as facts: the sources (`linter/sources/`) return these records
and the rule each one belongs to turns it into a finding (`rulekit.registry.finding_of`), so that a rule's file is
the one place that says what it reports and why. A record is hashable, and carries the variant it was found in
(None: every variant) so that `core.variants.collapse_variants` can merge it like a diagnostic."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .diagnostics import Location


@dataclass(frozen=True, kw_only=True)
class ReadProblem:
    location: Location
    variant: str | None = None

    def with_variant(self, variant: str | None) -> ReadProblem:
        return replace(self, variant=variant)


@dataclass(frozen=True, kw_only=True)
class SchemaViolation(ReadProblem):
    """The recipe breaks schemas/recipe.schema.json at `where` (a dotted path; None: the document as a whole)."""

    message: str
    where: str | None = None


@dataclass(frozen=True, kw_only=True)
class InvalidYaml(ReadProblem):
    """The parser's (or the shape check's) complaint."""

    problem: str


@dataclass(frozen=True, kw_only=True)
class DuplicateKey(ReadProblem):
    key: str
    first_line: int


@dataclass(frozen=True, kw_only=True)
class UnknownModel(ReadProblem):
    """Why the model's shape is unknown, and how to supply it."""

    reason: str
    remedy: str


@dataclass(frozen=True, kw_only=True)
class TooManyVariants(ReadProblem):
    total: int
    linted: int


@dataclass(frozen=True, kw_only=True)
class UnknownAcceleratorName(ReadProblem):
    """`source` (e.g. "--accelerator") names an accelerator not in schemas/devices.json; `reason` lists the known."""

    source: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class AcceleratorKindMismatch(ReadProblem):
    """A `{kind: name}` entry whose accelerator is of the other kind; `assumed`: the one used instead."""

    source: str
    kind: str
    accelerator: str
    accelerator_kind: str
    assumed: str


@dataclass(frozen=True, kw_only=True)
class VariantDeviceMismatch(ReadProblem):
    """A single name for every variant, but this variant states the other device kind (`evidence`)."""

    source: str
    kind: str
    evidence: str
    accelerator: str
    accelerator_kind: str
    assumed: str
    fix_form: str  # how to name one per kind there, filled in
