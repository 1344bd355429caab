"""Property tests of the static bash reader against bash itself: the only place the tests run bash.

- argv: what the reader says each trainer call receives equals what bash passes (`argv_divergences`), over
  generated scripts, the fixtures and verl's example scripts (`../shared/corpus`). Bash runs a copy of the script
  in a sandbox (`bash_trainer_calls`): a restricted shell (`bash -r`: no command name with a `/`, no output
  redirection, no `cd`) whose PATH holds only a recorder, so that every command, the trainer included, does
  nothing but record its argv.
- syntax: SH002 only where `bash -n` (which parses without running anything) rejects the script.
"""

from __future__ import annotations

import re
import shutil
import stat
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sapo_toolkit.linter.api import read_options
from sapo_toolkit.linter.settings import Settings
from sapo_toolkit.linter.sources.bash.markers import environment_name, readable
from sapo_toolkit.linter.sources.bash.parse import parse
from sapo_toolkit.linter.sources.bash.script import evaluate
from sapo_toolkit.linter.sources.files import TextFile

from .helpers import read_script_findings

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")
OPTIONS = read_options(Settings(verl_version="0.9.1"))
TESTS = Path(__file__).parent
CORPUS = TESTS.parent.parent / "shared" / "corpus"
# Real run scripts: the fixtures, and verl's own examples where the corpus is checked out beside the repository.
REAL_SCRIPTS = sorted(TESTS.glob("fixtures/**/*.sh")) + sorted(CORPUS.glob("**/*.sh"))


IDENT = st.sampled_from(["alpha", "beta", "x1", "q_2", "r-3", "v.4", "p/5", "7", "0.5", "True"])
SPACEY = st.sampled_from(["two words", " lead", "trail ", "a  b"])
KEYS = [f"trainer.k{i}" for i in range(24)]
DEVICES = ["npu", "gpu", "cuda"]
BACKENDS = ["vllm", "sglang"]


# Each sets a variable (the first argument) from a knob (the second) the way real run scripts compute values.
COMPUTED = st.sampled_from(
    [
        lambda v, k: f'PARTS=(a "b c" ${k})\n{v}="${{PARTS[@]}}"',  # a quoted [@] in an assignment joins
        lambda v, k: f"PARTS=(x ${k})\n{v}=${{PARTS[*]}}",
        lambda v, k: f'PARTS=(p q r)\n{v}="${{PARTS[@]:1}}|${{PARTS[-1]}}|${{#PARTS[@]}}"',
        lambda v, k: f'PARTS=(p)\nPARTS[3]=${k}\n{v}="${{PARTS[*]}}|${{#PARTS[@]}}|${{!PARTS[@]}}"',
        lambda v, k: f"i=1\nPARTS=(a b c)\n{v}=${{PARTS[i+1]}}",
        lambda v, k: f"{v}=pre\n{v}+=_${k}",
        lambda v, k: f"printf -v {v} '%s_%03d' \"${k}\" 7",
        lambda v, k: f"declare -i {v}=2*3+1\n{v}+=4",
        lambda v, k: f"PARTS=(a b ${k} c)\nunset 'PARTS[1]' PARTS[-1]\n{v}=\"${{PARTS[*]}}|${{#PARTS[@]}}\"",
        lambda v, k: f"n=3\n(( n += 2 ))\nlet n=n*2\n{v}=$((n++))_$n",
        lambda v, k: f"{v}=${{UNSET_A:-${{UNSET_B:-${k}}}}}",
        lambda v, k: f'IFS=, read -r first second <<< "x,y,${k}"\n{v}=$second',
        lambda v, k: f"S=a,,b\nOLD_IFS=$IFS\nIFS=,\nPARTS=($S)\nIFS=$OLD_IFS\n{v}=${{#PARTS[@]}}:${{PARTS[2]}}",
        lambda v, k: f'read -r -a PARTS <<< "u ${k} w"\n{v}=${{PARTS[1]}}',
        lambda v, k: f"{v}=${{{k}^^}}.${{{k},,}}.${{{k}#*/}}.${{{k}%.*}}",
        lambda v, k: f"{v}=${{{k}//./_}}.${{{k}/#?/X}}.${{{k}:1:2}}.${{{k}: -1}}",
        lambda v, k: f'{v}="pre"\\\n"post"',  # a line continuation inside a word joins
        lambda v, k: f"f() {{ local inner=$1; {v}=$inner.$#; }}\nf ${k} two",
        lambda v, k: f"set -- one ${k}\nshift\n{v}=$1.$#",
        lambda v, k: f"{v}=${{#{k}}}",
    ]
)


