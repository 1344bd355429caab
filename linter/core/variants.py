"""Variants of one file: every combination of one value per axis (`DEVICE=npu,INFER_BACKEND=vllm`), choosing
some of them by label, and reporting a finding once across them."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Iterator, Sequence, TypeVar

from .diagnostics import Diagnostic

T = TypeVar("T")


def expand(axes: Sequence[Sequence[tuple[str, T]]]) -> Iterator[tuple[str | None, tuple[T, ...]]]:
    """Every combination of one (label token, payload) per axis: the variant's label (tokens joined by commas;
    None without axes) and the chosen payloads in axis order."""
    for combo in itertools.product(*axes):
        yield ",".join(token for token, _ in combo) or None, tuple(payload for _, payload in combo)


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
