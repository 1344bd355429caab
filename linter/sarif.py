"""SARIF 2.1.0 output (`--format sarif`), for GitHub code scanning and other SARIF consumers.

One run, tool `sapo-lint` (shellcheck's findings are sapo-lint's own SH<number> rules, so they belong to the same
run). What GitHub code scanning requires of a third-party SARIF file (docs.github.com, "SARIF support for code
scanning") and how it is met here:

- every rule: `id`, `shortDescription` (<= 1024 characters: the rule's summary), `fullDescription` (<= 1024
  characters: the first sentences of the rule's documentation that fit), `help` (the whole documentation, text and
  Markdown) and a `helpUri`: the rule's own section of docs/rules.md at the installed version's release tag
  (`<Repository URL>/blob/v<version>/docs/rules.md#<anchor>`, the Repository URL from the distribution's metadata,
  i.e. pyproject's [project.urls]); shellcheck's codes link to shellcheck's wiki page for the code;
- every result: a message, one location (the setting whose value breaks the check), its `relatedLocations` (the
  other settings it depends on where they are written, e.g. a topology error's world-size lines: an `id` each from
  1, and as message the key written there), and `partialFingerprints`. Code scanning links a related location only
  where the result's message embeds it (`[text](id)`, SARIF 3.11.6), so the message ends with `(see also
  [trainer.nnodes](1), ...)`, as the text output ends with `(see also lines ...)`; Upload-sarif computes GitHub's own
  `primaryLocationLineHash` from the file's text (it is not ours to fill); ours, `sapoLintFinding/v1`, identifies a
  finding by rule, file, the located text's key (an override's key, else the text itself), variant and the
  occurrence among equal ones, so it survives lines moving;
- a region: `startLine`/`startColumn` from the diagnostic and an end found in the file's text (diagnostics carry
  only where a finding starts): for a recipe, the end of the YAML node written there (a mapping entry's value
  included); for a run script, the end of the shell word there (quotes and `$(...)` kept together, which may span
  lines); where no text starts at the location, the rest of the line, or the one column of an empty line.
  Columns count Unicode code points (`columnKind`), as the sources do;
- artifact URIs are relative to `%SRCROOT%`, percent-encoded; `originalUriBaseIds` gives `%SRCROOT%` as the
  current directory's `file://` URI (run from the repository root for code scanning). A file outside it gets an
  absolute `file://` URI;
- a finding with a fix has `properties.fix` (the replacement text) and `properties.fixApplicability` (`safe`,
  `unsafe` or `display-only`, as in the JSON format); a fix `--fix` can apply (safe, or unsafe with
  `--unsafe-fixes`) is also a SARIF `fixes` entry: the key's region replaced by the new text, its applicability in
  the fix's `properties`;
- findings of `--override` (the command line, no file) get a logical location named as in the text output
  (`--override:N`), not a fake path. GitHub code scanning displays only results with a file location: these are
  for other SARIF consumers, and CI runs that upload to code scanning lint files, not `--override`;
- whether each file was checked (`core.checked`): the run's `properties` count the files (`files`, `checked`,
  `notChecked`), and its one invocation has a `toolExecutionNotifications` entry per file not checked (SARIF
  3.20.21: what kept the tool from analysing a target), at that file, its message `not checked: <reason>` and its
  `properties.reason` the reason's identifier; level `warning`, or `note` for a script with no trainer command
  (nothing to check). Never `error`: SARIF's appendix I reads an error notification as a run whose results may all
  be incomplete, and some consumers then reject the whole report (GitLab's SARIF converter did); and
  `executionSuccessful` stays true, since the run itself completed.

Limits GitHub states: 20 runs per file (here 1), 25,000 rules and 25,000 results per run (over 25,000 results
the upload is rejected, and only the 5,000 most severe are shown), 1,000 locations per result (here 1), rule names
up to 255 characters.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path, PurePath
from urllib.parse import quote

from .core.checked import NO_TRAINER_COMMAND, NotChecked
from .core.diagnostics import COMMAND_LINE, Applicability, Diagnostic, Fix, Location, Severity
from .core.written import shell_word_end
from .report import Report
from .ruledocs import rule_anchor

LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
OVERRIDE_SOURCE = COMMAND_LINE  # command-line overrides are located as `--override:N`
SRCROOT = "%SRCROOT%"
FINGERPRINT = "sapoLintFinding/v1"
DESCRIPTION_LIMIT = 1024  # GitHub code scanning: shortDescription.text and fullDescription.text


def render_sarif(report: Report) -> str:
    """SARIF 2.1.0 (the module docstring); the run's `properties` say how many files were checked, and per file with
    a trainer command the verl it was linted with (`verl`: path -> `ResolvedStack.as_dict`), as the JSON does."""
    diagnostics, files, not_checked, verl = report.diagnostics, report.files, report.not_checked, report.verl
    from . import __version__

    root = Path.cwd()
    rules = _rule_descriptors(diagnostics, __version__)
    index = {r["id"]: i for i, r in enumerate(rules)}
    spans = _Spans()
    results = [_result(d, index, root, spans) for d in diagnostics]
    _add_fingerprints(results, diagnostics, spans)
    run = {
        "tool": {
            "driver": {
                "name": "sapo-lint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": _repository_url(),
                "rules": rules,
            }
        },
        "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
        "invocations": [
            {
                "executionSuccessful": True,
                "toolExecutionNotifications": [_not_checked(path, why, root) for path, why in not_checked],
            }
        ],
        "properties": {
            "files": files,
            "checked": files - len(not_checked),
            "notChecked": len(not_checked),
            "verl": {path: choice.as_dict() for path, choice in (verl).items()},
        },
    }
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run]}
    return json.dumps(doc, indent=2)


# --- rules ------------------------------------------------------------------------------------------------------


@cache
def _repository_url() -> str:
    """pyproject's [project.urls] Repository, as installed (the distribution's metadata)."""
    from importlib.metadata import metadata

    urls = dict(entry.split(", ", 1) for entry in metadata("sapo-toolkit").get_all("Project-URL") or ())
    return urls["Repository"].rstrip("/")


def help_uri(code: str, name: str, version: str) -> str:
    """The rule's section of docs/rules.md at the release tag of `version`."""
    return f"{_repository_url()}/blob/v{version}/docs/rules.md#{rule_anchor(code, name)}"