@st.composite
def scripts(draw) -> str:
    lines = ["#!/usr/bin/env bash", "set -e", "HOME=/home/u"]  # what `~` expands to
    knobs: list[str] = []
    ints: list[str] = []
    n_knobs = draw(st.integers(1, 4))
    for i in range(n_knobs):
        name = f"K{i}"
        value = draw(IDENT)
        form = draw(st.sampled_from(["plain", ":-", "-", ":=", "quoted", "spacey", "tilde", "tilde-default"]))
        if form == "plain":
            lines.append(f"{name}={value}")
        elif form == "tilde":
            lines.append(f"{name}=~/{value}")
        elif form == "tilde-default":
            lines.append(f"{name}=${{{name}:-~/{value}}}")
        elif form == "quoted":
            lines.append(f'{name}="{value}"')
        elif form == "spacey":
            lines.append(f'{name}="{draw(SPACEY)}"')
        elif form == ":=":
            lines.append(f': "${{{name}:={value}}}"')
        else:
            lines.append(f"{name}=${{{name}{form}{value}}}")
        knobs.append(name)
    for i in range(draw(st.integers(0, 2))):
        name = f"N{i}"
        lines.append(f"{name}=${{{name}:-{draw(st.integers(0, 64))}}}")
        ints.append(name)
    for i in range(draw(st.integers(0, 3))):  # a knob computed by one of the constructs bash evaluates
        name = f"C{i}"
        lines.extend(draw(COMPUTED)(name, draw(st.sampled_from(knobs))).splitlines())
        knobs.append(name)
    if draw(st.booleans()):
        lines.append(f"DEVICE=${{DEVICE:-{draw(st.sampled_from(DEVICES))}}}")
    if draw(st.booleans()):
        lines.append(f"INFER_BACKEND=${{INFER_BACKEND:-{draw(st.sampled_from(BACKENDS))}}}")

    keys = iter(draw(st.permutations(KEYS)))

    def arg(quoted_ok: bool = True) -> str:
        key = next(keys)
        kind = draw(st.sampled_from(["lit", "var", "dq", "sq", "concat", "arith", "default", "plus", "tilde"]))
        if kind == "lit":
            return f"{key}={draw(IDENT)}"
        if kind == "tilde":  # not at a word's start, and `trainer.k1` is no variable name: bash keeps the `~`
            return f"{key}=~/{draw(IDENT)}"
        if kind == "var":
            return f"{key}=${draw(st.sampled_from(knobs))}"
        if kind == "dq":
            return f'"{key}=${{{draw(st.sampled_from(knobs))}}}_x"'
        if kind == "sq":
            return f"'{key}={draw(IDENT)}'"
        if kind == "concat":
            return f'{key}=pre_"${draw(st.sampled_from(knobs))}"_post'
        if kind == "arith" and ints:
            a, b = draw(st.sampled_from(ints)), draw(st.integers(1, 9))
            op = draw(st.sampled_from(["+", "-", "*", "/", "%"]))
            return f"{key}=$(( {a} {op} {b} ))"
        if kind == "default":
            return f"{key}=${{UNSET_{draw(st.integers(0, 3))}:-{draw(IDENT)}}}"
        return f"{key}=${{{draw(st.sampled_from(knobs))}:+{draw(IDENT)}}}"

    arrays = []
    for i in range(draw(st.integers(0, 2))):
        name = ["ACTOR", "ROLLOUT"][i]
        elems = [arg() for _ in range(draw(st.integers(0, 3)))]
        lines.append(f"{name}=(")
        lines.extend(f"    {e}" for e in elems)
        lines.append(")")
        if draw(st.booleans()):
            lines.append(f"{name}+=({arg()})")
        arrays.append(name)
    if draw(st.booleans()):
        lines.append('case "${DEVICE}" in')
        for dev in draw(st.lists(st.sampled_from(DEVICES), min_size=1, max_size=2, unique=True)):
            lines.append(f"    {dev})")
            if arrays:
                lines.append(f"        {draw(st.sampled_from(arrays))}+=({arg()})")
            lines.append(f"        export HCCL_{dev.upper()}=1")
            lines.append("        ;;")
        if draw(st.booleans()):
            lines.append(f"    *) EXTRA_DEV={draw(IDENT)} ;;")
        lines.append("esac")
    if draw(st.booleans()):
        lines.append(f'if [[ "$INFER_BACKEND" == {draw(st.sampled_from(BACKENDS))} ]]; then')
        lines.append(f"    BACKEND_ARG={next(keys)}=on")
        lines.append("else")
        lines.append(f"    BACKEND_ARG={next(keys)}=off")
        lines.append("fi")
        backend = True
    else:
        backend = False
    launch = draw(st.sampled_from(["plain", "array"]))
    if launch == "array":
        lines.append("LAUNCH=(python3)")
        cmd = ['"${LAUNCH[@]}" -m verl.trainer.main_ppo']
    else:
        cmd = ["python3 -m verl.trainer.main_ppo"]
    parts = [f'"${{{a}[@]}}"' for a in arrays] + [arg() for _ in range(draw(st.integers(0, 3)))]
    if backend:
        parts.append('"$BACKEND_ARG"')
    if draw(st.booleans()):
        parts.append(f"${draw(st.sampled_from(knobs))}")  # unquoted: word splitting applies
    if "EXTRA_DEV=" in "\n".join(lines):
        parts.append('extra.dev="${EXTRA_DEV:-none}"')
    parts = draw(st.permutations(parts))
    joiner = draw(st.sampled_from([" ", " \\\n    "]))
    lines.append(joiner.join(cmd + list(parts)))
    return "\n".join(lines) + "\n"


