"""Run-script naming rules (NM): `run_<model>_<train-backend>.sh`, the same verdicts as verl's own pre-commit
check `tests/special_sanity/check_example_naming.py` (its token lists, backends and default ignores are copied
below; `check_filename` is replicated verdict for verdict).

verl's check, for a file name:
1. not starting with `run_` -> one error, nothing else checked (NM003);
2. not ending with `.sh` -> one error, nothing else checked (NM003);
3. any underscore-separated token of the stem (less a leading `run`) in FORBIDDEN_TOKENS -> one error listing
   them (NM001); tokens are whole words, so `qwen3vl` or `vllmx` do not match;
4. independently, the stem not ending with `_<backend>` for an allowed backend (a string suffix match, so the
   two-token `megatron_lite` and `fsdp_turbo` work) -> one error (NM002).

verl added that check in 0.8.0; verl main's `.pre-commit-config.yaml` (commit 1dda039) runs it on its examples
tree only:

      - id: check-example-naming
        name: Check example script naming convention
        entry: python3 tests/special_sanity/check_example_naming.py --root examples
        language: python
        pass_filenames: false

Older verl releases' examples, and the many repositories that copy verl's `examples/` without the check, name
their scripts freely. So the NM rules apply only where the repository runs the check or the user asks for them:
- the script's repository (the closest directory above it holding `.git`, as `verl_source.repository_dirs` finds
  it) enforces the check when its `.pre-commit-config.yaml` has a hook whose id or entry names it
  (`check-example-naming`, `check_example_naming`), or when it holds verl's checker script itself; the naming roots
  then are the hook's `--root` arguments (else `examples`), relative to the repository root, and verl's default
  ignores are relative to the repository root too (the checker's `--repo-root .`: pre-commit runs hooks there);
- or `[tool.sapo-lint] naming-roots` lists the roots (relative to that pyproject.toml), whatever the repository
  does; verl's default ignores are then relative to the directory holding the closest `examples`.
A script in no repository (no `.git` up to the home directory) is not enforced unless `naming-roots` says so:
pre-commit runs only in a git repository. A pre-commit config that cannot be read, or is no YAML mapping of hooks,
names no hook (pre-commit cannot run it either). Nothing read is run or imported; each repository's configuration
is read once per process.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
from functools import cache
from pathlib import Path, PurePath
from typing import NamedTuple

from ..core.diagnostics import Diagnostic, Location, Severity
from ..core.files import UnreadableFile, read_bytes
from ..rulekit.registry import source_rule
from ..verl_source import repository_dirs

# verl tests/special_sanity/check_example_naming.py l.51-66
FORBIDDEN_TOKENS = (
    "vllm",
    "sglang",
    "trtllm",  # inference backends
    "npu",
    "amd",  # platform / accelerator vendors
    "gb200",
    "b200",
    "blackwell",  # specific GPU machine types
    "fp8",  # quantisation variants
)
# l.73-82
ALLOWED_BACKENDS = ("fsdp", "fsdp2", "fsdp_turbo", "megatron", "megatron_lite", "mindspeed", "automodel", "veomni")
# l.86-94 and l.97-109: verl's defaults, relative to the repository root
DEFAULT_IGNORE_DIRS = (
    "examples/data_preprocess",
    "examples/profile",
    "examples/tutorial",
    "examples/vllm_omni",
    "examples/mtp_trainer",
)
DEFAULT_IGNORE_FILES = (
    "examples/generation/run_deepseek_llm_7b.sh",
    "examples/flowgrpo_trainer/run_qwen_image_omni_lora.sh",
    "examples/rollout_correction/run_qwen2_5_7b_fsdp_multi_rs.sh",
)

EXAMPLES = "examples"  # the checker's default `--root`, and the one verl's hook passes
PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
MAX_PRE_COMMIT_CONFIG_BYTES = 256 * 1024  # verl main's: 4 KiB
NAMING_HOOK_MARKS = ("check-example-naming", "check_example_naming")  # the hook's id, the checker's file name
NAMING_CHECKER = "tests/special_sanity/check_example_naming.py"

_IGNORES = """Only run scripts under a naming root are named, and only where the check is enforced: where the
    script's repository runs verl's check (a hook in its `.pre-commit-config.yaml` whose id or entry names
    `check-example-naming`, or verl's checker `tests/special_sanity/check_example_naming.py` in the repository),
    on what the hook passes as `--root` (else `examples`), relative to the repository root; or, whatever the
    repository does, on the folders `naming-roots = ["examples", "recipes"]` lists in `[tool.sapo-lint]` (relative
    to that pyproject.toml; `naming-roots = []` names none). verl releases before 0.8.0, which have no such check,
    and repositories that copy verl's `examples/` without it get no NM finding, nor does a script in no git
    repository. Scripts under the directories in `naming-ignore-dirs` and the files in `naming-ignore-files`
    (`[tool.sapo-lint]`, paths relative to that pyproject.toml, shell-style wildcards allowed per path
    component) are not checked; by default they are verl's own ignores (`examples/data_preprocess`,
    `examples/profile`, `examples/tutorial`, `examples/vllm_omni`, `examples/mtp_trainer` and three single
    files), relative to the repository root (with `naming-roots`: to the directory that holds the closest
    `examples`)."""

FORBIDDEN_TOKEN = source_rule(
    "NM001",
    "naming-forbidden-token",
    Severity.ERROR,
    summary="run-script name carries an inference-backend, platform, machine-type or quantisation token",
    explanation=f"""verl names example scripts `run_<model>_<train-backend>.sh`, one script per model and
    training backend; the inference backend (`vllm`, `sglang`, `trtllm`), the platform (`npu`, `amd`), the
    machine type (`gb200`, `b200`, `blackwell`) and the quantisation (`fp8`) are chosen inside the script (a
    `case "$DEVICE"` or `$INFER_BACKEND` branch, an override), not by copying it. Its pre-commit hook
    `check-example-naming` rejects a name any of whose underscore-separated tokens is one of those; the match
    is on whole tokens, so `qwen3vl` or `vllmx` pass. sapo-lint reports the same verdict, on line 1 of the
    script. {_IGNORES}""",
    bad="""
    (a script named) examples/grpo_trainer/run_qwen3_8b_vllm_fsdp.sh
    """,
    good="""
    (a script named) examples/grpo_trainer/run_qwen3_8b_fsdp.sh
    """,
    module=__name__,
)

MISSING_BACKEND = source_rule(
    "NM002",
    "naming-train-backend",
    Severity.ERROR,
    summary="run-script name does not end with `_<train-backend>.sh`",
    explanation=f"""The last part of the name must be the training backend, one of `fsdp`, `fsdp2`,
    `fsdp_turbo`, `megatron`, `megatron_lite`, `mindspeed`, `automodel`, `veomni` (a suffix match on the
    file's stem, as verl's `check-example-naming` hook does): `run_qwen3_8b.sh` names no backend and
    `run_qwen3_8b_fsdp_extra.sh` puts something after it. Words that qualify the recipe go before the
    backend: `run_qwen3_8b_merge_fsdp.sh`. Reported together with NM001 when both apply, on line 1.
    {_IGNORES}""",
    bad="""
    (a script named) examples/grpo_trainer/run_qwen3_8b_fsdp_extra.sh
    """,
    good="""
    (a script named) examples/grpo_trainer/run_qwen3_8b_extra_fsdp.sh
    """,
    module=__name__,
)

NOT_RUN_SCRIPT = source_rule(
    "NM003",
    "naming-run-prefix",
    Severity.ERROR,
    summary="run-script name does not start with `run_` (or does not end with `.sh`)",
    explanation=f"""verl's `check-example-naming` hook requires every example script to be named
    `run_<model>_<train-backend>.sh`; a name without the `run_` prefix (or, when such a file is linted,
    without the `.sh` suffix) is rejected with this one error and its other parts are not checked, as verl
    does. Reported on line 1. Only run scripts are named: a script that starts no verl trainer (an environment
    set-up helper) gets no NM finding. {_IGNORES}""",
    bad="""
    (a script named) examples/grpo_trainer/qwen3_8b_fsdp.sh
    """,
    good="""
    (a script named) examples/grpo_trainer/run_qwen3_8b_fsdp.sh
    """,
    module=__name__,
)


def _split_tokens(stem: str) -> list[str]:
    tokens = stem.split("_")
    if tokens and tokens[0] == "run":
        tokens = tokens[1:]
    return tokens


def _has_allowed_backend(stem: str) -> bool:
    return any(stem.endswith(f"_{backend}") for backend in ALLOWED_BACKENDS)


def check_name(name: str) -> list[tuple[str, str]]:
    """verl's `check_filename` verdicts for a bare file name, as (code, message) pairs in verl's order."""
    if not name.startswith("run_"):
        return [(NOT_RUN_SCRIPT.code, f"example script {name!r} must be named 'run_<model>_<train-backend>.sh'")]
    if not name.endswith(".sh"):
        return [(NOT_RUN_SCRIPT.code, f"example script {name!r} must end with '.sh'")]
    stem = name[: -len(".sh")]
    tokens = _split_tokens(stem)
    out = []
    forbidden = [t for t in tokens if t in FORBIDDEN_TOKENS]
    if forbidden:
        out.append(
            (
                FORBIDDEN_TOKEN.code,
                (
                    f"file name contains forbidden token(s) {forbidden}: inference backend, platform, "
                    "machine type and quantisation are chosen inside the script, not in its name "
                    "('run_<model>_<train-backend>.sh')"
                ),
            )
        )
    if not tokens or not _has_allowed_backend(stem):
        out.append(
            (
                MISSING_BACKEND.code,
                f"file name must end with '_<train-backend>.sh' where train-backend ∈ {list(ALLOWED_BACKENDS)}",
            )
        )
    return out


class NamingScope(NamedTuple):
    """Which run scripts the NM rules name (`Settings.naming_scope` builds it from `[tool.sapo-lint]`)."""

    roots: tuple[str, ...] | None = None  # absolute (`naming-roots`); None: those the script's repository checks
    # Ignores: an absolute entry as it is (a pyproject.toml's, made absolute), a relative one (verl's own lists)
    # relative to the repository root, or with `roots` given, to the directory that holds the closest `examples`.
    ignore_dirs: tuple[str, ...] = DEFAULT_IGNORE_DIRS
    ignore_files: tuple[str, ...] = DEFAULT_IGNORE_FILES


def _parts(path: PurePath) -> tuple[str, ...]:
    return tuple(p for p in path.parts if p not in ("", "."))


def _matches(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    return len(parts) == len(pattern) and all(fnmatch.fnmatchcase(h, p) for h, p in zip(parts, pattern, strict=True))


def _closest_examples(script: PurePath) -> PurePath | None:
    return next((d for d in script.parents if d.name == EXAMPLES), None)


def _below(script: PurePath, directory: PurePath) -> tuple[str, ...] | None:
    """The script's path components below `directory` (wildcards allowed in it), None when it is not under it. Both
    are compared as written (absolute, `..` folded) and with symlinks resolved: a root may be a link to the tree."""
    try:
        resolved = [(PurePath(os.path.realpath(script)), PurePath(os.path.realpath(directory)))]
    except (OSError, ValueError):  # a configured path with a NUL byte names no directory
        resolved = []
    for a, b in [(script, directory), *resolved]:
        head = _parts(b)
        if len(_parts(a)) > len(head) and _matches(_parts(a)[: len(head)], head):
            return _parts(a)[len(head) :]
    return None


@cache
def repository_root(directory: str) -> str | None:
    """The repository a script in `directory` (absolute) belongs to: the closest directory at or above it holding
    `.git`, up to the home directory; None when there is none."""
    top = repository_dirs(Path(directory))[-1]
    return str(top) if os.path.exists(top / ".git") else None


def _hooks(config: Path) -> list[dict]:
    """The hooks of a `.pre-commit-config.yaml`, [] when it cannot be read or is no mapping of `repos:` with
    `hooks:`. A `hooks:` list that YAML aliases repeat is walked once, so the work stays linear in the file's size."""
    import yaml

    try:
        text = read_bytes(config, MAX_PRE_COMMIT_CONFIG_BYTES).decode("utf-8")
        document = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (UnreadableFile, ValueError, RecursionError, yaml.YAMLError):  # ValueError: bad UTF-8, a bad timestamp
        return []
    repos = document.get("repos") if isinstance(document, dict) else None
    hook_lists = [r.get("hooks") for r in repos if isinstance(r, dict)] if isinstance(repos, list) else []
    distinct = {id(hooks): hooks for hooks in hook_lists if isinstance(hooks, list)}
    return [hook for hooks in distinct.values() for hook in hooks if isinstance(hook, dict)]


