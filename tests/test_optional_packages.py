"""Without the optional packages, through the console scripts: an import blocker (a `sitecustomize` on PYTHONPATH)
makes matplotlib, scipy or ray import as if they were not installed. A report still has its verdicts and JSON, a
launch still judges its gates, a trend gate says in its verdict that it needs scipy, `explain --plot` and a Ray
launch are one line and exit 2, and every piece of advice names a command that works for how this copy of
sapo-toolkit was installed (linter/core/extras.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sapo_toolkit.launcher.gates import EXIT_GATES_FAILED
from sapo_toolkit.linter.core.extras import install_command, install_command_for

from . import synthetic_log
from .helpers import REPO, SCRIPTS
from .test_launch_local import fake_recipe

FLOOR_GATE = {"metric": "perf/throughput", "min": 100}
RISING_GATE = {"metric": "critic/rewards/mean", "trend": "rising"}
FLOOR = "perf/throughput >= 100 (every, after 0)"
RISING = "critic/rewards/mean rising (after 0)"

BLOCKER = """\
import sys


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
"""


def without(tmp_path: Path, *packages: str) -> dict:
    """An environment in which `packages` cannot be imported."""
    site = tmp_path / "blocker"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=set(packages)))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}


def console(tool: str, *args, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SCRIPTS / tool), *map(str, args)], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


# -- report and gates ------------------------------------------------------------------------------------------------


def test_a_report_without_matplotlib_has_its_verdicts_and_says_why_it_has_no_plots(tmp_path):
    run_dir = synthetic_log.write_run_dir(tmp_path / "run", [FLOOR_GATE, RISING_GATE])
    env = without(tmp_path, "matplotlib")
    proc = console("sapo-launch", "report", run_dir, "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    skipped = f"plots skipped: they need matplotlib ({install_command('report')})"
    assert proc.stderr == f"sapo-launch: {skipped}\n"
    gates = json.loads(proc.stdout)["gates"]
    assert (gates[FLOOR]["passed"], gates[RISING]["passed"]) == (False, True)  # scipy decides the trend
    text = (run_dir / "report.md").read_text()
    assert "| `perf/throughput >= 100 (every, after 0)` | **failed** |" in text and skipped in text
    assert not list(run_dir.glob("*.png"))
    failing = console("sapo-launch", "report", run_dir, "--fail-on-gates", env=env)
    assert failing.returncode == EXIT_GATES_FAILED, failing.stderr
    assert "(last step 100, 0 plots)" in failing.stdout


def test_a_trend_gate_without_scipy_says_so_in_its_verdict(tmp_path):
    run_dir = synthetic_log.write_run_dir(tmp_path / "run", [FLOOR_GATE, RISING_GATE])
    proc = console("sapo-launch", "report", run_dir, "--format", "json", env=without(tmp_path, "matplotlib", "scipy"))
    assert proc.returncode == 0, proc.stderr
    gates = json.loads(proc.stdout)["gates"]
    assert (gates[RISING]["passed"], gates[RISING]["status"], gates[RISING]["needs"]) == (False, "not judged", "scipy")
    assert gates[RISING]["reason"] == f"not decided: trends need scipy ({install_command('report')})"
    assert gates[FLOOR]["reason"].startswith("1 of 100 readings break perf/throughput >= 100")  # bounds need neither


def test_a_launch_judges_its_gates_without_matplotlib_or_scipy(tmp_path):
    """A trend this machine cannot judge is `not judged`: the run that succeeded is no worse for it, so
    --fail-on-gates keeps its 0 and the closing line says it succeeded."""
    recipe = fake_recipe(tmp_path, {"FAKE_STEPS": 10})
    recipe.write_text(recipe.read_text() + f"gates: {json.dumps([FLOOR_GATE, RISING_GATE])}\n")
    runs = tmp_path / "runs"
    env = without(tmp_path, "matplotlib", "scipy")
    proc = console("sapo-launch", recipe, "--runs-dir", runs, "--fail-on-gates", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    (run_dir,) = runs.iterdir()
    assert proc.stderr.splitlines()[-1] == f"sapo-launch: succeeded; run directory {run_dir}"
    assert f"sapo-launch: gate not judged: {RISING}: not decided: trends need scipy" in proc.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    gates = summary["gates"]
    assert gates[FLOOR]["passed"] is True and summary["exit_code"] == 0
    assert gates[RISING]["status"] == "not judged"
    assert gates[RISING]["reason"] == f"not decided: trends need scipy ({install_command('report')})"
    assert console("sapo-launch", "report", run_dir, "--fail-on-gates", env=env).returncode == 0


# -- explain --plot and Ray ------------------------------------------------------------------------------------------


def test_explain_plot_without_matplotlib_is_one_line_and_exit_2(tmp_path):
    out = tmp_path / "plan.png"
    proc = console(
        "sapo-lint",
        "explain",
        REPO / "recipes" / "smoke-qwen3-0.6b-sapo.yaml",
        "--plot",
        out,
        env=without(tmp_path, "matplotlib"),
    )
    assert proc.returncode == 2
    assert proc.stderr == f"sapo-lint: --plot needs matplotlib: {install_command('plot')}\n"
    assert not out.exists()


def test_a_ray_launch_without_ray_is_one_line_and_exit_2(tmp_path):
    recipe = fake_recipe(tmp_path, {})
    proc = console(
        "sapo-launch",
        recipe,
        "--runs-dir",
        tmp_path / "runs",
        "--address",
        "http://127.0.0.1:9",
        env=without(tmp_path, "ray"),
    )
    assert proc.returncode == 2
    said = f"sapo-launch: running on a Ray cluster needs Ray's job client: {install_command('ray')}"
    assert proc.stderr.splitlines()[-1] == said and "Traceback" not in proc.stderr


# -- the install command ---------------------------------------------------------------------------------------------

REQUIRES = [
    "click>=8.1",
    "tomli>=2.0; python_version < '3.11'",
    'matplotlib>=3.7; extra == "plot"',
    'matplotlib>=3.7; extra == "report"',
    'scipy>=1.9; extra == "report"',
    'ray[default]>=2.9.3; extra == "ray"',
]


def direct_url(url: str, **info) -> str:
    return json.dumps({"url": url, **info})


@pytest.mark.parametrize(
    "how,extra,expected",
    [
        ("index", "report", "pip install 'sapo-toolkit[report]'"),
        ("editable checkout", "report", "pip install -e '{checkout}[report]'"),
        ("checkout", "plot", "pip install '{checkout}[plot]'"),
        ("checkout since removed", "report", "pip install 'matplotlib>=3.7' 'scipy>=1.9'"),
        ("wheel file", "ray", "pip install 'ray[default]>=2.9.3'"),
        ("vcs", "report", "pip install 'matplotlib>=3.7' 'scipy>=1.9'"),
    ],
)
def test_the_install_command_follows_how_the_copy_was_installed(tmp_path, how, extra, expected):
    checkout = tmp_path / "my checkout"  # a space: the path is quoted for a shell
    checkout.mkdir()
    record = {
        "index": None,
        "editable checkout": direct_url(checkout.as_uri(), dir_info={"editable": True}),
        "checkout": direct_url(checkout.as_uri(), dir_info={}),
        "checkout since removed": direct_url((tmp_path / "gone").as_uri(), dir_info={}),
        "wheel file": direct_url((tmp_path / "sapo_toolkit-0.1.0-py3-none-any.whl").as_uri(), archive_info={}),
        "vcs": direct_url("https://example.org/sapo-toolkit.git", vcs_info={"vcs": "git", "commit_id": "0" * 40}),
    }[how]
    assert install_command_for(extra, record, REQUIRES) == expected.format(checkout=checkout)


def test_the_installed_copy_is_found_behind_a_checkouts_egg_info(tmp_path, monkeypatch):
    """Run from a checkout, setuptools' `sapo_toolkit.egg-info` in the current directory comes first on sys.path
    and has no direct_url.json; the advice is still that of the installed copy."""
    installed = install_command("report")
    egg_info = tmp_path / "sapo_toolkit.egg-info"
    egg_info.mkdir()
    (egg_info / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: sapo-toolkit\nVersion: 0.1.0\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert install_command("report") == installed
