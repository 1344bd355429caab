"""End-to-end: the `sapo-lint` console script on real files, as a user or pre-commit runs it."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .helpers import REPO, RUNNABLE, recipe

TAU_BUG = (
    "overrides:\n  actor_rollout_ref.actor.policy_loss.loss_mode: sapo\n"
    "  +actor_rollout_ref.actor.policy_loss.tau_pos: 1.2\n"
)
# The tau fixed by --fix is 1.2 > verl's default tau_neg 1.05 (SP003): a recipe raising tau_pos raises tau_neg too.
TAU_NEG = "  actor_rollout_ref.actor.tau_neg: 1.3\n"


def sapo_lint(*args, cwd=None, env=None):
    exe = shutil.which("sapo-lint") or [sys.executable, "-m", "sapo_toolkit.linter"]
    cmd = [exe, *args] if isinstance(exe, str) else [*exe, *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, cwd=cwd, env={**os.environ, "NO_COLOR": "1", **(env or {})}
    )


# A plan that fits the accelerator assumed when none is named (verl's defaults for Qwen3-8B on 8 devices, critic
# and weights kept through the rollout, need 136 GiB per device: MEM001 on any GPU).
FITS = "  algorithm.adv_estimator: grpo\n  actor_rollout_ref.actor.megatron.param_offload: true\n"


def write(path: Path, body: str) -> Path:
    """A recipe whose overrides are `body`'s, then the ones verl's start-up checks need (RUNNABLE) and FITS."""
    path.write_text(recipe(body + RUNNABLE + FITS), encoding="utf-8")
    return path


def test_shipped_recipes_lint_clean():
    proc = sapo_lint(str(REPO / "recipes"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "All checks passed" in proc.stdout


def test_tau_bug_reported_on_its_line_then_fixed(tmp_path):
    path = write(tmp_path / "r.yaml", TAU_BUG + TAU_NEG)
    proc = sapo_lint(str(path), "--format", "json")
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    tau = [d for d in report["diagnostics"] if d["code"] in ("SL003", "SP001")]
    assert tau and tau[0]["line"] == 7 and tau[0]["fix"] == "actor_rollout_ref.actor.tau_pos"

    proc = sapo_lint(str(path), "--fix")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = path.read_text()
    assert "  actor_rollout_ref.actor.tau_pos: 1.2\n" in text and "policy_loss.tau_pos" not in text
    assert sapo_lint(str(path)).returncode == 0


def test_json_output_follows_the_contract(tmp_path):
    write(tmp_path / "a.yaml", "overrides:\n  trainer.nnodez: 2\n")
    write(tmp_path / "b.yaml", "overrides:\n  trainer.nnodes: 2\n")
    (tmp_path / "ci.yaml").write_text("on: push\n")  # not a recipe: skipped
    proc = sapo_lint(str(tmp_path), "--format", "json")
    report = json.loads(proc.stdout)
    assert set(report) == {"version", "diagnostics", "summary", "verl"} and report["version"] == 1
    newest = {"version": "0.9.1", "source": "newest", "path": None, "snapshot": "committed"}
    stack = {"megatron_core": "0.16.1", "mbridge": "0.15.1"}
    for path in (str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")):
        why = report["verl"][path].pop("why")
        assert report["verl"][path] == {**newest, **stack}
        assert [line.split(" (")[0] for line in why] == ["verl 0.9.1", "megatron-core 0.16.1", "mbridge 0.15.1"]
    assert set(report["verl"]) == {str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")}
    assert report["summary"] == {
        "files": 2,
        "error": 1,
        "warning": 0,
        "info": 0,
        "checked": 2,
        "not_checked": 0,
        "not_checked_reasons": [],
        "not_checked_files": [],
    }
    (d,) = report["diagnostics"]
    assert set(d) == {
        "path",
        "line",
        "column",
        "code",
        "name",
        "severity",
        "message",
        "variant",
        "fix",
        "fix_applicability",
        "related",
        "also",
    }
    assert (d["code"], d["name"], d["severity"], d["line"], d["column"]) == ("SL001", "unknown-key", "error", 6, 3)
    assert d["variant"] is None and d["fix"] is None and d["fix_applicability"] is None  # a near spelling: a hint
    assert d["related"] == []  # other settings a finding depends on: tests/test_finding_locations
    assert d["also"] == []  # findings of the same cause: tests/test_finding_locations.py
    assert "Did you mean `trainer.nnodes`?" in d["message"]


def test_github_annotations(tmp_path):
    write(tmp_path / "a.yaml", "overrides:\n  trainer.nnodez: 2\n")
    proc = sapo_lint(str(tmp_path), "--format", "github")
    assert proc.stdout.startswith(f"::error file={tmp_path / 'a.yaml'},line=6,col=3,title=SL001 unknown-key::")


def test_exit_codes_and_warnings_as_errors(tmp_path):
    path = write(
        tmp_path / "a.yaml", "overrides:\n  trainer.total_epochs: 2\n  trainer.total_epochs: 3\n"
    )  # SL008 warning
    assert sapo_lint(str(path)).returncode == 0
    assert sapo_lint(str(path), "--warnings-as-errors").returncode == 1
    assert sapo_lint(str(tmp_path / "missing.yaml")).returncode == 2
    assert sapo_lint(str(path), "--select", "XX9").returncode == 2


def test_bad_input_is_reported_and_other_files_still_linted(tmp_path):
    write(tmp_path / "good.yaml", "overrides:\n  trainer.nnodez: 2\n")
    (tmp_path / "broken.yaml").write_text("recipe: sapo-recipe/v1\noverrides: {a: 1\n")
    (tmp_path / "binary.yaml").write_bytes(b"recipe: x\n\0\0\xff")
    (tmp_path / "utf16.yaml").write_bytes("recipe: sapo-recipe/v1\n".encode("utf-16"))
    bomb = "recipe: sapo-recipe/v1\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 9):
        anchor = f"*a{i - 1}" if i > 1 else "*a"
        bomb += f"a{i}: &a{i} [{', '.join([anchor] * 10)}]\n"
    (tmp_path / "bomb.yaml").write_text(bomb)
    proc = sapo_lint(str(tmp_path), "--format", "json")
    assert proc.returncode == 2, proc.stderr  # a file could not be read
    assert "Traceback" not in proc.stderr
    by_file = {Path(d["path"]).name: d["code"] for d in json.loads(proc.stdout)["diagnostics"]}
    assert by_file == {
        "good.yaml": "SL001",
        "broken.yaml": "RF002",
        "binary.yaml": "RF003",
        "utf16.yaml": "RF003",
        "bomb.yaml": "RF002",
    }


def test_recipe_schema_error_points_at_the_yaml_line(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(
        "recipe: sapo-recipe/v1\nname: r\nmodel: {card: qwen3-8b}\noverrides:\n"
        + RUNNABLE
        + "gates:\n  - {metric: x, minimum: 3}\n"
    )
    proc = sapo_lint(str(path), "--format", "json")
    found = {(d["code"], d["line"], d["message"]) for d in json.loads(proc.stdout)["diagnostics"]}
    assert found == {
        ("RF001", 9, "gates.0: needs at least one of min, max, trend"),
        (
            "RF001",
            9,
            "gates.0: unknown key `minimum`; "
            "allowed: metric, min, max, trend, after_step, over, window, alpha, tolerance",
        ),
    }


def test_unknown_verl_version_is_an_error_naming_the_snapshots(tmp_path):
    path = write(tmp_path / "r.yaml", 'verl: "0.3.0"\noverrides:\n')
    proc = sapo_lint(str(path))
    assert proc.returncode == 1 and "RF004" in proc.stdout and "0.9.1" in proc.stdout


def test_cli_override_and_verl_version(tmp_path):
    path = write(tmp_path / "r.yaml", "overrides:\n")
    proc = sapo_lint(str(path), "--override", "actor_rollout_ref.actor.megatron.grad_offload=true")
    assert proc.returncode == 1 and "--override:1:1: SL001" in proc.stdout
    assert (
        sapo_lint(
            str(path), "--verl-version", "0.8.0", "--override", "actor_rollout_ref.actor.megatron.grad_offload=true"
        ).returncode
        == 0
    )
    proc = sapo_lint(str(path), "--override", "trainer.nnodes=[1")
    assert "SL009" in proc.stdout


def test_pyproject_settings_and_unknown_keys(tmp_path):
    write(tmp_path / "r.yaml", "overrides:\n  trainer.nnodez: 2\n")
    (tmp_path / "pyproject.toml").write_text('[tool.sapo-lint]\nignore = ["SL001"]\n')
    assert sapo_lint(".", cwd=tmp_path).returncode == 0
    (tmp_path / "pyproject.toml").write_text('[tool.sapo-lint]\nignores = ["SL001"]\n')
    proc = sapo_lint(".", cwd=tmp_path)
    assert proc.returncode == 2 and "ignores" in proc.stderr and "select, ignore" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_rules_and_rule_docs():
    proc = sapo_lint("rules")
    assert proc.returncode == 0
    for code in ("SL001", "SL010", "SP001", "SP005", "RF001"):
        assert code in proc.stdout
    proc = sapo_lint("rule", "sp001")
    assert proc.returncode == 0 and "Bad:" in proc.stdout and "Good:" in proc.stdout
    assert sapo_lint("rule", "XX001").returncode == 2


def test_installed_verl_version_is_the_default(tmp_path):
    """A verl found by its dist-info (never imported) picks the snapshot when the recipe names no version."""
    site = tmp_path / "site"
    (site / "verl-0.8.0.dist-info").mkdir(parents=True)
    path = write(tmp_path / "r.yaml", "overrides:\n  actor_rollout_ref.actor.megatron.grad_offload: true\n")
    with_08 = sapo_lint(str(path), env={"PYTHONPATH": str(site)})
    assert with_08.returncode == 0, with_08.stdout  # grad_offload exists in verl 0.8.0
    assert sapo_lint(str(path)).returncode == 1  # default 0.9.1 has no grad_offload


def test_docs_rules_table_is_generated_from_the_registry():
    proc = sapo_lint("rules", "--markdown")
    assert proc.returncode == 0
    assert (REPO / "docs" / "rules.md").read_text() == proc.stdout, (
        "regenerate: sapo-lint rules --markdown > docs/rules.md"
    )
    from sapo_toolkit.linter.rules import MODULES

    for code in MODULES:
        assert f"| [{code}](#" in proc.stdout and f"\n## {code} " in proc.stdout


def test_site_limits_from_pyproject_and_recipe(tmp_path):
    """A disk budget stated in [tool.sapo-lint] or the recipe's `hardware` turns CK002 into an error against it."""
    text = (REPO / "recipes" / "qwen3-30b-a3b-sapo.yaml").read_text()
    (tmp_path / "r.yaml").write_text(text)
    assert "CK002" not in sapo_lint("r.yaml", cwd=tmp_path).stdout  # default budget (1024 GiB) holds two checkpoints
    (tmp_path / "pyproject.toml").write_text("[tool.sapo-lint]\ncheckpoint-disk-budget-gib = 100\n")
    proc = sapo_lint("r.yaml", "--format", "json", cwd=tmp_path)
    (ck,) = [d for d in json.loads(proc.stdout)["diagnostics"] if d["code"] == "CK002"]
    assert ck["severity"] == "error" and "100" in ck["message"]
    (tmp_path / "r.yaml").write_text(text.replace("hardware: {", "hardware: {disk_budget_gib: 500, "))
    assert "CK002" not in sapo_lint("r.yaml", cwd=tmp_path).stdout  # the recipe's own budget wins


