"""`sapo-lint rules [--markdown]`: every rule, as a list or as docs/rules.md."""

from __future__ import annotations

import click


@click.command("rules")
@click.option("--markdown", is_flag=True, help="docs/rules.md: a table of every rule, then a section per rule.")
def list_rules(markdown):
    """List every rule: code, `[*]` where it has fixes, severity, name, summary."""
    from ..rules import all_rules

    rules = all_rules()
    if markdown:
        from ..ruledocs import rules_markdown

        click.echo(rules_markdown(rules))
        return
    width = max(len(r.name) for r in rules.values())
    for r in rules.values():
        fixable = "[*]" if r.fix else "   "  # as ruff marks the rules `--fix` can fix (`--unsafe-fixes` or not)
        click.echo(f"{r.code:<7} {fixable} {r.severity.value:<8} {r.name:<{width}}  {r.summary}")
