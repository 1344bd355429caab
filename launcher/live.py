"""What an executor shows and checks while the trainer runs. `LiveMonitor.output` takes the trainer's raw output:
it reaches the terminal, its metrics feed a `MetricsWatcher` (which also polls the file logger's JSONL), `every`
bounds are checked as readings arrive (a broken one is reported at once, once), and a progress view shows the step
of `total_steps`, the ETA and the latest throughput and reward. `message` shows a line of the launcher's own (a
stop notice) in the view. Once the run has ended, `finish` judges the gates (`judge`: metrics.jsonl completed,
verdicts as they stand for how the run ended; a resumed run's over its whole curve, through `over_curve`), shows the
verdicts and closes the view; `close` closes it without
judging (following stopped, the run goes on). The last progress line has no ETA.

On a TTY the view is a rich progress bar and the trainer's lines and the launcher's messages are printed above it
(writing them past rich would garble its redraws, or the next redraw would erase them), each as a terminal shows it
(`ShownLines`). Otherwise the trainer's bytes pass through
untouched and the view is a plain line on stderr at the first step, then at most every `PLAIN_INTERVAL_S`, and at
the end. A terminal that goes away (a closed pipe, a hung-up terminal) stops the view, not the run.

`LineTail` keeps what summary.json's `last_lines` shows. Every buffer here is bounded: a line shown or kept is cut
to `SHOWN_LINE_BYTES`, whatever the trainer prints without a line break.
"""

from __future__ import annotations

import io
import sys
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, NamedTuple, TextIO

from .gates import Gate, LiveGates, Verdict, evaluate, judged
from .metrics import MetricsWatcher, kept
from .rundir import TAIL_LINES

THROUGHPUT = "perf/throughput"
REWARD = "critic/rewards/mean"
PLAIN_INTERVAL_S = 30.0
# The file logger's JSONL is read at most this often (the console lines carry the same numbers sooner).
POLL_INTERVAL_S = 1.0
SHOWN_LINE_BYTES = 4096
CUT_MARK = b" [...]"


class ShownLines:
    """Output cut into lines as a terminal shows them: at line breaks, each line the text after its last carriage
    return (a progress bar redrawn in place shows its last state), kept to `SHOWN_LINE_BYTES` (marked `CUT_MARK`)."""

    __slots__ = ("_cut", "_line", "_returned")

    def __init__(self) -> None:
        self._line = bytearray()
        self._cut = False
        self._returned = False  # a carriage return came last: what follows replaces the line

    def feed(self, data: bytes) -> list[bytes]:
        """The lines `data` ends."""
        *ended, rest = data.split(b"\n")
        lines = []
        for piece in ended:
            self._add(piece)
            lines.append(self.close())
        self._add(rest)
        return lines

    def begun(self) -> bytes:
        """The line begun and not yet ended (empty when none)."""
        return bytes(self._line) + (CUT_MARK if self._cut else b"")

    def close(self) -> bytes:
        """End the line begun; returns it."""
        line = self.begun()
        self._line.clear()
        self._cut = self._returned = False
        return line

    def _add(self, piece: bytes) -> None:
        text = piece.rstrip(b"\r")
        if text:
            _, returned, last = text.rpartition(b"\r")
            if returned or self._returned:
                self._line.clear()
                self._cut = False
            room = SHOWN_LINE_BYTES - len(self._line)
            if len(last) > room:
                last, self._cut = last[:room], True
            self._line += last
            self._returned = len(text) < len(piece)
        elif piece:
            self._returned = True


