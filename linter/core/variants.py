"""Reporting a finding once across the variants of one file."""

from __future__ import annotations

from collections import defaultdict

from .diagnostics import Diagnostic


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