# --- argv: what bash passes to each trainer call -------------------------------------------------------------

_RECORDER = """#!{python} -SE
# records one command: its arguments NUL-separated, then \\1 NUL, in one write (commands of a pipeline run at once)
import os, sys
fd = os.open(os.environ["SAPO_RECORD"], os.O_WRONLY | os.O_APPEND)
os.write(fd, b"".join(os.fsencode(a) + b"\\0" for a in sys.argv[1:]) + b"\\1\\0")
"""
# Read by bash before the script (BASH_ENV), before its restrictions apply: every command that is not a builtin is
# found nowhere and does nothing but record itself when it names a verl module (`command_not_found_handle`, which
# succeeds); the builtins that would act on the machine or
# stop a restricted shell (`cd`, `source`, `exec`, ...) do nothing; a path the script names as a command gets a
# function of that name that records it (a restricted shell refuses to run any other command with a `/`).
_PRELUDE = """command_not_found_handle() {
    local a; for a in "$@"; do [[ $a != verl.* ]] || { sapo_record "$@"; break; }; done
}
cd() { :; }; pushd() { :; }; popd() { :; }; source() { :; }; .() { :; }; ulimit() { :; }; kill() { :; }
exec() { (( $# == 0 )) || "$@"; }
"""
_PATH_WORD = re.compile(r"(?<![\w$}])(?:~|\.{1,2})?/[\w.+@/-]*|\b[\w.+@-]+/[\w.+@/-]*")
SANDBOX_HOME = "/sapo-sandbox-home"  # `~` in the sandbox: no such directory
# The script's own arguments, as the reader takes them: there are some (`[ $# -lt 2 ] && exit 1` is not taken), of
# unknown value, and a default stands for each (`${1:-vllm}` is vllm); taken out again where `"$@"` passes them on,
# which the reader leaves out.
SCRIPT_ARGUMENTS = [""] * 9


def _sandboxed_copy(text: str) -> str:
    """The script with every output redirection blanked (a restricted shell refuses to run a command that has one,
    and no file is written), lines and columns kept."""
    src = text.encode()
    out = bytearray(src)
    stack = [parse(src).root_node]
    while stack:
        n = stack.pop()
        if n.type == "file_redirect":
            out[n.start_byte : n.end_byte] = bytes(b if b == 10 else 32 for b in src[n.start_byte : n.end_byte])
            continue
        stack.extend(n.children)
    return out.decode()


