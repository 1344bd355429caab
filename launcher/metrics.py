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
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from sapo_toolkit.schemas.atomic import write_atomically

CONSOLE_SOURCE = "console"

# CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks) and two-byte escapes.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# `step:N` as verl's first field: not the tail of `training/global_step:N` or another key, a whole field, and a
# number of steps (an endless digit run is not: int() refuses over 4300 digits).
_STEP = re.compile(r"(?<![\w/.@-])step:(\d{1,18})(?= - |\s*$)")
_RAY_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
_NUMPY_SCALAR = re.compile(r"np\.(?:float|int|uint)\d*\((.*)\)")
_BOOLS = {"True": 1.0, "False": 0.0}
_LINE_BREAK = re.compile(rb"[\r\n]")

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
    text = _RAY_REPEATED.sub("", _ANSI.sub("", line))
    match = _STEP.search(text)
    if match is None:
        return None
    fields = text[match.end():].split(" - ")[1:]
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
    """One value per (metric, step) from each source; the file logger's wins over the console's."""

    jsonl: dict[int, dict[str, float]] = field(default_factory=dict)
    console: dict[int, dict[str, float]] = field(default_factory=dict)

    def add(self, source: dict[int, dict[str, float]], parsed: StepValues) -> int:
        step, values = parsed
        source.setdefault(step, {}).update(values)
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


class MetricsWatcher:
    """Builds a `MetricTable` while the trainer runs: `feed` it the trainer's raw output, `poll` the file logger's
    JSONL as it grows; each returns the steps it added or updated. `close` when the output ends, then
    `complete_metrics_file` (see the module docstring)."""

    __slots__ = ("_identity", "_offset", "_pending", "jsonl_path", "table")

    def __init__(self, jsonl_path: Path | None):
        self.table = MetricTable()
        self.jsonl_path = jsonl_path
        self._pending = b""
        self._offset = 0
        self._identity: tuple[int, int] | None = None

    def feed(self, data: bytes) -> list[int]:
        # Carriage returns end a segment too: a tqdm bar redrawn in place never grows the pending buffer, and a
        # metric line printed right after a bar starts a segment of its own.
        *segments, self._pending = _LINE_BREAK.split(self._pending + data)
        return self._console(segments, complete=True)

    def close(self) -> list[int]:
        """The output has ended: parse a last line cut short, read the JSONL's last lines."""
        pending, self._pending = self._pending, b""
        return self._console([pending], complete=False) + self.poll()

    def poll(self) -> list[int]:
        """Read the complete lines the file logger added since the last poll. A file replaced or truncated under
        us (verl's logger opens it with "wb" when the trainer starts) is read again from its start."""
        if self.jsonl_path is None:
            return []
        try:
            with open(self.jsonl_path, "rb") as handle:
                stat = os.fstat(handle.fileno())
                identity = (stat.st_dev, stat.st_ino)
                if identity != self._identity or stat.st_size < self._offset:
                    self._identity, self._offset = identity, 0
                handle.seek(self._offset)
                chunk = handle.read()
        except OSError:  # not written yet, or not by this machine
            return []
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        parsed = (parse_jsonl_line(line) for line in complete.splitlines())
        return [self.table.add(self.table.jsonl, p) for p in parsed if p is not None]

    def complete_metrics_file(self) -> int:
        """After the trainer has exited: append to the JSONL every step the console showed and the file lacks, so
        that it holds every step whichever way it came; returns how many. verl's own lines are kept byte for byte
        (a last line cut short is dropped). An absent file is created, empty when no step was seen."""
        exists = self.jsonl_path.exists()
        existing = self.jsonl_path.read_bytes() if exists else b""
        kept = existing[: existing.rfind(b"\n") + 1]
        logged = {p[0] for p in map(parse_jsonl_line, kept.splitlines()) if p is not None}
        missing = [step for step in sorted(self.table.console) if step not in logged]
        if exists and not missing:
            return 0
        added = "".join(json.dumps({"step": step, "data": _json_values(self.table.console[step]),
                                    "source": CONSOLE_SOURCE}) + "\n" for step in missing)
        write_atomically(self.jsonl_path, kept + added.encode())
        return len(missing)

    def _console(self, segments: list[bytes], complete: bool) -> list[int]:
        steps = []
        for segment in segments:
            parsed = parse_console_line(segment.decode("utf-8", "replace"), complete) if segment else None
            if parsed is not None and parsed[1]:
                steps.append(self.table.add(self.table.console, parsed))
        return steps


def _json_values(values: dict[str, float]) -> dict[str, float | None]:
    """As verl's file logger writes them: non-finite floats as null."""
    return {k: (v if math.isfinite(v) else None) for k, v in values.items()}


def read_files(paths: list[Path]) -> MetricTable:
    """The metrics in finished or growing files: a line that is a file-logger record counts as one, any other is
    console output, so a run's `metrics.jsonl` and `train.log`, a plain verl log or a JSONL read alike. A file's
    last line without a line break is a record still being written (skipped) or a console line cut short."""
    watcher = MetricsWatcher(None)
    for path in paths:
        with open(path, "rb") as handle:
            for line in handle:
                record = parse_jsonl_line(line) if line.startswith(b"{") else None
                if record is not None:
                    watcher.table.add(watcher.table.jsonl, record)
                else:
                    watcher.feed(line)
        watcher.close()
    return watcher.table
