"""Hostile and malformed inputs: each gets a clear diagnostic at its place, the other files are still linted, and
nothing crashes. One test per input, named after it."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import HEADER, children_cpu_s

HOSTILE = {
    "verl_as_a_float": ("verl: 0.9\noverrides: {}\n", "RF001", 5),
    "accelerator_as_a_list": ("hardware: {accelerator: [a]}\noverrides: {}\n", "RF001", 5),
    "custom_tag": ("overrides:\n  actor_rollout_ref.actor.tau_pos: !custom x\n", "RF002", 6),
    "complex_key": ("overrides:\n  ? [a, b]\n  : 1\n", "RF002", 6),
    "flow_nesting_999_levels": ("overrides:\n  trainer.x: " + "[" * 999 + "]" * 999 + "\n", "RF002", 6),
    "version_with_a_path": ('verl: "0.9.1/../../../../../elsewhere/evil"\noverrides: {}\n', "RF001", 5),
    "second_overrides_block": ("overrides:\n  trainer.nnodez: 1\noverrides:\n  trainer.nnodes: 2\n", "RF007", 7),
}


def lint_json(*args, cwd):
    exe = [sys.executable, "-m", "sapo_toolkit.linter"]
    proc = subprocess.run([*exe, "--format", "json", *args], capture_output=True, text=True, cwd=cwd, timeout=60)
    return proc, json.loads(proc.stdout) if proc.stdout.startswith("{") else None


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_recipe(tmp_path, name):
    body, code, line = HOSTILE[name]
    (tmp_path / f"{name}.yaml").write_text(HEADER + body)
    proc, report = lint_json(f"{name}.yaml", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    (found,) = [d for d in report["diagnostics"] if d["code"] == code]
    assert found["line"] == line, found


def test_value_1e400_is_infinity_not_a_crash(tmp_path):
    (tmp_path / "r.yaml").write_text(HEADER + "overrides:\n  actor_rollout_ref.actor.tau_pos: 1e400\n")
    proc, report = lint_json("r.yaml", "--override", "actor_rollout_ref.actor.tau_neg=1e400", cwd=tmp_path)
    assert proc.returncode in (0, 1) and report is not None, proc.stderr


def test_every_hostile_file_in_one_directory_with_a_real_typo(tmp_path):
    for name, (body, _, _) in HOSTILE.items():
        (tmp_path / f"{name}.yaml").write_text(HEADER + body)
    (tmp_path / "typo.yaml").write_text(HEADER + "overrides:\n  actor_rollout_ref.actor.tau_poss: 1.0\n")
    proc, report = lint_json(".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    codes_by_file = {}
    for d in report["diagnostics"]:
        codes_by_file.setdefault(d["path"].removeprefix("./"), set()).add(d["code"])
    assert "SL001" in codes_by_file["typo.yaml"]
    for name, (_, code, _) in HOSTILE.items():
        assert code in codes_by_file[f"{name}.yaml"], name


def test_fifo_in_a_linted_directory(tmp_path):
    os.mkfifo(tmp_path / "x.yaml")
    os.mkfifo(tmp_path / "run_x_megatron.sh")
    (tmp_path / "typo.yaml").write_text(HEADER + "overrides:\n  actor_rollout_ref.actor.tau_poss: 1.0\n")
    proc, report = lint_json(".", cwd=tmp_path)  # the 60 s timeout is the hang guard
    assert proc.returncode == 2, proc.stderr  # files that could not be read
    by_path = {d["path"].removeprefix("./"): d for d in report["diagnostics"] if d["code"] == "RF003"}
    assert set(by_path) == {"x.yaml", "run_x_megatron.sh"}
    assert "not a regular file" in by_path["x.yaml"]["message"]
    assert any(d["code"] == "SL001" for d in report["diagnostics"])


def test_named_yaml_that_is_not_a_recipe_is_skipped_and_any_other_named_file_is_reported(tmp_path):
    """pre-commit names every YAML file of a repository: a workflow or a Hydra config is skipped as in a directory
    walk, not counted as checked and no warning that --warnings-as-errors would turn into a blocked commit. A file
    with the `recipe:` key is linted however malformed; any other named file is RF008 (a typo in a path)."""
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text("name: ci\non: [push]\njobs: {}\n")
    (tmp_path / "ppo_trainer.yaml").write_text("actor_rollout_ref: {}\n")
    (tmp_path / "broken.yaml").write_text("recipe: 3\noverrides: {}\n")
    (tmp_path / "notes.txt").write_text("hello\n")
    sapo_lint = [shutil.which("sapo-lint") or "sapo-lint", "--format", "json", "--warnings-as-errors"]

    def run(*paths):
        proc = subprocess.run([*sapo_lint, *paths], capture_output=True, text=True, cwd=tmp_path, timeout=60)
        report = json.loads(proc.stdout)
        return proc.returncode, sorted({(d["path"], d["code"]) for d in report["diagnostics"]}), report["summary"]

    code, found, summary = run(".github/workflows/ci.yml", "ppo_trainer.yaml")
    assert (code, found, summary["files"]) == (0, [], 0)
    code, found, summary = run(".github/workflows/ci.yml", "broken.yaml", "notes.txt")
    assert code == 1 and summary["files"] == 1
    assert {path for path, _ in found} == {"broken.yaml", "notes.txt"}
    assert ("broken.yaml", "RF001") in found and ("notes.txt", "RF008") in found


def test_empty_directory_is_a_usage_error(tmp_path):
    (tmp_path / "empty").mkdir()
    proc, _ = lint_json("empty", cwd=tmp_path)
    assert proc.returncode == 2 and "no recipes or run scripts found under empty" in proc.stderr


def test_unreadable_subdirectory(tmp_path, monkeypatch):
    from sapo_toolkit.linter.lint import lint_paths
    from sapo_toolkit.linter.settings import Settings

    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "r.yaml").write_text(HEADER + "overrides: {}\n")
    (tmp_path / "ok.yaml").write_text(HEADER + "overrides: {}\n")
    real_scandir = os.scandir

    def scandir(path="."):  # what a directory without read permission gives a non-root user
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = lint_paths([tmp_path], Settings(shellcheck=False))
    assert result.unreadable == 1 and result.files == 1
    (found,) = [d for d in result.diagnostics if d.code == "RF003"]
    assert found.location.path == str(locked) and "cannot list directory: Permission denied" in found.message


@pytest.mark.parametrize(
    "name,text,says",
    [
        ("tool_is_a_string", 'tool = "x"\n', "must be a table"),
        ("sapo_lint_is_a_number", "[tool]\nsapo-lint = 5\n", "must be a table"),
        ("negative_host_ram", "[tool.sapo-lint]\nhost-ram-gib = -5\n", "positive finite number, not -5"),
        ("zero_write_speed", "[tool.sapo-lint]\ncheckpoint-write-gib-per-s = 0\n", "positive finite number, not 0"),
        ("infinite_write_speed", "[tool.sapo-lint]\ncheckpoint-write-gib-per-s = inf\n", "not inf"),
        ("nan_disk_budget", "[tool.sapo-lint]\ncheckpoint-disk-budget-gib = nan\n", "not nan"),
    ],
)
def test_hostile_pyproject(tmp_path, name, text, says):
    (tmp_path / "pyproject.toml").write_text(text)
    (tmp_path / "r.yaml").write_text(HEADER + "overrides: {}\n")
    proc, _ = lint_json("r.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 3, proc.stderr


def test_recipe_with_20_two_valued_axes(tmp_path):
    """A million combinations: a sample of 64 is linted, in well under the time of the product, and the
    combination of first values (where the typo lives) is one of them."""

    axes = "".join(
        f"  a{i}:\n    x: {{overrides: {{trainer.nnodes: 1}}}}\n    y: {{overrides: {{trainer.nnodes: 2}}}}\n"
        for i in range(20)
    )
    (tmp_path / "r.yaml").write_text(HEADER + "overrides:\n  trainer.nnodez: 1\nvariants:\n" + axes)
    start = children_cpu_s()
    proc, report = lint_json("r.yaml", cwd=tmp_path)
    assert children_cpu_s() - start < 30 and proc.returncode == 1, proc.stderr
    (cap,) = [d for d in report["diagnostics"] if d["code"] == "RF009"]
    assert "1,048,576 variant combinations; linted 64" in cap["message"]
    assert any(d["code"] == "SL001" and "nnodez" in d["message"] for d in report["diagnostics"])


def test_script_with_22_independent_if_switches(tmp_path):
    """4 million combinations: enumerated lazily (no memory blow-up), the script's defaults linted first, so a typo
    on the default (`else`) path of the last switch is reported."""
    switches = "".join(f'if [ "${{S{i}:-off}}" = on ]; then A{i}=on; else A{i}=off; fi\n' for i in range(21))
    switches += 'if [ "${S21:-off}" = on ]; then LAST=trainer.nnodes; else LAST=trainer.nnodez; fi\n'
    (tmp_path / "run_x_megatron.sh").write_text(
        "#!/bin/bash\n" + switches + 'python3 -m verl.trainer.main_ppo "$LAST=1"\n'
    )
    proc, report = lint_json("--no-shellcheck", "run_x_megatron.sh", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert any("4,194,304 variant combinations" in d["message"] for d in report["diagnostics"])
    typo = [d for d in report["diagnostics"] if d["code"] == "SL001" and "nnodez" in d["message"]]
    assert typo and typo[0]["line"] == 24  # the trainer call, where the argument is written


# Writers: --fix edits what is there and nothing else; an unwritable destination is one line.
TAU_BUG = "overrides:\n  +actor_rollout_ref.actor.policy_loss.tau_pos: 1.2\n"


def fix(tmp_path, name):
    return subprocess.run(
        [sys.executable, "-m", "sapo_toolkit.linter", "--fix", "--select", "SP001", name],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )


def test_fix_through_a_symlink_edits_the_target(tmp_path):
    (tmp_path / "real.yaml").write_text(HEADER + TAU_BUG)
    (tmp_path / "link.yaml").symlink_to("real.yaml")
    fix(tmp_path, "link.yaml")
    assert (tmp_path / "link.yaml").is_symlink()
    assert "actor_rollout_ref.actor.tau_pos: 1.2" in (tmp_path / "real.yaml").read_text()


def test_fix_keeps_crlf_bom_mode_and_comments(tmp_path):
    text = ("\ufeff" + HEADER + "# keep me\n" + TAU_BUG).replace("\n", "\r\n")
    path = tmp_path / "r.yaml"
    path.write_bytes(text.encode("utf-8"))
    path.chmod(0o640)
    fix(tmp_path, "r.yaml")
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert b"# keep me\r\n" in data and b"  actor_rollout_ref.actor.tau_pos: 1.2\r\n" in data
    assert path.stat().st_mode & 0o777 == 0o640


def test_fix_keeps_the_owner(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another owner")
    path = tmp_path / "r.yaml"
    path.write_text(HEADER + TAU_BUG)
    os.chown(path, 1234, 5678)
    fix(tmp_path, "r.yaml")
    assert "tau_pos: 1.2" in path.read_text() and (path.stat().st_uid, path.stat().st_gid) == (1234, 5678)


@pytest.mark.parametrize(
    "command",
    [
        ["convert", "{script}", "-o", "/proc/no/such/recipe.yaml"],
        ["explain", "{recipe}", "--plot", "/proc/no/such/plan.png"],
    ],
)
def test_unwritable_destination(tmp_path, command):
    from .helpers import REPO

    script = REPO / "tests" / "fixtures" / "scripts" / "run_qwen3_8b_megatron.sh"
    recipe = REPO / "recipes" / "qwen3-8b-sapo.yaml"
    args = [a.format(script=script, recipe=recipe) for a in command]
    proc = subprocess.run(
        [sys.executable, "-m", "sapo_toolkit.linter", *args], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 2 and "cannot write /proc/no/such/" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


def test_verl_version_option_with_a_path(tmp_path):
    """The version names a file inside the package's snapshot directory, never a path out of it."""
    (tmp_path / "r.yaml").write_text(HEADER + "overrides: {}\n")
    proc, _ = lint_json("r.yaml", "--verl-version", "0.9.1/../../../../../elsewhere/evil", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "no snapshot of verl 0.9.1/../../../../../elsewhere/evil" in proc.stderr


# Found by tests/test_fuzz.py: each input crashed a reader (or hung it, or reported past the end of the file).
def lint_file(tmp_path, name, text, files=()):
    """Lint one file in process (files: other (path, text) pairs it refers to); its diagnostics."""
    from sapo_toolkit.linter.lint import lint_paths
    from sapo_toolkit.linter.settings import Settings

    for other, content in files:
        (tmp_path / other).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / other).write_text(content)
    (tmp_path / name).write_text(text)
    return lint_paths([tmp_path / name], Settings(shellcheck=False)).diagnostics


