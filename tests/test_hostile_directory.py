"""Every hostile input of the hardening issues in one directory, linted in one run with shellcheck on: each input
gets its finding, no traceback, no secret (in the output or the cache), no code of a linted repository run, and the
file with a plain typo is still reported; and the same report, byte for byte, however busy the machine (three copies
at once). The time and memory of this run are measured by bench/hostile.py."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .hostile_corpus import CANARY, DEEP, SECRET, TOKEN_VARIABLE, generate, remove_chain


def start(root: Path, cache: Path) -> subprocess.Popen:
    env = {**os.environ, "SAPO_LINT_CACHE_DIR": str(cache), TOKEN_VARIABLE: SECRET}
    return subprocess.Popen(
        [sys.executable, "-m", "sapo_toolkit.linter", "--format", "json", "."],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def hostile(tmp_path):
    root = tmp_path / "hostile"
    root.mkdir()
    inputs = generate(root)
    yield root, inputs
    remove_chain(root, DEEP)


@pytest.mark.slow
def test_one_run_over_every_hostile_input(tmp_path, hostile):
    root, inputs = hostile
    proc = start(root, tmp_path / "cache")
    out, err = proc.communicate(timeout=600)
    # 2: a directory that cannot be listed is a file that could not be read (RF003)
    assert proc.returncode == 2, err[-2000:]
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    assert SECRET not in out + err and "CANARY-OUTPUT" not in out + err
    assert not (root / CANARY).exists() and not any((d / "elsewhere").exists() for d in (tmp_path, root))
    cached = [p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert not any(SECRET.encode() in data for data in cached)
    report = json.loads(out)
    codes_at: dict[str, set[str]] = {}
    for d in report["diagnostics"]:
        codes_at.setdefault(d["path"].removeprefix("./"), set()).add(d["code"])
    for hostile_input in inputs:
        reported = set().union(
            *(
                codes
                for path, codes in codes_at.items()
                if path == hostile_input.path or path.startswith(hostile_input.path + "/")
            )
        )
        assert not hostile_input.codes or reported & set(hostile_input.codes), (hostile_input.path[:60], reported)
    assert "SL001" in codes_at["typo.yaml"]


@pytest.mark.slow
def test_the_same_report_byte_for_byte_alone_and_beside_two_other_copies(tmp_path, hostile):
    """No finding depends on time or load: the work bounds are counted in units, never seconds."""
    root, _ = hostile
    alone = start(root, tmp_path / "cache-alone")
    alone_out, _ = alone.communicate(timeout=600)
    together = [start(root, tmp_path / f"cache-{i}") for i in range(3)]
    outputs = [proc.communicate(timeout=900)[0] for proc in together]
    assert alone.returncode == 2 and all(proc.returncode == 2 for proc in together)
    assert all(out == alone_out for out in outputs)
