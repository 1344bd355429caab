"""Variants of one file: every combination of one value per axis (`DEVICE=npu,INFER_BACKEND=vllm`), choosing
some of them by label, and reporting a finding once across them."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from typing import Sequence, TypeVar

from .diagnostics import Diagnostic

T = TypeVar("T")


MAX_VARIANTS = 64  # combinations linted per file; a larger product is sampled (see `expand`)


def expand(axes: Sequence[Sequence[tuple[str, T]]], defaults: Sequence[int] | None = None,
           cap: int = MAX_VARIANTS) -> tuple[list[tuple[str | None, tuple[T, ...]]], int]:
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
        singles = (base[:i] + (j,) + base[i + 1:] for i, n in enumerate(sizes) for j in range(n) if j != base[i])
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
    """One diagnostic per finding: variant null when every variant has it, `AXIS=value` when exactly the
    variants with that value have it, else one per variant."""
    groups: dict[Diagnostic, list[str | None]] = defaultdict(list)
    for found in per_variant:
        for d in found:
            groups[d.with_variant(None)].append(d.variant)
    all_variants = set(variants)
    tokens = sorted({t for v in variants if v for t in v.split(",")})
    out = []
    for diag, where in groups.items():
        have = set(where)
        if have == all_variants:
            out.append(diag)
            continue
        token = next((t for t in tokens if {v for v in variants if v and t in v.split(",")} == have), None)
        if token is not None:
            out.append(diag.with_variant(token))
        else:
            out.extend(diag.with_variant(v) for v in sorted(have, key=str))
    return out
