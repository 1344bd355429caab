"""`sapo-lint server`: the language server (pygls, stdio) for verl run scripts (`*.sh`) and `sapo-recipe/v1` recipes.

The event loop only reads and answers messages. Each document is linted a debounce interval after its last change,
on one worker thread (`analysis.analyse`, the CLI's `lint_text`); a result whose version is no longer the document's
is dropped. Completion, hover and code actions run on a second thread, from the text as it is now and the trainer
commands of the newest analysis, so they never wait behind a lint.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition

from .. import __version__, api
from ..core.diagnostics import Applicability, Diagnostic, Fix, Location, Severity
from ..fix import add_noqa
from ..rules import MODULES, SHELLCHECK_CODE
from ..sarif import help_uri
from .analysis import Analysis, analyse
from .keys import Candidate, describe_key, key_candidates, parent_of, value_candidates
from .text import OverrideAt, key_end, recipe_override_at, script_override_at

DEBOUNCE_S = 0.3  # after the last change: typing does not lint every keystroke
SOURCE = "sapo-lint"
SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}
COMPLETION_KIND = {
    "node": types.CompletionItemKind.Module,
    "dict": types.CompletionItemKind.Struct,
    "key": types.CompletionItemKind.Field,
    "group": types.CompletionItemKind.Class,
    "option": types.CompletionItemKind.EnumMember,
    "choice": types.CompletionItemKind.Value,
}
FIX_TITLE = {Applicability.SAFE: "Fix", Applicability.UNSAFE: "Unsafe fix (may change what the run does)"}


class SapoLintServer(LanguageServer):
    """The server's state: each open document's pending lint and its newest analysis."""

    def __init__(self) -> None:
        super().__init__("sapo-lint", __version__)
        self.debounce_s = DEBOUNCE_S
        self.linting = ThreadPoolExecutor(1, thread_name_prefix="sapo-lint-lint")
        self.answering = ThreadPoolExecutor(1, thread_name_prefix="sapo-lint-answer")
        self.pending: dict[str, asyncio.Task] = {}
        self.analyses: dict[str, Analysis] = {}
        self.verl_said: dict[str, tuple[str, ...]] = {}  # what each document was told about its verl

    def schedule(self, uri: str, delay: float) -> None:
        """Lint the document `delay` seconds from now, replacing a lint scheduled before that has not started."""
        earlier = self.pending.pop(uri, None)
        if earlier is not None:
            earlier.cancel()
        self.pending[uri] = asyncio.get_running_loop().create_task(self._lint(uri, delay))

    async def _lint(self, uri: str, delay: float) -> None:
        if Path(path_of(uri)).suffix not in api.RECIPE_SUFFIXES + api.SCRIPT_SUFFIXES:
            return  # an unsaved document, say: its suffix is what tells a recipe from a script
        await asyncio.sleep(delay)
        document = self.workspace.get_text_document(uri)
        version, text = document.version, document.source
        codec = self.workspace.position_codec
        loop = asyncio.get_running_loop()
        analysis, published = await loop.run_in_executor(self.linting, _analysed, path_of(uri), text, version, codec)
        if uri not in self.workspace.text_documents or self.workspace.get_text_document(uri).version != version:
            return  # a newer version arrived meanwhile (its own lint is scheduled) or the document was closed
        self.analyses[uri] = analysis
        self._say_verl(uri, analysis)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=published)
        )

    def _say_verl(self, uri: str, analysis: Analysis) -> None:
        """Which verl the document is checked against, once per document (again when it changes); a bad
        `[tool.sapo-lint]` is shown to the user, as the CLI would stop on it."""
        if analysis.settings_error is not None:
            if self.verl_said.get(uri) != (analysis.settings_error,):
                self.verl_said[uri] = (analysis.settings_error,)
                self.window_show_message(
                    types.ShowMessageParams(types.MessageType.Error, f"sapo-lint: {analysis.settings_error}")
                )
            return
        if analysis.verl and self.verl_said.get(uri) != analysis.verl:
            self.verl_said[uri] = analysis.verl
            name = os.path.basename(path_of(uri))
            self.window_log_message(
                types.LogMessageParams(types.MessageType.Info, f"{name}: checked against " + "; ".join(analysis.verl))
            )

    def forget(self, uri: str) -> None:
        pending = self.pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        self.analyses.pop(uri, None)
        self.verl_said.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    async def answer(self, function, *args):
        """`function(*args)` on the answering thread."""
        return await asyncio.get_running_loop().run_in_executor(self.answering, function, *args)


def path_of(uri: str) -> str:
    """The file a document is (an unsaved one: its name, relative to the server's directory)."""
    return to_fs_path(uri) or uri.rpartition("/")[2] or uri


def _analysed(path: str, text: str, version: int | None, codec: PositionCodec):
    analysis = analyse(path, text, version)
    lines = text.splitlines()
    return analysis, [lsp_diagnostic(d, path, lines, codec) for d in analysis.diagnostics]


# --- diagnostics ----------------------------------------------------------------------------------------------------


def key_range(location: Location, lines: list[str], codec: PositionCodec) -> types.Range:
    """The range of the key (or word) a finding's location points at, in the client's units."""
    row = min(max(location.line - 1, 0), max(len(lines) - 1, 0))
    line = lines[row] if lines else ""
    start = min(max(location.column - 1, 0), len(line))
    end = key_end(line, start) if line else 0
    return types.Range(
        codec.position_to_client_units(lines, ServerTextPosition(row, start)) if lines else types.Position(0, 0),
        codec.position_to_client_units(lines, ServerTextPosition(row, end)) if lines else types.Position(0, 0),
    )


def code_href(d: Diagnostic) -> str | None:
    """The finding's rule in docs/rules.md (at this version's tag); a shellcheck finding's page of its wiki."""
    if d.code in MODULES:
        return help_uri(d.code, d.name, __version__)
    if SHELLCHECK_CODE.fullmatch(d.code):
        return f"https://www.shellcheck.net/wiki/SC{d.code[2:]}"
    return None


def lsp_diagnostic(d: Diagnostic, path: str, lines: list[str], codec: PositionCodec) -> types.Diagnostic:
    """A finding as the protocol's diagnostic: on its key, its related settings and the findings of the same cause
    as related information (each `also` finding's full message there, its code in the message)."""
    message = d.message + (f" [{d.variant}]" if d.variant else "") + d.also_text()
    here = d.location.path == path
    if not here:  # a finding about another file (a sourced script): shown at the top, saying where
        message = f"{d.location.path}:{d.location.line}:{d.location.column}: {message}"
    uri = from_fs_path(path) or path
    where = key_range(d.location, lines, codec) if here else types.Range(types.Position(0, 0), types.Position(0, 0))
    related = [
        types.DiagnosticRelatedInformation(
            types.Location(from_fs_path(r.path) or r.path, key_range(r, lines, codec) if r.path == path else _top()),
            "related setting",
        )
        for r in d.related
    ]
    related += [
        types.DiagnosticRelatedInformation(types.Location(uri, where), f"{a.code} {a.name}: {a.message}")
        for a in d.also
    ]
    href = code_href(d)
    return types.Diagnostic(
        range=where,
        message=message,
        severity=SEVERITY[d.severity],
        code=d.code,
        code_description=types.CodeDescription(href) if href else None,
        source=SOURCE,
        related_information=related or None,
    )


def _top() -> types.Range:
    return types.Range(types.Position(0, 0), types.Position(0, 0))


# --- completion and hover ---------------------------------------------------------------------------------------------


def override_at(path: str, lines: list[str], row: int, column: int, analysis: Analysis | None) -> OverrideAt | None:
    """The override at the cursor: in a recipe's `overrides:` block, or a word of a script's trainer command (a line
    of a command the newest analysis found, or the line after its last override)."""
    if row >= len(lines):
        return None
    if Path(path).suffix in api.RECIPE_SUFFIXES:
        return recipe_override_at(lines, row, column)
    if analysis is None or not any(row + 1 in c.lines for c in analysis.commands):
        return None
    return script_override_at(lines[row], column)


def completions(uri: str, text: str, position: types.Position, codec, analysis: Analysis | None):
    path = path_of(uri)
    lines = text.splitlines() or [""]
    if text.endswith("\n"):
        lines.append("")
    cursor = codec.position_from_client_units(lines, position)
    at = override_at(path, lines, cursor.line, cursor.character, analysis)
    context = analysis.context_at(cursor.line + 1) if analysis is not None else None
    if at is None or context is None:
        return None
    line = lines[cursor.line]
    if at.value_start is not None:
        found = value_candidates(context, at.key)
        start = cursor.character - len(at.typed)
        # `key:` with no blank yet (the colon triggered completion): the value is written after one
        gap = (
            " "
            if Path(path).suffix in api.RECIPE_SUFFIXES and not line[at.value_start - 1 : at.value_start].isspace()
            else ""
        )
    else:
        typed = at.nested + at.typed
        parent = parent_of(typed)
        found = key_candidates(context, parent)
        start = cursor.character - len(typed[len(parent) + 1 :] if parent else typed)
        gap = ""
    edit_range = types.Range(
        codec.position_to_client_units(lines, ServerTextPosition(cursor.line, start)),
        codec.position_to_client_units(lines, ServerTextPosition(cursor.line, cursor.character)),
    )
    items = [_item(c, edit_range, gap, uri, cursor.line) for c in found]
    return types.CompletionList(is_incomplete=False, items=items)


def _item(candidate: Candidate, edit_range: types.Range, gap: str, uri: str, row: int) -> types.CompletionItem:
    return types.CompletionItem(
        label=candidate.label,
        kind=COMPLETION_KIND[candidate.kind],
        detail=candidate.detail or None,
        text_edit=types.TextEdit(edit_range, gap + candidate.label),
        filter_text=candidate.label,
        data={"uri": uri, "line": row, "key": candidate.key} if candidate.key else None,
    )


def hover(path: str, text: str, position: types.Position, codec, analysis: Analysis | None) -> types.Hover | None:
    lines = text.splitlines()
    cursor = codec.position_from_client_units(lines, position)
    at = override_at(path, lines, cursor.line, cursor.character, analysis)
    context = analysis.context_at(cursor.line + 1) if analysis is not None else None
    if at is None or context is None or not at.key or at.key.endswith("."):
        return None
    said = describe_key(context, at.key)
    if analysis.verl:
        said += "\n\n---\n\n" + "\n\n".join(analysis.verl)
    where = types.Range(
        codec.position_to_client_units(lines, ServerTextPosition(cursor.line, at.key_start)),
        codec.position_to_client_units(lines, ServerTextPosition(cursor.line, at.key_end)),
    )
    return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, said), where)


