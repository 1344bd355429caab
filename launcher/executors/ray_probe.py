"""The version probe of a Ray job: before the trainer, the job prints one line of the versions it sees (doctor's
packages, from package metadata), which the client takes out of the job's log (`ProbeLine`: it is not the trainer's
output) and records in the run directory's environment.json under `cluster`. The probe sees the entrypoint's node
only."""

from __future__ import annotations

import json
from pathlib import Path

from ..rundir import read_json, write_json
from ..versions import PACKAGES

PROBE_MARKER = "sapo-launch:cluster "  # starts the version probe's line in a job's log
PROBE_ENV = "SAPO_LAUNCH_VERSION_PROBE"  # the job's variable that holds the probe's script
ENVIRONMENT_FILE = "environment.json"  # written by rundir.create; the probe's line adds `cluster`


def version_probe() -> str:
    """A Python script that prints one line, `PROBE_MARKER` and then JSON: the versions of `versions.PACKAGES` as
    the job's python sees them, read from package metadata as doctor reads them (by the name normalized as pip
    does; nothing is imported), with that python's version and its host. sapo-toolkit is not installed on a
    cluster: the script travels in the job's environment (`PROBE_ENV`), which keeps the entrypoint Ray prints
    short."""
    return (
        'import importlib.metadata as m,json,platform,re,socket;n=lambda s:re.sub("[-_.]+","-",(s or "").lower());'
        'd={};[d.setdefault(n(x.metadata.get("Name")),x.version) for x in m.distributions()];'
        f'print({json.dumps(PROBE_MARKER)}+json.dumps({{"python":platform.python_version(),'
        f'"host":socket.gethostname(),"versions":{{k:d.get(n(k)) for k in {json.dumps(list(PACKAGES))}}}}}),flush=True)'
    )


class ProbeLine:
    """Takes the version probe's line out of a job's log, where it is not the trainer's output, and records what it
    says in `run_dir`'s environment.json under `cluster` (the launching machine's versions stay under
    `versions`). Fed the log as it streams: a last, unfinished line that may be the probe's is held until it
    ends."""

    __slots__ = ("held", "run_dir")

    def __init__(self, run_dir: Path | None):
        self.run_dir, self.held = run_dir, ""

    def feed(self, text: str, *, end: bool = False) -> str:
        lines = (self.held + text).splitlines(keepends=True)
        self.held = ""
        if lines and not end and not lines[-1].endswith("\n"):
            last = lines[-1]
            if PROBE_MARKER.startswith(last) or last.startswith(PROBE_MARKER):
                self.held = lines.pop()
        kept = []
        for line in lines:
            if line.startswith(PROBE_MARKER):
                self._record(line[len(PROBE_MARKER) :])
            else:
                kept.append(line)
        return "".join(kept)

    def _record(self, text: str) -> None:
        if self.run_dir is None:
            return
        try:
            cluster = json.loads(text)
        except ValueError:
            return
        environment = read_json(self.run_dir / ENVIRONMENT_FILE)
        if environment.get("cluster") != cluster:
            environment["cluster"] = cluster
            write_json(self.run_dir / ENVIRONMENT_FILE, environment)
