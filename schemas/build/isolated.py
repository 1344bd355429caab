"""Snapshot builds of files someone else wrote (a repository's verl tree, a team's config directory), in a process of
their own.

A repository's verl tree and configs are untrusted input: Hydra composing them would import the modules a
`hydra.searchpath` entry names (`pkg://x`), scan `hydra_plugins` packages on `sys.path` (the repository's, when
it is the working directory or on `PYTHONPATH`), and evaluate resolvers (`${oc.env:SOME_TOKEN}`) in defaults lists
and search paths; libcst can crash the process on a pathological module. So the linter never builds in its own
process: `build_isolated` starts `python -I -m sapo_toolkit.schemas.build.isolated` (no `PYTHONPATH`, no user site,
no script or working directory on `sys.path`) in an empty private working directory, with a bounded address space,
sends it the request on standard input and reads one JSON object back. In the child:

- every OmegaConf resolver is replaced by one that refuses without evaluating anything (`_refuse_resolvers`), so an
  environment variable is never read, let alone quoted in a message;
- its standard output and error go to /dev/null (a module printing cannot corrupt a JSON report, a warning cannot
  leak to the user's terminal); the answer goes to a copy of the original standard output;
- the build is bounded in units of work (`compose.MAX_COMPOSITIONS`, `compose.MAX_YAML_NODES`,
  `compose.MAX_YAML_BYTES`); the address space (`MEMORY_BYTES`) and CPU time (`CPU_SECONDS`) are backstops that
  only a runaway parser reaches, each named in the reason.

Whatever happens, the parent gets a snapshot document or one line saying why there is none: never a traceback, a
hang on a FIFO (the parent admits only regular files to a build), or another process's output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MEMORY_BYTES = 4 * 1024**3  # a build of verl main peaks under 200 MB
CPU_SECONDS = 600  # verl main builds in about 25 s of CPU here


class IsolatedBuildError(Exception):
    """The build gave no snapshot; the message says why, in one line, quoting no file or environment text beyond
    paths and names of configs."""


def build_isolated(request: dict) -> dict:
    """The snapshot document the child builds for `request` (`_build`'s kinds). Raises `IsolatedBuildError`."""
    with tempfile.TemporaryDirectory(prefix="sapo-lint-build-") as empty:
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-m", __name__],
                input=json.dumps(request).encode("utf-8"),
                capture_output=True,
                cwd=empty,
                env=_child_environment(),
                preexec_fn=_limits if os.name == "posix" else None,  # noqa: PLW1509 - only resource limits
                check=False,
            )
        except OSError as exc:
            raise IsolatedBuildError(f"the snapshot builder could not start: {exc.strerror or exc}") from None
    if done.returncode < 0:
        raise IsolatedBuildError(_signal_reason(-done.returncode))
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise IsolatedBuildError(f"the snapshot builder stopped without an answer (exit {done.returncode})")
    if "document" in answer and isinstance(answer["document"], dict):
        return answer["document"]
    raise IsolatedBuildError(str(answer.get("error") or "the snapshot builder gave no reason"))


def _child_environment() -> dict[str, str]:
    """Only what Python and Hydra need to start: no secrets reach the child, so none can be resolved there."""
    keep = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT")
    return {k: os.environ[k] for k in keep if k in os.environ} | {"PYTHONHASHSEED": "0"}


def _limits() -> None:  # pragma: no cover - runs in the child between fork and exec
    import resource

    for limit, value in ((resource.RLIMIT_AS, MEMORY_BYTES), (resource.RLIMIT_CPU, CPU_SECONDS)):
        soft, hard = resource.getrlimit(limit)
        bounded = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(limit, (bounded, hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _signal_reason(number: int) -> str:
    import signal

    name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else f"signal {number}"
    if name == "SIGXCPU":
        return f"the snapshot build used more than {CPU_SECONDS} s of CPU (its bound)"
    if name == "SIGKILL":
        return f"the snapshot build was killed (SIGKILL; its memory bound is {MEMORY_BYTES // 1024**3} GiB)"
    return f"the snapshot builder crashed ({name}) on this tree"


# --- the child ---------------------------------------------------------------------------------------------------


def _refuse_resolvers() -> None:
    """Every resolver, registered or not, refuses (omegaconf asks `OmegaConf._get_resolver` for each `${name:...}`),
    and registering one is a no-op: nothing a config names is evaluated, so no environment variable is read."""
    from omegaconf import OmegaConf

    from . import ResolverRefused

    def refusing(name: str):
        def refuse(*_args, **_kwargs):
            raise ResolverRefused(name)

        return refuse

    OmegaConf._get_resolver = staticmethod(refusing)
    OmegaConf.register_new_resolver = staticmethod(lambda *_a, **_k: None)


def _refuse_special_files() -> None:
    """Every file the child opens from here on must be a regular file or a directory: a FIFO or device that
    appeared in the tree after the parent checked it fails the build instead of blocking it (an audit hook sees
    every `open`, Python's own and the parsers')."""
    import stat

    from . import SchemaBuildError

    def hook(event: str, args: tuple) -> None:
        if event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        try:
            mode = os.stat(args[0]).st_mode
        except OSError:
            return  # a missing file: open itself fails, or creates it
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise SchemaBuildError(f"{os.fsdecode(args[0])} is not a regular file (a FIFO, device or socket)")

    sys.addaudithook(hook)


def _build(request: dict) -> dict:
    """`{"kind": "verl", "package_dir", "version", "source"}`: `build_verl_snapshot`; `{"kind": "custom", "base" (the
    verl snapshot document), "package_dir", "config": {"name", "config_dir", "search_path"}}`: `build_custom_snapshot`.
    Every config file is parsed within the build's bounds, once (`config_files_parsed_once`)."""
    from . import ConfigSource, build_custom_snapshot, build_verl_snapshot
    from .compose import config_files_parsed_once

    with config_files_parsed_once():
        if request["kind"] == "verl":
            return build_verl_snapshot(Path(request["package_dir"]), request["version"], request["source"])
        config = request["config"]
        search = tuple(Path(p) for p in config["search_path"])
        source = ConfigSource(config["name"], Path(config["config_dir"]), search)
        return build_custom_snapshot(request["base"], Path(request["package_dir"]), source)


def _reason(exc: BaseException) -> str:
    """One line for a failed build. The builder's own errors name configs and paths; anything else is named by its
    type only, as its message may quote text the build read."""
    from . import SchemaBuildError

    cause: BaseException | None = exc
    while cause is not None:  # the builder's own error (a refused resolver) inside a Hydra or OmegaConf one
        if isinstance(cause, SchemaBuildError):
            return " ".join(str(cause).split())
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, MemoryError):
        return f"the snapshot build ran out of memory (its bound is {MEMORY_BYTES // 1024**3} GiB)"
    if isinstance(exc, RecursionError):
        return "the snapshot build nested too deeply (Python's recursion limit)"
    return f"the snapshot build failed ({type(exc).__name__})"


def main() -> None:  # pragma: no cover - runs in the child; tested through build_isolated
    answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
    request = json.loads(sys.stdin.buffer.read())
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    sys.stdout = sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the process's life
    _refuse_resolvers()
    _refuse_special_files()
    try:
        reply: dict = {"document": _build(request)}
    except BaseException as exc:  # noqa: BLE001 - every failure is one line for the parent
        reply = {"error": _reason(exc)}
    json.dump(reply, answer)
    answer.close()


if __name__ == "__main__":  # pragma: no cover
    main()