def _rule_descriptors(diagnostics: list[Diagnostic], version: str) -> list[dict]:
    from .ruledocs import rule_markdown
    from .rules import all_rules, documenting_rule

    registered = all_rules()
    rules = [
        {
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": _fit(r.summary)},
            "fullDescription": {"text": _fit(r.explanation)},
            "defaultConfiguration": {"level": LEVEL[r.severity]},
            "helpUri": help_uri(r.code, r.name, version),
            "help": {"text": f"{r.explanation}\n\nBad:\n{r.bad}\n\nGood:\n{r.good}", "markdown": rule_markdown(r)},
        }
        for r in registered.values()
    ]
    # shellcheck findings (SH<SC number>) are one registered family (SH100); SARIF wants an entry per id.
    passthrough = sorted({d.code: d for d in diagnostics if d.code not in registered}.values(), key=lambda d: d.code)
    for d in passthrough:
        family = documenting_rule(d.code)
        sc = f"SC{d.code[2:]}"
        wiki = f"https://www.shellcheck.net/wiki/{sc}"
        about = (
            f"shellcheck's {sc}, reported by sapo-lint as {d.code}: {wiki} explains the finding; "
            f"`sapo-lint rule {d.code}` explains how sapo-lint runs shellcheck and which findings it reports."
        )
        rules.append(
            {
                "id": d.code,
                "name": d.name,
                "shortDescription": {"text": f"shellcheck {sc}"},
                "fullDescription": {"text": _fit(f"{about}\n\n{family.explanation}")},
                "defaultConfiguration": {"level": LEVEL[d.severity]},
                "helpUri": wiki,
                "help": {"text": f"{about}\n\n{family.explanation}"},
            }
        )
    return rules