def test_discovery_skips_tool_directories_and_excluded_paths(tmp_path):
    for where in ("recipes", ".git", "node_modules", ".venv/lib", "experiments"):
        (tmp_path / where).mkdir(parents=True)
        write(tmp_path / where / "r.yaml", "overrides:\n  trainer.nnodez: 2\n")
    (tmp_path / "pyproject.toml").write_text('[tool.sapo-lint]\nexclude = ["experiments"]\n')
    report = json.loads(sapo_lint(".", "--format", "json", cwd=tmp_path).stdout)
    assert {d["path"] for d in report["diagnostics"]} == {"recipes/r.yaml"}


# --- --add-noqa and --statistics ------------------------------------------------------------------------------------

NOQA_SCRIPT = """#!/bin/bash
# a run script as verl writes them: arrays, a continued command, a heredoc, an existing noqa
ARGS=(
    trainer.nnodez=1
    trainer.total_epochs=5  # sapo-lint: noqa: SL002
)
cat <<EOF
$undefined_in_heredoc
EOF
python3 -m verl.trainer.main_ppo "${ARGS[@]}" \\
    trainer.devcie=cuda \\
    actor_rollout_ref.actor.tau_poss=1 \\
    trainer.logger='["console","wandb"]' $@
"""


def lint_env(tmp_path):
    return {"SAPO_LINT_CACHE_DIR": str(tmp_path / "cache")}


