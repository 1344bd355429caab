"""Per-step training metrics from verl's two outputs: the console logger's lines and the `file` logger's JSONL.

Console (verl/utils/logger/aggregate_logger.py): one line per step, `step:3 - actor/pg_loss:-0.0123 -
critic/rewards/mean:np.float64(0.4375) - ...`, fields split on " - " and each on its first ':'. The lines arrive
interleaved with everything else the trainer prints: Ray worker prefixes (`(TaskRunner pid=123) step:3 - ...`),
ANSI colours, tqdm bars redrawn with carriage returns, Ray's `[repeated 2x across cluster]`, and a last line cut
short when the trainer dies. Values are `pprint.pformat` of numbers: `1e-06`, `nan`, `np.float64(0.4375)`,
`np.int64(812)`, `True`/`False` (kept as 1.0/0.0, as verl's other loggers do); anything else is skipped.

File logger (verl/utils/tracking.py FileLogger): `{"step": N, "data": {...}}` per line, written with orjson, which
writes NaN and infinities as `null` (read back as NaN). Its values win over the console's for the same metric and
step: they are the same numbers at full precision, and the console line may have been cut.

The `metrics.jsonl` scheme. verl's file logger owns `<run dir>/metrics.jsonl` while the trainer lives: it truncates
the file when it starts (`open(path, "wb")`), so nothing else may write there during the run; the watcher only reads
it, new complete lines at a time. Once the trainer has exited, `MetricsWatcher.complete_metrics_file` appends every
step the console showed that the file lacks (all of them when verl's file logger never wrote here: a logger list
without `file`, or a trainer on another node), marked `"source": "console"`. So after a run `metrics.jsonl` holds
the per-step metrics whichever way they came; during a run, readers merge it with `train.log` (`read_files`).

Bounds: whatever the trainer prints, a line (between line breaks or carriage returns) is kept to `MAX_LINE_BYTES`,
the rest of a longer one is dropped (`LineSplitter`); every pattern is linear in the line; files are read in
chunks; a table holds every step but only the metrics its reader asks for (`keep`); the watcher keeps all of a
step's console values only until the file logger shows that step. Completing metrics.jsonl reads it whole only
when steps must be added.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sapo_toolkit.atomicio import write_atomically

CONSOLE_SOURCE = "console"

# CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks) and two-byte escapes.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# `step:N` as verl's first field: not the tail of `training/global_step:N` or another key, a whole field, and a
# number of steps (an endless digit run is not: int() refuses over 4300 digits). Matched on a line without
# trailing white space, so no quantifier runs over a white-space run.
_STEP = re.compile(r"(?<![\w/.@-])step:(\d{1,18})(?= - |$)")
# Ray's dedup suffix, matched on the line's last `_RAY_SUFFIX_CHARS` characters only.
_RAY_REPEATED = re.compile(r" ?\[repeated \d{1,12}x across cluster\]$")
_RAY_SUFFIX_CHARS = 48
_NUMPY_SCALAR = re.compile(r"np\.(?:float|int|uint)\d*\((.*)\)")
_BOOLS = {"True": 1.0, "False": 0.0}
# verl's metric lines run to a few tens of KiB with many validation metrics; longer lines are cut to this.
MAX_LINE_BYTES = 1 << 20
READ_CHUNK = 1 << 20
# In every metric line (`step:N`) and file-logger record (`"step": N`): other lines are skipped undecoded, so a
# flood of progress bars costs little.
CONSOLE_NEEDLE = b"step:"
STEP_NEEDLE = b"step"

StepValues = tuple[int, dict[str, float]]


def parse_number(text: str) -> float | None:
    """A value as verl's console logger prints it, or None when it is not a number."""
    text = text.strip()
    scalar = _NUMPY_SCALAR.fullmatch(text)
    if scalar:
        text = scalar.group(1)
    if text in _BOOLS:
        return _BOOLS[text]
    try:
        return float(text)
    except ValueError:
        return None


def parse_console_line(line: str, complete: bool = True) -> StepValues | None:
    """The step and numeric metrics of one console line (one segment between line breaks and carriage returns),
    or None when it holds no metric line. `complete=False`: the line was cut short (the trainer died mid-print),
    so its last field may be truncated and is dropped."""
    text = _ANSI.sub("", line).rstrip()
    suffix = _RAY_REPEATED.search(text[-_RAY_SUFFIX_CHARS:])
    if suffix:
        text = text[: len(text) - len(suffix.group())].rstrip()
    match = _STEP.search(text)
    if match is None:
        return None
    fields = text[match.end() :].split(" - ")[1:]
    if not complete:
        fields = fields[:-1]
    values = {}
    for item in fields:
        key, sep, raw = item.partition(":")
        number = parse_number(raw) if sep and key and not key.isspace() else None
        if number is not None:
            values[key.strip()] = number
    return int(match.group(1)), values