def bash_trainer_calls(text: str, env: dict[str, str], recorder_dir: str) -> list[list[str]]:
    """The argv of each `python3 -m verl.<module>` call bash makes running the script with `env` and the arguments
    `SCRIPT_ARGUMENTS`, from `-m` on, in order; nothing but the recorder is run."""
    with tempfile.TemporaryDirectory() as sandbox:
        script, prelude, record = (Path(sandbox) / name for name in ("run.sh", "prelude.sh", "record"))
        script.write_text(_sandboxed_copy(text))
        paths = {w.replace("~", SANDBOX_HOME, 1) for w in _PATH_WORD.findall(text)}
        prelude.write_text(
            _PRELUDE + "".join(f'function {p} {{ command_not_found_handle {p} "$@"; }}\n' for p in sorted(paths))
        )
        record.touch()
        run_env = {
            "PATH": recorder_dir,
            "BASH_ENV": str(prelude),
            "SAPO_RECORD": str(record),
            **env,
        }
        subprocess.run(
            [BASH, "-r", str(script), *SCRIPT_ARGUMENTS],
            env=run_env,
            cwd=sandbox,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=20,
            check=False,
        )
        calls = []
        for entry in record.read_bytes().split(b"\x01\x00")[:-1]:
            argv = [a.decode("utf-8", "replace") for a in entry.split(b"\x00")[:-1]]
            starts = [i for i in range(len(argv) - 1) if argv[i] == "-m" and argv[i + 1].startswith("verl.")]
            if starts:
                calls.append(argv[starts[0] :])
        return calls


@pytest.fixture(scope="module")
def recorder_dir():
    with tempfile.TemporaryDirectory() as d:
        recorder = Path(d) / "sapo_record"
        recorder.write_text(_RECORDER.format(python=sys.executable))
        recorder.chmod(recorder.stat().st_mode | stat.S_IEXEC)
        yield d


_CONFIG_FLAGS = {"--config-name": "name", "-cn": "name", "--config-path": "path", "-cp": "path"}


def _split_config(argv: list[str]) -> tuple[str | None, str | None, list[str]]:
    """(config name, config path, the other arguments) of a trainer call's arguments after the module, as Hydra
    reads them."""
    found: dict[str, str] = {}
    rest = []
    i = 0
    while i < len(argv):
        flag, _, value = argv[i].partition("=")
        if flag in _CONFIG_FLAGS and (value or argv[i] == flag) and flag.startswith("--") or argv[i] in _CONFIG_FLAGS:
            if argv[i] in _CONFIG_FLAGS:
                value = argv[i + 1] if i + 1 < len(argv) else ""
                i += 1
            found[_CONFIG_FLAGS[flag]] = value
        else:
            rest.append(argv[i])
        i += 1
    name = found.get("name")
    return (name.removesuffix(".yaml") if name is not None else None), found.get("path"), rest


@cache
def _bash_variables() -> frozenset[str]:
    """The variables bash sets on its own (`PWD`, `RANDOM`, ...): their value in a run is bash's."""
    out = subprocess.run([BASH, "-c", "compgen -v"], env={}, capture_output=True, text=True, timeout=10, check=True)
    return frozenset(out.stdout.split())


_WITH_DEFAULT = re.compile(r"\$\{(\w+):?[-=+]")


def _pattern(ch: str, marks: dict[str, str], env: dict[str, str]) -> str:
    """What bash may have where the reader has `ch`: the value given to a variable the reader says the script never
    sets, anything for another construct it cannot evaluate (`$(date)`), else the character itself."""
    if ch not in marks:
        return re.escape(ch)
    name = environment_name(marks[ch])
    return re.escape(env[name]) if name in env else ".*"


def _without_script_arguments(argv: list[str]) -> list[str]:
    """The argv without the longest run of the script's (empty) arguments, of those `shift` left."""
    runs = [m.span() for m in re.finditer(r"\0{3,}", "".join("\0" if not a else "x" for a in argv))]
    start, end = max(runs, key=lambda r: r[1] - r[0], default=(0, 0))
    return argv[:start] + argv[end:]


