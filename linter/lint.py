"""Lint files: discover them, read and check each through `api`, add shellcheck's findings, filter and sort."""

from __future__ import annotations

import fnmatch
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from . import api
from .core.budget import FILE_WORK_UNITS, OutOfBudget, work_budget
from .core.checked import NotChecked, not_checked_because
from .core.diagnostics import Diagnostic, Location
from .core.problems import FileUnreadable, InternalError, NotLintable, OverBudget, ReadProblem
from .rules import findings, one_finding_per_cause
from .rules.sh_shellcheck import SAID_BETTER_BY, UNSET_UNDER_NOUNSET, in_run_script, reported_by_default
from .settings import Settings, SettingsFinder
from .sources.files import TextFile, UnreadableFile, is_regular_file
from .sources.options import ReadOptions
from .stack import ResolvedStack

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

SKIP_DIRS = {
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    "node_modules",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    "build",
    "dist",
    "site-packages",
}


@dataclass(slots=True)
class LintResult:
    diagnostics: list[Diagnostic]
    files: int  # files linted (recipes and scripts), unreadable ones included
    unreadable: int  # files and directories that could not be read
    named_but_skipped: int = 0  # files named on the command line that are neither recipe nor script (`_not_lintable`)
    # (path, why) of each linted file none of whose trainer commands was checked (`core.checked`), in file order
    not_checked: list[tuple[str, NotChecked]] = field(default_factory=list)
    verl: dict[str, ResolvedStack] = field(default_factory=dict)  # path -> the stack its commands were linted with