def parse_jsonl_line(line: bytes | str) -> StepValues | None:
    """The step and numeric metrics of one file-logger record, or None for anything else (a cut line, a record
    of another shape). `null` is NaN: orjson writes non-finite floats as null."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # a cut or malformed line, or nesting deeper than the parser's stack
        return None
    if not isinstance(record, dict) or not isinstance(record.get("data"), dict):
        return None
    step = record.get("step")
    if not isinstance(step, int) or isinstance(step, bool):
        return None
    values = {}
    for key, value in record["data"].items():
        if value is None:
            values[key] = math.nan
        elif isinstance(value, (int, float)):
            try:
                values[key] = float(value)
            except OverflowError:  # an integer beyond the float range: as large as a float gets
                values[key] = math.inf if value > 0 else -math.inf
    return step, values


@dataclass(slots=True)
class MetricTable:
    """One value per (metric, step) from each source; the file logger's wins over the console's. Every step is
    recorded, with the metrics `keep` accepts (None: all)."""

    jsonl: dict[int, dict[str, float]] = field(default_factory=dict)
    console: dict[int, dict[str, float]] = field(default_factory=dict)
    keep: Callable[[str], bool] | None = None
    last_step: int | None = None  # the highest step recorded

    def add(self, source: dict[int, dict[str, float]], parsed: StepValues) -> int:
        step, values = parsed
        if self.keep is not None:
            values = {k: v for k, v in values.items() if self.keep(k)}
        source.setdefault(step, {}).update(values)
        if self.last_step is None or step > self.last_step:
            self.last_step = step
        return step

    def steps(self) -> list[int]:
        return sorted(self.jsonl.keys() | self.console.keys())

    def at(self, step: int) -> dict[str, float]:
        return {**self.console.get(step, {}), **self.jsonl.get(step, {})}

    def metrics(self) -> list[str]:
        return sorted({k for source in (self.jsonl, self.console) for values in source.values() for k in values})

    def series(self, metric: str) -> list[tuple[int, float]]:
        """(step, value) pairs of one metric in step order."""
        out = []
        for step in self.steps():
            value = self.jsonl.get(step, {}).get(metric, self.console.get(step, {}).get(metric))
            if value is not None:
                out.append((step, value))
        return out


def kept(names: Iterable[str], prefixes: tuple[str, ...] = ()) -> Callable[[str], bool]:
    """A table's `keep`: these metrics and those starting with one of `prefixes`."""
    names = frozenset(names)
    return lambda metric: metric in names or metric.startswith(prefixes)


class LineSplitter:
    """Cuts a byte stream into lines at line breaks and carriage returns, and returns those that contain `needle`
    (all when None). A line is kept to `MAX_LINE_BYTES`: the rest of a longer one is dropped and the line is marked
    cut, so memory stays within one line's bound whatever the stream holds."""

    __slots__ = ("_cut", "_pending", "needle")

    def __init__(self, needle: bytes | None = None) -> None:
        self.needle = needle
        self._pending = bytearray()
        self._cut = False

    def feed(self, data: bytes) -> list[tuple[bytes, bool]]:
        """The lines `data` ends, each with whether it is whole (not cut)."""
        # bytes.split: a regular expression split costs several times more on a flood of short progress updates.
        *ended, rest = data.replace(b"\r", b"\n").split(b"\n")
        lines, needle = [], self.needle
        if ended:
            self._extend(ended[0])
            line = self.close()
            if needle is None or needle in line[0]:
                lines.append(line)
            if needle is None or needle in data:
                others = ended[1:] if needle is None else [line for line in ended[1:] if needle in line]
                lines += [(line[:MAX_LINE_BYTES], len(line) <= MAX_LINE_BYTES) for line in others]
        self._extend(rest)
        return lines

    def close(self) -> tuple[bytes, bool]:
        """The line begun and not yet ended (empty when none), and whether it is whole so far."""
        line = bytes(self._pending), not self._cut
        self._pending.clear()
        self._cut = False
        return line

    def _extend(self, piece: bytes) -> None:
        room = MAX_LINE_BYTES - len(self._pending)
        if len(piece) > room:
            piece, self._cut = piece[:room], True
        self._pending += piece


