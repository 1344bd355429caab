"""`sapo-lint server`: the language server, for editors (docs/editors.md)."""

from __future__ import annotations

import click

from . import OneLineError


@click.command("server")
def server():
    """Run the language server on standard input and output (LSP, for editors).

    Diagnostics as you type, completion and hover of verl's override keys, fixes and noqa as code actions, for run
    scripts (*.sh) and recipes (*.yaml). Needs the `server` extra (pygls); set-up for VS Code, Neovim and Helix:
    docs/editors.md."""
    try:
        from ..server.app import serve
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("pygls", "lsprotocol"):
            raise
        from ..core.extras import install_command

        raise OneLineError(f"the language server needs pygls: {install_command('server')}") from None
    serve()
