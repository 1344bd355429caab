"""The command group both console scripts build on: a default subcommand, and subcommands imported only when named."""

from __future__ import annotations

from typing import ClassVar

import click
from click.shell_completion import BashComplete, add_completion_class


class DefaultCommandGroup(click.Group):
    """`prog ARGS...` means `prog <default> ARGS...` unless the first word names a subcommand (or asks for help or
    the version). The subcommands in `lazy` (name -> (module, attribute)) are imported only when named, so the
    default command does not pay for them."""

    default = ""
    default_without_arguments = False  # `prog` alone runs the default command (else click shows the help)
    lazy: ClassVar[dict[str, tuple[str, str]]] = {}

    def list_commands(self, ctx):
        return sorted([*self.commands, *self.lazy])

    def get_command(self, ctx, name):
        if name in self.lazy and name not in self.commands:
            from importlib import import_module

            module, attribute = self.lazy[name]
            self.add_command(getattr(import_module(module), attribute), name)
        return super().get_command(ctx, name)

    def parse_args(self, ctx, args):
        named = bool(args) and args[0] in (*self.commands, *self.lazy, "--help", "-h", "--version")
        # Completing the first word (`prog ex<TAB>`, no word before it) stays here: `shell_complete` below.
        completing_first_word = ctx.resilient_parsing and not args
        if not named and (args or (self.default_without_arguments and not completing_first_word)):
            args = [self.default, *args]
        return super().parse_args(ctx, args)

    def shell_complete(self, ctx, incomplete):
        """The first word may name a command or be the default command's first argument (`sapo-lint ex<TAB>`:
        `explain`, and the files starting with `ex`), or one of either's options."""
        default = self.get_command(ctx, self.default)
        offered = [*super().shell_complete(ctx, incomplete), *default.shell_complete(ctx, incomplete)]
        if not incomplete.startswith("-"):
            first = next(p for p in default.get_params(ctx) if isinstance(p, click.Argument))
            offered += first.shell_complete(ctx, incomplete)
        return list({(item.type, item.value): item for item in offered}.values())  # `--help` is both's


class FilesBesideOthers(BashComplete):
    """click's bash completion, except that files are offered beside the other candidates (`sapo-lint ex<TAB>`:
    `explain` and `examples/`); click's own script offers them only instead of all others."""

    source_template = BashComplete.source_template.replace(
        "COMPREPLY=()\n            compopt -o default",
        'compopt -o filenames\n            COMPREPLY+=($(compgen -f -- "$value"))',
    )


add_completion_class(FilesBesideOthers)  # for `bash_source`: both console scripts import this module