def _root_argument(hook: dict) -> str | None:
    """The last `--root` the hook passes to the checker (in its entry or its args), None when it passes none."""
    entry, args = hook.get("entry"), hook.get("args")
    try:
        words = shlex.split(entry) if isinstance(entry, str) else []
    except ValueError:  # unbalanced quotes: pre-commit cannot run it either
        words = []
    words += [a for a in args if isinstance(a, str)] if isinstance(args, list) else []
    root = None
    for index, word in enumerate(words):
        if word == "--root" and index + 1 < len(words):
            root = words[index + 1]
        elif word.startswith("--root="):
            root = word.removeprefix("--root=")
    return root


def _names_the_check(hook: dict) -> bool:
    return any(
        isinstance(hook.get(key), str) and any(mark in hook[key] for mark in NAMING_HOOK_MARKS)
        for key in ("id", "entry")
    )


@cache
def enforced_roots(repository: str) -> tuple[str, ...]:
    """The naming roots (absolute) on which the repository runs verl's naming check: each `check-example-naming`
    hook's `--root` (else `examples`), or `examples` where only the checker script is there; () when it runs none."""
    hooks = [h for h in _hooks(Path(repository, PRE_COMMIT_CONFIG)) if _names_the_check(h)]
    if not hooks and os.path.isfile(os.path.join(repository, NAMING_CHECKER)):
        return (os.path.join(repository, EXAMPLES),)
    roots = (os.path.normpath(os.path.join(repository, _root_argument(h) or EXAMPLES)) for h in hooks)
    return tuple(dict.fromkeys(roots))


