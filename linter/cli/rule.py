"""`sapo-lint rule CODE`: one rule explained, with a bad and a good example."""

from __future__ import annotations

import click

from . import OneLineError


@click.command("rule")
@click.argument("code")
def show_rule(code):
    """Explain one rule, with a bad and a good example."""
    from ..rules import documenting_rule

    code = code.upper()
    r = documenting_rule(code)
    if r is None:
        shellcheck = " (SH<number> is shellcheck's SC<number>: SC1000 to SC3999)" if code.startswith("SH") else ""
        raise OneLineError(f"no rule {code}{shellcheck}; `sapo-lint rules` lists them")
    if r.code != code:
        click.echo(f"{code} is shellcheck's SC{code[2:]}: https://www.shellcheck.net/wiki/SC{code[2:]}\n")
    click.echo(f"{r.code} {r.name} ({r.severity.value})\n\n{r.summary}\n\n{r.explanation}\n")
    click.echo("Bad:\n" + _indent(r.bad) + "\n\nGood:\n" + _indent(r.good))
    click.echo(f"\nDefined in {r.module.replace('.', '/')}.py")


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
