"""Property test: the overrides read statically from a generated script equal what bash passes to `python3`.

This is the one place the tests execute bash, and only on scripts generated here: a stub `python3` first on
PATH prints its argv (NUL-separated) instead of training anything.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sapo_toolkit.linter.api import read_options
from sapo_toolkit.linter.core.overrides import OverrideSyntaxError, parse_override
from sapo_toolkit.linter.settings import Settings
from sapo_toolkit.linter.sources.files import TextFile

from .helpers import read_script_findings

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")
OPTIONS = read_options(Settings(verl_version="0.9.1"))

IDENT = st.sampled_from(["alpha", "beta", "x1", "q_2", "r-3", "v.4", "p/5", "7", "0.5", "True"])
SPACEY = st.sampled_from(["two words", " lead", "trail ", "a  b"])
KEYS = [f"trainer.k{i}" for i in range(24)]
DEVICES = ["npu", "gpu", "cuda"]
BACKENDS = ["vllm", "sglang"]


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


@pytest.fixture(scope="module")
def stub_dir():
    with tempfile.TemporaryDirectory() as d:
        stub = Path(d) / "python3"
        stub.write_text('#!/bin/sh\nfor a in "$@"; do printf \'%s\\0\' "$a"; done\n')
        stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
        yield d


def _parsed(text: str):
    try:
        return parse_override(text)
    except OverrideSyntaxError:
        return "syntax-error"


def _bash_argv(script: Path, stub: str, env: dict[str, str]) -> list[str]:
    run_env = {"PATH": f"{stub}:{os.environ.get('PATH', '/usr/bin:/bin')}", **env}
    out = subprocess.run([BASH, str(script)], env=run_env, capture_output=True, timeout=10, check=True)
    argv = out.stdout.decode().split("\0")[:-1]
    assert argv[:2] == ["-m", "verl.trainer.main_ppo"], argv
    return argv[2:]


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(scripts())
def test_static_overrides_equal_bash_argv(stub_dir, text):
    result = read_script_findings(TextFile("run_gen_fsdp.sh", text), OPTIONS)
    assert not [d for d in result.diagnostics if d.code in ("SH001", "SH002")], (text, result.diagnostics)
    assert result.commands, text
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "run_gen_fsdp.sh"
        script.write_text(text)
        for command in result.commands:
            env = {}
            for token in (command.variant or "").split(","):
                if token:
                    name, value = token.split("=", 1)
                    if value != "unset":
                        env[name] = value
            argv = _bash_argv(script, stub_dir, env)
            ours = [(lo.key_text, lo.parsed if lo.parsed is not None else "syntax-error") for lo in command.overrides]
            theirs = [(a.split("=", 1)[0], _parsed(a)) for a in argv]
            assert ours == theirs, (text, command.variant, argv)
            exported = {e.name for e in command.env}
            assert exported == {k for k in exported if k.startswith("HCCL_")}


# --- SH002 is a syntax error bash itself reports ---------------------------------------------------------------
# `bash -n` only parses (it never runs a command), so it is the oracle: whatever it accepts, the reader must not
# call a syntax error. Snippets mix arithmetic (nested parentheses, `?:`, unary minus), nested substitutions,
# `${V:-...}` defaults holding any of them, arrays, `case` and `if`.

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


def _word(depth: int = 0):
    leaf = st.sampled_from(["x", "a.b=1", "--flag", "'q w'", '"$X"', "${A[@]}", '"${A[@]}"', "${V:-d}"])
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
        st.lists(_word(), max_size=3).map(lambda ws: f"A=({' '.join(ws)})"),
    )
    if depth >= 1:
        return simple
    sub = st.deferred(lambda: _statement(depth + 1))
    return st.one_of(
        simple,
        st.tuples(_word(), _word(), sub).map(lambda t: f"if [ {t[0]} = {t[1]} ]; then\n  {t[2]}\nfi"),
        st.tuples(_word(), sub, sub).map(lambda t: f"case {t[0]} in\n  a) {t[1]} ;;\n  *) {t[2]} ;;\nesac"),
        st.tuples(_word(), sub).map(lambda t: f"[ -n {t[0]} ] && {{ {t[1]}; }}"),
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_statement(), min_size=1, max_size=3).map(lambda ss: "\n".join(ss) + "\n"))
def test_no_sh002_where_bash_n_accepts(text):
    accepted = (
        subprocess.run([BASH, "-n"], check=False, input=text.encode(), capture_output=True, timeout=10).returncode == 0
    )
    result = read_script_findings(TextFile("run_gen_fsdp.sh", text), OPTIONS)
    assert not (accepted and [d for d in result.diagnostics if d.code == "SH002"]), (text, result.diagnostics)


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
    assert subprocess.run([BASH, "-n"], check=False, input=text.encode(), capture_output=True).returncode == 0
    assert not [
        d for d in read_script_findings(TextFile("run_x_fsdp.sh", text), OPTIONS).diagnostics if d.code == "SH002"
    ]


def test_a_real_syntax_error_is_still_sh002():
    text = "V=${V:-$(((a + b) * 2)}\nif [ x = y ]; then\n"
    assert subprocess.run([BASH, "-n"], check=False, input=text.encode(), capture_output=True).returncode != 0
    assert [d for d in read_script_findings(TextFile("run_x_fsdp.sh", text), OPTIONS).diagnostics if d.code == "SH002"]