def argv_divergences(text: str, recorder_dir: str) -> tuple[int, list[str]]:
    """(how many variants were compared, how each one whose trainer calls differ from bash's differs). A variant
    that takes an undecidable condition one way cannot be run that way by bash, and is not compared; each value the
    reader cannot evaluate matches anything, and a variable the script reads but never sets gets a value without
    blanks in bash, so that it stays one word as the reader assumes (and a script under `set -u` goes on)."""
    evaluation = evaluate(TextFile("run.sh", text))
    marks = evaluation.marks
    compared, found = 0, []
    for label, ev in evaluation.runs:
        tokens = [t.split("=", 1) for t in (label or "").split(",") if t]
        if any(name.startswith("cond@") for name, _ in tokens):
            continue
        # the variables the reader takes from the environment (read before this run of the script sets them),
        # except those it reads with a default somewhere, which it takes as unset
        inputs = {environment_name(description) for description in marks.values()} & ev.inputs_read
        inputs -= set(_WITH_DEFAULT.findall(text)) | _bash_variables()
        env = {name: f"@{name}@" for name in inputs if name.isidentifier()}
        env["HOME"] = SANDBOX_HOME
        env.update({name: value for name, value in tokens if value != "unset"})
        theirs = [_without_script_arguments(argv) for argv in bash_trainer_calls(text, env, recorder_dir)]
        compared += 1
        # bash's recorder keeps verl's entry modules only: a wrapper module's calls are not compared
        ours = [(t.module, t.config_name, t.config_path, t.args) for t in ev.trainers if t.module.startswith("verl.")]
        if len(ours) != len(theirs):
            found.append(f"{label}: {len(ours)} trainer call(s) read, bash makes {len(theirs)}: {theirs}")
            continue
        for (module, name, path, args), argv in zip(ours, theirs, strict=True):
            their_name, their_path, rest = _split_config(argv[2:])
            if (module, name, path) != (argv[1], their_name, their_path):
                found.append(f"{label}: module/config {(module, name, path)} != {(argv[1], their_name, their_path)}")
            patterns = ["".join(_pattern(ch, marks, env) for ch in a) for a, _ in args]
            if len(patterns) != len(rest) or not all(
                re.fullmatch(p, r, re.DOTALL) for p, r in zip(patterns, rest, strict=True)
            ):
                shown = [readable(a, marks) for a, _ in args]
                differ = [
                    (o, r) for o, p, r in zip(shown, patterns, rest, strict=False) if not re.fullmatch(p, r, re.DOTALL)
                ]
                found.append(f"{label}: {len(shown)} argument(s) read, bash passes {len(rest)}; first {differ[:3]}")
    return compared, found


def _argv_report(text: str, recorder_dir: str) -> None:
    compared, found = argv_divergences(text, recorder_dir)
    assert compared, "no variant could be run by bash"
    assert not found, "\n".join(found)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(scripts())
def test_generated_scripts_argv_equals_bash_argv(recorder_dir, text):
    result = read_script_findings(TextFile("run_gen_fsdp.sh", text), OPTIONS)
    assert not [d for d in result.diagnostics if d.code in ("SH001", "SH002")], (text, result.diagnostics)
    assert result.commands, text
    _argv_report(text, recorder_dir)
    for command in result.commands:
        exported = {e.name for e in command.env}
        assert exported == {k for k in exported if k.startswith("HCCL_")}