def _fit(text: str, limit: int = DESCRIPTION_LIMIT) -> str:
    """`text` on one line, or as many of its first sentences as fit in `limit` characters (GitHub's limit)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    ends = [m.end() for m in re.finditer(r"[.!?:](?=\s)", flat[:limit])]
    return flat[: ends[-1]] if ends else flat[: limit - 1] + "\u2026"


# --- results ----------------------------------------------------------------------------------------------------


def _result(d: Diagnostic, index: dict[str, int], root: Path, spans: _Spans) -> dict:
    result = {
        "ruleId": d.code,
        "ruleIndex": index[d.code],
        "level": LEVEL[d.severity],
        "message": {"text": d.message + d.also_messages()},
        "locations": [_location(d.location, root, spans)],
    }
    if d.related:
        keys = [_written_key(r, spans) for r in d.related]
        links = ", ".join(f"[{_link_text(key)}]({i})" for i, key in enumerate(keys, 1))
        result["message"]["text"] += f" (see also {links})"
        result["relatedLocations"] = [
            {**_location(r, root, spans), "id": i, "message": {"text": key}}
            for i, (r, key) in enumerate(zip(d.related, keys, strict=True), 1)
        ]
    if d.variant or d.fix or d.also:
        result["properties"] = {
            k: v
            for k, v in (
                ("variant", d.variant),
                ("alsoRuleIds", [a.code for a in d.also]),
                ("fix", d.fix and d.fix.text),
                ("fixApplicability", d.fix and d.fix.applicability.value),
            )
            if v
        }
    if d.fix and d.fix.applicability is not Applicability.DISPLAY_ONLY and not _is_command_line(d.location):
        result["fixes"] = [_fix(d.fix, d.location.path, root, spans)]
    return result


def _not_checked(path: str, why: NotChecked, root: Path) -> dict:
    return {
        "level": "note" if why == NO_TRAINER_COMMAND else "warning",
        "message": {"text": f"not checked: {why.message}"},
        "locations": [{"physicalLocation": {"artifactLocation": artifact_location(path, root)}}],
        "properties": {"reason": why.reason},
    }


def _link_text(text: str) -> str:
    """`text` as the text of an embedded link (SARIF 3.11.6: a bracket or backslash in it is escaped)."""
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _fix(fix: Fix, path: str, root: Path, spans: _Spans) -> dict:
    """A SARIF fix: each edit's key text replaced (after the quote, for a quoted YAML key, as `--fix` does)."""
    replacements = []
    for e in fix.edits:
        column = e.column + spans.quoted(path, e.line, e.column, e.replaces)
        region = {"startLine": e.line, "startColumn": column, "endLine": e.line, "endColumn": column + len(e.replaces)}
        replacements.append({"deletedRegion": region, "insertedContent": {"text": e.content}})
    return {
        "description": {"text": f"Replace the key with `{fix.text}`"},
        "artifactChanges": [{"artifactLocation": artifact_location(path, root), "replacements": replacements}],
        "properties": {"applicability": fix.applicability.value},
    }


def _location(loc: Location, root: Path, spans: _Spans) -> dict:
    if _is_command_line(loc):
        name = f"{OVERRIDE_SOURCE}:{loc.line}"
        return {"logicalLocations": [{"name": name, "fullyQualifiedName": f"sapo-lint {name}", "kind": "parameter"}]}
    start_line, start_column = max(loc.line, 1), max(loc.column, 1)
    end_line, end_column = spans.end(loc.path, start_line, start_column)
    region = {"startLine": start_line, "startColumn": start_column, "endLine": end_line, "endColumn": end_column}
    return {"physicalLocation": {"artifactLocation": artifact_location(loc.path, root), "region": region}}


