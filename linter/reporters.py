"""Output formats (README, "Usage"): text, json, github workflow annotations, SARIF 2.1.0."""

from __future__ import annotations

import json
import re
from collections import Counter

from .core.checked import NO_TRAINER_COMMAND, NotChecked
from .core.diagnostics import COMMAND_LINE, FIX_LABEL, Applicability, Diagnostic, Severity
from .core.printable import printable
from .core.redaction import redact_line
from .core.words import counted
from .core.wrapping import wrap_prose
from .report import Report
from .sarif import render_sarif
from .stack import ResolvedStack

FORMATS = ("text", "concise", "json", "github", "sarif")

NotCheckedFiles = list[tuple[str, NotChecked]]  # (path, why) of each linted file none of whose commands was checked
VerlOfFiles = dict[str, ResolvedStack]  # path -> the stack its trainer commands were linted with (`stack`)


def summary(diagnostics: list[Diagnostic], files: int, not_checked: NotCheckedFiles = ()) -> dict:
    """The counts of findings by severity; how many of the `files` were checked and how many not, the reasons with
    how many files each (`not_checked_reasons`, as the text summary names them), and each file not checked."""
    counts = Counter(d.severity.value for d in diagnostics)
    return {
        "files": files,
        "error": counts["error"],
        "warning": counts["warning"],
        "info": counts["info"],
        "checked": files - len(not_checked),
        "not_checked": len(not_checked),
        "not_checked_reasons": [
            {"reason": why.reason, "message": why.message, "files": n} for why, n in _reasons(not_checked)
        ],
        "not_checked_files": [
            {"path": path, "reason": why.reason, "message": why.message} for path, why in not_checked
        ],
    }


def _reasons(not_checked: NotCheckedFiles) -> list[tuple[NotChecked, int]]:
    """Each reason with its number of files, the most frequent first, files with no trainer command last. A reason
    met with different details (two unknown configs) is named without them (`unknown config (2)`): the summary stays
    one line; the findings, --verbose and JSON's `not_checked_files` name each."""
    by_reason: dict[str, list[NotChecked]] = {}
    for _, why in not_checked:
        by_reason.setdefault(why.reason, []).append(why)
    grouped = [
        (found[0] if len(set(found)) == 1 else NotChecked(reason, reason.replace("-", " ")), len(found))
        for reason, found in by_reason.items()
    ]
    return sorted(grouped, key=lambda item: (item[0] == NO_TRAINER_COMMAND, -item[1], item[0].message))


def render_json(report: Report) -> str:
    """The findings, the summary, and per file with a trainer command the stack it was linted with (`verl`: path ->
    `{"version", "source", "path", "snapshot", "megatron_core", "mbridge", "why"}`, `ResolvedStack.as_dict`)."""
    diagnostics, files, not_checked, verl = report.diagnostics, report.files, report.not_checked, report.verl
    return json.dumps(
        {
            "version": 1,
            "diagnostics": [d.as_dict() for d in diagnostics],
            "summary": summary(diagnostics, files, not_checked),
            "verl": {path: choice.as_dict() for path, choice in (verl).items()},
        },
        indent=2,
    )


# ANSI SGR: the colour, then bold; reset after (what click.style wrote; click stays in the CLI packages)
_BOLD_COLOR = {Severity.ERROR: "\x1b[31m\x1b[1m", Severity.WARNING: "\x1b[33m\x1b[1m", Severity.INFO: "\x1b[34m\x1b[1m"}
_RESET = "\x1b[0m"


def render_concise(report: Report) -> str:
    """One line per finding (the code coloured by severity with `color`), then, with `verbose`, a line per file not
    checked, then which verl was linted against (`_verl_notes`) and the summary line, unless not `summary`
    (--quiet), which names the info findings left out (`hidden_infos`: in pre-commit and CI). What a file name or
    file text holds is escaped (`_printable_line`): a finding is one line, whatever the file says."""
    lines = [_printable_line(d, _styled_code(d, report.color)) for d in report.diagnostics]
    return "\n".join([*lines, *_footer(report)] if report.summary else lines)


def render_text(report: Report) -> str:
    """Each finding as a headline (`path:line:col: CODE what is wrong [variant]`), the source line with a caret
    under the setting (where `source_line` has it), then `= note:` (why), `= help:` (what to do, the fix), `= see
    also:` and `= also CODE name:` lines (`message_parts`: the message's own parts), wrapped at `width` (never in
    a pipe); a blank line between findings; then the footer of `render_concise`."""
    blocks = ["\n".join(_finding_block(d, report)) for d in report.diagnostics]
    body = "\n\n".join(blocks)
    if not report.summary:
        return body
    return "\n\n".join(part for part in (body, "\n".join(_footer(report))) if part)


def _styled_code(d: Diagnostic, color: bool) -> str | None:
    return f"{_BOLD_COLOR[d.severity]}{d.code}{_RESET}" if color else None


