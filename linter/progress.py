"""A progress bar on stderr for a long `sapo-lint` run: shown only on a terminal, and only once the run has gone
past `DELAY_S` (a short run prints nothing extra); rich is imported then, never on the fast path."""

from __future__ import annotations

import time

DELAY_S = 1.0


class Progress:
    """`progress(done, total)` after each file; a context manager, so the bar is taken down however the run ends."""

    def __init__(self, enabled: bool, color: bool = True):
        self.enabled = enabled
        self.color = color
        self.start = time.monotonic()
        self.bar = None
        self.task = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if not self.enabled or done >= total or time.monotonic() - self.start < DELAY_S:
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            console = Console(stderr=True, no_color=not self.color)
            self.bar = Progress(
                TextColumn("sapo-lint"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("files"),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("lint", total=total)
        self.bar.update(self.task, completed=done)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()
