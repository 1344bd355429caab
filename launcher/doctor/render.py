"""The doctor's output: plain text (`render_text`) and, on a terminal, rich tables (`render_rich`)."""

from __future__ import annotations

from sapo_toolkit.linter.core.words import counted

from .facts import ADVISORY, BLOCKING, OK, Report, _join


def _package_rows(report: Report) -> list[tuple[str, str]]:
    rows = []
    for name, version, present in report.packages:
        rows.append((name, version if version else ("installed (no version metadata)" if present else "-")))
    return rows


def _summary_lines(report: Report) -> list[tuple[str, str]]:
    d = report.device
    lines = [("device", f"{d.kind or 'none'} x {d.count} visible (--device {report.requested}; {d.how})")]
    if report.cann is not None:
        c = report.cann
        lines.append(
            (
                "CANN",
                f"{c.version or 'unknown'}"
                + (f" ({c.info_file})" if c.info_file else "")
                + f"; env {_join(k for k, _ in c.env) or 'not set'}",
            )
        )
    p = report.patch
    applies = "unknown" if p.verl_applies is None else (_join(p.verl_applies) or "nothing")
    lines.append(
        (
            "vLLM NPU patch",
            f"vllm {p.vllm or '-'} -> {p.variant or 'none'}"
            + (f"; verl {p.verl} applies: {applies}" if p.verl else "")
            + ("" if p.npu else " (not NPU: verl applies no NPU patches here)"),
        )
    )
    if report.mbridge_params is not None:
        lines.append(("mbridge save_weights", _join(sorted(report.mbridge_params))))
    if report.recipe is not None:
        r = report.recipe
        lines.append(("recipe", f"{r.path} (verl {r.verl})"))
        for v in r.variants:
            shape = (
                f"{v.variant or '(single variant)'}: {counted(v.n_gpus_per_node, 'device')}/node x "
                f"{counted(v.nnodes, 'node')}, rollout {v.rollout}, engine {v.model_engine}"
            )
            lines.append(("", shape))
    return lines


def render_text(report: Report) -> str:
    """Plain text (for pipes and files)."""
    out = ["sapo-launch doctor", ""]
    out.extend(f"{k:<22}{v}" for k, v in _summary_lines(report))
    out.append("")
    out.append("packages")
    out.extend(f"  {name:<20}{version}" for name, version in _package_rows(report))
    out.append("")
    out.append("findings")
    for f in report.findings:
        out.append(f"  {f.severity.upper() if f.severity == BLOCKING else f.severity:<10}{f.check}: {f.message}")
        if f.source and f.severity != OK:
            out.append(f"  {'':<10}source: {f.source}")
    out.append("")
    out.append(_verdict(report))
    return "\n".join(out) + "\n"


def _verdict(report: Report) -> str:
    counts = f"{report.count(BLOCKING)} blocking, {report.count(ADVISORY)} advisory, {report.count(OK)} ok"
    return f"{counts}: " + ("blocking incompatibilities found (exit 1)" if report.blocking else "nothing blocking")


def render_rich(report: Report, console) -> None:
    """Tables on a terminal (rich is imported by the caller, only here)."""
    from rich.table import Table

    head = Table(show_header=False, box=None, pad_edge=False)
    for k, v in _summary_lines(report):
        head.add_row(f"[bold]{k}[/bold]", v)
    console.print(head)
    packages = Table(title="packages", title_justify="left")
    packages.add_column("package")
    packages.add_column("installed")
    for name, version in _package_rows(report):
        packages.add_row(name, version if version != "-" else "[dim]-[/dim]")
    console.print(packages)
    style = {BLOCKING: "bold red", ADVISORY: "yellow", OK: "green"}
    findings = Table(title="findings", title_justify="left")
    findings.add_column("severity")
    findings.add_column("check")
    findings.add_column("finding", overflow="fold")
    for f in report.findings:
        text = f.message + (f"\n[dim]source: {f.source}[/dim]" if f.source and f.severity != OK else "")
        findings.add_row(f"[{style[f.severity]}]{f.severity}[/]", f.check, text)
    console.print(findings)
    console.print(f"[{'bold red' if report.blocking else 'green'}]{_verdict(report)}[/]")