def without_added_comments(text: str) -> str:
    import re

    return re.sub(r" *# sapo-lint: noqa: [A-Z0-9, ]+?(?=\r?\n|$)", "", text)


def test_add_noqa_on_a_script_then_a_second_run_is_clean(tmp_path):
    path = tmp_path / "run_noqa_fsdp.sh"
    path.write_bytes(NOQA_SCRIPT.encode())
    before = sapo_lint(str(path), "--format", "json", env=lint_env(tmp_path))
    found = {(d["code"], d["line"]) for d in json.loads(before.stdout)["diagnostics"]}
    assert {("SL001", 4), ("SL001", 11), ("SH2068", 13), ("SH2154", 8)} <= found, found

    proc = sapo_lint(str(path), "--add-noqa", env=lint_env(tmp_path))
    text = path.read_text()
    lines = text.splitlines()
    assert lines[3] == "    trainer.nnodez=1  # sapo-lint: noqa: SL001"  # an array element takes a comment
    assert lines[4] == "    trainer.total_epochs=5  # sapo-lint: noqa: SL002"  # nothing to add there
    assert lines[10] == "    trainer.devcie=cuda \\"  # a continued line cannot: its codes go where the command ends
    assert lines[12].startswith("""    trainer.logger='["console","wandb"]' $@  # sapo-lint: noqa: """)
    assert {"SH2068", "SL001"} <= set(lines[12].rsplit(": ", 1)[1].split(", "))
    assert lines[7] == "$undefined_in_heredoc"  # a comment inside a heredoc would be its text: not written
    assert "run_noqa_fsdp.sh:8:1: SH2154 not suppressed: inside a string, heredoc or block scalar" in proc.stderr
    assert "Added 2 noqa comments" in proc.stderr

    after = sapo_lint(str(path), "--format", "json", env=lint_env(tmp_path))
    assert [(d["code"], d["line"]) for d in json.loads(after.stdout)["diagnostics"]] == [("SH2154", 8)]
    assert without_added_comments(text) == without_added_comments(NOQA_SCRIPT)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True, check=False).returncode == 0


