"""What an executor is (`Executor`), and what the run lifecycle (`launcher/execution.py`) hands it: the command
line's options (`Options`), the live view (`Live`) and the one way to record how a run ended (`Record`).

A run's states, as summary.json's `status` records them: `running` from the moment it is handed to the executor
(`execution.run` writes it, with the executor's name and `summary_fields`); `submitted` once a detached run has
started (or when a run's job can no longer be followed); at its end `succeeded`, `failed` or `interrupted`
(recorded through `Record` by whoever sees the end first: the launcher that follows it, or `status`, `logs` or
`stop` of a run nobody followed), `lost` when its launcher ended without recording one; `refused` when nothing
started. summary.json is written once for each change of state.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, ClassVar, NamedTuple, Protocol, TypeVar

if TYPE_CHECKING:  # the CLI imports this package for `ExecutorError`: planning stays unloaded until a run
    from collections.abc import Callable

    from ..plan import Plan

Handle = TypeVar("Handle")


@dataclass(frozen=True)
class Options:
    """What the command line gives an executor (each reads the fields it knows, in `configured`). What the recipe
    says for an executor travels in the plan (`Plan.ray`: the recipe's `ray:` block under the command line's)."""

    address: str | None = None  # --address (or $RAY_ADDRESS): a Ray cluster's Jobs API, checked by the CLI
    secret_env: tuple[str, ...] = ()  # --secret-env: names redacted, besides the secret ones, wherever written
    headers: dict[str, str] | None = None  # --headers (or $RAY_JOB_HEADERS): sent with every request to a dashboard
    verify: bool | str | None = None  # --verify: a dashboard's TLS checked (a CA bundle's path); None: not given


class Described(NamedTuple):
    """What the dry run shows of where the plan would go: `data` (under the executor's name with `--format json`)
    and `lines` (text, after the environment)."""

    data: dict
    lines: tuple[str, ...]


class Live(Protocol):
    """Where a followed run goes (`live.LiveMonitor`): the trainer's output, and the launcher's own notices."""

    def output(self, data: bytes) -> None: ...

    def message(self, text: str) -> None: ...


class Record(Protocol):
    def __call__(self, **outcome) -> dict:
        """Record how the run ended (`status`, `exit_code` and the executor's own keys, as summary.json keeps them)
        with the gate verdicts judged on it, in one write of summary.json; returns the summary as written (its
        `exit_code` the one the gates give)."""


class Executor(Protocol[Handle]):
    """Where a plan's trainer runs. `NAME` is its name in the registry (`executors.EXECUTORS`) and in summary.json.

    `configured` makes one from the command line's options; `rerun_of` one that runs again where a run directory's
    run ran. The run lifecycle calls `summary_fields` and `start` (`execution.run`), then `follow` unless the run is
    detached; `attach` gives the handle to follow a run started earlier (`logs --follow`). `stop`, `logs` and
    `status` take a run directory: they find the run again from what it records, whichever process started it.
    Whoever sees a run end records it through the `Record` it was given, unless summary.json records that end
    already (another follower did); errors are `ExecutorError`, one line."""

    NAME: ClassVar[str]

    @classmethod
    def configured(cls, options: Options) -> Executor: ...

    @classmethod
    def rerun_of(cls, run_dir: Path, options: Options, read_text: Callable[[Path], str]) -> Executor:
        """An executor that runs again where RUN_DIR's run ran: what the directory records of it (its files read
        with `read_text`, which trusts only the user's own: `replay.trusted_text`), with `options` over it."""

    def where(self) -> str:
        """Where a run goes, for a sentence: `on this machine`, `on the Ray cluster at URL`."""

    def destination(self) -> str | None:
        """Where a run's environment (its secrets) is sent away from this machine; None when it stays here."""

    def describe(self, plan: Plan) -> Described | None:
        """What the dry run shows of where the plan would go (secrets redacted); None: nothing besides the plan."""

    def summary_fields(self) -> dict:
        """The keys summary.json has from the start (the launcher's identity, the job's id before it has one)."""

    def start(self, plan: Plan, run_dir: Path) -> tuple[Handle, dict]:
        """Start the run: the handle the other calls take, and the keys summary.json gains with the next change of
        state (a pid, a submission id). `Refused` when it cannot run there (nothing started)."""

    def attach(self, run_dir: Path) -> Handle:
        """A run started earlier (by this process or another), to `follow` from its start; the launcher's stop
        signals then stop following, not the run (that is `stop`)."""

    def follow(self, handle: Handle, run_dir: Path, live: Live, record: Record) -> int:
        """Pass the run's output to `live` (and to train.log, when this process runs it) until it ends, the launcher's
        stop signals handled as the executor documents (a notice for each through `live.message`); record its end
        through `record` (also when following fails after it ended); return its exit code, or 128 + N when signal
        N stopped following a run that goes on."""

    def stop(self, run_dir: Path, record: Record) -> int:
        """Stop the run RUN_DIR holds and wait until it has ended; exit 0 once it has (now or before), 1 when it
        still runs after the wait."""

    def logs(self, run_dir: Path, record: Record, terminal: BinaryIO) -> int:
        """Write the run's log so far to `terminal`; exit 0."""

    def status(self, run_dir: Path, record: Record) -> int:
        """Print the run's status in one line; exit 0 while it runs, its exit code once it has ended."""

    def settle(self, run_dir: Path, record: Record) -> dict:
        """Record an end of the run that summary.json does not hold yet and that the executor can find (as `status`
        would, printing nothing); summary.json as it then stands. What `report` reads first."""


ExecutorClass = type[Executor]
