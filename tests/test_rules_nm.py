"""NM rules: the same verdicts as verl's tests/special_sanity/check_example_naming.py and its tests, applied only
where the repository runs that check or `naming-roots` asks for it."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sapo_toolkit.linter.rules import nm_naming
from sapo_toolkit.linter.rules.nm_naming import (
    ALLOWED_BACKENDS,
    DEFAULT_IGNORE_DIRS,
    DEFAULT_IGNORE_FILES,
    FORBIDDEN_TOKENS,
    NamingScope,
    naming_diagnostics,
)

from .helpers import VERL_NAMING_HOOK

NM_RULES = (nm_naming.FORBIDDEN_TOKEN, nm_naming.MISSING_BACKEND, nm_naming.NOT_RUN_SCRIPT)
# Verdict tests name scripts under this examples/ given as a naming root: nothing on disk is looked at.
REPOSITORY = Path("/nonexistent-sapo-nm-repository")
EXAMPLES = REPOSITORY / "examples"


def codes(name, ignore_dirs=(), ignore_files=(), under="grpo_trainer"):
    return [d.code for d in naming_diagnostics(EXAMPLES / under / name, unignored(ignore_dirs, ignore_files))]


def unignored(ignore_dirs=(), ignore_files=(), root=EXAMPLES):
    return NamingScope(roots=(str(root),), ignore_dirs=tuple(ignore_dirs), ignore_files=tuple(ignore_files))


def messages(name):
    return [d.message for d in naming_diagnostics(EXAMPLES / "grpo_trainer" / name, unignored())]


# --- one failing and one passing name per code ------------------------------------------------------------------


@pytest.mark.parametrize(
    "code, bad, good",
    [
        ("NM001", "run_qwen3_8b_vllm_fsdp.sh", "run_qwen3_8b_fsdp.sh"),
        ("NM002", "run_qwen3_8b_fsdp_extra.sh", "run_qwen3_8b_extra_fsdp.sh"),
        ("NM003", "qwen3_8b_fsdp.sh", "run_qwen3_8b_fsdp.sh"),
    ],
)
def test_each_code_fails_and_passes(code, bad, good):
    assert code in codes(bad)
    assert codes(good) == []


def test_rules_registered_with_docs_and_file_name_examples():
    assert [r.code for r in NM_RULES] == ["NM001", "NM002", "NM003"]
    for r in NM_RULES:
        code = r.code
        assert r.check is None and r.summary and r.explanation and r.module.endswith("nm_naming")
        # Examples are file names, captioned so the recipe-example test does not read them as YAML.
        assert r.bad.startswith("(") and r.good.startswith("(")
        assert codes(Path(r.bad.split()[-1]).name) != [] and code in codes(Path(r.bad.split()[-1]).name)
        assert codes(Path(r.good.split()[-1]).name) == []


def test_diagnostic_shape():
    script = EXAMPLES / "x" / "run_qwen3_8b_vllm_fsdp.sh"
    [d] = naming_diagnostics(script, unignored())
    assert (d.code, d.name, d.severity.value) == ("NM001", "naming-forbidden-token", "error")
    assert (d.location.path, d.location.line, d.location.column) == (str(script), 1, 1)
    assert "'vllm'" in d.message


# --- verl's own tests (tests/special_sanity/test_check_example_naming.py:29-123), same verdicts ----------------


def test_canonical_name_passes():
    assert codes("run_qwen3_8b_fsdp.sh") == []


@pytest.mark.parametrize("name", ["run_qwen3_8b_from_adapter_fsdp.sh", "run_qwen3_8b_merge_fsdp.sh"])
def test_pre_backend_suffix_passes(name):
    assert codes(name) == []


@pytest.mark.parametrize("backend", ALLOWED_BACKENDS)
def test_all_train_backends_accepted(backend):
    assert codes(f"run_qwen3_8b_{backend}.sh") == []


def test_multi_token_train_backend_accepted():
    assert codes("run_deepseek_v4_megatron_lite.sh") == []


@pytest.mark.parametrize(
    "name, token",
    [
        ("run_qwen3_8b_vllm_fsdp.sh", "vllm"),  # engine
        ("run_qwen3_8b_fsdp_npu.sh", "npu"),  # platform
        ("run_qwen3_30b_a3b_megatron_fp8.sh", "fp8"),  # quantisation
        ("run_qwen3_8b_fsdp_gb200.sh", "gb200"),  # machine
    ],
)
def test_forbidden_tokens_rejected(name, token):
    assert "NM001" in codes(name)
    assert any(token in m for m in messages(name))


def test_forbidden_token_after_backend_is_also_a_backend_error():
    # verl reports both: the forbidden token and the name not ending with the backend.
    assert codes("run_qwen3_8b_fsdp_npu.sh") == ["NM001", "NM002"]
    assert codes("run_qwen3_8b_vllm_fsdp.sh") == ["NM001"]


def test_trailing_suffix_after_backend_rejected():
    assert codes("run_qwen3_8b_fsdp_extra.sh") == ["NM002"]
    assert any("must end with '_<train-backend>.sh'" in m for m in messages("run_qwen3_8b_fsdp_extra.sh"))


def test_missing_train_backend_rejected():
    assert codes("run_qwen3_8b.sh") == ["NM002"]
    assert any(b in messages("run_qwen3_8b.sh")[0] for b in ALLOWED_BACKENDS)


def test_non_run_prefix_rejected():
    assert codes("badname.sh") == ["NM003"]
    assert "run_" in messages("badname.sh")[0]


def test_non_sh_suffix_rejected_alone():
    assert codes("run_qwen3_8b_vllm_fsdp.bash") == ["NM003"]


def test_forbidden_tokens_kept_in_sync_with_legacy_pattern():
    for token in ("vllm", "sglang", "trtllm", "npu", "gb200", "fp8"):
        assert token in FORBIDDEN_TOKENS
    assert set(FORBIDDEN_TOKENS) == {"vllm", "sglang", "trtllm", "npu", "amd", "gb200", "b200", "blackwell", "fp8"}


@pytest.mark.parametrize("name", ["run_qwen3vl_8b_fsdp.sh", "run_vllmx_fsdp.sh", "run_qwen3_8b_ampere_fsdp.sh"])
def test_tokens_match_whole_words_only(name):
    assert codes(name) == []


# --- ignores ----------------------------------------------------------------------------------------------------


def test_verl_default_ignores():
    assert codes("run_profile_vllm.sh", DEFAULT_IGNORE_DIRS, DEFAULT_IGNORE_FILES, under="profile") == []
    assert codes("run_deepseek_llm_7b.sh", DEFAULT_IGNORE_DIRS, DEFAULT_IGNORE_FILES, under="generation") == []
    # the same names elsewhere are checked
    assert codes("run_deepseek_llm_7b.sh", DEFAULT_IGNORE_DIRS, DEFAULT_IGNORE_FILES, under="grpo_trainer") == ["NM002"]
    assert codes("run_profile_vllm.sh", under="profile") == ["NM001", "NM002"]


def test_ignores_match_absolute_paths_and_wildcards(tmp_path):
    examples = tmp_path / "repo" / "examples"
    script = examples / "tutorial" / "lesson_1.sh"
    assert naming_diagnostics(script, unignored(["examples/tutorial"], root=examples)) == []
    assert naming_diagnostics(script, unignored(["examples/tut*"], root=examples)) == []
    assert naming_diagnostics(script, unignored([], ["examples/tutorial/lesson_*.sh"], root=examples)) == []
    assert [d.code for d in naming_diagnostics(script, unignored(["examples/profile"], root=examples))] == ["NM003"]
    # a directory ignore is a whole component: "examples/tut" does not ignore examples/tutorial
    assert [d.code for d in naming_diagnostics(script, unignored(["examples/tut"], root=examples))] == ["NM003"]


def test_synthetic_tree_like_verl(tmp_path):
    """verl's test_synthetic_violation_fails: one bad and one good script, no ignores -> one violation."""
    root = tmp_path / "examples"
    root.mkdir()
    for name in ("run_qwen3_8b_vllm_fsdp.sh", "run_ok_fsdp.sh"):
        (root / name).write_text("#!/bin/bash\n", encoding="utf-8")
    found = {p.name: [d.code for d in naming_diagnostics(p, unignored(root=root))] for p in sorted(root.rglob("*.sh"))}
    assert found == {"run_ok_fsdp.sh": [], "run_qwen3_8b_vllm_fsdp.sh": ["NM001"]}


