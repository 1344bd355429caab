"""NM rules: the same verdicts as verl's tests/special_sanity/check_example_naming.py and its tests."""

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

NM_RULES = (nm_naming.FORBIDDEN_TOKEN, nm_naming.MISSING_BACKEND, nm_naming.NOT_RUN_SCRIPT)


def codes(name, ignore_dirs=(), ignore_files=(), under="examples/grpo_trainer"):
    return [d.code for d in naming_diagnostics(Path(under) / name, unignored(ignore_dirs, ignore_files))]


def unignored(ignore_dirs=(), ignore_files=()):
    return NamingScope(ignore_dirs=tuple(ignore_dirs), ignore_files=tuple(ignore_files))


def messages(name):
    return [d.message for d in naming_diagnostics(Path("examples/grpo_trainer") / name, unignored())]


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
    [d] = naming_diagnostics(Path("examples/x/run_qwen3_8b_vllm_fsdp.sh"), unignored())
    assert (d.code, d.name, d.severity.value) == ("NM001", "naming-forbidden-token", "error")
    assert (d.location.path, d.location.line, d.location.column) == ("examples/x/run_qwen3_8b_vllm_fsdp.sh", 1, 1)
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
    assert codes("run_profile_vllm.sh", DEFAULT_IGNORE_DIRS, DEFAULT_IGNORE_FILES, under="examples/profile") == []
    assert codes("run_deepseek_llm_7b.sh", DEFAULT_IGNORE_DIRS, DEFAULT_IGNORE_FILES, under="examples/generation") == []
    # the same names elsewhere are checked
    assert codes(
        "run_deepseek_llm_7b.sh", DEFAULT_IGNORE_DIRS, DEFAULT_IGNORE_FILES, under="examples/grpo_trainer"
    ) == ["NM002"]
    assert codes("run_profile_vllm.sh", under="examples/profile") == ["NM001", "NM002"]


def test_ignores_match_absolute_paths_and_wildcards(tmp_path):
    script = tmp_path / "repo" / "examples" / "tutorial" / "lesson_1.sh"
    assert naming_diagnostics(script, unignored(["examples/tutorial"])) == []
    assert naming_diagnostics(script, unignored(["examples/tut*"])) == []
    assert naming_diagnostics(script, unignored([], ["examples/tutorial/lesson_*.sh"])) == []
    assert [d.code for d in naming_diagnostics(script, unignored(["examples/profile"]))] == ["NM003"]
    # a directory ignore is a whole component: "examples/tut" does not ignore examples/tutorial
    assert [d.code for d in naming_diagnostics(script, unignored(["examples/tut"]))] == ["NM003"]


def test_synthetic_tree_like_verl(tmp_path):
    """verl's test_synthetic_violation_fails: one bad and one good script, no ignores -> one violation."""
    root = tmp_path / "examples"
    root.mkdir()
    for name in ("run_qwen3_8b_vllm_fsdp.sh", "run_ok_fsdp.sh"):
        (root / name).write_text("#!/bin/bash\n", encoding="utf-8")
    found = {p.name: [d.code for d in naming_diagnostics(p, unignored())] for p in sorted(root.rglob("*.sh"))}
    assert found == {"run_ok_fsdp.sh": [], "run_qwen3_8b_vllm_fsdp.sh": ["NM001"]}


def test_only_run_scripts_are_named_a_helper_script_is_not(tmp_path):
    # A script that starts no verl trainer (an environment set-up helper) is no example script: no NM finding.
    from sapo_toolkit.linter.lint import lint_paths
    from sapo_toolkit.linter.settings import Settings

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