def test_add_noqa_keeps_crlf_and_a_byte_order_mark(tmp_path):
    path = tmp_path / "r.yaml"
    body = recipe("overrides:\n  trainer.nnodez: 2\n" + RUNNABLE)
    path.write_bytes(b"\xef\xbb\xbf" + body.replace("\n", "\r\n").encode())
    assert sapo_lint(str(path), "--add-noqa").returncode == 0
    written = path.read_bytes()
    assert written.startswith(b"\xef\xbb\xbf") and written.count(b"\n") == written.count(b"\r\n") == body.count("\n")
    assert b"  trainer.nnodez: 2  # sapo-lint: noqa: SL001\r\n" in written
    assert without_added_comments(written[3:].decode()) == body.replace("\n", "\r\n")
    assert sapo_lint(str(path)).returncode == 0


def test_add_noqa_on_a_shebang_line_is_reported_not_written(tmp_path):
    # a repository that runs verl's naming check (its pre-commit hook), so that NM applies
    (tmp_path / ".git").mkdir()
    (tmp_path / ".pre-commit-config.yaml").write_text(
        "repos:\n- repo: local\n  hooks:\n  - id: check-example-naming\n"
        "    entry: python3 tests/special_sanity/check_example_naming.py --root examples\n"
    )
    (tmp_path / "examples").mkdir()
    path = tmp_path / "examples" / "run_noqa.sh"  # NM002: no train-backend suffix, reported on line 1
    text = (
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.actor.use_dynamic_bsz=true "
        "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=true actor_rollout_ref.ref.log_prob_use_dynamic_bsz=true\n"
    )
    path.write_text(text)
    proc = sapo_lint(str(path), "--add-noqa", env=lint_env(tmp_path))
    assert path.read_text().splitlines()[0] == "#!/bin/bash"  # other findings get their comments elsewhere
    assert "run_noqa.sh:1:1: NM002 not suppressed: on the shebang line" in proc.stderr and proc.returncode == 1