def test_only_run_scripts_are_named_a_helper_script_is_not(tmp_path):
    # A script that starts no verl trainer (an environment set-up helper) is no example script: no NM finding.
    from sapo_toolkit.linter.lint import lint_paths
    from sapo_toolkit.linter.settings import Settings

    (tmp_path / ".git").mkdir()  # a repository that runs verl's naming check
    (tmp_path / ".pre-commit-config.yaml").write_text(VERL_HOOK, encoding="utf-8")
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "setup_env.sh").write_text("#!/bin/bash\necho setting up\n", encoding="utf-8")
    (tmp_path / "examples" / "train_qwen.sh").write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodes=1\n", encoding="utf-8"
    )
    found = [
        (Path(d.location.path).name, d.code)
        for d in lint_paths([tmp_path], Settings(), []).diagnostics
        if d.code.startswith("NM")
    ]
    assert found == [("train_qwen.sh", "NM003")], found


# --- only where the repository runs the check, or naming-roots asks for it (issue 29) ---------------------------

TRAINER = "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodes=1\n"
VERL_HOOK = VERL_NAMING_HOOK
# verl 0.7's own hooks, which LongVT's checkout carries: no naming check among them
OTHER_HOOKS = """repos:
  - repo: https://github.com/astral-sh/ruff-pre-commit
    rev: "v0.12.2"
    hooks:
      - id: ruff
  - repo: local
    hooks:
      - id: check-docstrings
        entry: python3 tests/special_sanity/check_docstrings.py
        language: python
        pass_filenames: false
"""


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def make_repository(root: Path, pre_commit=None, checker=False, pyproject=None) -> Path:
    """A git repository at `root` (a `.git` folder is all sapo-lint looks for); returns its examples/foo.sh."""
    (root / ".git").mkdir(parents=True)
    if pre_commit is not None:
        write(root / ".pre-commit-config.yaml", pre_commit)
    if checker:
        write(root / "tests/special_sanity/check_example_naming.py", "raise SystemExit('never run by sapo-lint')\n")
    if pyproject is not None:
        write(root / "pyproject.toml", pyproject)
    return write(root / "examples/foo.sh", TRAINER)


