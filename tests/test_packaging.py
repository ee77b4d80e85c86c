"""The installed wheel, as a user gets it: built from this tree, installed (not
editable) into a fresh venv, and run from an unrelated folder that has an
``engine/`` package of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds a wheel or an sdist (a minute)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory, source_tree):
    """A fresh venv with the wheel installed; its dependencies come from the test
    environment through a .pth file (so no download), the wheel alone is new."""
    work = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps",
         "-q", "-w", str(work / "dist"), str(source_tree)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    (wheel,) = (work / "dist").glob("taskloom-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True,
        ).strip()
    )
    (site / "test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "-q", str(wheel)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr
    elsewhere = work / "elsewhere"
    (elsewhere / "engine").mkdir(parents=True)  # a user's own package named engine
    (elsewhere / "engine" / "__init__.py").write_text("raise ImportError('not ours')\n")
    return venv, site, elsewhere


def run(venv: Path, cwd: Path, *args, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TASKLOOM_OWNER")}
    env.update(QT_QPA_PLATFORM="offscreen", XDG_DATA_HOME=str(cwd / "data"), **kw)
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_only_taskloom_is_installed_at_the_top(installed):
    _venv, site, _ = installed
    ours = {p.name for p in site.iterdir()} - {"test-deps.pth", "__pycache__"}
    ours = {name for name in ours if not name.startswith(("_distutils", "distutils", "pip"))}
    ours -= {name for name in ours if name.startswith(("setuptools", "pkg_resources"))}
    assert {name for name in ours if not name.endswith(".dist-info")} == {"taskloom"}


def test_examples_validate_from_an_unrelated_folder_with_its_own_engine(installed):
    venv, _, elsewhere = installed
    for name in ("etl", "flaky", "recurring"):
        code = f"import taskloom; print(taskloom.example_path({name!r}))"
        path = run(venv, elsewhere, venv / "bin" / "python", "-c", code).stdout.strip()
        assert "site-packages" in path
        result = run(venv, elsewhere, venv / "bin" / "taskloom", "validate", path)
        assert result.returncode == 0, result.stdout + result.stderr
    module = run(venv, elsewhere, venv / "bin" / "python", "-m", "taskloom", "--version")
    assert module.returncode == 0 and module.stdout.startswith("taskloom "), module.stderr


def test_every_toolbar_icon_loads_and_a_screenshot_works(installed):
    venv, _, elsewhere = installed
    check = (
        "from PySide6.QtWidgets import QApplication, QToolBar\n"
        "app = QApplication([])\n"
        "from taskloom.engine import Scheduler\n"
        "from taskloom.gui.main_window import MainWindow\n"
        "w = MainWindow(Scheduler())\n"
        "actions = [a for bar in w.findChildren(QToolBar) for a in bar.actions()"
        " if a.text() and not a.isSeparator()]\n"
        "missing = [a.text() for a in actions if a.icon().isNull()]\n"
        "print(len(actions), missing)\n"
        "w.scheduler.shutdown() if hasattr(w, 'scheduler') else None\n"
    )
    result = run(venv, elsewhere, venv / "bin" / "python", "-c", check)
    assert result.returncode == 0, result.stderr
    count, missing = result.stdout.strip().split(" ", 1)
    assert int(count) >= 5 and missing == "[]", result.stdout
    picture = elsewhere / "shot.png"
    shot = run(
        venv, elsewhere, venv / "bin" / "taskloom", "--screenshot", picture, "--quit-after", "0.5"
    )
    assert shot.returncode == 0, shot.stderr
    assert picture.stat().st_size > 10_000


def test_layering_contracts_hold_on_the_installed_package(installed):
    """import-linter's contracts (pyproject) on the wheel's layout, where taskloom.engine
    and taskloom.gui really sit inside taskloom/."""
    venv, _, elsewhere = installed
    lint = "import sys; from importlinter.cli import lint_imports_command as c; c()"
    result = run(venv, elsewhere, venv / "bin" / "python", "-c", lint, ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 5 kept, 0 broken." in result.stdout, result.stdout
