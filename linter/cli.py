"""`sapo-lint`: lint recipes; `rules`, `rule CODE`, `schema build`."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from . import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
SHELLCHECK_CODE = re.compile(r"SH\d{4}")  # shellcheck's SC<n> passed through (documented by SH100)
SHELLCHECK_PREFIX = re.compile(r"SH\d{1,4}")  # `--select SH2` picks shellcheck's SC2xxx


class DefaultToCheck(click.Group):
    """`sapo-lint PATH...` means `sapo-lint check PATH...` unless the first word is a subcommand.
    `explain` (rich, the estimator) and `convert` are imported only when asked for, to keep linting fast."""

    lazy = {"explain": ("sapo_toolkit.linter.explain", "explain"), "convert": ("sapo_toolkit.linter.convert", "convert")}

    def list_commands(self, ctx):
        return sorted([*self.commands, *self.lazy])

    def get_command(self, ctx, name):
        if name in self.lazy and name not in self.commands:
            from importlib import import_module

            module, attribute = self.lazy[name]
            self.add_command(getattr(import_module(module), attribute), name)
        return super().get_command(ctx, name)

    def parse_args(self, ctx, args):
        known = (*self.commands, *self.lazy, "--help", "-h", "--version")
        if not args or args[0] not in known:
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sapo-lint")
def cli():
    """Check verl SAPO training recipes before they reach a cluster.

    `sapo-lint [PATH]...` lints recipes (YAML with a top-level `recipe:` key) under the given files and
    directories (default: the current directory)."""


@cli.command("check")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))  # a dangling name is a usage error
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github", "sarif"]), default="text", show_default=True)
@click.option("--select", multiple=True, help="Only these rule codes or prefixes (repeatable, or comma-separated).")
@click.option("--ignore", multiple=True, help="Skip these rule codes or prefixes (repeatable, or comma-separated).")
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE",
              help="A Hydra override applied on top of every recipe (repeatable).")
@click.option("--verl-version", help="Check against this verl schema snapshot instead of the recipe's.")
@click.option("--accelerator", help="Accelerator from schemas/devices.json, instead of the recipe's `hardware.accelerator`.")
@click.option("--no-shellcheck", is_flag=True, help="Do not run shellcheck on run scripts.")
@click.option("--fix", is_flag=True, help="Apply mechanical fixes (tau path, `+` prefix) in place.")
@click.option("--add-noqa", is_flag=True,
              help="Suppress every current finding with a `# sapo-lint: noqa: CODE` comment on its line (on a script's "
                   "continued line: where the command ends).")
@click.option("--statistics", is_flag=True, help="Counts per rule code instead of the findings (text or json).")
@click.option("--warnings-as-errors", is_flag=True, help="Exit 1 on warnings too.")
def check(paths, fmt, select, ignore, overrides, verl_version, accelerator, no_shellcheck, fix, add_noqa, statistics,
          warnings_as_errors):
    """Lint recipes under PATHS."""
    from .lint import lint_paths
    from .reporters import RENDER, STATISTICS
    from .settings import SettingsError, load_settings

    if fix and add_noqa:
        raise click.UsageError("--fix and --add-noqa do not go together: fix first, then suppress what is left")
    if statistics and fmt not in STATISTICS:
        raise click.UsageError(f"--statistics is written as {' or '.join(STATISTICS)}, not {fmt}")

    try:
        settings, _ = load_settings(Path.cwd())
    except SettingsError as exc:  # a configuration error, not a usage error: one line, no usage boilerplate
        raise click.ClickException(str(exc)) from None
    settings.select = _codes(select) or settings.select
    settings.ignore = [*settings.ignore, *_codes(ignore)]
    settings.warnings_as_errors = warnings_as_errors or settings.warnings_as_errors
    settings.shellcheck = settings.shellcheck and not no_shellcheck
    _check_codes(settings.select + settings.ignore)
    targets = list(paths) or [Path(".")]
    result = lint_paths(targets, settings, list(overrides), verl_version, accelerator)
    if fix:
        from .fix import apply_fixes

        try:
            applied = apply_fixes(result.diagnostics)
        except OSError as exc:
            raise click.ClickException(f"cannot apply fixes: {exc.strerror or exc}: {exc.filename}") from None
        if applied:
            click.echo(f"Fixed {applied} override(s).", err=True)
            result = lint_paths(targets, settings, list(overrides), verl_version, accelerator)
    if add_noqa:
        result = _add_noqa(result, lambda: lint_paths(targets, settings, list(overrides), verl_version, accelerator))
    render = (STATISTICS if statistics else RENDER)[fmt]
    output = render(result.diagnostics, result.files, color=sys.stdout.isatty()) if fmt == "text" else render(result.diagnostics, result.files)
    if output:
        click.echo(output)
    severities = {d.severity.value for d in result.diagnostics}
    if result.files == 0 and not result.named_but_skipped and not result.unreadable:
        click.echo(f"sapo-lint: no recipes or run scripts found under {', '.join(map(str, targets))} (recipes are "
                   "*.yaml/*.yml with a top-level `recipe:` key, run scripts *.sh)", err=True)
        sys.exit(EXIT_USAGE)
    if result.unreadable:
        sys.exit(EXIT_USAGE)
    if "error" in severities or (settings.warnings_as_errors and "warning" in severities):
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_OK)


def _add_noqa(result, lint_again):
    """Write the noqa comments, say what was done and what could not be, and lint again."""
    from .fix import add_noqa

    try:
        outcome = add_noqa(result.diagnostics)
    except OSError as exc:
        raise click.ClickException(f"cannot add noqa comments: {exc.strerror or exc}: {exc.filename}") from None
    click.echo(f"Added {outcome.comments} noqa comment(s) covering {outcome.covered} finding(s) in {outcome.files} "
               "file(s).", err=True)
    for d, why in outcome.left:
        click.echo(f"{d.location.path}:{d.location.line}:{d.location.column}: {d.code} not suppressed: {why}", err=True)
    return lint_again() if outcome.comments else result


def _codes(values) -> list[str]:
    return [c.strip().upper() for v in values for c in v.split(",") if c.strip()]


def _check_codes(codes: list[str]) -> None:
    from .rules import MODULES

    unknown = [c for c in codes if not any(code.startswith(c) for code in MODULES) and not SHELLCHECK_PREFIX.fullmatch(c)]
    if unknown:
        raise click.UsageError(f"unknown rule code or prefix: {', '.join(unknown)} (see `sapo-lint rules`)")


@cli.command("rules")
@click.option("--markdown", is_flag=True, help="docs/rules.md: a table of every rule, then a section per rule.")
def list_rules(markdown):
    """List every rule: code, name, severity, summary."""
    from .rules import all_rules

    rules = all_rules()
    if markdown:
        from .ruledocs import rules_markdown

        click.echo(rules_markdown(rules))
        return
    for r in rules.values():
        click.echo(f"{r.code:<7} {r.severity.value:<8} {r.name:<34} {r.summary}")


@cli.command("rule")
@click.argument("code")
def show_rule(code):
    """Explain one rule, with a bad and a good example."""
    from .rules import all_rules

    rules = all_rules()
    code = code.upper()
    r = rules.get(code) or (rules.get("SH100") if SHELLCHECK_CODE.fullmatch(code) else None)
    if r is None:
        raise click.UsageError(f"no rule {code!r} (see `sapo-lint rules`)")
    if r.code != code:
        click.echo(f"{code} is shellcheck's SC{code[2:]}: https://www.shellcheck.net/wiki/SC{code[2:]}\n")
    click.echo(f"{r.code} {r.name} ({r.severity.value})\n\n{r.summary}\n\n{r.explanation}\n")
    click.echo("Bad:\n" + _indent(r.bad) + "\n\nGood:\n" + _indent(r.good))
    click.echo(f"\nDefined in {r.module.replace('.', '/')}.py")


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


@cli.group("schema")
def schema():
    """Schema snapshots generated from verl, megatron-core and mbridge distributions."""


@schema.command("build")
@click.option("--wheel", "wheels", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A verl wheel, as `pip download --no-deps verl==X` gives (repeatable).")
@click.option("--verl-root", type=click.Path(exists=True, path_type=Path),
              help="A verl source checkout, or a `git archive` tarball of one (its commit goes into the snapshot).")
@click.option("--consumer-wheel", "consumer_wheels", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="A megatron-core or mbridge wheel to snapshot too (repeatable).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Schema directory to write into (default: the installed sapo-lint's schemas/).")
def schema_build(wheels, verl_root, consumer_wheels, out):
    """Build schema snapshots, without importing verl, torch or megatron.

    With neither --wheel nor --verl-root, the installed verl distribution is read from disk."""
    from sapo_toolkit.schemas import build

    from .schema import SCHEMA_DIR

    try:
        sources = [{"wheel": w} for w in wheels] + ([{"verl_root": verl_root}] if verl_root else [])
        located = [build.locate_verl(**src) for src in sources or [{}]]
        for path in build.build_all(out or SCHEMA_DIR, located, list(consumer_wheels)):
            click.echo(f"wrote {path}")
    except build.SchemaBuildError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:  # an unwritable --out directory
        raise click.ClickException(f"cannot write the snapshots: {exc.strerror or exc}: {exc.filename}") from None


def main() -> None:
    """Console entry point: click's own errors exit 2; anything unexpected is one line, never a traceback."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(EXIT_USAGE)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_USAGE)
    except (KeyboardInterrupt, BrokenPipeError):
        sys.exit(EXIT_USAGE)
    except Exception as exc:  # noqa: BLE001 - the contract: one clear line and exit 2
        click.echo(f"sapo-lint: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(EXIT_USAGE)


if __name__ == "__main__":
    main()