def _is_command_line(loc: Location) -> bool:
    return loc.path == OVERRIDE_SOURCE


def artifact_location(path: str, root: Path) -> dict:
    """A percent-encoded URI relative to `%SRCROOT%` (`root`), or an absolute file URI for a file outside it."""
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(PurePath(relative).as_posix(), safe="/"), "uriBaseId": SRCROOT}


def _written_key(loc: Location, spans: _Spans) -> str:
    """The override key written at a location (`--override:N` for the command line)."""
    return f"{OVERRIDE_SOURCE}:{loc.line}" if _is_command_line(loc) else spans.key(loc.path, loc.line, loc.column)


def _add_fingerprints(results: list[dict], diagnostics: list[Diagnostic], spans: _Spans) -> None:
    """Identity of a finding that does not depend on its line: rule, file, the located key, variant; equal ones are
    numbered in the order they appear."""
    import hashlib  # here, not at import: loading OpenSSL is ~3 ms of every cold run, and few write SARIF

    seen: dict[str, int] = {}
    for result, d in sorted(zip(results, diagnostics, strict=True), key=lambda pair: pair[1].sort_key()):
        loc = d.location
        key = _written_key(loc, spans)
        identity = "\0".join((d.code, loc.path, key, d.variant or ""))
        digest = hashlib.sha256(identity.encode()).hexdigest()[:32]
        seen[digest] = seen.get(digest, 0) + 1
        result["partialFingerprints"] = {FINGERPRINT: f"{digest}:{seen[digest]}"}


# --- where a finding's text ends --------------------------------------------------------------------------------


class _Spans:
    """End positions and keys of what is written at a location, from the file's text (read once per file)."""

    def __init__(self) -> None:
        self._files: dict[str, _FileText | None] = {}

    def _file(self, path: str) -> _FileText | None:
        if path not in self._files:
            from .sources.files import UnreadableFile, read_text

            try:
                text = read_text(Path(path)).text
            except UnreadableFile:
                text = None
            self._files[path] = None if text is None else _FileText(text, _is_yaml(path))
        return self._files[path]

    def end(self, path: str, line: int, column: int) -> tuple[int, int]:
        """1-based end line and the column after the last character (SARIF's `endColumn`)."""
        found = self._file(path)
        return found.end(line, column) if found else (line, column + 1)

    def quoted(self, path: str, line: int, column: int, text: str) -> int:
        """1 where `text` is written inside a quote that starts at the location, else 0."""
        found = self._file(path)
        written = found.lines[line - 1] if found and line <= len(found.lines) else ""
        return int(written[column - 1 : column] in ("'", '"') and written[column:].startswith(text))

    def key(self, path: str, line: int, column: int) -> str:
        found = self._file(path)
        return found.key(line, column) if found else f"{line}:{column}"


def _is_yaml(path: str) -> bool:
    return path.endswith((".yaml", ".yml"))


