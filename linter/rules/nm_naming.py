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
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path, PurePath

from ..core.diagnostics import Diagnostic, Location, Severity
from ..rulekit.registry import source_rule

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

_IGNORES = """Scripts under the directories in `naming-ignore-dirs` and the files in `naming-ignore-files`
    (`[tool.sapo-lint]`, paths relative to the project root, shell-style wildcards allowed per path component)
    are not checked; by default they are verl's own ignores (`examples/data_preprocess`, `examples/profile`,
    `examples/tutorial`, `examples/vllm_omni`, `examples/mtp_trainer` and three single files)."""

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


def _parts(path: PurePath) -> tuple[str, ...]:
    return tuple(p for p in path.parts if p not in ("", "."))


def _contains(haystack: tuple[str, ...], needle: tuple[str, ...]) -> int:
    """Where `needle` (wildcards per component) occurs as consecutive components of `haystack`; -1 if not."""
    n = len(needle)
    for i in range(len(haystack) - n + 1):
        if all(fnmatch.fnmatchcase(h, p) for h, p in zip(haystack[i : i + n], needle, strict=True)):
            return i
    return -1


def is_ignored(path: Path, ignore_dirs: list[str], ignore_files: list[str]) -> bool:
    """True when the script is in an ignored directory or is an ignored file. An ignore entry (relative to the
    project root) matches the path's components wherever they start, so it works for paths given relative to
    the root, relative to the working directory or absolute."""
    p = Path(os.path.normpath(path))
    parents = _parts(p.parent)
    whole = _parts(p)
    for entry in ignore_dirs:
        needle = _parts(PurePath(os.path.normpath(entry)))
        if needle and _contains(parents, needle) >= 0:
            return True
    for entry in ignore_files:
        needle = _parts(PurePath(os.path.normpath(entry)))
        if (
            needle
            and len(needle) <= len(whole)
            and all(fnmatch.fnmatchcase(h, n) for h, n in zip(whole[-len(needle) :], needle, strict=True))
        ):
            return True
    return False


def naming_diagnostics(path: Path, ignore_dirs: list[str], ignore_files: list[str]) -> list[Diagnostic]:
    """The NM diagnostics for one run script (line 1, column 1), none when it is ignored."""
    if is_ignored(Path(path), ignore_dirs, ignore_files):
        return []
    rules = {r.code: r for r in (FORBIDDEN_TOKEN, MISSING_BACKEND, NOT_RUN_SCRIPT)}
    location = Location(str(path), 1, 1)
    return [rules[code].diagnostic(location, message) for code, message in check_name(Path(path).name)]