def nm_codes(*paths: Path) -> list[str]:
    """The NM codes linting `paths` in-process, each with its own project's `[tool.sapo-lint]`, as the CLI does."""
    from sapo_toolkit.linter.lint import lint_paths
    from sapo_toolkit.linter.settings import SettingsFinder

    return [d.code for d in lint_paths(list(paths), SettingsFinder()).diagnostics if d.code.startswith("NM")]


def test_a_repository_without_the_hook_or_the_checker_gets_no_naming_finding(tmp_path):
    assert nm_codes(make_repository(tmp_path / "bare")) == []
    assert nm_codes(make_repository(tmp_path / "other-hooks", pre_commit=OTHER_HOOKS)) == []


@pytest.mark.parametrize(
    "pre_commit",
    [
        VERL_HOOK,
        # a hook of another name whose entry runs the checker
        "repos:\n- repo: local\n  hooks:\n  - id: naming\n"
        "    entry: python3 tests/special_sanity/check_example_naming.py\n    language: python\n",
        # the id alone, as a remote repository's hook is written
        "repos:\n- repo: https://example.invalid/verl\n  rev: v0.8.0\n  hooks:\n  - id: check-example-naming\n",
    ],
    ids=["verl-main", "entry", "id"],
)
def test_a_repository_whose_pre_commit_config_runs_the_check_gets_naming_findings(tmp_path, pre_commit):
    assert nm_codes(make_repository(tmp_path, pre_commit=pre_commit)) == ["NM003"]


def test_a_repository_holding_verls_checker_gets_naming_findings(tmp_path):
    assert nm_codes(make_repository(tmp_path, checker=True)) == ["NM003"]


def test_naming_roots_in_pyproject_turn_the_check_on(tmp_path):
    script = make_repository(tmp_path, pyproject='[tool.sapo-lint]\nnaming-roots = ["examples"]\n')
    assert nm_codes(script) == ["NM003"]


@pytest.mark.parametrize(
    "pre_commit",
    [
        "repos:\n  - repo: local\n    hooks:\n      - {id: check-example-naming, entry: [unclosed\n",
        "repos: check-example-naming\n",
        "- check-example-naming\n",
        "repos:\n- hooks: {id: check-example-naming}\n",
        "when: 2024-13-45\nrepos:\n- hooks: [{id: check-example-naming}]\n",  # no month 13: PyYAML's ValueError
        b"repos:\n- hooks: [{id: check-example-naming}]\n# \xff\n",  # not UTF-8
        "repos:\n- hooks: [{id: check-example-naming}]\n" + "#" * nm_naming.MAX_PRE_COMMIT_CONFIG_BYTES,
    ],
    ids=["unclosed", "string", "list", "hooks-mapping", "bad-date", "not-utf8", "too-large"],
)
def test_a_malformed_pre_commit_config_enforces_nothing_and_raises_nothing(tmp_path, pre_commit):
    assert nm_codes(make_repository(tmp_path, pre_commit=pre_commit)) == []