def discover(paths: list[Path], settings_for: Callable[[Path], Settings]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Recipe and run-script candidates under the given paths, sorted and de-duplicated (a path named explicitly
    is always a candidate, whatever its suffix, unless excluded), and the directories that could not be listed,
    with why (permission denied, a path over PATH_MAX). Each path is excluded by the settings that govern it
    (`excluded`). Symlinked directories are not walked into."""
    found: dict[Path, None] = {}
    unlisted: list[tuple[Path, str]] = []
    for root in paths:
        if not os.path.isdir(root):
            if not excluded(root, settings_for(root)):
                found[root] = None
            continue
        pending = [root]  # a stack, not recursion: a tree can be deeper than Python's recursion limit
        while pending:
            directory = pending.pop()
            try:
                subdirs, files = _listing(directory)
            except OSError as exc:
                unlisted.append((directory, exc.strerror or str(exc)))
                continue
            inside = settings_for(directory)
            for name in files:
                p = directory / name
                if p.suffix in api.RECIPE_SUFFIXES + api.SCRIPT_SUFFIXES and not excluded(p, inside):
                    found[p] = None
            pending.extend(
                reversed(
                    [
                        directory / d
                        for d in subdirs
                        if d not in SKIP_DIRS
                        and not _is_virtualenv(directory / d)
                        and not excluded(directory / d, settings_for(directory / d))
                    ]
                )
            )
    return list(found), unlisted


def _listing(directory: Path) -> tuple[list[str], list[str]]:
    """The names of the subdirectories to walk into and of the other entries, each sorted. A symlink to a directory
    is neither (as os.walk without followlinks); an entry that cannot be stat'ed (a loop of symlinks) is a file,
    and reading it says why."""
    subdirs, files = [], []
    with os.scandir(directory) as entries:
        for entry in entries:
            try:
                is_dir, is_link = entry.is_dir(), entry.is_symlink()
            except OSError:
                is_dir = is_link = False
            if not is_dir:
                files.append(entry.name)
            elif not is_link:
                subdirs.append(entry.name)
    return sorted(subdirs), sorted(files)


def _is_virtualenv(directory: Path) -> bool:
    """A virtual environment under any name (`.verl-venv`, `env311`): its installed packages ship shell scripts
    that are nobody's run scripts."""
    return os.path.isfile(directory / "pyvenv.cfg")  # False, not an error, for a path over PATH_MAX


def excluded(path: Path, settings: Settings) -> bool:
    """Whether a glob of `exclude` matches the path as given, the path relative to the directory of the
    pyproject.toml the settings come from, or its name (`experiments/*`, `*.generated.yaml`, `fixtures`)."""
    if not settings.exclude:
        return False
    texts = {path.as_posix(), path.name}
    if settings.config is not None:
        try:
            texts.add(Path(os.path.abspath(path)).relative_to(settings.config.parent).as_posix())
        except ValueError:  # settings given for the whole run, from a project this path is not in
            pass
    return any(fnmatch.fnmatch(text, pattern) for text in texts for pattern in settings.exclude)


def lint_paths(
    paths: list[Path],
    settings: Settings | SettingsFinder,
    cli_overrides: list[str] = (),
    cli_verl: str | None = None,
    cli_accelerator: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LintResult:
    """Lint the recipes and run scripts under `paths`: with one `Settings` for all, or with the settings a
    `SettingsFinder` finds for each path. `progress(done, total)` is called after each file."""
    settings_for = settings.for_path if isinstance(settings, SettingsFinder) else lambda path: settings
    options: dict[int, ReadOptions] = {}  # per Settings object: its files share one
    diagnostics: list[Diagnostic] = []
    result = LintResult(diagnostics, 0, 0)
    files, unlisted = discover(paths, settings_for)
    for directory, why in unlisted:
        result.unreadable += 1
        diagnostics.extend(findings([FileUnreadable(location=Location(str(directory)), reason=why, directory=True)]))
    explicit = set(paths)
    scripts = [
        p for p in files if p.suffix in api.SCRIPT_SUFFIXES and is_regular_file(p) and settings_for(p).shellcheck
    ]
    shellcheck = _shellcheck(scripts) if scripts else {}

    def lint_file(path: Path) -> FileOutcome:
        file_settings = settings_for(path)
        if id(file_settings) not in options:
            options[id(file_settings)] = api.read_options(file_settings, cli_overrides, cli_verl, cli_accelerator)

        def lint() -> FileOutcome:
            try:
                loaded = api.load(path, options[id(file_settings)])
            except UnreadableFile as exc:
                return _failed(FileUnreadable(location=Location(str(path)), reason=str(exc)), unreadable=True)
            if loaded is None:
                return _not_lintable(str(path)) if path in explicit else FileOutcome(False, False, False, [])
            return _checked(loaded, file_settings, shellcheck.get(str(path), ()))

        return _within_budget(str(path), lint)

    with _outcomes(files, lint_file) as outcomes:
        for done, (path, outcome) in enumerate(zip(files, outcomes, strict=True), 1):  # in file order
            result.files += outcome.linted
            result.unreadable += outcome.unreadable
            result.named_but_skipped += outcome.named_but_skipped
            diagnostics.extend(outcome.diagnostics)
            if outcome.not_checked is not None:
                result.not_checked.append((str(path), outcome.not_checked))
            if outcome.verl is not None:
                result.verl[str(path)] = outcome.verl
            if progress is not None:
                progress(done, len(files))
    result.diagnostics = _shown_once(diagnostics, settings_for)
    result.not_checked.sort(key=lambda item: item[0])  # as the findings are: by path
    return result


def lint_text(
    source: TextFile,
    settings: Settings,
    cli_overrides: list[str] = (),
    cli_verl: str | None = None,
    cli_accelerator: str | None = None,
) -> LintResult:
    """Lint text read from standard input as the file `source.path` (its suffix says recipe or script; it is
    reported under that name). A script's shellcheck findings come from a copy in a temporary directory."""
    options = api.read_options(settings, cli_overrides, cli_verl, cli_accelerator)

    def lint() -> FileOutcome:
        loaded = api.load_text(source, options)
        if loaded is None:
            return _not_lintable(source.path)
        found = _shellcheck_text(source) if loaded.kind == "script" and settings.shellcheck else []
        return _checked(loaded, settings, found)

    outcome = _within_budget(source.path, lint)
    return LintResult(
        _shown_once(outcome.diagnostics, lambda path: settings),
        int(outcome.linted),
        int(outcome.unreadable),
        int(outcome.named_but_skipped),
        [] if outcome.not_checked is None else [(source.path, outcome.not_checked)],
        {} if outcome.verl is None else {source.path: outcome.verl},
    )


def _checked(loaded: api.Loaded, settings: Settings, shellcheck: list[Diagnostic]) -> FileOutcome:
    diagnostics, not_checked = api.check_file(loaded, settings, _shown(shellcheck, loaded, settings))
    return FileOutcome(True, False, False, diagnostics, not_checked, loaded.stack)


class FileOutcome(NamedTuple):
    """What linting one file gave: whether it counts as linted, unreadable, named but not lintable; its findings;
    why none of its trainer commands was checked (None: one was, or it is not linted)."""

    linted: bool
    unreadable: bool
    named_but_skipped: bool
    diagnostics: list[Diagnostic]
    not_checked: NotChecked | None = None
    verl: ResolvedStack | None = None  # the stack its trainer commands were linted with (`stack`)


def _failed(problem: ReadProblem, unreadable: bool = False) -> FileOutcome:
    """A linted file that could not be checked at all (unreadable, over its work budget, sapo-lint failed on it): the
    problem's finding, and the problem as the reason (`core.checked`)."""
    return FileOutcome(True, unreadable, False, findings([problem]), not_checked_because([problem]))


def _not_lintable(path: str) -> FileOutcome:
    """A file named on the command line (or as standard input) with nothing to lint. YAML without a top-level
    `recipe:` key (a CI workflow, a Hydra config) is skipped without a word, as in a directory walk: pre-commit and
    editors name every YAML file of a repository. Any other file is reported (RF008): a typo in a path must not look
    like a clean result. Either way the file is not counted as checked."""
    if Path(path).suffix in api.RECIPE_SUFFIXES:
        return FileOutcome(False, False, True, [])
    return FileOutcome(False, False, True, findings([NotLintable(location=Location(path))]))


def _within_budget(path: str, lint: Callable[[], FileOutcome]) -> FileOutcome:
    """`lint()` of one file within the file's work budget (`core.budget`). A file that spends it is one
    finding (RF011); one that sapo-lint fails on is one finding too (RF012), and counts as not checked: either way
    the run goes on with the other files."""
    try:
        with work_budget(FILE_WORK_UNITS):
            return lint()
    except OutOfBudget as exc:
        return _failed(OverBudget(location=Location(path), bound=exc.bound, stage=exc.stage))
    except Exception as exc:  # noqa: BLE001 - one file's bug is that file's finding, not the end of the run
        return _failed(InternalError(location=Location(path), raised_where=_raised_where(exc)), unreadable=True)


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _raised_where(exc: Exception) -> str:
    """`ValueError at linter/rules/bs002_mini_batch_divisibility.py:50`: the exception's type and the innermost line
    of sapo-lint's own code it came through. Not its message, which may quote a value of the file (a secret)."""
    import traceback

    own = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(_PACKAGE + os.sep)]
    if not own:
        return type(exc).__name__
    where = os.path.relpath(own[-1].filename, os.path.dirname(_PACKAGE))
    return f"{type(exc).__name__} at {Path(where).as_posix()}:{own[-1].lineno}"


# A long run lints in forked worker processes, one for every this many files, up to one per core. Measured on 2
# cores (median of 7, copies of verl's run scripts / shipped recipes): 32 scripts 388 -> 283 ms, 300 scripts
# 2,156 -> 1,215 ms; 32 recipes 216 -> 195 ms, 300 recipes 1,187 -> 692 ms; at 16 recipes forking gains nothing.
FILES_PER_WORKER = 16


@contextmanager
def _outcomes(files: list[Path], lint_file: Callable[[Path], FileOutcome]) -> Iterator[Iterator[FileOutcome]]:
    """Each file's outcome, in file order: here, or in forked workers for a long run (Linux only). The first file of
    a long run is linted here before the fork: what it loads on first use (the rule modules, the verl snapshots) is
    then loaded once, not once per worker (45 of verl's run scripts on 2 cores: 2.65 -> 2.10 s of CPU, median of 5).
    However the run ends (done, Ctrl-C, an error), the workers are killed and reaped before this returns."""
    workers = min(_cores(), len(files) // FILES_PER_WORKER) if sys.platform == "linux" else 1
    if workers <= 1:
        yield map(lint_file, files)
        return
    forked: list[_Worker] = []
    try:
        yield _forked_outcomes(files, lint_file, workers, forked)
    finally:
        for worker in forked:
            worker.stop()


def _forked_outcomes(
    files: list[Path], lint_file: Callable[[Path], FileOutcome], workers: int, forked: list[_Worker]
) -> Iterator[FileOutcome]:
    """The outcomes of `files` in order, the first linted here, the rest in batches by up to `workers` forked
    workers (each sent the next batch as it returns one). A worker that dies (killed, out of memory) has its batch
    linted here, so the answer is the one a run in one process gives; so is a run where fork fails."""
    from multiprocessing.connection import wait

    yield lint_file(files[0])
    size = max(1, len(files) // (workers * 8))
    batches = [range(start, min(start + size, len(files))) for start in range(1, len(files), size)]
    for _ in range(min(workers, len(batches))):
        try:
            forked.append(_Worker.fork(files, batches, lint_file, forked))
        except OSError:  # no more processes: the workers there are, or this one, lint the run
            break
    done: dict[int, list[FileOutcome]] = {}
    queued = iter(range(len(batches)))
    busy = {}  # a worker's connection -> (the worker, the batch it lints)
    for worker in forked:
        batch = next(queued, None)
        if batch is not None:
            worker.send(batch)
            busy[worker.results] = (worker, batch)
    for wanted in range(len(batches)):
        while wanted not in done:
            if not busy:  # no worker left (none forked, or all died): the rest is linted here
                batch = next(queued, wanted)
                done[batch] = [lint_file(files[i]) for i in batches[batch]]
                continue
            for results in wait(list(busy)):
                worker, batch = busy.pop(results)
                try:
                    done[batch] = results.recv()
                except (EOFError, OSError):  # the worker died: its batch is linted here
                    worker.stop()
                    forked.remove(worker)
                    done[batch] = [lint_file(files[i]) for i in batches[batch]]
                    continue
                following = next(queued, None)
                if following is not None:
                    worker.send(following)
                    busy[results] = (worker, following)
        yield from done.pop(wanted)


class _Worker(NamedTuple):
    """A forked worker process and this side's ends of its two pipes. Not multiprocessing.Pool: its teardown waits on
    a lock shared with its workers, which an idle worker holds while it waits for a task; a Ctrl-C on a busy machine
    hung there (CPython's Pool.terminate). Here nothing is shared but the pipes, and a worker is killed."""

    pid: int
    tasks: Connection  # batch numbers to the worker
    results: Connection  # each batch's outcomes back

    @classmethod
    def fork(cls, files, batches, lint_file, forked: list[_Worker]) -> _Worker:
        from multiprocessing import Pipe

        tasks_read, tasks = Pipe(duplex=False)
        results, results_write = Pipe(duplex=False)
        pid = os.fork()
        if pid == 0:  # the worker: it never returns to the caller, and ends when its task pipe closes
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the main process, which stops workers
                for connection in (tasks, results, *(c for w in forked for c in (w.tasks, w.results))):
                    connection.close()  # else this worker would keep another's pipe open
                while True:
                    batch = tasks_read.recv()
                    results_write.send([lint_file(files[i]) for i in batches[batch]])
            finally:
                os._exit(0)
        tasks_read.close()
        results_write.close()
        return cls(pid, tasks, results)

    def send(self, batch: int) -> None:
        self.tasks.send(batch)

    def stop(self) -> None:
        with suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        self.tasks.close()
        self.results.close()


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _shown_once(diagnostics: list[Diagnostic], settings_for: Callable[[Path], Settings]) -> list[Diagnostic]:
    """Sorted, each finding once, filtered by the settings of the path it is about (looked up once per path: a
    file can have hundreds of thousands of findings), one finding per cause (`rules.one_finding_per_cause`)."""
    settings: dict[str, Settings] = {}

    def enabled(d: Diagnostic) -> bool:
        path = d.location.path
        if path not in settings:
            settings[path] = settings_for(Path(path))
        return settings[path].enabled(d.code)

    kept = {(d.sort_key(), d.message): d for d in diagnostics if enabled(d)}
    return one_finding_per_cause(sorted(kept.values(), key=Diagnostic.sort_key))


def _shown(found: list[Diagnostic], loaded: api.Loaded, settings: Settings) -> list[Diagnostic]:
    """The shellcheck findings in the default set (linter/rules/sh_shellcheck.py), and the opt-in ones selected, each
    with the severity it has in a run script."""
    splits = _split_lines(loaded)
    said = {(d.code, d.location.line) for d in loaded.diagnostics}
    stops = _unset_stops(loaded) if any(d.code == UNSET_UNDER_NOUNSET for d in found) else {}
    return [
        in_run_script(d, stops.get(d.location.line))
        for d in found
        if (SAID_BETTER_BY.get(d.code), d.location.line) not in said
        and (settings.explicitly_selected(d.code) or reported_by_default(d.code, d.severity, d.location.line in splits))
    ]


def _unset_stops(loaded: api.Loaded) -> dict[int, int]:
    """The lines bash runs before verl starts where `set -u` is in force, each with the line of that `set`: an
    unassigned variable there stops the script. They are the trainer commands' (from the call to its last override,
    and the array elements it takes) and the top-level simple statements before the first trainer call."""
    from .sources.shellcheck import nounset

    state = nounset(loaded.source.text)
    lines: set[int] = set()
    calls: set[int] = set()
    for command in loaded.commands:
        own = {o.location.line for o in command.overrides if o.location.path == loaded.source.path}
        start = command.origin.line if command.origin is not None else min(own, default=0)
        lines |= own | set(range(start, max(own, default=start) + 1))
        calls.add(start)
    first_call = min(calls, default=0)
    lines.update(line for start, end in state.always_run if end < first_call for line in range(start, end + 1))
    return {line: at for line in lines if (at := state.set_line(line)) is not None}


def _split_lines(loaded: api.Loaded) -> set[int]:
    """Lines where the bash reader split one word into several and one piece is not an override (the value of an
    unquoted `$VAR` held whitespace): every such piece keeps the location of the word it came from."""
    lines = set()
    for command in loaded.commands:
        pieces: dict[tuple[int, int], list] = {}
        for o in command.overrides:
            if o.location.path == loaded.source.path:
                pieces.setdefault((o.location.line, o.location.column), []).append(o)
        lines.update(
            line for (line, _), words in pieces.items() if len(words) > 1 and any(w.syntax_error for w in words)
        )
    return lines


def _shellcheck(scripts: list[Path]) -> dict[str, list[Diagnostic]]:
    from .sources.shellcheck import shellcheck_problems  # only when scripts are linted

    return {
        path: sorted(findings(found), key=Diagnostic.sort_key) for path, found in shellcheck_problems(scripts).items()
    }


def _shellcheck_text(source: TextFile) -> list[Diagnostic]:
    """shellcheck's findings on a script's text, reported under its name (shellcheck reads files)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sapo-lint-") as tmp:
        copy = Path(tmp, Path(source.path).name)
        copy.write_text(source.text, encoding="utf-8")
        found = _shellcheck([copy]).get(str(copy), [])
    return [d._replace(location=d.location._replace(path=source.path)) for d in found]
