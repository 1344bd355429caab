"""The command group both console scripts build on: a default subcommand, and subcommands imported only when named."""

from __future__ import annotations

from typing import ClassVar

import click


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
        if not named and (args or self.default_without_arguments):
            args = [self.default, *args]
        return super().parse_args(ctx, args)
