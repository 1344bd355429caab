"""What reaches a terminal, a CI log or a run directory: values under secret names are never quoted (RF001,
SL002, SL008, SL009, SH001, SH005, the launcher's lint report and dry run) and values of ordinary keys are, and file
names and file text cannot put escape sequences or lines of their own into a text report."""

import json
import re

from .helpers import REPO, launch, recipe
from .test_cli import sapo_lint

SECRET = "hf_n0t-for-your-eyes"
SGR = re.compile(r"\x1b\[[0-9;]*m")  # click's colours, with --color always


def secret_inputs(tmp_path):
    """One recipe that violates the schema with a secret (RF001), one whose rules quote values of secret-named keys,
    one run script that quotes them in its own findings."""
    (tmp_path / "schema.yaml").write_text(recipe(f"overrides:\n  trainer.nnodes: 1\nenv:\n  HF_TOKEN: [{SECRET}]\n"))
    (tmp_path / "rules.yaml").write_text(
        recipe(f"overrides:\n  +trainer.api_key: {SECRET}\n  +trainer.api_key: {SECRET}x\n")
    )  # SL002, SL008
    (tmp_path / "run_qwen_fsdp.sh").write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n  trainer.nnodes=1 \\\n"
        f"  --hf-token={SECRET} \\\n"  # SH001: not an override
        f"  'trainer.password=[{SECRET}'\n\n"  # SL009: Hydra's message quotes the value
        f"+trainer.api_key={SECRET} \\\n  trainer.nnodes=2\n"
    )  # SH005: cut off by the blank line
    return tmp_path


def test_values_under_secret_names_are_redacted_in_every_lint_format(tmp_path):
    root = secret_inputs(tmp_path)
    args = [str(root), "--override", f"trainer.api_token=[{SECRET}"]  # SL009 from the command line
    for fmt in ("text", "json", "sarif", "github"):
        proc = sapo_lint(*args, "--format", fmt)
        assert proc.returncode == 1, proc.stderr
        assert SECRET not in proc.stdout + proc.stderr, fmt
    found = json.loads(sapo_lint(*args, "--format", "json").stdout)["diagnostics"]
    redacted = {d["code"] for d in found if "<redacted>" in d["message"]}
    assert redacted == {"RF001", "SL002", "SL008", "SL009", "SH001", "SH005"}, found


def test_values_of_verls_own_keys_are_shown_in_clear(tmp_path):
    """Secret names are whole words at the end of a name (`HF_TOKEN`, `WANDB_API_KEY`), never a substring of a
    config key: verl's token budgets and dataset keys are quoted as written."""
    keys = {
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": "24k",
        "actor_rollout_ref.rollout.max_num_batched_tokens": "8k",
        "data.prompt_key": "[1",
        "reward_model.reward_kwargs.reward_fn_key": "[2",
    }
    path = tmp_path / "r.yaml"
    path.write_text(recipe("overrides:\n  trainer.nnodes: 1\n"))
    args = [str(path), "--format", "json", *(a for k, v in keys.items() for a in ("--override", f"{k}={v}"))]
    found = json.loads(sapo_lint(*args).stdout)["diagnostics"]
    assert not [d for d in found if "<redacted>" in d["message"]], found
    for key, value in keys.items():
        assert any(key in d["message"] and value.strip("[") in d["message"] for d in found), (key, found)


