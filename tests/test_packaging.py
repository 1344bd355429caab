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
    from sapo_toolkit.linter import __version__

    for cli, name in (("sapo_toolkit.linter", "sapo-lint"), ("sapo_toolkit.launcher", "sapo-launch")):
        said = subprocess.run([str(python), "-m", cli, "--version"], capture_output=True, text=True, cwd=tmp_path)
        assert said.stdout.strip() == f"{name}, version {__version__}", said.stdout + said.stderr


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """The sdist and the wheel `python -m build` makes, as a release would."""
    pytest.importorskip("build", reason="the `build` package is not installed (pip install '.[test]')")
    out = tmp_path_factory.mktemp("release")
    proc = subprocess.run([sys.executable, "-m", "build", "-o", str(out), str(REPO)], capture_output=True, text=True)
    if proc.returncode != 0 and "Could not find a version" in proc.stdout + proc.stderr:
        pytest.skip("the build backend (setuptools) cannot be fetched from the registry")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-2000:]
    return out


@pytest.mark.slow  # a real `python -m build` of the sdist and the wheel
def test_the_release_holds_the_data_and_not_the_tests(release):
    (sdist,) = release.glob("sapo_toolkit-*.tar.gz")
    (wheel,) = release.glob("sapo_toolkit-*.whl")
    import tarfile

    in_sdist = {name.split("/", 1)[1] for name in tarfile.open(sdist).getnames() if "/" in name}
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    version = sdist.name.removeprefix("sapo_toolkit-").removesuffix(".tar.gz")
    from sapo_toolkit.linter import __version__

    assert version == __version__ and wheel.name.startswith(f"sapo_toolkit-{__version__}-")  # one place
    for data in ("verl/0.9.1.json", "verl-docs/0.9.1.json", "recipe.schema.json", "devices.json", "facts.json"):
        assert f"sapo_toolkit/schemas/{data}" in in_wheel and f"schemas/{data}" in in_sdist
    assert "sapo_toolkit/linter/rules/sp001_sapo_tau_nested.py" in in_wheel  # a rule and its docs
    assert {"README.md", "CHANGELOG.md", "docs/rules.md"} <= in_sdist
    assert not any(name.startswith(("tests/", "bench/")) for name in in_sdist)
    assert not any("/tests/" in name or "fixtures" in name for name in in_wheel)


@pytest.mark.slow
def test_twine_accepts_the_release(release):
    pytest.importorskip("twine", reason="twine is not installed (pip install '.[test]')")
    proc = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, sorted(release.iterdir()))],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and proc.stdout.count("PASSED") == 2, proc.stdout + proc.stderr
