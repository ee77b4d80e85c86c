"""The suite writes only into temporary folders (tests/conftest.py): its HOME and
XDG folders are temporary, and a write elsewhere is caught and fails the test."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

import pytest

TEMP = os.path.realpath(tempfile.gettempdir())


@pytest.fixture
def guard(request):
    """tests/conftest.py as pytest loaded it (its list of writes outside)."""
    here = Path(__file__).with_name("conftest.py")
    return next(
        plugin
        for plugin in request.config.pluginmanager.get_plugins()
        if getattr(plugin, "__file__", None) == str(here)
    )


def test_home_and_the_xdg_folders_are_temporary():
    from platformdirs import user_cache_path, user_config_path, user_data_path, user_state_path

    folders = [
        Path.home(),
        user_cache_path(),
        user_config_path(),
        user_data_path(),
        user_state_path(),
    ]
    folders += [Path(os.environ[name]) for name in ("XDG_CACHE_HOME", "XDG_RUNTIME_DIR")]
    assert all(os.path.realpath(folder).startswith(TEMP + os.sep) for folder in folders), folders


def test_a_write_outside_the_temp_folders_is_caught(guard, tmp_path):
    readme = guard.REPO / "README.md"
    before = readme.stat()
    with open(readme, "a"):  # opened for writing; nothing written
        pass
    with pytest.raises(sqlite3.OperationalError):  # a folder that is not there: no file made
        sqlite3.connect(guard.REPO / "no-such-folder" / "run.db")
    (tmp_path / "fine.txt").write_text("inside")  # a temp folder: not counted
    caught, guard._outside[:] = list(guard._outside), []  # or this test would fail
    assert caught == [f"open: {readme}", f"sqlite3.connect: {guard.REPO}/no-such-folder/run.db"]
    assert readme.stat().st_mtime_ns == before.st_mtime_ns