def test_the_launchers_lint_report_and_dry_run_redact_a_secret_the_schema_rejects(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(recipe(f"overrides:\n  trainer.nnodes: 1\nenv:\n  HF_TOKEN: [{SECRET}]\n  API_KEY: {SECRET}\n"))
    for fmt in ("json", "text"):
        proc = launch(tmp_path, path, "--dry-run", "--device", "gpu", "--format", fmt)
        assert proc.returncode == 1 and SECRET not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    dry = json.loads(launch(tmp_path, path, "--dry-run", "--device", "gpu", "--format", "json").stdout)
    (rf001,) = [d for d in dry["lint"]["diagnostics"] if d["code"] == "RF001"]
    assert rf001["message"].startswith("env.HF_TOKEN: <redacted> is not of type")
    proc = launch(tmp_path, path, "--device", "gpu")  # refused: the run directory keeps the lint report
    assert proc.returncode == 1 and SECRET not in proc.stdout + proc.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert "<redacted>" in (run_dir / "lint.json").read_text()
    assert not [f.name for f in run_dir.iterdir() if SECRET in f.read_text()]


def test_file_names_and_file_text_cannot_inject_lines_or_escape_sequences(tmp_path):
    evil = "evil\n\x1b]0;pwn\x07\u202ex.yaml"  # a newline, an OSC window title ended by BEL, a bidi override
    (tmp_path / evil).write_text(recipe("overrides:\n  trainer.nnodes: [2\n"))  # RF002 at the evil name
    (tmp_path / "run_qwen_fsdp.sh").write_text(  # override values with a fake finding and escape sequences (SL009)
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n"
        "  $'+trainer.foo=a\\nfake.yaml:1:1: RF001 pwned\\x1b[2J' \\\n  $'+trainer.bar=b\\x1b]0;t\\x07\\u2028'\n"
    )
    out = tmp_path / "report.txt"
    reports = {}
    for name, args in {
        "text": [],
        "concise": ["--format", "concise"],
        "color": ["--color", "always", "--format", "concise"],
        "github": ["--format", "github"],
        "file": ["-o", str(out), "--format", "concise"],
    }.items():
        proc = sapo_lint(str(tmp_path), "--no-shellcheck", *args)
        assert proc.returncode == 1, proc.stderr
        reports[name] = out.read_text() if name == "file" else proc.stdout
    for name, report in reports.items():
        shown = SGR.sub("", report) if name == "color" else report
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]", shown), name
        lines = shown.splitlines()
        newline = "%0A" if name == "github" else "\\n"  # GitHub's own escape of a newline, then ours
        finding = (r"::(error|warning|notice) file=" if name == "github" else "") + re.escape(str(tmp_path))
        # a finding's lines: its headline, the source excerpt (`N | ...`), its `= note:`-style lines, a blank line
        shown_lines = r"\s*\d* \||  = |$" if name == "text" else "(?!)"
        assert all(
            re.match(finding, line) or re.match(shown_lines, line) or line.startswith(("Found ", "Linted against "))
            for line in lines
        ), (name, lines)
        assert any(f"evil{newline}\\x1b]0;pwn\\x07\\u202ex.yaml" in line for line in lines), name
        assert any(f"a{newline}fake.yaml:1:1: RF001 pwned\\x1b[2J" in line for line in lines), name
    for fmt in ("json", "sarif"):  # JSON escapes what it holds
        proc = sapo_lint(str(tmp_path), "--no-shellcheck", "--format", fmt)
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", proc.stdout) and json.loads(proc.stdout)
    named = tmp_path / "[bold]\x1b]0;pwn\x07.yaml"  # explain: no rich markup, no escape sequence from the name
    named.write_text((REPO / "recipes" / "smoke-qwen3-0.6b-sapo.yaml").read_text())
    proc = sapo_lint("explain", str(named), "--variant", "DEVICE=gpu")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "[bold]\\x1b]0;pwn\\x07.yaml" in proc.stdout.splitlines()[0]


def test_a_line_shown_whole_has_every_secret_value_redacted():
    """The text format shows the source line of a finding: a secret written in it in any of a recipe's or a
    script's forms is redacted, ordinary keys that merely contain `token` or `key` are not."""
    from sapo_toolkit.linter.core.redaction import redact_line

    for line, kept in [
        ("  +trainer.api_key: hf_abc", "  +trainer.api_key: "),
        ('env: {HF_TOKEN: "a b", A: 1}', "env: {HF_TOKEN: "),
        ("env: {WANDB_API_KEY: [a, b], B: 2}", "env: {WANDB_API_KEY: "),
        ('{"db_password": "pw"}', '{"db_password": '),
        ("python3 x.py --hf_token abc --n 3", "python3 x.py --hf_token "),
        ("export HF_TOKEN=abc", "export HF_TOKEN="),
    ]:
        redacted = redact_line(line)
        assert redacted.startswith(kept + "<redacted>") and "abc" not in redacted and "pw" not in redacted[12:]
    for ordinary in ("  actor_rollout_ref.actor.ppo_max_token_len_per_gpu: 24k", "data.prompt_key=prompt"):
        assert redact_line(ordinary) == ordinary