@pytest.mark.parametrize("ending", ["", "\n"], ids=["without_line_break", "with_line_break"])
def test_unclosed_flow_list_on_the_last_line(tmp_path, ending):
    """libyaml marks the end of the stream on a line after the last one: reported at the end of the last line."""
    (found,) = lint_file(tmp_path, "r.yaml", HEADER + "overrides: [1, 2" + ending)
    assert found.code == "RF002" and (found.location.line, found.location.column) == (5, 17), found


def test_script_missing_fi_after_the_last_line_break(tmp_path):
    (found,) = lint_file(tmp_path, "run_x_megatron.sh", "#!/bin/bash\nif true; then\n  echo x\n")
    assert found.code == "SH002" and found.location.line == 3, found


def test_shellcheck_on_a_script_missing_fi_after_the_last_line_break(tmp_path):
    (tmp_path / "run_x_megatron.sh").write_text("#!/bin/bash\nif true; then\n  echo x\n")
    env = {**os.environ, "SAPO_LINT_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "sapo_toolkit.linter", "--format", "json", "run_x_megatron.sh"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    lines = {(d["code"], d["line"]) for d in json.loads(proc.stdout)["diagnostics"]}
    assert ("SH1072", 3) in lines and max(line for _, line in lines) == 3, lines


@pytest.mark.parametrize(
    "value,says",
    [
        ("!!int x", "not a valid `!!int` value: invalid literal for int()"),
        ("!!bool maybe", "not a valid `!!bool` value: 'maybe'"),
        ("!!value x", "could not determine a constructor for the tag 'tag:yaml.org,2002:value'"),
        ("!!set [a]", "expected a mapping node, but found sequence"),
        ("9" * 5000, "not a valid `!!int` value: Exceeds the limit (4300 digits)"),
    ],
    ids=["int_tag_on_a_word", "bool_tag_on_maybe", "value_tag", "set_tag_on_a_list", "int_of_5000_digits"],
)
def test_yaml_value_that_cannot_be_built(tmp_path, value, says):
    (found,) = lint_file(tmp_path, "r.yaml", HEADER + f"overrides:\n  trainer.nnodes: {value}\n")
    assert found.code == "RF002" and (found.location.line, found.location.column) == (6, 19), found
    assert says in found.message, found.message


@pytest.mark.parametrize(
    "key,value",
    [
        ("actor_rollout_ref.rollout.tensor_model_parallel_size", ".nan"),
        ("actor_rollout_ref.rollout.tensor_model_parallel_size", ".inf"),
        ("trainer.nnodes", ".inf"),
    ],
)
def test_size_that_is_not_finite(tmp_path, key, value):
    """The rules take whole numbers only; the type is SL004's to report, at the override."""
    found = lint_file(tmp_path, "r.yaml", HEADER + f"overrides:\n  {key}: {value}\n")
    assert [(d.code, d.location.line) for d in found if d.code == "SL004"] == [("SL004", 6)], found


def test_world_of_9223372036854775807_devices(tmp_path):
    """An odd world that TP 2 cannot divide: the "nearest valid TP" hint used to enumerate every number below it.
    The largest 64-bit integer: beyond it a size is out of range (SL004), and no rule computes with it."""
    import time

    body = (
        "overrides:\n  trainer.nnodes: 9223372036854775807\n  trainer.n_gpus_per_node: 1\n"
        "  actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2\n"
    )
    start = time.process_time()
    found = lint_file(tmp_path, "r.yaml", HEADER + body)
    assert time.process_time() - start < 5
    (tp001,) = [d for d in found if d.code == "TP001"]
    assert "TP 1 would give an integer dp" in tp001.message, tp001.message


@pytest.mark.parametrize(
    "overrides,size",
    [
        ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 0", "tensor_model_parallel_size` is 0"),
        ("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size: -2", "pipeline_model_parallel_size` is -2"),
        (
            "actor_rollout_ref.actor.megatron.context_parallel_size: 0\n"
            "  actor_rollout_ref.actor.ppo_mini_batch_size: 16",
            "context_parallel_size` is 0",
        ),
    ],
    ids=["tp_0", "pp_minus_2", "cp_0_with_a_mini_batch"],
)
def test_parallel_size_below_one(tmp_path, overrides, size):
    """Megatron divides by TP*PP*CP; the rules and the estimator did too (ZeroDivisionError, max() of nothing)."""
    found = lint_file(
        tmp_path, "r.yaml", HEADER + "hardware: {accelerator: nvidia-h100}\noverrides:\n  " + overrides + "\n"
    )
    (below,) = [d for d in found if d.code == "TP001"]
    assert below.location.line == 7 and size in below.message and "needs a positive size" in below.message


def test_virtual_pipeline_size_of_0(tmp_path):
    """Not a VPP (TP014): the estimator used to divide the layers into 0 chunks."""
    body = (
        "overrides:\n  actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size: 0\n"
        "  actor_rollout_ref.actor.megatron.pipeline_model_parallel_size: 2\n"
    )
    found = lint_file(tmp_path, "r.yaml", HEADER + "hardware: {accelerator: nvidia-h100}\n" + body)
    assert [d.code for d in found if d.code.startswith(("TP", "RF"))] == ["TP014"], found  # and no crash


MODEL_HEADER = (
    HEADER.replace("model: {path: Qwen/Qwen3-8B}", "model: {path: model}") + "hardware: {accelerator: nvidia-h100}\n"
)
QWEN3_8B = {
    "model_type": "qwen3",
    "num_hidden_layers": 36,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 12288,
    "vocab_size": 151936,
}
QWEN3_30B_A3B = {
    **QWEN3_8B,
    "model_type": "qwen3_moe",
    "num_hidden_layers": 48,
    "hidden_size": 2048,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "moe_intermediate_size": 768,
    "intermediate_size": 6144,
}


@pytest.mark.parametrize(
    "config,says",
    [
        ("null", "a config is a JSON object ({...}), not None"),
        ("0", "a config is a JSON object ({...}), not 0"),
        (
            json.dumps({**QWEN3_8B, "num_hidden_layers": float("inf")}),
            "`num_hidden_layers` must be an integer from 1 to 10,000, not inf",
        ),
        (
            json.dumps({**QWEN3_8B, "num_attention_heads": 0, "head_dim": None}),
            "`num_attention_heads` must be an integer from 1",
        ),
        (
            json.dumps({**QWEN3_30B_A3B, "num_hidden_layers": 10**12}),
            "`num_hidden_layers` must be an integer from 1 to 10,000, not 1000000000000",
        ),
        (
            json.dumps({**QWEN3_8B, "hidden_size": 10**400}),
            "`hidden_size` must be an integer from 1 to 10,000,000, not an integer over 10^30",
        ),
        ("[" * 100_000 + "]" * 100_000, "maximum recursion depth exceeded"),
    ],
    ids=[
        "null",
        "a_number",
        "infinite_layers",
        "zero_heads",
        "trillion_moe_layers",
        "hidden_size_10e400",
        "nested_100000_deep",
    ],
)
def test_model_config_json(tmp_path, config, says):
    found = lint_file(tmp_path, "r.yaml", MODEL_HEADER + "overrides: {}\n", [("model/config.json", config)])
    (unknown,) = [d for d in found if d.code == "RF005"]
    assert unknown.location.line == 4 and says in unknown.message, unknown.message


@pytest.mark.parametrize(
    "path", ["~nobody_here/model", "x" * 300], ids=["home_of_an_unknown_user", "name_of_300_characters"]
)
def test_model_path(tmp_path, path):
    found = lint_file(tmp_path, "r.yaml", HEADER.replace("Qwen/Qwen3-8B", path) + "overrides: {}\n")
    (unknown,) = [d for d in found if d.code == "RF005"]
    assert "is not a local directory with config.json, and neither the Hugging Face cache" in unknown.message


def test_jsonl_line_nested_100000_deep():
    from sapo_toolkit.launcher.metrics import parse_jsonl_line

    assert parse_jsonl_line('{"step": 1, "data": ' + "[" * 100_000 + "]" * 100_000 + "}") is None


def test_jsonl_metric_of_400_digits():
    from sapo_toolkit.launcher.metrics import parse_jsonl_line

    step, values = parse_jsonl_line('{"step": 1, "data": {"a": ' + "9" * 400 + ', "b": 0.5}}')
    assert step == 1 and values["b"] == 0.5


def test_pyproject_key_with_a_line_break(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.sapo-lint]\n"a\\nb" = 1\n')
    (tmp_path / "r.yaml").write_text(HEADER + "overrides: {}\n")
    proc, _ = lint_json("r.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "unknown key(s) in [tool.sapo-lint]: 'a\\nb'; valid keys:" in proc.stderr


def run_guarded(code: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """Python code in a child process limited to 2 GiB, so that a regression fails this test, not the machine."""
    guard = "import resource\nresource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
    return subprocess.run([sys.executable, "-c", guard + code], input=stdin, capture_output=True, timeout=120)


def test_pipeline_size_9223372036854775807(tmp_path):
    """The estimator built a list per pipeline stage (MemoryError after filling the machine's memory). The largest
    64-bit integer: beyond it a size is out of range (SL004), and no rule computes with it."""
    (tmp_path / "r.yaml").write_text(
        HEADER + "hardware: {accelerator: nvidia-h100}\noverrides:\n"
        "  actor_rollout_ref.actor.megatron.pipeline_model_parallel_size: 9223372036854775807\n"
    )
    proc = run_guarded(
        "import sys\nfrom pathlib import Path\nfrom sapo_toolkit.linter.lint import lint_paths\n"
        "from sapo_toolkit.linter.settings import Settings\n"
        "print(sorted({c for d in lint_paths([Path(sys.argv[1])], Settings(shellcheck=False))"
        ".diagnostics for c in d.codes}))\n".replace("sys.argv[1]", repr(str(tmp_path / "r.yaml")))
    )
    assert proc.returncode == 0, proc.stderr.decode()[-500:]
    assert "'TP007'" in proc.stdout.decode()  # 36 layers do not split into that many stages


def test_script_brace_then_a_4_byte_character():
    """tree-sitter-bash#337: `{` and a 4-byte UTF-8 character make the parser read out of bounds; on Linux that
    killed about half the processes (SIGSEGV), depending on their memory layout. Ten processes parse them."""
    texts = "{\U0009cab4 {\U000e0100 {\U0010ffff {\U000f0000 {\U000d0000".encode()
    code = (
        "import sys\nfrom sapo_toolkit.linter.sources.bash.parse import parse\n"
        "for text in sys.stdin.read().split():\n    for _ in range(100):\n        parse(text.encode())\n"
    )
    assert [run_guarded(code, texts).returncode for _ in range(10)] == [0] * 10


@pytest.mark.parametrize("value", ['!!int ""', '!!float ""'])
def test_empty_value_with_a_number_tag(tmp_path, value):
    (tmp_path / "r.yaml").write_text(HEADER + f"overrides:\n  trainer.nnodes: {value}\n")
    proc, report = lint_json("r.yaml", cwd=tmp_path)
    assert proc.returncode == 1 and "internal error" not in proc.stderr, proc.stderr
    assert [d["code"] for d in report["diagnostics"]] == ["RF002"]


def test_model_path_of_a_user_name_with_a_nul_byte(tmp_path):
    """`~a\\0b`: looking the user up raised ValueError (embedded null byte)."""
    found = lint_file(tmp_path, "r.yaml", HEADER.replace("Qwen/Qwen3-8B", '"~a\\0b/model"') + "overrides: {}\n")
    (unknown,) = [d for d in found if d.code == "RF005"]
    assert "is not a local directory with config.json, and neither the Hugging Face cache" in unknown.message