class LineTail:
    """The last `TAIL_LINES` lines of the output (as `ShownLines` gives them) and the line begun, for
    summary.json's `last_lines`."""

    __slots__ = ("_lines", "_shown")

    def __init__(self) -> None:
        self._lines: deque[bytes] = deque(maxlen=TAIL_LINES)
        self._shown = ShownLines()

    def add(self, data: bytes) -> None:
        # Only the last TAIL_LINES lines can stay: what comes before them is not looked at.
        cut = len(data)
        for _ in range(TAIL_LINES + 1):
            cut = data.rfind(b"\n", 0, cut)
            if cut < 0:
                break
        else:
            self._shown.close()
            data = data[cut + 1 :]
        self._lines.extend(self._shown.feed(data))

    def note(self, text: str) -> None:
        """A line of the launcher's own, after the output so far."""
        begun = self._shown.close()
        self._lines.extend([begun, text.encode()] if begun else [text.encode()])

    def lines(self) -> list[str]:
        begun = self._shown.begun()
        return [line.decode("utf-8", "replace") for line in (*self._lines, *([begun] if begun else ()))][-TAIL_LINES:]


class Status(NamedTuple):
    step: int
    total: int | None
    eta_s: float | None
    throughput: float | None
    reward: float | None

    def text(self) -> str:
        step = f"step {self.step}/{self.total} ({self.step / self.total:.0%})" if self.total else f"step {self.step}"
        return ", ".join([step, *self.details()])

    def details(self) -> list[str]:
        """ETA and the latest throughput and reward, those known."""
        parts = [f"ETA {_duration(self.eta_s)}"] if self.eta_s is not None else []
        return parts + [
            f"{name} {value:.6g}"
            for name, value in ((THROUGHPUT, self.throughput), (REWARD, self.reward))
            if value is not None
        ]


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m" if minutes else f"{seconds:.0f}s"


class PlainView:
    """Not a TTY: the trainer's bytes unchanged on the terminal, `sapo-launch:` lines on stderr."""

    __slots__ = ("_shown_at", "_shown_step", "clock", "messages", "terminal")

    def __init__(self, terminal: BinaryIO, messages: TextIO, clock: Callable[[], float]):
        self.terminal, self.messages, self.clock = terminal, messages, clock
        self._shown_at: float | None = None
        self._shown_step: int | None = None

    def output(self, data: bytes) -> None:
        self.terminal.write(data)
        self.terminal.flush()

    def message(self, text: str) -> None:
        self.messages.write(f"sapo-launch: {text}\n")
        self.messages.flush()

    def update(self, status: Status) -> None:
        if self._shown_at is None or self.clock() - self._shown_at >= PLAIN_INTERVAL_S:
            self._show(status)

    def close(self, status: Status | None) -> None:
        if status is not None and status.step != self._shown_step:
            self._show(status)

    def _show(self, status: Status) -> None:
        self._shown_at, self._shown_step = self.clock(), status.step
        self.message(status.text())