def _finding_block(d: Diagnostic, report: Report) -> list[str]:
    from .message_parts import message_parts

    parts = message_parts(d.message)
    where = printable(f"{d.location.path}:{d.location.line}:{d.location.column}")
    variant = f" [{printable(d.variant)}]" if d.variant else ""
    lines = [f"{where}: {_styled_code(d, report.color) or d.code} {printable(parts.headline)}{variant}"]
    lines += _excerpt(d, report)
    items = [("note", parts.note)] if parts.note else []
    items += [("help", h) for h in parts.helps]
    if d.fix:
        items.append((FIX_LABEL[d.fix.applicability], d.fix.text))
    if d.related:
        items.append(("see also", d.see_also().removeprefix("see also ")))
    items += [(f"also {a.code} {a.name}", a.message) for a in d.also]
    for label, text in items:
        lines += _wrapped(f"  = {label}: ", printable(text), report.width)
    return lines


# A source line longer than this is shown as a window around the setting.
_EXCERPT_WIDTH = 160


def _excerpt(d: Diagnostic, report: Report) -> list[str]:
    """The finding's source line, numbered, with a caret under the setting's key (up to `=`, `:` or a blank), as
    ruff and rustc show it; nothing where the line is not at hand (`--override`, standard input, a changed file)."""
    text = report.source_line(d.location.path, d.location.line) if report.source_line else None
    if text is None:
        return []
    text = redact_line(text.replace("\t", " "))
    start = max(0, d.location.column - 1 - _EXCERPT_WIDTH // 4) if len(text) > _EXCERPT_WIDTH else 0
    shown = text[start : start + _EXCERPT_WIDTH]
    if printable(shown) != shown:  # escaped characters would move the caret: the line alone
        return [f"{d.location.line} | {printable(shown)}"]
    column = d.location.column - 1 - start
    key = re.match(r"[^\s=:]*", shown[column:]).group()
    number = str(d.location.line)
    gutter = " " * len(number)
    return [
        f"{gutter} |",
        f"{number} | {shown.rstrip()}",
        f"{gutter} | {' ' * column}{'^' * max(1, len(key))}",
    ]


def _wrapped(label: str, text: str, width: int | None) -> list[str]:
    """`label` then `text`, wrapped at `width` with later lines indented under the text; one line when `width` is
    None."""
    if width is None or len(label) + len(text) <= width:
        return [label + text]
    return wrap_prose(text, max(width, len(label) + 20), first_indent=label, indent=" " * len(label))


def _footer(report: Report) -> list[str]:
    """What the text report ends with: with `verbose`, a line per file not checked; which verl; the summary line;
    how many infos an unattended run left out."""
    listed = [printable(f"{path}: not checked: {why.message}") for path, why in report.not_checked]
    footer = [
        *(listed if report.verbose else []),
        *_verl_notes(report.verl),
        _summary_line(report.diagnostics, report.files, report.not_checked),
    ]
    if report.hidden_infos:
        footer.append(
            f"{counted(report.hidden_infos, 'info')} not shown in pre-commit and CI: -v (or `show-infos = true`) "
            f"shows {'it' if report.hidden_infos == 1 else 'them'}."
        )
    return footer


def _verl_notes(verl: VerlOfFiles) -> list[str]:
    """One line per verl the run linted against (`Linted against verl 0.10.0.dev from ./verl (source tree, snapshot
    cached).`), with how many files each when there are several."""
    counts = Counter(choice.describe() for choice in verl.values())
    many = len(counts) > 1
    return [
        printable(f"Linted against {said}" + (f" ({n} {'file' if n == 1 else 'files'})." if many else "."))
        for said, n in counts.items()
    ]


def _printable_line(d: Diagnostic, code: str | None = None) -> str:
    """`Diagnostic.text_line` with control, separator and bidi characters of its path, message, variant and fix
    escaped (`core.printable`); `code` (the code, styled) is inserted as it is."""
    fix = d.fix and d.fix._replace(edits=tuple(e._replace(content=printable(e.content)) for e in d.fix.edits))
    return d._replace(
        location=d.location._replace(path=printable(d.location.path)),
        message=printable(d.message),
        variant=d.variant and printable(d.variant),
        fix=fix,
        related=tuple(r._replace(path=printable(r.path)) for r in d.related),
    ).text_line(code)


def _summary_line(diagnostics: list[Diagnostic], files: int, not_checked: NotCheckedFiles = ()) -> str:
    """`Found 2 errors, 1 warning, 0 infos in 30 files.` or `All checks passed (30 files).`; where a file was not
    checked, instead of the second and after the first, `Checked 28 of 30 files; 2 not checked: unknown config
    `my_cfg` (1), no trainer command (1).` (escaped: a config name is the file's text). Never that all checks passed
    when none ran."""
    noun = "file" if files == 1 else "files"
    found = ""
    if diagnostics:
        counts = Counter(d.severity for d in diagnostics)
        found = (
            f"Found {counted(counts[Severity.ERROR], 'error')}, {counted(counts[Severity.WARNING], 'warning')}, "
            f"{counted(counts[Severity.INFO], 'info')} in {files} {noun}."
        )
    if not_checked:
        reasons = ", ".join(f"{why.message} ({n})" for why, n in _reasons(not_checked))
        coverage = f"Checked {files - len(not_checked)} of {files} {noun}; {len(not_checked)} not checked: {reasons}."
        return printable(f"{found} {coverage}" if found else coverage)
    if found:
        return found
    return (
        f"All checks passed ({files} {noun})." if files else "Nothing checked: no recipe or run script among the files."
    )


def _escape_data(text: str) -> str:
    """GitHub's own escaping of an annotation's message, then what the runner's log would still show raw (ESC,
    BEL, bidi controls) escaped as in text output."""
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(report: Report) -> str:
    """A workflow annotation per finding, then one per file not checked: a warning for a file that could not be
    checked, a notice (with `verbose` only) for a script with no trainer command."""
    diagnostics, not_checked, verbose = report.diagnostics, report.not_checked, report.verbose
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
    lines = []
    for d in diagnostics:
        title = f"{d.code} {d.name}" + (f" [{d.variant}]" if d.variant else "")
        if d.location.path == COMMAND_LINE:  # no file to annotate: the run's annotation names the override
            title += f" (--override {d.location.line})"
            props = f"title={_escape_property(title)}"
        else:
            props = (
                f"file={_escape_property(d.location.path)},line={d.location.line},col={d.location.column},"
                f"title={_escape_property(title)}"
            )
        # An annotation has one location: the related ones are named in its message, as in the text output, and so
        # are the findings of the same cause.
        message = (f"{d.message} ({d.see_also()})" if d.related else d.message) + d.also_messages()
        lines.append(f"::{level[d.severity]} {props}::{_escape_data(message)}")
    for path, why in not_checked:
        if why == NO_TRAINER_COMMAND and not verbose:
            continue
        annotation = "notice" if why == NO_TRAINER_COMMAND else "warning"
        props = f"file={_escape_property(path)},title={_escape_property('sapo-lint: not checked')}"
        lines.append(f"::{annotation} {props}::{_escape_data(f'not checked: {why.message}')}")
    return "\n".join(lines)


RENDER = {
    "text": render_text,
    "concise": render_concise,
    "json": render_json,
    "github": render_github,
    "sarif": render_sarif,
}


# --- --statistics -----------------------------------------------------------------------------------------------

_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


def statistics(diagnostics: list[Diagnostic]) -> list[dict]:
    """Per code: its name, severity (the most severe, for a code reported at several), count, how many of its
    findings `--fix` fixes (`fixable`) and its fixes by applicability (`fixes`); the most frequent first."""
    by_code: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        by_code.setdefault(d.code, []).append(d)
    rows = []
    for code, found in by_code.items():
        fixes = Counter(d.fix.applicability for d in found if d.fix is not None)
        rows.append(
            {
                "code": code,
                "name": found[0].name,
                "severity": min((d.severity for d in found), key=_RANK.__getitem__).value,
                "count": len(found),
                "fixable": fixes[Applicability.SAFE],
                "fixes": {a.value: fixes[a] for a in Applicability},
            }
        )
    return sorted(rows, key=lambda r: (-r["count"], r["code"]))


# How --statistics' text names each kind of fix: "fixable" is what `--fix` fixes.
_FIX_COUNTED = {Applicability.SAFE: "fixable", Applicability.UNSAFE: "unsafe", Applicability.DISPLAY_ONLY: "hint(s)"}


def render_statistics_text(report: Report) -> str:
    """One line per code (count, code, severity, how many fixable, unsafe and hints, name), then the usual footer
    (`render_concise`)."""
    rows = [
        (r, ", ".join(f"{r['fixes'][a.value]} {word}" for a, word in _FIX_COUNTED.items() if r["fixes"][a.value]))
        for r in statistics(report.diagnostics)
    ]
    width = max([11, *(len(fixes) for _, fixes in rows)])
    lines = [
        printable(f"{r['count']:>6}  {r['code']:<7} {r['severity']:<8} {fixes:<{width}} {r['name']}")
        for r, fixes in rows
    ]
    return "\n".join([*lines, *_footer(report)] if report.summary else lines)


def render_statistics_json(report: Report) -> str:
    """The counts per code, the summary and the verl of each file (`render_json`)."""
    diagnostics, files, not_checked, verl = report.diagnostics, report.files, report.not_checked, report.verl
    return json.dumps(
        {
            "version": 1,
            "statistics": statistics(diagnostics),
            "summary": summary(diagnostics, files, not_checked),
            "verl": {path: choice.as_dict() for path, choice in (verl).items()},
        },
        indent=2,
    )


STATISTICS = {"text": render_statistics_text, "json": render_statistics_json}