def test_add_noqa_on_a_recipe_merges_codes_and_keeps_the_yaml(tmp_path):
    import yaml

    path = write(
        tmp_path / "r.yaml",
        "overrides:\n  trainer.nnodez: 2  # sapo-lint: noqa: SL002\n"
        "  actor_rollout_ref.actor.tau_poss: 1\n  trainer.project_name: |\n    qwen3\n",
    )
    data = yaml.safe_load(path.read_text())
    assert sapo_lint(str(path), "--add-noqa").returncode == 0
    text = path.read_text()
    assert "  trainer.nnodez: 2  # sapo-lint: noqa: SL002, SL001\n" in text
    assert "  actor_rollout_ref.actor.tau_poss: 1  # sapo-lint: noqa: SL001\n" in text
    assert yaml.safe_load(text) == data
    assert "All checks passed" in sapo_lint(str(path)).stdout


def test_add_noqa_does_not_go_with_fix(tmp_path):
    path = write(tmp_path / "r.yaml", "overrides:\n  trainer.nnodez: 2\n")
    proc = sapo_lint(str(path), "--add-noqa", "--fix")
    assert proc.returncode == 2 and "--fix and --add-noqa" in proc.stderr and "nnodez: 2\n" in path.read_text()


def test_statistics_text_and_json(tmp_path):
    path = write(tmp_path / "r.yaml", TAU_BUG + TAU_NEG + "  trainer.nnodez: 2\n  trainer.devcie: cuda\n")
    proc = sapo_lint(str(path), "--statistics", "--format", "json")
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert set(report) == {"version", "statistics", "summary", "verl"}
    rows = {r["code"]: r for r in report["statistics"]}
    assert rows["SL001"] == {
        "code": "SL001",
        "name": "unknown-key",
        "severity": "error",
        "count": 2,
        "fixable": 0,
        "fixes": {"safe": 0, "unsafe": 0, "display-only": 0},
    }
    tau = rows.get("SL003") or rows["SP001"]
    assert tau["count"] == 1 and tau["fixable"] == 1
    assert report["statistics"][0]["code"] == "SL001"  # the most frequent first
    assert report["summary"]["error"] == sum(r["count"] for r in report["statistics"] if r["severity"] == "error")

    text = sapo_lint(str(path), "--statistics").stdout.splitlines()
    assert text[0].split() == ["2", "SL001", "error", "unknown-key"]
    assert any(line.split()[1] == tau["code"] and "1 fixable" in line for line in text)
    assert text[-1].startswith("Found ") and not any(line.startswith(str(path)) for line in text)
    assert sapo_lint(str(path), "--statistics", "--format", "sarif").returncode == 2


def test_a_finding_over_variant_switches_is_printed_once_per_message_with_its_variants(tmp_path):
    # six independent switches, each setting save_freq before an unconditional setting: 64 variants, and the
    # SL008 message (which earlier line it repeats) depends on the last switch on; one line per message
    switches = "".join(
        f'if [ "${{{v}:-0}}" = 1 ]; then ARGS+=(trainer.save_freq={i}); fi\n' for i, v in enumerate("ABCDEF")
    )
    script = tmp_path / "run_qwen3_8b_fsdp.sh"
    script.write_text(
        "ARGS=()\n" + switches + 'ARGS+=(trainer.save_freq=9)\npython3 -m verl.trainer.main_ppo "${ARGS[@]}"\n'
    )
    proc = sapo_lint(str(script), "--no-shellcheck", "--select", "SL008", "--format", "json")
    found = [(d["line"], d["variant"]) for d in json.loads(proc.stdout)["diagnostics"]]
    assert sorted(found) == sorted(
        [
            (8, "A=1"),
            (8, "A=0,B=1"),
            (8, "A=0,B=0,C=1"),
            (8, "A=0,B=0,C=0,D=1"),
            (8, "A=0,B=0,C=0,D=0,E=1"),
            (8, "A=0,B=0,C=0,D=0,E=0,F=1"),
        ]
    ), found
    assert proc.stdout.count("also set at line 7") == 1


