"""`sapo-lint`: lint recipes; `rules`, `rule CODE`, `schema build`, `explain`, `convert`.

The command group and the entry point; one module per command, each imported only when its command is named
(`sapo-lint --version` and plain linting load neither rich nor the estimator). Shared options: `options.py`."""

# ruff: noqa: E402 - the Ctrl-C handler is installed before the imports that take most of a cold start
from __future__ import annotations

import os
import signal
import sys

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141  # 128 + SIGINT, 128 + SIGPIPE: what a shell reports for those signals


def _exit_interrupted(signum, frame) -> None:
    """Ctrl-C outside `main`'s own handling (while this package and click are imported, or once `main` has decided
    how to exit): the end of an interrupted run, a newline after the terminal's `^C` and 130, never a traceback.
    Nothing is open then that needs closing."""
    os.write(2, b"\n")
    os._exit(EXIT_INTERRUPTED)


def _exit_on_interrupt() -> None:
    """From here on, Ctrl-C ends the process with `_exit_interrupted`, unless it is ignored (a background job) or
    handled by a program that imported this package."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _exit_interrupted)


_exit_on_interrupt()  # until the imports below are done (most of a cold start)

from typing import ClassVar

import click

from .. import __version__
from ..clikit import DefaultCommandGroup
from ..core.printable import printable


class ClosedPipe(Exception):
    """The reader of standard output went away (`sapo-lint rules | head -1`)."""


class DefaultToCheck(DefaultCommandGroup):
    """`sapo-lint PATH...` (or plain `sapo-lint`) means `sapo-lint check PATH...`. Each command's module is imported
    only when it is named: `explain` (rich, the estimator) and `convert` cost linting nothing."""

    default, default_without_arguments = "check", True
    lazy: ClassVar[dict[str, tuple[str, str]]] = {
        name: (f"{__name__}.{module}", attribute)
        for name, module, attribute in (
            ("check", "check", "check"),
            ("rules", "rules", "list_rules"),
            ("rule", "rule", "show_rule"),
            ("schema", "schema", "schema"),
            ("explain", "explain", "explain"),
            ("convert", "convert", "convert"),
            ("server", "server", "server"),
        )
    }

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # click would exit 1, which means "errors found" here
            raise ClosedPipe() from None


@click.group(cls=DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sapo-lint")
def cli():
    """Check verl SAPO training recipes before they reach a cluster.

    `sapo-lint [PATH]...` lints recipes (YAML with a top-level `recipe:` key) and run scripts (*.sh) under the
    given files and directories (default: the current directory). Exit codes: `sapo-lint check --help`."""


class OneLineError(click.ClickException):
    """An error that is not about how the command was typed (a bad [tool.sapo-lint], an unknown rule): one line
    `sapo-lint: ...` on stderr, exit 2, without click's usage text."""

    exit_code = EXIT_USAGE

    def show(self, file=None) -> None:
        click.echo(f"sapo-lint: {self.format_message()}", err=True)


def main() -> None:
    """Console entry point: click's own errors exit 2; anything unexpected is one line, never a traceback. Ctrl-C,
    at any point, exits 130 (as a shell reports SIGINT) after one newline, and a reader that stops reading
    (`sapo-lint rules | head -1`) ends the run quietly with 141 (SIGPIPE)."""
    try:
        _main()
    except KeyboardInterrupt:  # while an error, or a first Ctrl-C, was being handled
        click.echo(err=True)
        sys.exit(EXIT_INTERRUPTED)
    finally:
        _exit_on_interrupt()  # to the process's end: unwinding, flushing the output


def _main() -> None:
    try:
        # Without standalone mode click returns what `ctx.exit(code)` was given (report --fail-on-gates, a doctor usage
        # error) instead of exiting with it; the commands themselves return None: exit 0.
        sys.exit(cli.main(standalone_mode=False))
    except click.Abort as exc:  # click turns Ctrl-C into Abort
        if isinstance(exc.__cause__, KeyboardInterrupt):
            sys.exit(EXIT_INTERRUPTED)
        click.echo("Aborted.", err=True)
        sys.exit(EXIT_USAGE)
    except click.ClickException as exc:
        exc.message = printable(exc.message)  # file names and typed text in it: one line, no escape sequences
        exc.show()
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        click.echo(err=True)
        sys.exit(EXIT_INTERRUPTED)
    except ClosedPipe:
        # Python would report the failed flush of stdout at exit: point stdout at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_BROKEN_PIPE)
    except Exception as exc:  # noqa: BLE001 - the contract: one clear line and exit 2
        click.echo(printable(f"sapo-lint: internal error: {type(exc).__name__}: {exc}"), err=True)
        sys.exit(EXIT_USAGE)


if signal.getsignal(signal.SIGINT) is _exit_interrupted:  # imported: a Ctrl-C is a KeyboardInterrupt again
    signal.signal(signal.SIGINT, signal.default_int_handler)

if __name__ == "__main__":
    main()