def test_a_pre_commit_config_that_is_a_folder_enforces_nothing(tmp_path):
    script = make_repository(tmp_path)
    (tmp_path / ".pre-commit-config.yaml").mkdir()
    assert nm_codes(script) == []


@pytest.mark.parametrize(
    "hook",
    [
        "entry: python3 tests/special_sanity/check_example_naming.py --root launch/jobs",
        "entry: python3 tests/special_sanity/check_example_naming.py --root=launch/jobs",
        "entry: python3 tests/special_sanity/check_example_naming.py\n    args: [--root, launch/jobs]",
    ],
)
def test_the_hooks_root_is_the_naming_root(tmp_path, hook):
    examples_script = make_repository(
        tmp_path, pre_commit=f"repos:\n- repo: local\n  hooks:\n  - id: naming\n    {hook}\n"
    )
    launched = write(tmp_path / "launch/jobs/qwen/train.sh", TRAINER)
    assert [d.code for d in naming_diagnostics(launched, NamingScope())] == ["NM003"]
    assert naming_diagnostics(examples_script, NamingScope()) == []


def test_a_hook_whose_root_cannot_be_read_names_examples(tmp_path):
    # The id names the check; the entry's quotes do not close, so no `--root` is read from it.
    hook = 'repos:\n- hooks: [{id: check-example-naming, entry: "python3 x.py --root \'launch"}]\n'
    assert nm_codes(make_repository(tmp_path, pre_commit=hook)) == ["NM003"]


def test_a_script_in_no_repository_is_not_named(tmp_path):
    if nm_naming.repository_root(str(tmp_path)) is not None:
        pytest.skip(f"{tmp_path} is inside a git repository here")
    write(tmp_path / ".pre-commit-config.yaml", VERL_HOOK)
    assert nm_codes(write(tmp_path / "examples/foo.sh", TRAINER)) == []


def test_a_verl_copy_inside_a_research_repository_follows_the_repository(tmp_path):
    # TTRL's layout: verl/ copied into a repository that runs no naming check; the copy's own pre-commit config (verl
    # main's) is not the repository's, so verl/examples/ttrl/aime.sh gets no finding.
    make_repository(tmp_path / "research", pre_commit=OTHER_HOOKS)
    write(tmp_path / "research/verl/.pre-commit-config.yaml", VERL_HOOK)
    assert nm_codes(write(tmp_path / "research/verl/examples/ttrl/aime.sh", TRAINER)) == []
    # A nested verl checkout (its own .git) runs its own check, with verl's ignores relative to its root.
    nested = tmp_path / "outer/third_party/verl"
    make_repository(tmp_path / "outer")
    bad = make_repository(nested, pre_commit=VERL_HOOK)
    ignored = write(nested / "examples/profile/profile_qwen.sh", TRAINER)
    outer = write(tmp_path / "outer/examples/train.sh", TRAINER)
    assert [(Path(d.location.path).name, d.code) for d in naming_diagnostics_of(bad, ignored, outer)] == [
        ("foo.sh", "NM003")
    ]


def naming_diagnostics_of(*scripts: Path):
    return [d for script in scripts for d in naming_diagnostics(script, NamingScope())]


def test_the_console_script_exits_by_whether_the_repository_enforces_the_check(tmp_path):
    exe = shutil.which("sapo-lint")
    command = [exe] if exe else [sys.executable, "-m", "sapo_toolkit.linter"]

    def lint(repository: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*command, "--no-shellcheck", "--select", "NM", "examples/foo.sh"],
            cwd=repository,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "NO_COLOR": "1", "SAPO_LINT_CACHE_DIR": str(tmp_path / ".cache")},
        )

    quiet = lint(make_repository(tmp_path / "copy", pre_commit=OTHER_HOOKS).parents[1])
    assert (quiet.returncode, "NM" in quiet.stdout) == (0, False), quiet.stdout + quiet.stderr
    named = lint(make_repository(tmp_path / "verl", pre_commit=VERL_HOOK).parents[1])
    assert named.returncode == 1, named.stdout + named.stderr
    assert "examples/foo.sh:1:1: NM003 example script 'foo.sh' must be named" in named.stdout
    malformed = lint(make_repository(tmp_path / "broken", pre_commit="repos: [check-example-naming\n").parents[1])
    assert (malformed.returncode, "NM" in malformed.stdout, "Traceback" in malformed.stderr) == (0, False, False)