def test_a_script_reader_finding_in_one_branch_names_its_variant(tmp_path):
    script = tmp_path / "run_qwen3_8b_fsdp.sh"
    script.write_text(
        'ARGS=(trainer.nnodes=1)\ncase "$DEVICE" in\n  npu) ARGS+=("${PREFIX}.enable=True") ;;\n'
        '  gpu) ;;\nesac\npython3 -m verl.trainer.main_ppo "${ARGS[@]}"\n'
    )
    proc = sapo_lint(str(script), "--no-shellcheck", "--select", "SH001")
    assert "run_qwen3_8b_fsdp.sh:3:15: SH001 override key `$PREFIX.enable`" in proc.stdout
    assert proc.stdout.splitlines()[0].endswith("[DEVICE=npu]"), proc.stdout


def test_infos_are_left_out_of_text_reports_in_pre_commit_and_ci(tmp_path):
    """Unattended runs (pre-commit's PRE_COMMIT, a CI service's CI) show errors and warnings; -v or `show-infos`
    shows infos too; JSON keeps every finding."""
    (tmp_path / "run.sh").write_text('#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodes=1 "$@"\n')

    def lint(*args, env=None, fmt="text"):
        proc = sapo_lint(str(tmp_path / "run.sh"), "--no-shellcheck", "--format", fmt, *args, env=env)
        return proc.stdout

    assert "SH003" in lint()  # at a terminal: every finding
    for variable in ("PRE_COMMIT", "CI"):
        out = lint(env={variable: "1"})
        assert "SH003" not in out and "not shown in pre-commit and CI" in out, out
    assert "SH003" in lint("-v", env={"CI": "true"})
    assert '"SH003"' in lint(env={"CI": "true"}, fmt="json")
    (tmp_path / "pyproject.toml").write_text("[tool.sapo-lint]\nshow-infos = true\n")
    assert "SH003" in lint(env={"PRE_COMMIT": "1"})


# Modules a plain lint has no use for, each costing a cold start several milliseconds (issue 32 item 4): the rich
# terminal, the reference validators and parsers, package metadata, the network and OpenSSL.
OFF_THE_FAST_PATH = (
    "rich",
    "jsonschema",
    "hydra",
    "omegaconf",
    "importlib.metadata",
    "urllib.request",
    "http.client",
    "ssl",
    "hashlib",
)


# A run script's lint reads no YAML: the recipe reader and its parser stay unloaded (outside a repository, whose
# .pre-commit-config.yaml says whether verl's naming check applies).
OFF_THE_SCRIPT_PATH = ("yaml", "sapo_toolkit.linter.sources.recipe")


def test_a_plain_lint_imports_nothing_it_does_not_use(tmp_path):
    script = tmp_path / "run_llama3_8b_megatron.sh"
    shutil.copy(REPO / "tests" / "fixtures" / "scripts" / script.name, script)
    for args, unused in (
        (["--no-shellcheck", str(script)], OFF_THE_FAST_PATH + OFF_THE_SCRIPT_PATH),
        ([str(REPO / "recipes" / "qwen3-8b-sapo.yaml")], OFF_THE_FAST_PATH),
    ):
        probe = (
            "import atexit, sys\n"
            f"atexit.register(lambda: print(sorted(set(sys.modules) & {set(unused)!r}), file=sys.stderr))\n"
            "from sapo_toolkit.linter.cli import main\nsys.argv[0] = 'sapo-lint'\nmain()\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60, check=False, cwd=REPO
        )
        assert done.returncode in (0, 1), done
        assert done.stderr.strip().splitlines()[-1] == "[]", (args, done.stderr)
