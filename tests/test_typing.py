"""mypy runs clean on engine/ (configured in pyproject.toml, [tool.mypy])."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(600)
def test_mypy_finds_no_errors_in_the_engine(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues found" in result.stdout, result.stdout


def test_mypy_is_configured_for_the_engine_without_blanket_ignores():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["files"] == ["engine"]
    assert config["check_untyped_defs"] is True
    assert "ignore_errors" not in config
    for override in config.get("overrides", []):
        assert "ignore_errors" not in override, override


def staged_package(folder: Path) -> Path:
    """The installed layout (taskloom, taskloom.engine, taskloom.gui) as links under
    ``folder``: the editable install maps the package names at import time, which
    mypy cannot follow."""
    package = folder / "taskloom"
    package.mkdir(parents=True)
    for module in (ROOT / "taskloom").glob("*.py"):
        (package / module.name).symlink_to(module)
    (package / "engine").symlink_to(ROOT / "engine")
    (package / "gui").symlink_to(ROOT / "gui")
    return folder


@pytest.mark.timeout(600)
def test_scheduler_and_watched_run_implement_the_whole_run_interface(tmp_path):
    """tests/engine/run_api_types.py assigns both classes to ``RunInterface``: mypy
    refuses a class that lacks a member or has one of another type."""
    stage = staged_package(tmp_path / "stage")
    (stage / "run_api_types.py").symlink_to(ROOT / "tests" / "engine" / "run_api_types.py")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--follow-imports=silent",
            "-m",
            "run_api_types",
        ],
        cwd=stage,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues found" in result.stdout, result.stdout
