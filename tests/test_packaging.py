"""The distribution installs one namespace, `sapo_toolkit`, and works from a wheel as well as from the editable
checkout: schema data is found inside the installed package, not beside the source folders."""

import site
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from .helpers import REPO

pytestmark = pytest.mark.network  # pip fetches the build backend into an isolated build environment


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 and any(
        m in proc.stderr
        for m in ("Could not find a version", "NewConnectionError", "Network is unreachable", "Temporary failure")
    ):
        pytest.skip(f"pip cannot fetch the build backend (setuptools) from the registry: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (found,) = out.glob("sapo_toolkit-*.whl")
    return found


def test_wheel_holds_only_the_namespace(wheel):
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert tops == {"sapo_toolkit", wheel.name.split("-py")[0] + ".dist-info"}
    names = zipfile.ZipFile(wheel).namelist()
    assert "sapo_toolkit/schemas/devices.json" in names and "sapo_toolkit/linter/cli/__init__.py" in names
    assert not any(n.startswith("sapo_toolkit/__init__") for n in names)  # a namespace, open to nobody's overwrite


def test_wheel_installed_in_a_fresh_venv_lints_from_its_own_data(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    with zipfile.ZipFile(wheel) as zf:  # what pip does for a pure wheel, without reaching the registry
        zf.extractall(purelib)
    # The dependencies (click, PyYAML, ...) from this interpreter's site-packages, appended after the venv's own:
    # a plain path entry does not run the editable install's finder, so `sapo_toolkit` resolves to the wheel only.
    deps = [p for p in {sysconfig.get_path("purelib"), *site.getsitepackages()} if Path(p).is_dir()]
    (purelib / "deps.pth").write_text("\n".join(deps) + "\n")
    probe = (
        "import sapo_toolkit.linter.schema as s, sapo_toolkit.linter.cli as c; print(s.SCHEMA_DIR); print(c.__file__)"
    )
    where = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert all(line.startswith(str(purelib)) for line in where.stdout.split()), where.stdout
    lint = subprocess.run(
        [str(python), "-m", "sapo_toolkit.linter", str(REPO / "recipes")], capture_output=True, text=True, cwd=tmp_path
    )
    assert lint.returncode == 0 and "All checks passed (3 files)" in lint.stdout, lint.stdout + lint.stderr