def naming_root(script: PurePath, roots: tuple[str, ...]) -> PurePath | None:
    """The closest of `roots` the script (an absolute path) is under; None when it is under none, and so is no
    example."""
    under = [PurePath(r) for r in roots if _below(script, PurePath(r)) is not None]
    return max(under, key=lambda r: len(r.parts), default=None)


def is_ignored(script: PurePath, scope: NamingScope, repository: str | None = None) -> bool:
    """Whether the script (an absolute path) is in an ignored directory or is an ignored file; relative entries are
    relative to `repository`, else to the directory that holds the closest `examples`."""
    examples = _closest_examples(script)
    relative_base = PurePath(repository) if repository is not None else examples.parent if examples else None

    def below(entry: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """(the script's components, the entry's) from the entry's base, None when the script is not under it."""
        if os.path.isabs(entry):
            base, relative = (
                PurePath(entry).anchor,
                PurePath(os.path.normpath(entry)).relative_to(PurePath(entry).anchor),
            )
        elif relative_base is not None:
            base, relative = relative_base, PurePath(os.path.normpath(entry))
        else:
            return None
        found = _below(script, PurePath(base))
        return None if found is None else (found, _parts(relative))

    for entry in scope.ignore_dirs:
        pair = below(entry)
        if pair and pair[1] and len(pair[1]) < len(pair[0]) and _matches(pair[0][: len(pair[1])], pair[1]):
            return True
    return any((pair := below(entry)) and _matches(*pair) for entry in scope.ignore_files)


def naming_diagnostics(path: Path, scope: NamingScope) -> list[Diagnostic]:
    """The NM diagnostics for one run script (line 1, column 1); none where the check is not enforced (neither the
    script's repository nor `scope.roots` asks for it), or the script is under no naming root, or ignored."""
    script = PurePath(os.path.abspath(path))
    repository = None
    roots = scope.roots
    if roots is None:
        repository = repository_root(str(script.parent))
        roots = enforced_roots(repository) if repository is not None else ()
    if naming_root(script, roots) is None or is_ignored(script, scope, repository):
        return []
    rules = {r.code: r for r in (FORBIDDEN_TOKEN, MISSING_BACKEND, NOT_RUN_SCRIPT)}
    location = Location(str(path), 1, 1)
    return [rules[code].diagnostic(location, message) for code, message in check_name(Path(path).name)]
