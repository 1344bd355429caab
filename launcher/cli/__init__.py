"""`sapo-launch`: lint, plan and run a recipe (`sapo-launch RECIPE [KEY=VALUE ...]`) here or on a Ray cluster;
`doctor`, `rerun`, `resume`, `report`, and `logs`/`stop`/`status` of a run, through the executor that ran it.

Exit codes: the trainer's own exit code when it ran (128 + N when signal N ended it; 130 for a stopped Ray job);
1 when the lint gate refuses the recipe (or `doctor` finds a blocking incompatibility); 2 for a usage error or a
recipe that cannot be planned; 8 (`gates.EXIT_GATES_FAILED`, a code trainers do not commonly use) with
`--fail-on-gates` when the trainer succeeded but a gate failed. Errors are one line on stderr, never a traceback.

The command group and the entry point; one module per command, each imported only when its command is named.
Shared options: `options.py`.
`ls`, `compare` and `report --overlay` read run directories as a set, from their records (`launcher.runset`).
"""

from __future__ import annotations

import sys
from typing import ClassVar

import click

from sapo_toolkit.linter import __version__
from sapo_toolkit.linter.clikit import DefaultCommandGroup
from sapo_toolkit.linter.core.printable import printable

from ..executors import ExecutorError

EXIT_USAGE = 2


class DefaultToRun(DefaultCommandGroup):
    """`sapo-launch RECIPE ...` means `sapo-launch run RECIPE ...`. Each command's module is imported only when it
    is named: `doctor` and `report` cost planning nothing."""

    default = "run"
    lazy: ClassVar[dict[str, tuple[str, str]]] = {
        name: (f"{__name__}.{name}", attribute)
        for name, attribute in (
            ("run", "run"),
            ("rerun", "rerun"),
            ("resume", "resume"),
            ("logs", "logs_command"),
            ("stop", "stop_command"),
            ("status", "status_command"),
            ("doctor", "doctor"),
            ("report", "report"),
            ("ls", "ls_command"),
            ("compare", "compare"),
        )
    }


@click.group(cls=DefaultToRun, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sapo-launch")
def cli():
    """Lint-gated, device-aware launcher for verl SAPO recipes."""


def main() -> None:
    """Console entry point: click's own errors exit 2; anything unexpected is one line, never a traceback."""
    try:
        # Without standalone mode click returns what `ctx.exit(code)` was given (report --fail-on-gates, a doctor usage
        # error) instead of exiting with it; the commands themselves return None: exit 0.
        sys.exit(cli.main(standalone_mode=False))
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        click.echo(printable(f"sapo-launch: {exc.format_message()}"), err=True)
        sys.exit(EXIT_USAGE)
    except ExecutorError as exc:
        click.echo(printable(f"sapo-launch: {exc.message}"), err=True)
        sys.exit(EXIT_USAGE)
    except Exception as exc:  # noqa: BLE001 - one line for the user, not a traceback
        click.echo(printable(f"sapo-launch: internal error: {type(exc).__name__}: {exc}"), err=True)
        sys.exit(EXIT_USAGE)
