"""Variants of one file: every combination of one value per axis (`DEVICE=npu,INFER_BACKEND=vllm`), choosing
some of them by label, and reporting a finding once across them."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import TypeVar

from .diagnostics import Diagnostic

T = TypeVar("T")


MAX_VARIANTS = 64  # combinations linted per file; a larger product is sampled (see `expand`)


def expand(
    axes: Sequence[Sequence[tuple[str, T]]], defaults: Sequence[int] | None = None, cap: int = MAX_VARIANTS
) -> tuple[list[tuple[str | None, tuple[T, ...]]], int]:
    """The combinations of one (label token, payload) per axis to lint, and how many there are in all.

    Each is (the variant's label, tokens joined by commas, None without axes; the chosen payloads in axis order).
    All of them, in product order, when there are at most `cap`. Otherwise `cap` of them, in this order: the
    default combination (`defaults[i]` indexes axis i's default, else its first value), then every combination
    that changes one axis from the default, then the rest in product order. The product is walked lazily and
    never built, so thousands of axes cost no more than the cap."""
    sizes = [len(a) for a in axes]
    total = math.prod(sizes) if axes else 1
    everything = itertools.product(*map(range, sizes))
    if total <= cap:
        chosen = dict.fromkeys(everything)
    else:
        base = tuple(defaults) if defaults is not None else (0,) * len(axes)
        chosen = {base: None}
        singles = (base[:i] + (j,) + base[i + 1 :] for i, n in enumerate(sizes) for j in range(n) if j != base[i])
        for index in itertools.chain(singles, everything):
            if len(chosen) >= cap:
                break
            chosen.setdefault(index, None)
    out = []
    for index in chosen:
        combo = [axes[i][j] for i, j in enumerate(index)]
        out.append((",".join(token for token, _ in combo) or None, tuple(payload for _, payload in combo)))
    return out, total


def matches(variant: str | None, wanted: Sequence[str]) -> bool:
    """Whether a variant label has every `AXIS=value` token of one of the wanted selections (case-insensitive);
    no selection matches every variant."""
    if not wanted:
        return True
    have = {t.strip().lower() for t in (variant or "").split(",") if t.strip()}
    return any({t.strip().lower() for t in w.split(",") if t.strip()} <= have for w in wanted)


def collapse_variants(per_variant: list[list[Diagnostic]], variants: list[str | None]) -> list[Diagnostic]:
    """One diagnostic per finding, whatever the number of variants that have it: variant null when every variant
    has it, else a label that names exactly the variants that have it (`describe`). `per_variant[i]`: the findings
    of `variants[i]`, labelled or not."""
    groups: dict[Diagnostic, list[str | None]] = defaultdict(list)
    for variant, found in zip(variants, per_variant, strict=True):
        for d in found:
            groups[d.with_variant(None)].append(variant)
    universe = _Universe(variants)
    out = []
    for diag, where in groups.items():
        have = set(where)
        out.append(diag if have >= universe.labels else diag.with_variant(universe.describe(have)))
    return out


def describe(have: set[str | None], variants: list[str | None]) -> str:
    """A label for the variants `have` among all `variants` (each `AXIS=value,...`): terms joined by ` or `, each
    term `AXIS=value` tokens joined by commas, a token listing several values as `AXIS=a|b`. Values are in the
    order the variants name them. A term holds for every input that has one of each listed axis's values; an
    axis a variant did not read (its label does not name it) holds for every value of it. So
    `INFER_BACKEND=sglang|vllm` says: whatever the other axes, with sglang or vllm. The terms are found greedily
    (each grown from the first variant not yet described), so the label is short, not always the shortest."""
    return _Universe(variants).describe(have)


class _Universe:
    """The variants of one file, parsed: label -> {axis: value}, and each axis's values in order."""

    def __init__(self, variants: list[str | None]):
        self.labels = set(variants)
        self.order = list(dict.fromkeys(variants))
        self.parsed = {
            v: dict(t.split("=", 1) if "=" in t else (t, "") for t in (v or "").split(",") if t) for v in self.order
        }
        self.values: dict[str, list[str]] = {}
        for axes in self.parsed.values():
            for axis, value in axes.items():
                if value not in self.values.setdefault(axis, []):
                    self.values[axis].append(value)
        self.described: dict[frozenset, str] = {}

    def _touches(self, cube: dict[str, list[str]], variant: str | None) -> bool:
        """Whether some input the cube allows reaches `variant` (an axis the variant did not read allows any)."""
        axes = self.parsed[variant]
        return all(axis not in axes or axes[axis] in allowed for axis, allowed in cube.items())

    def _holds(self, cube: dict[str, list[str]], have: set[str | None]) -> bool:
        return all(v in have for v in self.order if self._touches(cube, v))

    def describe(self, have: set[str | None]) -> str:
        key = frozenset(have)
        if key not in self.described:
            self.described[key] = self._describe(have)
        return self.described[key]

    def _describe(self, have: set[str | None]) -> str:
        terms: list[tuple[dict[str, list[str]], set[str | None]]] = []
        left = [v for v in self.order if v in have]
        while left:
            seed = left[0]
            cube = {axis: [value] for axis, value in self.parsed[seed].items()}
            if self._holds(cube, have):  # grown from each axis in turn, the one that describes the most
                axes = list(cube)
                grown = (self._grow(cube, axes[i:] + axes[:i], have) for i in range(len(axes)))
                cube = max(grown, key=lambda c: (len(self._within(c, left)), -len(c)))
            terms.append((cube, self._within(cube, have) | {seed}))
            left = [v for v in left if v not in terms[-1][1]]
        # a term whose variants the others name too is left out
        for term in list(terms):
            others = set().union(*(within for t, within in terms if t is not term[0]))
            if term[1] <= others:
                terms.remove(term)
        return " or ".join(
            ",".join(f"{axis}={'|'.join(allowed)}" for axis, allowed in cube.items()) for cube, _ in terms
        )

    def _within(self, cube: dict[str, list[str]], variants) -> set[str | None]:
        return {v for v in variants if all(self.parsed[v].get(a) in allowed for a, allowed in cube.items())}

    def _grow(self, cube: dict[str, list[str]], axes: list[str], have: set[str | None]) -> dict[str, list[str]]:
        """Drop each axis the finding does not depend on, and widen the others to every value it holds for."""
        for axis in axes:
            without = {a: allowed for a, allowed in cube.items() if a != axis}
            if self._holds(without, have):
                cube = without
                continue
            for value in self.values[axis]:
                if value not in cube[axis]:
                    wider = {**cube, axis: sorted([*cube[axis], value], key=self.values[axis].index)}
                    if self._holds(wider, have):
                        cube = wider
        return cube