@pytest.mark.parametrize("path", REAL_SCRIPTS, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_real_scripts_argv_equals_bash_argv(recorder_dir, path):
    text = path.read_text(encoding="utf-8")
    if not evaluate(TextFile(path.name, text)).runs[0][1].trainers:
        pytest.skip("no trainer call")
    _argv_report(text, recorder_dir)


def test_real_scripts_are_found():
    assert len(REAL_SCRIPTS) >= 20


# --- SH002 is a syntax error bash itself reports ---------------------------------------------------------------
# `bash -n` only parses (it never runs a command), so it is the oracle: whatever it accepts, the reader must not
# call a syntax error; and on real scripts, whatever it rejects the reader reports. Generated snippets mix
# arithmetic (nested parentheses, `?:`, unary minus), nested substitutions, `${V:-...}` defaults holding any of
# them, the words tree-sitter-bash misreads (`${V:-['a','b']}`, `$"..."` in `${...}`), arrays, here-strings,
# here-documents, `(( ))`, an empty `case`, a redirection alone, `case`, `if`, loops and functions; mutations of
# them (a token put in or a few characters taken out) make scripts that bash rejects, or accepts against the odds.


def bash_rejects(text: str) -> bool:
    """Whether `bash -n` rejects the text: a non-zero exit, or a syntax error it reports (an error in `[[ ]]`
    stops bash without changing `bash -n`'s exit status)."""
    out = subprocess.run([BASH, "-n"], check=False, input=text.encode(), capture_output=True, timeout=10)
    return out.returncode != 0 or b"syntax error" in out.stderr or b"unexpected" in out.stderr


def sh002(text: str) -> list:
    return [d for d in read_script_findings(TextFile("run_x_fsdp.sh", text), OPTIONS).diagnostics if d.code == "SH002"]


ATOMS = st.sampled_from(["a", "b", "1", "2", "$x", "${y}", "${#A[@]}"])


def _arith(depth: int = 0):
    if depth >= 3:
        return ATOMS
    sub = st.deferred(lambda: _arith(depth + 1))
    return st.one_of(
        ATOMS,
        st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "%", "<", "==", "&&", "||"]), sub).map(" ".join),
        sub.map(lambda e: f"({e})"),
        sub.map(lambda e: f"-{e}"),
        st.tuples(sub, sub, sub).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
    )


LEAVES = [
    "x", "a.b=1", "--flag", "'q w'", '"$X"', "${A[@]}", '"${A[@]}"', "${V:-d}", "${V:-['npu','cpu']}", "${V:-[1,2]}",
    '${V:-$"loc"}', "${V//a/b}", "${V,,}", "${V#*/}", "${!V}", "${A[@]:1:2}", "$'a\\tb'", "{a,b}", "`echo x`",
    '\\"q', "${10}", "$#", "$$", "a#b", "\\#x", "${V@Q}", "~/x", "*.sh", "a\\\nb", '"a"\\\n"b"',
]  # fmt: skip


def _word(depth: int = 0):
    leaf = st.sampled_from(LEAVES)
    if depth >= 2:
        return leaf
    sub = st.deferred(lambda: _word(depth + 1))
    return st.one_of(
        leaf,
        _arith().map(lambda e: f"$(({e}))"),
        sub.map(lambda w: f"$(echo {w})"),
        sub.map(lambda w: f'"{w}"'),
        sub.map(lambda w: f"${{V:-{w}}}"),
        st.tuples(sub, sub).map("".join),
    )


def _statement(depth: int = 0):
    words = st.lists(_word(), min_size=1, max_size=3).map(" ".join)
    simple = st.one_of(
        words.map(lambda w: f"echo {w}"),
        _word().map(lambda w: f"V={w}"),
        _word().map(lambda w: f"V+={w}"),
        st.lists(_word(), max_size=3).map(lambda ws: f"A=({' '.join(ws)})"),
        _word().map(lambda w: f"declare -a A=({w})"),
        _word().map(lambda w: f"read -r V <<< {w}"),
        _word().map(lambda w: f"printf -v V '%s' {w}"),
        _word().map(lambda w: f"echo {w} | tee {w} >/dev/null 2>&1"),
        _arith().map(lambda e: f"(( V = {e} ))"),
        st.sampled_from(["(( ))", "2>&1", "case x in\nesac", "[[ -n $V && $V == a* ]]", "cat <<EOF\n$V\nEOF"]),
    )
    if depth >= 1:
        return simple
    sub = st.deferred(lambda: _statement(depth + 1))
    return st.one_of(
        simple,
        st.tuples(_word(), _word(), sub).map(lambda t: f"if [ {t[0]} = {t[1]} ]; then\n  {t[2]}\nfi"),
        st.tuples(_word(), sub, sub).map(lambda t: f"case {t[0]} in\n  a) {t[1]} ;;\n  *) {t[2]} ;;\nesac"),
        st.tuples(_word(), sub).map(lambda t: f"[ -n {t[0]} ] && {{ {t[1]}; }}"),
        st.tuples(_word(), sub).map(lambda t: f"for i in {t[0]}; do\n  {t[1]}\ndone"),
        st.tuples(_word(), sub).map(lambda t: f"f() {{\n  local L={t[0]}\n  {t[1]}\n}}"),
        sub.map(lambda t: f"while read -r line; do {t}; done <<EOF\nx\nEOF"),
    )


