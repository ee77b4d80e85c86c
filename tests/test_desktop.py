"""``taskloom install-desktop``: the launcher entry, icon and AppStream metadata under
the user's XDG data dir (a temp dir here), as a real process."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import taskloom
from taskloom.desktop import DESKTOP_ID, desktop_entry, exec_quote

ROOT = Path(__file__).resolve().parents[1]
METAINFO = ROOT / "resources" / "desktop" / f"{DESKTOP_ID}.metainfo.xml"


def taskloom_cli(data_home, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(data_home)}
    return subprocess.run(
        [sys.executable, "-m", "taskloom", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def read_entry(path: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive
    parser.read_string(path.read_text(encoding="utf-8"))
    return dict(parser["Desktop Entry"])


def test_install_desktop_writes_an_entry_an_icon_and_metadata_that_agree(tmp_path):
    data = tmp_path / "share"
    result = taskloom_cli(data, "install-desktop")
    assert result.returncode == 0, result.stderr
    entry_path = data / "applications" / f"{DESKTOP_ID}.desktop"
    icon = data / "icons" / "hicolor" / "scalable" / "apps" / f"{DESKTOP_ID}.svg"
    metainfo = data / "metainfo" / f"{DESKTOP_ID}.metainfo.xml"
    for path in (entry_path, icon, metainfo):
        assert path.is_file()
        assert f"wrote {path}" in result.stdout
    entry = read_entry(entry_path)
    assert entry["Type"] == "Application" and entry["Name"] == "Taskloom"
    assert entry["Exec"] == f"{exec_quote(sys.executable)} -m taskloom %f"
    assert entry["Icon"] == icon.stem == DESKTOP_ID
    assert entry["Terminal"] == "false"
    assert icon.read_bytes().startswith(b"<svg")
    root = ET.parse(metainfo).getroot()
    assert root.findtext("id") == DESKTOP_ID
    assert root.findtext("launchable") == entry_path.name
    assert root.find("releases/release").get("version") == taskloom.__version__
    assert not list(data.rglob("*.part"))  # written whole, then moved in place

    again = taskloom_cli(data, "install-desktop")  # replaces, does not fail
    assert again.returncode == 0
    removed = taskloom_cli(data, "install-desktop", "--uninstall")
    assert removed.returncode == 0
    assert not entry_path.exists() and not icon.exists() and not metainfo.exists()
    nothing = taskloom_cli(data, "install-desktop", "--uninstall")
    assert nothing.returncode == 0 and "nothing to remove" in nothing.stdout


def test_a_data_dir_that_cannot_be_written_is_exit_2_with_the_reason(tmp_path):
    blocker = tmp_path / "share"
    blocker.write_text("a file, not a folder")
    result = taskloom_cli(blocker, "install-desktop")
    assert result.returncode == 2
    assert result.stderr.startswith("taskloom install-desktop: ")
    assert str(blocker) in result.stderr


def test_exec_arguments_are_quoted_as_the_desktop_entry_spec_says():
    assert exec_quote("/usr/bin/python3") == "/usr/bin/python3"
    assert exec_quote("/opt/my python/bin/python3") == '"/opt/my python/bin/python3"'
    assert exec_quote('/odd"$/p') == '"/odd\\\\"\\\\$/p"'
    assert exec_quote("/50%/p") == "/50%%/p"
    line = next(x for x in desktop_entry("/opt/my python/py").splitlines() if x.startswith("Exec"))
    assert line == 'Exec="/opt/my python/py" -m taskloom %f'


@pytest.mark.skipif(shutil.which("appstreamcli") is None, reason="appstreamcli not installed")
def test_the_appstream_metadata_validates():
    result = subprocess.run(
        ["appstreamcli", "validate", "--no-net", str(METAINFO)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
