"""Every hostile input of the hardening issues in one directory, linted in one run with shellcheck on: each input
gets its finding, no traceback, no secret (in the output or the cache), no code of a linted repository run, and the
file with a plain typo is still reported. The time and memory of this run are measured by bench/hostile.py."""

import json
import os
import subprocess
import sys

from .hostile_corpus import CANARY, DEEP, SECRET, TOKEN_VARIABLE, generate, remove_chain


def test_one_run_over_every_hostile_input(tmp_path):
    root = tmp_path / "hostile"
    root.mkdir()
    inputs = generate(root)
    env = {**os.environ, "SAPO_LINT_CACHE_DIR": str(tmp_path / "cache"), TOKEN_VARIABLE: SECRET}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "sapo_toolkit.linter", "--format", "json", "."],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        remove_chain(root, DEEP)
    # 2: a directory that cannot be listed is a file that could not be read (RF003)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-2000:]
    assert SECRET not in proc.stdout + proc.stderr and "CANARY-OUTPUT" not in proc.stdout + proc.stderr
    assert not (root / CANARY).exists() and not list(tmp_path.rglob("owned"))
    cached = [p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert not any(SECRET.encode() in data for data in cached)
    report = json.loads(proc.stdout)
    codes_at: dict[str, set[str]] = {}
    for d in report["diagnostics"]:
        codes_at.setdefault(d["path"].removeprefix("./"), set()).add(d["code"])
    for hostile in inputs:
        reported = set().union(
            *(codes for path, codes in codes_at.items() if path == hostile.path or path.startswith(hostile.path + "/"))
        )
        assert not hostile.codes or reported & set(hostile.codes), (hostile.path[:60], sorted(reported))
    assert "SL001" in codes_at["typo.yaml"]