# --- code actions -----------------------------------------------------------------------------------------------------


def code_actions(uri: str, text: str, wanted: types.Range, codec, analysis: Analysis) -> list[types.CodeAction]:
    """For each finding of the current version on the lines asked about: its fixes (safe ones preferred, unsafe
    ones saying so; display-only ones are no edit) and a `# sapo-lint: noqa: CODE` for its line."""
    path = path_of(uri)
    lines = text.splitlines()
    actions: list[types.CodeAction] = []
    shown = [
        (d, lsp_diagnostic(d, path, lines, codec))
        for d in analysis.diagnostics
        if d.location.path == path and wanted.start.line <= d.location.line - 1 <= wanted.end.line
    ]
    for d, diagnostic in shown:
        for fix in d.fixes:
            edits = fix_edits(fix, lines, codec, "\r\n" if "\r\n" in text else "\n")
            if edits is None:
                continue
            title = f"{FIX_TITLE[fix.applicability]} {d.code}: {fix.text}"
            actions.append(
                types.CodeAction(
                    title=title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    edit=types.WorkspaceEdit(changes={uri: edits}),
                    is_preferred=fix.applicability is Applicability.SAFE,
                )
            )
    for d, diagnostic in shown:
        noqa = noqa_edit(path, text, d, codec)
        if noqa is not None:
            actions.append(
                types.CodeAction(
                    title=f"Suppress {', '.join(d.codes)} on this line (# sapo-lint: noqa)",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    edit=types.WorkspaceEdit(changes={uri: [noqa]}),
                )
            )
    return actions


