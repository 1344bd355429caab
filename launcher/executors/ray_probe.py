"""The version probe of a Ray job: before the trainer, the job prints one line of the versions it sees (doctor's
packages, from package metadata), which the client takes out of the job's log (`ProbeLine`: it is not the trainer's
output) and records in the run directory's environment.json under `cluster`. The probe sees the entrypoint's node
only."""

from __future__ import annotations

import json
from pathlib import Path

from ..rundir import PLAN_FILE, read_json, write_json
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
                kept.append(self._record(line[len(PROBE_MARKER) :]))
            else:
                kept.append(line)
        return "".join(kept)

    def _record(self, text: str) -> str:
        """Record the probe's `text` in environment.json; returns the warning line the log gets in its place ("" for
        none): a verl trainer whose job sees no verl."""
        if self.run_dir is None:
            return ""
        try:
            cluster = json.loads(text)
        except (ValueError, RecursionError):
            return ""
        if not isinstance(cluster, dict):
            return ""
        environment = read_json(self.run_dir / ENVIRONMENT_FILE)
        if environment.get("cluster") != cluster:
            environment["cluster"] = cluster
            write_json(self.run_dir / ENVIRONMENT_FILE, environment)
        return _missing_verl(self.run_dir, cluster)


def _missing_verl(run_dir: Path, cluster: dict) -> str:
    """The warning for a job whose python has no verl while the plan runs one of verl's modules (a team's wrapper
    module is not judged: it may bring its own); "" otherwise."""
    argv = read_json(run_dir / PLAN_FILE).get("argv") or []
    module = argv[2] if len(argv) > 2 and isinstance(argv[2], str) else ""
    versions = cluster.get("versions")
    if not module.startswith("verl.") or not isinstance(versions, dict) or versions.get("verl"):
        return ""
    return (
        f"sapo-launch: warning: the job's python ({cluster.get('python')}) on {cluster.get('host')} has no verl "
        f"installed, so `python -m {module}` cannot start: install verl there, or ship it with the runtime_env "
        "(pip or py_modules)\n"
    )
