"""What every output format renders: one `Report` of a run, so that each format is `render(report) -> str` and the
command line builds the report once (README, "Usage": text, json, github, sarif, and `--statistics`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .core.checked import NotChecked
from .core.diagnostics import Diagnostic


class Report(NamedTuple):
    """A run's findings and what the formats say around them; a format uses what it shows."""

    diagnostics: list[Diagnostic]
    files: int  # files linted, unreadable ones included
    not_checked: list[tuple[str, NotChecked]] = []  # (path, why) of each file none of whose commands was checked
    verl: Mapping[str, Any] = {}  # path -> the stack its commands were linted with (`stack.ResolvedStack`)
    verbose: bool = False  # name every file not checked (text, github)
    color: bool = False  # colour the codes (text)
    summary: bool = True  # the summary and notes after the findings (text; False: --quiet)
    hidden_infos: int = 0  # infos left out of an unattended run's text report (`cli.check`)
    width: int | None = None  # the terminal's columns, to wrap the text format's notes at; None: never wrap (a pipe)
    # The text of a file's line (path, 1-based line), for the text format's source excerpts; None: none shown
    source_line: Callable[[str, int], str | None] | None = None