def fix_edits(fix: Fix, lines: list[str], codec, newline: str) -> list[types.TextEdit] | None:
    """A fix's edits as the protocol's, where each edit's text is still where it says (`fix._edited`'s terms: a key
    may be written inside quotes that start there; a replaced line break is the line's own); None where one is not,
    or the fix is only shown."""
    if fix.applicability is Applicability.DISPLAY_ONLY:
        return None
    edits = []
    for edit in fix.edits:
        if edit.replaces is None or not 0 < edit.line <= len(lines):
            return None
        row, line = edit.line - 1, lines[edit.line - 1]
        old = edit.replaces.removesuffix("\n")
        through_end = edit.replaces.endswith("\n")
        start = edit.column - 1
        if line[start : start + len(old)] != old and line[start : start + 1] in ("'", '"'):
            start += 1
        if line[start : start + len(old)] != old or (through_end and start + len(old) != len(line)):
            return None
        begin = codec.position_to_client_units(lines, ServerTextPosition(row, start))
        if through_end:
            end = types.Position(row + 1, 0)
        else:
            end = codec.position_to_client_units(lines, ServerTextPosition(row, start + len(old)))
        edits.append(types.TextEdit(types.Range(begin, end), edit.content.replace("\n", newline)))
    return edits


def noqa_edit(path: str, text: str, d: Diagnostic, codec) -> types.TextEdit | None:
    """The `# sapo-lint: noqa: CODE` comment `sapo-lint --add-noqa` would write for the finding (where its command
    ends on a script's continued line; merged into a noqa comment already there; never where it would change what
    the file means), as an edit of the document's text: `fix.add_noqa` run on a copy of it."""
    with tempfile.TemporaryDirectory(prefix="sapo-lint-server-") as scratch:
        copy = Path(scratch, Path(path).name)
        copy.write_bytes(text.encode("utf-8"))
        outcome = add_noqa([d._replace(location=d.location._replace(path=str(copy)))])
        if not outcome.comments:
            return None
        after = copy.read_bytes().decode("utf-8")
    before_lines, after_lines = text.splitlines(), after.splitlines()
    changed = [i for i, (old, new) in enumerate(zip(before_lines, after_lines, strict=False)) if old != new]
    if len(changed) != 1 or len(before_lines) != len(after_lines):
        return None
    row = changed[0]
    old, new = before_lines[row], after_lines[row]
    kept = len(os.path.commonprefix([old, new]))
    return types.TextEdit(
        types.Range(
            codec.position_to_client_units(before_lines, ServerTextPosition(row, kept)),
            codec.position_to_client_units(before_lines, ServerTextPosition(row, len(old))),
        ),
        new[kept:],
    )


