"""SARIF 2.1.0 output (`--format sarif`), for GitHub code scanning and other SARIF consumers."""

from __future__ import annotations

import json

from .core.diagnostics import Diagnostic, Severity


def render_sarif(diagnostics: list[Diagnostic], files: int) -> str:
    from . import __version__
    from .rules import all_rules

    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
    registered = all_rules()
    rules = [
        {
            "id": r.code, "name": r.name,
            "shortDescription": {"text": r.summary},
            "fullDescription": {"text": r.explanation},
            "defaultConfiguration": {"level": level[r.severity]},
            "help": {"text": f"{r.explanation}\n\nBad:\n{r.bad}\n\nGood:\n{r.good}"},
        }
        for r in registered.values()
    ]
    # shellcheck findings (SH<SC number>) are one registered family (SH100); SARIF wants an entry per id.
    passthrough = sorted({d.code: d for d in diagnostics if d.code not in registered}.values(), key=lambda d: d.code)
    family = registered.get("SH100")
    for d in passthrough:
        sc = f"SC{d.code[2:]}"
        rules.append({
            "id": d.code, "name": d.name,
            "shortDescription": {"text": f"shellcheck {sc}"},
            "fullDescription": {"text": family.explanation if family else f"shellcheck {sc}"},
            "defaultConfiguration": {"level": level[d.severity]},
            "helpUri": f"https://www.shellcheck.net/wiki/{sc}",
        })
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for d in diagnostics:
        result = {
            "ruleId": d.code, "ruleIndex": index[d.code], "level": level[d.severity],
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": d.location.path},
                "region": {"startLine": max(d.location.line, 1), "startColumn": max(d.location.column, 1)},
            }}],
        }
        if d.variant or d.fix:
            result["properties"] = {k: v for k, v in (("variant", d.variant), ("fix", d.fix)) if v}
        results.append(result)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "sapo-lint", "version": __version__, "rules": rules}},
                  "results": results}],
    }
    return json.dumps(doc, indent=2)