class MetricsWatcher:
    """Builds a `MetricTable` while the trainer runs: `feed` it the trainer's raw output, `poll` the file logger's
    JSONL as it grows; each returns the steps it added or updated. `close` when the output ends, then
    `complete_metrics_file` (see the module docstring). `keep`: the metrics the table holds."""

    __slots__ = ("_identity", "_jsonl_lines", "_lines", "_offset", "_unlogged", "jsonl_path", "table")

    def __init__(self, jsonl_path: Path | None, keep: Callable[[str], bool] | None = None):
        self.table = MetricTable(keep=keep)
        self.jsonl_path = jsonl_path
        self._lines = LineSplitter(CONSOLE_NEEDLE)
        self._jsonl_lines = LineSplitter(STEP_NEEDLE)
        self._offset = 0
        self._identity: tuple[int, int] | None = None
        # Every console value of the steps the file logger has not shown (yet): what completing the file needs.
        self._unlogged: dict[int, dict[str, float]] = {}

    def feed(self, data: bytes) -> list[int]:
        # Carriage returns end a line too: a tqdm bar redrawn in place never grows the pending line, and a metric
        # line printed right after a bar starts a line of its own.
        return self._console(self._lines.feed(data))

    def close(self) -> list[int]:
        """The output has ended: parse a last line cut short, read the JSONL's last lines."""
        line, _ = self._lines.close()
        return self._console([(line, False)]) + self.poll()

    def poll(self) -> list[int]:
        """Read the complete lines the file logger added since the last poll. A file replaced or truncated under
        us (verl's logger opens it with "wb" when the trainer starts) is read again from its start."""
        if self.jsonl_path is None:
            return []
        steps = []
        try:
            with open(self.jsonl_path, "rb") as handle:
                stat = os.fstat(handle.fileno())
                identity = (stat.st_dev, stat.st_ino)
                if identity != self._identity or stat.st_size < self._offset:
                    self._identity, self._offset = identity, 0
                    self._jsonl_lines.close()
                handle.seek(self._offset)
                while chunk := handle.read(READ_CHUNK):
                    self._offset += len(chunk)
                    steps += [
                        self._logged(parsed)
                        for line, whole in self._jsonl_lines.feed(chunk)
                        if whole and (parsed := parse_jsonl_line(line)) is not None
                    ]
        except OSError:  # not written yet, or not by this machine
            pass
        return steps

    def complete_metrics_file(self) -> int:
        """After the trainer has exited: append to the JSONL every step the console showed and the file lacks, so
        that it holds every step whichever way it came; returns how many. verl's own lines are kept byte for byte
        (a last line cut short is dropped). An absent file is created, empty when no step was seen."""
        logged, complete_size = self._logged_steps()
        missing = [step for step in sorted(self._unlogged) if step not in logged]
        if complete_size is not None and not missing:
            return 0
        kept = b""
        if complete_size:  # verl's complete lines, read whole only to rewrite the file
            with open(self.jsonl_path, "rb") as handle:
                kept = handle.read(complete_size)
        added = "".join(
            json.dumps({"step": step, "data": _json_values(self._unlogged[step]), "source": CONSOLE_SOURCE}) + "\n"
            for step in missing
        )
        write_atomically(self.jsonl_path, kept + added.encode())
        return len(missing)

    def _logged_steps(self) -> tuple[set[int], int | None]:
        """The steps in the file's complete lines, read in chunks, and those lines' length; None: no file."""
        lines, logged, size, complete_size = LineSplitter(STEP_NEEDLE), set(), 0, 0
        try:
            with open(self.jsonl_path, "rb") as handle:
                while chunk := handle.read(READ_CHUNK):
                    logged.update(
                        parsed[0]
                        for line, whole in lines.feed(chunk)
                        if whole and (parsed := parse_jsonl_line(line)) is not None
                    )
                    if (end := chunk.rfind(b"\n")) >= 0:
                        complete_size = size + end + 1
                    size += len(chunk)
        except FileNotFoundError:
            return logged, None
        return logged, complete_size

    def _logged(self, parsed: StepValues) -> int:
        self._unlogged.pop(parsed[0], None)
        return self.table.add(self.table.jsonl, parsed)

    def _console(self, lines: list[tuple[bytes, bool]]) -> list[int]:
        steps = []
        for line, whole in lines:
            parsed = console_metrics(line, whole)
            if parsed is not None:
                step, values = parsed
                if step not in self.table.jsonl:
                    self._unlogged.setdefault(step, {}).update(values)
                steps.append(self.table.add(self.table.console, parsed))
        return steps


def console_metrics(line: bytes, whole: bool) -> StepValues | None:
    """The step and metrics of a console line with at least one metric, else None."""
    if CONSOLE_NEEDLE not in line:  # a line of a file: metric line or not, found undecoded
        return None
    parsed = parse_console_line(line.decode("utf-8", "replace"), whole)
    return parsed if parsed is not None and parsed[1] else None


def _json_values(values: dict[str, float]) -> dict[str, float | None]:
    """As verl's file logger writes them: non-finite floats as null."""
    return {k: (v if math.isfinite(v) else None) for k, v in values.items()}


def read_files(paths: list[Path], keep: Callable[[str], bool] | None = None) -> MetricTable:
    """The metrics in finished or growing files (those `keep` accepts): a line that is a file-logger record counts
    as one, any other is console output, so a run's `metrics.jsonl` and `train.log`, a plain verl log or a JSONL
    read alike. A file's last line without a line break is a record still being written (skipped) or a console
    line cut short. Read in chunks: memory is the table's and one line's, whatever the files' size."""
    table = MetricTable(keep=keep)
    for path in paths:
        lines = LineSplitter(STEP_NEEDLE)
        with open(path, "rb") as handle:
            while chunk := handle.read(READ_CHUNK):
                for line, whole in lines.feed(chunk):
                    _read_line(table, line, whole)
        line, _ = lines.close()
        _read_line(table, line, False)
    return table


def _read_line(table: MetricTable, line: bytes, whole: bool) -> None:
    record = parse_jsonl_line(line) if whole and line.startswith(b"{") else None
    if record is not None:
        table.add(table.jsonl, record)
    elif (parsed := console_metrics(line, whole)) is not None:
        table.add(table.console, parsed)