SCRIPT_TEXTS = st.lists(_statement(), min_size=1, max_size=3).map(lambda ss: "\n".join(ss) + "\n")
# what a mutation puts in: a token that opens or closes a construct, or a quote
MUTATIONS = ["if", "then", "fi", "do", "done", "(", ")", "{", "}", ";", ";;", "|", "&&", "'", '"', "`", "$(", "${",
             "esac", "case", "\n", ">", "<<", "[[", "]]", "((", "))", "=(", "\\", "#"]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCRIPT_TEXTS)
def test_no_sh002_where_bash_n_accepts(text):
    assert bash_rejects(text) or not sh002(text), text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCRIPT_TEXTS, st.lists(st.tuples(st.floats(0, 1), st.sampled_from(MUTATIONS), st.booleans()), max_size=2))
def test_sh002_on_mutated_scripts_only_where_bash_n_rejects(text, mutations):
    for where, token, insert in mutations:
        at = int(where * len(text))
        text = text[:at] + token + text[at:] if insert else text[:at] + text[at + len(token) :]
    assert bash_rejects(text) or not sh002(text), text


@pytest.mark.parametrize("path", REAL_SCRIPTS, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_real_scripts_sh002_exactly_where_bash_n_rejects(path):
    text = path.read_text(encoding="utf-8")
    assert bool(sh002(text)) == bash_rejects(text)


@pytest.mark.parametrize(
    "text",
    [
        "echo $(((a + b) * 2))\n",
        "V=${V:-$(((a + b) * 2))}\n",
        "case ${V:-$(((2 ? a : 2) / --y))} in\n  a) V=x ;;\nesac\n",
        '[ -n "${V:-$((a / 2 ? a < 1 : (y) * x))}" ] && V=$((a ? b : 1))\n',
    ],
)
def test_arithmetic_tree_sitter_misreads_is_not_sh002(text):
    assert not bash_rejects(text)
    assert not sh002(text)


@pytest.mark.parametrize(
    ("text", "line", "column", "said"),
    [
        ("V=${V:-$(((a + b) * 2))}\nif [ x = y ]; then\n", 2, 19, "missing `fi`"),
        ("if true; then\n  echo x\n", 2, 9, "missing `fi`"),
        ("for i in a b; do\n  echo $i\n", 2, 10, "missing `done`"),
        ("case $D in\n  npu) X=1 ;;\n", 2, 14, "missing `esac`"),
        ('echo "unclosed\necho more\n', 1, 6, 'missing `"`'),
        ("A=(x\nif true; then\n  echo\nfi\n", 2, 8, "unexpected `;`"),
        ("echo a\nthen echo b\n", 2, 1, "unexpected `then`"),
        ("f() {\n}\n", 2, 1, "unexpected `}`"),
        ("echo a |\n", 1, 9, None),
        ("X=$(if true; then echo; )\n", 1, 25, "unexpected `)`"),
    ],
)
def test_a_real_syntax_error_is_sh002_where_bash_stops(text, line, column, said):
    assert bash_rejects(text)
    (found,) = sh002(text)
    assert (found.location.line, found.location.column) == (line, column), found
    assert said is None or said in found.message, found.message


def test_single_quotes_inside_a_braced_expansion_in_double_quotes_are_quotes_as_bash_reads_them():
    """Found by test_sh002_on_mutated_scripts_only_where_bash_n_rejects: bash (not in POSIX mode) matches single
    quotes inside `${...}` even within double quotes, so `"${V:-'"x'}"` is one word and `"${V:-it's}"` is not."""
    from sapo_toolkit.linter.sources.bash.syntax import syntax_problem

    assert syntax_problem('V="${V:-\'"x\'}"\n') is None
    assert syntax_problem("V=${V:-\"${V:-['\"npu','cpu']}\"}\n") is None
    assert syntax_problem("V=\"${V/'}'/x}\"\n") is None
    assert syntax_problem('V="${V:-it\'s}"\n').missing == "'"