class RichView:
    """A TTY: a rich progress bar at the bottom, the trainer's lines and sapo-launch's messages printed above it."""

    __slots__ = ("_progress", "_shown", "_stream", "_task")

    def __init__(self, terminal: BinaryIO, total: int | None):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        # A text layer over the terminal's bytes for rich; detached at the end so that closing it never closes them.
        self._stream = io.TextIOWrapper(terminal, encoding="utf-8", errors="replace", write_through=True)
        self._progress = Progress(
            TextColumn("[bold]training"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
            console=Console(file=self._stream),
        )
        self._task = self._progress.add_task("training", total=total, info="waiting for the first step")
        self._shown = ShownLines()
        self._progress.start()

    def output(self, data: bytes) -> None:
        for line in self._shown.feed(data):
            self._print(line)

    def _print(self, line: bytes) -> None:
        from rich.text import Text

        self._progress.console.print(Text.from_ansi(line.decode("utf-8", "replace")), soft_wrap=True)

    def message(self, text: str) -> None:
        from rich.text import Text

        self._progress.console.print(Text(f"sapo-launch: {text}", style="bold"), soft_wrap=True)

    def update(self, status: Status) -> None:
        self._progress.update(self._task, completed=status.step, info=", ".join(status.details()))

    def close(self, status: Status | None) -> None:
        begun = self._shown.close()
        if begun:
            self._print(begun)
        if status is not None:
            self.update(status)
        self._progress.stop()
        self._stream.detach()


class NullView:
    """The terminal went away (a closed pipe, a hung-up terminal): the run goes on, shown nowhere."""

    __slots__ = ()

    def output(self, data: bytes) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def update(self, status: Status) -> None:
        pass

    def close(self, status: Status | None) -> None:
        pass


def judge(watcher: MetricsWatcher, gates: tuple[Gate, ...], run_status: str | None) -> tuple[Verdict, ...]:
    """The run's output has ended (`run_status`: summary.json's status; None: unknown): read the last metrics
    (closing the watcher; once closed, that reads only what the file logger added since), complete metrics.jsonl,
    and judge every gate as it stands for how the run ended (`gates.judged`)."""
    watcher.close()
    watcher.complete_metrics_file()
    return judged(evaluate(gates, watcher.table), run_status)


# How a run's verdicts are judged over the whole curve it ends (`lineage.judged_over_curve`), given how it ended and
# the verdicts on its own metrics; a run that continues none keeps its own.
OverCurve = Callable[[str | None, tuple[Verdict, ...]], tuple[Verdict, ...]]


def _own(_status: str | None, verdicts: tuple[Verdict, ...]) -> tuple[Verdict, ...]:
    return verdicts


class LiveMonitor:
    __slots__ = ("_first", "_live", "_polled_at", "clock", "gates", "over_curve", "total_steps", "view", "watcher")

    def __init__(
        self,
        metrics_path: Path,
        total_steps: int | None,
        gates: tuple[Gate, ...],
        terminal: BinaryIO,
        messages: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        over_curve: OverCurve = _own,
    ):
        self.watcher = MetricsWatcher(metrics_path, kept([THROUGHPUT, REWARD, *(g.metric for g in gates)]))
        self.gates, self.total_steps, self.clock, self.over_curve = gates, total_steps, clock, over_curve
        self.view = (
            RichView(terminal, total_steps) if terminal.isatty() else PlainView(terminal, messages or sys.stderr, clock)
        )
        self._live = LiveGates(gates)
        self._first: tuple[float, int] | None = None  # (time, step) of the first step seen, for the ETA
        self._polled_at: float | None = None

    def output(self, data: bytes) -> None:
        self._show(self.view.output, data)
        steps = self.watcher.feed(data)
        now = self.clock()
        if self._polled_at is None or now - self._polled_at >= POLL_INTERVAL_S:
            self._polled_at = now
            steps += self.watcher.poll()
        self._update(steps)

    def message(self, text: str) -> None:
        """A line of the launcher's own, shown in the view (above the progress bar on a TTY)."""
        self._show(self.view.message, text)

    def finish(self, run_status: str | None = None) -> tuple[Verdict, ...]:
        """The run has ended (`run_status` as `judge` takes it): judge the gates, show the verdicts, close."""
        self._update(self.watcher.close())
        verdicts = self.over_curve(run_status, judge(self.watcher, self.gates, run_status))
        for verdict in verdicts:
            self.message(f"gate {verdict.status}: {verdict.gate.name}: {verdict.reason}")
        self.close()
        return verdicts

    def close(self) -> None:
        """Close the view, its last line the last step seen (without an ETA: the run is not followed any more)."""
        status = self._status()
        self._show(self.view.close, status and status._replace(eta_s=None))

    def _update(self, steps: list[int]) -> None:
        if not steps:
            return
        for step in sorted(set(steps)):
            for text in self._live.check(step, self.watcher.table.at(step)):
                self._show(self.view.message, text)
        self._show(self.view.update, self._status())

    def _show(self, method: Callable, argument) -> None:
        try:
            method(argument)
        except OSError:  # the terminal went away
            self.view = NullView()

    def _status(self) -> Status | None:
        step = self.watcher.table.last_step
        if step is None:
            return None
        now = self.clock()
        if self._first is None:
            self._first = (now, step)
        started, first_step = self._first
        eta = (
            max(0.0, (now - started) / (step - first_step) * (self.total_steps - step))
            if self.total_steps and step > first_step
            else None
        )
        latest = self.watcher.table.at(step)
        return Status(step, self.total_steps, eta, latest.get(THROUGHPUT), latest.get(REWARD))
