"""The rule registry: each rule lives in one module named after its code, with its docs and examples."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import NamedTuple

from ..core.diagnostics import Applicability, Diagnostic, Fix, Location, Severity
from ..core.problems import ReadProblem
from ..core.redaction import redact_assignments
from ..engine import Part
from .fixes import OverrideFix, placed


class Finding(NamedTuple):
    """What a rule found: where (an override or a bare location), why, and its fix if it has one (`rulekit.fixes`:
    rename the key, set the value, add or remove an override, each with its applicability; `Rule.run` places it
    in the file, or makes it DISPLAY_ONLY where the override is not written as such)."""

    at: object  # ResolvedOverride | LocatedOverride | Location
    message: str
    fix: OverrideFix | None = None
    severity: Severity | None = None  # the rule's own unless the evidence of this finding decides another
    related: tuple[Location, ...] = ()  # where the other settings it depends on are written (`LintContext.set_at`)


class Rule(NamedTuple):
    code: str
    name: str
    severity: Severity
    summary: str
    explanation: str
    bad: str
    good: str
    check: Callable[..., Iterable[Finding]] | None  # None: reported by a source (RF, SH), not over overrides
    module: str
    # The parts of verl whose code the rule quotes (`rule(part=...)`): runs that reach none of them skip the rule
    parts: frozenset[Part] = frozenset({Part.WORKERS})
    needs_model: bool = False  # some of its checks need the model's shape (RF005 where a run lacks it)
    engines: frozenset[str] | None = None  # the training backends it applies to (`model_engine`); None: every one
    # The codes whose finding at the same place its own replaces: it names the cause the general one only shows
    # (SP001's nested tau is an unknown key, SL001, because it belongs on the actor)
    supersedes: tuple[str, ...] = ()
    # How far its fixes can be trusted at best (SAFE: `--fix` fixes some of its findings; UNSAFE: only with
    # `--unsafe-fixes`); None: it offers none (`sapo-lint rules` marks the rules that do)
    fix: Applicability | None = None

    def diagnostic(
        self,
        location: Location,
        message: str,
        fix: Fix | None = None,
        severity: Severity | None = None,
        related: tuple[Location, ...] = (),
    ) -> Diagnostic:
        """Every finding of every rule and source is made here: a `NAME=value` its message quotes from a file (a
        script word, an override) has the value redacted when NAME is a secret name (`core.redaction`)."""
        message = redact_assignments(message)
        return Diagnostic(location, self.code, self.name, severity or self.severity, message, fix=fix, related=related)

    def run(self, ctx) -> list[Diagnostic]:
        if self.check is None:
            return []
        out = []
        for f in self.check(ctx):
            at = f.at
            location = at if isinstance(at, Location) else at.location
            fix = placed(f.fix, at, location) if f.fix is not None else None
            related = tuple(r for r in f.related if r != location)
            out.append(self.diagnostic(location, f.message, fix, f.severity, related))
        return out


RULES: dict[str, Rule] = {}


def rule(
    code: str,
    name: str,
    severity: Severity,
    *,
    summary: str,
    bad: str,
    good: str,
    part: Part | tuple[Part, ...] = Part.WORKERS,
    needs_model: bool = False,
    engines: frozenset[str] | None = None,
    supersedes: tuple[str, ...] = (),
    fix: Applicability | None = None,
):
    """Register a check function; its docstring is the rule's explanation (`sapo-lint rule CODE`). `fix`: how far
    the fixes its findings carry can be trusted at best (`Rule.fix`), None where it offers none. Its reach is
    declared here, not in the engine: `part`, the part of verl whose code the rule quotes (`engine.Part`; PPO's
    workers unless said), or a tuple of the parts it holds for (`(Part.WORKERS, Part.SFT)`: PPO's workers and the
    SFT trainer's engine), so that runs which reach none of them skip it; `needs_model`, whether some of its checks need
    the model's shape, so that a run without the model gets RF005 saying they were skipped; `engines`, the training
    backends (`LintContext.model_engine`: `MEGATRON`, ...) whose commands it checks, the engine skipping it for any
    other (None: every backend); `supersedes`, the codes whose finding at the same place this rule's replaces
    (`rules.without_superseded`: one problem, one finding, and the specific one keeps its fix)."""

    def register(check: Callable[..., Iterable[Finding]]) -> Callable[..., Iterable[Finding]]:
        _add(
            Rule(
                code,
                name,
                severity,
                summary,
                inspect.cleandoc(check.__doc__ or ""),
                inspect.cleandoc(bad),
                inspect.cleandoc(good),
                check,
                check.__module__,
                frozenset(part if isinstance(part, tuple) else (part,)),
                needs_model,
                engines,
                supersedes,
                fix,
            )
        )
        return check

    return register


_READERS: dict[type, Callable[[ReadProblem], Diagnostic]] = {}


def reads(problem_type: type):
    """Registers the function of a rule's module that turns `problem_type` (a `core.problems` record a source
    returns) into that rule's diagnostic."""

    def register(convert: Callable[[ReadProblem], Diagnostic]) -> Callable[[ReadProblem], Diagnostic]:
        _READERS[problem_type] = convert
        return convert

    return register


def finding_of(problem: ReadProblem) -> Diagnostic:
    """The diagnostic a source's problem is reported as, in the variant it was found in."""
    return _READERS[type(problem)](problem).with_variant(problem.variant)


def source_rule(
    code: str, name: str, severity: Severity, *, summary: str, explanation: str, bad: str, good: str, module: str
) -> Rule:
    """Register a rule whose findings a source reports (file-level problems, not overrides)."""
    registered = Rule(
        code,
        name,
        severity,
        summary,
        inspect.cleandoc(explanation),
        inspect.cleandoc(bad),
        inspect.cleandoc(good),
        None,
        module,
    )
    _add(registered)
    return registered


def _add(registered: Rule) -> None:
    if registered.code in RULES:
        raise RuntimeError(f"rule code {registered.code} registered twice")
    RULES[registered.code] = registered
