"""`sapo-lint check [PATH]...` (what plain `sapo-lint PATH...` runs): lint, fix, suppress, report."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..core.printable import printable
from ..core.words import counted
from . import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, OneLineError
from .options import ACCELERATOR, OVERRIDES, VERL_VERSION


@click.command("check")
# a dangling name is a usage error; `-` is standard input
@click.argument("paths", nargs=-1, type=click.Path(exists=True, allow_dash=True, path_type=Path))
@click.option(
    "--format",
    "--output-format",
    "fmt",
    type=click.Choice(["text", "concise", "json", "github", "sarif"]),
    default="text",
    show_default=True,
    help="text: a headline per finding, the source line, note and help lines; concise: one line per finding.",
)
@click.option("--select", multiple=True, help="Only these rule codes or prefixes (repeatable, or comma-separated).")
@click.option("--ignore", multiple=True, help="Skip these rule codes or prefixes (repeatable, or comma-separated).")
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    help="Paths not to lint, instead of [tool.sapo-lint] exclude (repeatable, or comma-separated).",
)
@click.option(
    "--extend-exclude",
    multiple=True,
    metavar="GLOB",
    help="Paths not to lint, besides [tool.sapo-lint] exclude (repeatable, or comma-separated).",
)
@OVERRIDES
@VERL_VERSION
@ACCELERATOR
@click.option("--no-shellcheck", is_flag=True, help="Do not run shellcheck on run scripts.")
@click.option(
    "--fetch-model-config",
    is_flag=True,
    help="Download the config.json of a model no local source has from the Hugging Face Hub (HF_ENDPOINT, HF_TOKEN; "
    "needs `pip install 'sapo-toolkit[hub]'`). Also [tool.sapo-lint] fetch-model-config = true.",
)
@click.option("--fix", is_flag=True, help="Apply the safe fixes (tau path, `+` prefix) in place.")
@click.option(
    "--unsafe-fixes",
    is_flag=True,
    help="With --fix or --diff: the unsafe fixes too (a guessed key for an unknown one).",
)
@click.option(
    "--diff",
    "show_diff",
    is_flag=True,
    help="Print what --fix would change as a unified diff, change nothing; exit 1 if there is any.",
)
@click.option(
    "--add-noqa",
    is_flag=True,
    help="Suppress every current finding with a `# sapo-lint: noqa: CODE` comment on its line (on a script's "
    "continued line: where the command ends).",
)
@click.option("--statistics", is_flag=True, help="Counts per rule code instead of the findings (text or json).")
@click.option("--warnings-as-errors", is_flag=True, help="Exit 1 on warnings too.")
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 1 when a file was not checked (a trainer command that could not be checked against verl's schema; "
    "a script with no trainer command does not count). Also [tool.sapo-lint] strict = true.",
)
@click.option(
    "--exit-zero",
    is_flag=True,
    help="Exit 0 even when there are findings (2 still means a usage error or an unreadable file).",
)
@click.option("-q", "--quiet", is_flag=True, help="Only the findings: no summary line, no notes on stderr.")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Name each file not checked, scripts with no trainer command included (text, github; json and sarif "
    "always do).",
)
@click.option(
    "-o",
    "--output-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report to this file (atomically) instead of standard output.",
)
@click.option(
    "--stdin-filename",
    metavar="PATH",
    help="Lint standard input (the path `-`) as this file: its suffix says recipe or script, and findings "
    "are reported under it.",
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the text report; auto: when standard output is a terminal and NO_COLOR is not set.",
)
def check(
    paths,
    fmt,
    select,
    ignore,
    exclude,
    extend_exclude,
    overrides,
    verl_version,
    accelerator,
    no_shellcheck,
    fetch_model_config,
    fix,
    unsafe_fixes,
    show_diff,
    add_noqa,
    statistics,
    warnings_as_errors,
    strict,
    exit_zero,
    quiet,
    verbose,
    output_file,
    stdin_filename,
    color,
):
    """Lint recipes and run scripts under PATHS (`-`: standard input, with --stdin-filename).

    \b
    Exit codes:
      0    no errors
      1    errors (warnings too with --warnings-as-errors; a file not checked with --strict)
      2    a usage error, a bad [tool.sapo-lint], or a file that could not be read
      130  interrupted (Ctrl-C)
    """
    from ..core.checked import fails_strict
    from ..lint import lint_paths, lint_text
    from ..report import Report
    from ..reporters import RENDER, STATISTICS
    from ..settings import SettingsError, SettingsFinder, unknown_codes

    given = [flag for flag, on in (("--fix", fix), ("--diff", show_diff), ("--add-noqa", add_noqa)) if on]
    if len(given) > 1:
        raise click.UsageError(
            f"{', '.join(given[:-1])} and {given[-1]} do not go together"
            + (": fix first, then suppress what is left" if fix and add_noqa else "")
        )
    if unsafe_fixes and not (fix or show_diff):
        raise click.UsageError("--unsafe-fixes goes with --fix or --diff")
    if statistics and fmt not in STATISTICS:
        raise click.UsageError(f"--statistics is written as {' or '.join(STATISTICS)}, not {fmt}")
    stdin = Path("-") in paths or (stdin_filename is not None and not paths)
    if stdin and (len(paths) > 1 or stdin_filename is None):
        raise click.UsageError(
            "standard input (`-`) is linted alone, named with --stdin-filename PATH (its suffix says recipe or script)"
        )
    if stdin_filename is not None and not stdin:
        raise click.UsageError("--stdin-filename names standard input: pass `-` as the only path")
    if stdin and (fix or show_diff or add_noqa):
        raise click.UsageError("--fix, --diff and --add-noqa change files, not standard input")
    cli_select, cli_ignore = _codes(select), _codes(ignore)
    unknown = unknown_codes(cli_select + cli_ignore)
    if unknown:
        raise click.UsageError(f"unknown rule code or prefix: {', '.join(unknown)} (see `sapo-lint rules`)")

    def adjust(settings):  # the command line over each project's [tool.sapo-lint]
        settings.select = cli_select or settings.select
        settings.ignore = [*settings.ignore, *cli_ignore]
        settings.exclude = [
            *(_comma_separated(exclude) if exclude else settings.exclude),
            *_comma_separated(extend_exclude),
        ]
        settings.warnings_as_errors = warnings_as_errors or settings.warnings_as_errors
        settings.strict = strict or settings.strict
        settings.shellcheck = settings.shellcheck and not no_shellcheck
        settings.fetch_model_config = fetch_model_config or settings.fetch_model_config

    finder = SettingsFinder(adjust)
    targets = list(paths) or [Path(".")]
    try:
        source = None
        if stdin:
            source = _read_stdin(stdin_filename)
            result = lint_text(
                source, finder.for_path(Path(stdin_filename)), list(overrides), verl_version, accelerator
            )
        else:

            def lint_all(progress=None):
                return lint_paths(targets, finder, list(overrides), verl_version, accelerator, progress)

            with _progress(quiet) as progress:
                result = lint_all(progress)
            if fix:
                result = _fix(result, unsafe_fixes, quiet, lint_all)
            if add_noqa:
                result = _add_noqa(result, quiet, lint_all)
        failing = any(
            d.severity.value == "error"
            or (d.severity.value == "warning" and finder.for_path(Path(d.location.path)).warnings_as_errors)
            for d in result.diagnostics
        ) or any(fails_strict(why) and finder.for_path(Path(path)).strict for path, why in result.not_checked)
    except SettingsError as exc:  # a configuration error: one line naming the file and key, no usage boilerplate
        raise OneLineError(str(exc)) from None

    if result.files == 0 and not result.named_but_skipped and not result.unreadable:
        click.echo(
            printable(
                f"sapo-lint: no recipes or run scripts found under {', '.join(map(str, targets))} "
                "(recipes are *.yaml/*.yml with a top-level `recipe:` key, run scripts *.sh)"
            ),
            err=True,
        )
        sys.exit(EXIT_USAGE)
    if show_diff:
        from ..fix import planned_fixes, unified_diff

        planned = planned_fixes(result.diagnostics, unsafe_fixes)
        _write(unified_diff(planned), output_file)
        if not quiet:
            fixes = counted(sum(f.fixes for f in planned), "override")
            click.echo(f"Would fix {fixes} in {counted(len(planned), 'file')}.", err=True)
        sys.exit(EXIT_USAGE if result.unreadable else EXIT_FINDINGS if planned else EXIT_OK)
    hidden: set = set()
    if fmt in ("text", "concise", "github") and not statistics:
        hidden = _unattended_infos(result.diagnostics, finder, verbose)
        result.diagnostics = [d for d in result.diagnostics if d not in hidden]
    render = (STATISTICS if statistics else RENDER)[fmt]
    colored = fmt in ("text", "concise") and _color(color, output_file)
    terminal = output_file is None and sys.stdout.isatty()
    report = Report(
        result.diagnostics,
        result.files,
        result.not_checked,
        result.verl,
        verbose=verbose,
        color=colored,
        summary=not quiet,
        hidden_infos=len(hidden),
        width=_terminal_width() if terminal else None,
        source_line=_line_reader(source, overrides),
    )
    output = render(report)
    _write(output, output_file, colored)
    if result.unreadable:
        sys.exit(EXIT_USAGE)
    sys.exit(EXIT_FINDINGS if failing and not exit_zero else EXIT_OK)


# Set by pre-commit in the hooks it runs, and by CI services (GitHub Actions, GitLab CI, ...): a run nobody watches.
UNATTENDED_VARIABLES = ("PRE_COMMIT", "CI")


def _unattended_infos(diagnostics, finder, verbose: bool) -> set:
    """The info findings a text or github report leaves out: in pre-commit and CI, unless `-v` or `[tool.sapo-lint]
    show-infos` asks for them (they say what was not checked or assumed; the errors and warnings are what to act
    on). JSON and SARIF keep every finding."""
    if verbose or not any(os.environ.get(v) for v in UNATTENDED_VARIABLES):
        return set()
    return {
        d for d in diagnostics if d.severity.value == "info" and not finder.for_path(Path(d.location.path)).show_infos
    }


def _read_stdin(name: str):
    from ..sources.files import MAX_BYTES, UnreadableFile, decode_text

    try:
        return decode_text(name, sys.stdin.buffer.read(MAX_BYTES + 1))
    except UnreadableFile as exc:
        raise click.ClickException(f"standard input ({name}): {exc}") from None


def _line_reader(stdin_source=None, overrides=()):
    """The text of a line of a linted file, for the text format's excerpts: each file read once, numbered as the
    linter numbers it (standard input: the text it read; `--override:N`: the Nth override); None where the file
    cannot be read now."""
    from functools import lru_cache

    from ..core.diagnostics import COMMAND_LINE
    from ..sources.files import UnreadableFile, is_regular_file, read_text

    @lru_cache(maxsize=64)
    def lines_of(path: str) -> list[str] | None:
        if stdin_source is not None and path == stdin_source.path:
            return stdin_source.text.splitlines()
        if not is_regular_file(Path(path)):
            return None
        try:
            return read_text(Path(path)).text.splitlines()
        except (OSError, UnreadableFile):
            return None

    def line(path: str, number: int) -> str | None:
        lines = list(overrides) if path == COMMAND_LINE else lines_of(path)
        return lines[number - 1] if lines is not None and 0 < number <= len(lines) else None

    return line


def _progress(quiet: bool):
    from ..progress import Progress

    return Progress(enabled=not quiet and sys.stderr.isatty(), color="NO_COLOR" not in os.environ)


def _terminal_width() -> int:
    """The terminal's width in columns (`$COLUMNS` first, as shutil reads it): shutil is imported only for output to
    a terminal."""
    import shutil

    return shutil.get_terminal_size().columns


def _color(mode: str, output_file: Path | None) -> bool:
    """--color always, or auto on a terminal unless NO_COLOR is set to anything non-empty (no-color.org)."""
    if mode != "auto":
        return mode == "always"
    return output_file is None and sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _write(output: str, output_file: Path | None, color: bool = False) -> None:
    """The report on standard output (styles kept with `color`, even when it is not a terminal), or written
    atomically to --output-file (never a half-written report)."""
    if output_file is None:
        if output:
            click.echo(output, color=color)
        return
    from ..sources.files import write_atomically

    try:
        write_atomically(output_file, (output + "\n" if output else "").encode("utf-8"))
    except OSError as exc:
        raise click.ClickException(f"cannot write {output_file}: {exc.strerror or exc}") from None


def _fix(result, unsafe, quiet, lint_again):
    from ..fix import apply_fixes

    try:
        outcome = apply_fixes(result.diagnostics, unsafe)
    except OSError as exc:
        raise click.ClickException(f"cannot apply fixes: {exc.strerror or exc}: {exc.filename}") from None
    if outcome.fixes and not quiet:
        click.echo(f"Fixed {counted(outcome.fixes, 'override')}.", err=True)
    _exit_if_changed(outcome.changed)
    return lint_again() if outcome.fixes else result


def _exit_if_changed(paths) -> None:
    """A file that changed while it was being fixed (another process wrote to it) is left as it is: one line
    each, and exit 2, to run again on what the file now holds."""
    for path in paths:
        click.echo(printable(f"sapo-lint: {path} changed while fixing; not rewritten"), err=True)
    if paths:
        sys.exit(EXIT_USAGE)


def _add_noqa(result, quiet, lint_again):
    """Write the noqa comments, say what was done and what could not be, and lint again."""
    from ..fix import add_noqa

    try:
        outcome = add_noqa(result.diagnostics)
    except OSError as exc:
        raise click.ClickException(f"cannot add noqa comments: {exc.strerror or exc}: {exc.filename}") from None
    if not quiet:
        click.echo(
            f"Added {counted(outcome.comments, 'noqa comment')} covering {counted(outcome.covered, 'finding')} in "
            f"{counted(outcome.files, 'file')}.",
            err=True,
        )
    for d, why in outcome.left:
        where = f"{d.location.path}:{d.location.line}:{d.location.column}"
        click.echo(printable(f"{where}: {d.code} not suppressed: {why}"), err=True)
    _exit_if_changed(outcome.changed)
    return lint_again() if outcome.comments else result


def _codes(values) -> list[str]:
    return [c.upper() for c in _comma_separated(values)]


def _comma_separated(values) -> list[str]:
    """The items of repeated, comma-separated options (`--select SL,SP --select TP001`)."""
    return [item.strip() for v in values for item in v.split(",") if item.strip()]