class _FileText:
    def __init__(self, text: str, yaml_file: bool) -> None:
        self.text = text
        # Lines as the sources count them (bash's reader splits at "\n"; PyYAML's marks are used for recipes).
        self.lines = text.split("\n")
        self.line_starts = [0]
        for line in self.lines[:-1]:
            self.line_starts.append(self.line_starts[-1] + len(line) + 1)
        # (line, column) 1-based -> (end line, end column, key): the YAML nodes (and mapping entries) of a recipe
        self.nodes = _yaml_nodes(text) if yaml_file else None

    def end(self, line: int, column: int) -> tuple[int, int]:
        if self.nodes is not None and (line, column) in self.nodes:
            end_line, end_column, _ = self.nodes[line, column]
            return end_line, end_column
        word = self._shell_word(line, column) if self.nodes is None else None
        if word:
            return word[1], word[2]
        content_end = len(self.lines[line - 1].rstrip()) + 1 if line <= len(self.lines) else 0
        return (line, content_end) if content_end > column else (line, column + 1)

    def key(self, line: int, column: int) -> str:
        """The override key written at the location (a YAML mapping key, or a shell word's text before `=`), else
        the text there; the position when nothing is written there."""
        if self.nodes is not None and (line, column) in self.nodes:
            return self.nodes[line, column][2]
        word = self._shell_word(line, column)
        if word:
            return word[0].split("=", 1)[0].strip("'\"")
        text = self.lines[line - 1].strip() if line <= len(self.lines) else ""
        return text or f"{line}:{column}"

    def _shell_word(self, line: int, column: int) -> tuple[str, int, int] | None:
        """The shell word starting at the location: its text, end line and end column (quotes, `$(...)`, `${...}`
        and backslash escapes kept inside the word, which may then span lines)."""
        if line > len(self.lines) or column > len(self.lines[line - 1]):
            return None
        start = self.line_starts[line - 1] + column - 1
        end = shell_word_end(self.text, start)
        if end == start:
            return None
        end_line = line + self.text.count("\n", start, end)
        end_column = end - self.line_starts[end_line - 1] + 1
        return self.text[start:end], end_line, end_column


def _yaml_nodes(text: str) -> dict[tuple[int, int], tuple[int, int, str]] | None:
    """Every node of a YAML document by its start (1-based), with its end and key; a mapping entry's span is its
    key to the end of its value. None when the text is not YAML (then spans come from the lines)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        documents = list(yaml.compose_all(text, Loader=loader))
    except yaml.YAMLError:
        return None
    text_columns = _text_columns(text.splitlines())
    spans: dict[tuple[int, int], tuple[int, int, str]] = {}
    seen: set[int] = set()

    def start(node) -> tuple[int, int]:
        return node.start_mark.line + 1, node.start_mark.column + 1

    def visit(node) -> None:
        if id(node) in seen:  # an alias: the same node again
            return
        seen.add(id(node))
        spans.setdefault(start(node), (*_node_end(text_columns, node), _scalar(node)))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                # A mapping entry (key to the end of its value) is what is written at its key, even where a
                # block mapping around it starts at the same place; the innermost entry is visited last.
                spans[start(k)] = (*_node_end(text_columns, v), _scalar(k))
                visit(v)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                visit(item)

    for document in documents:
        if document is not None:
            visit(document)
    return spans


def _scalar(node) -> str:
    import yaml

    return node.value if isinstance(node, yaml.ScalarNode) else node.tag


def _text_columns(lines: list[str]) -> tuple[list[int], list[int]]:
    """(each line's column after its last text, comments and trailing blanks dropped, 0 for none; for each line the
    last line at or before it with text, -1 for none): computed once per file, so that finding a node's end is
    constant time however many nodes end on the same trailing lines."""
    columns = [0 if t.lstrip().startswith("#") else len(t.split(" #")[0].rstrip()) for t in lines]
    last: list[int] = []
    for i, column in enumerate(columns):
        last.append(i if column else (last[-1] if last else -1))
    return columns, last


def _node_end(text_columns: tuple[list[int], list[int]], node) -> tuple[int, int]:
    """A node's end as SARIF's (endLine, endColumn): a block node's end mark sits at the start of the line after
    it, so the end moves back to the last non-blank text before it (not above the node's first line)."""
    line, column = node.end_mark.line, node.end_mark.column  # 0-based; column is the one after the end
    if column == 0 and line > node.start_mark.line:
        columns, last = text_columns
        before = min(line - 1, len(last) - 1)
        found = last[before] if before >= 0 else -1
        line = max(found, node.start_mark.line)
        column = columns[line] if line < len(columns) else 0
    return line + 1, column + 1 if column else 2