# --- the server -------------------------------------------------------------------------------------------------------


def make_server() -> SapoLintServer:
    server = SapoLintServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: SapoLintServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        if isinstance(options, dict) and isinstance(options.get("debounceMs"), (int, float)):
            ls.debounce_s = max(0.0, options["debounceMs"] / 1000)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: SapoLintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: SapoLintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, ls.debounce_s)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: SapoLintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=[".", "=", "@", ":"], resolve_provider=True),
    )
    async def completion(ls: SapoLintServer, params: types.CompletionParams):
        uri = params.text_document.uri
        document = ls.workspace.get_text_document(uri)
        return await ls.answer(
            completions, uri, document.source, params.position, document.position_codec, ls.analyses.get(uri)
        )

    @server.feature(types.COMPLETION_ITEM_RESOLVE)
    async def completion_resolve(ls: SapoLintServer, item: types.CompletionItem) -> types.CompletionItem:
        data = item.data if isinstance(item.data, dict) else {}
        analysis = ls.analyses.get(data.get("uri", ""))
        context = analysis.context_at(data.get("line", 0) + 1) if analysis is not None else None
        if context is not None and data.get("key"):
            said = await ls.answer(describe_key, context, data["key"])
            item.documentation = types.MarkupContent(types.MarkupKind.Markdown, said)
        return item

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: SapoLintServer, params: types.HoverParams):
        uri = params.text_document.uri
        document = ls.workspace.get_text_document(uri)
        return await ls.answer(
            hover, path_of(uri), document.source, params.position, document.position_codec, ls.analyses.get(uri)
        )

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix])
    )
    async def on_code_action(ls: SapoLintServer, params: types.CodeActionParams):
        uri = params.text_document.uri
        document = ls.workspace.get_text_document(uri)
        analysis = ls.analyses.get(uri)
        if analysis is None or analysis.version != document.version:
            return None  # the findings are of an older text; the newer one's come a moment later
        return await ls.answer(code_actions, uri, document.source, params.range, document.position_codec, analysis)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: SapoLintServer, params: None) -> None:
        for task in ls.pending.values():
            task.cancel()
        ls.linting.shutdown(wait=False, cancel_futures=True)
        ls.answering.shutdown(wait=False, cancel_futures=True)

    return server


def serve() -> None:
    """Run the server on standard input and output until the client says exit."""
    make_server().start_io()


__all__ = ["make_server", "serve"]
