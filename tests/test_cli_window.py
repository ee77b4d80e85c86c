"""``taskloom`` without a subcommand, as a real process: the start page, --start,
--example, and a clear refusal when there is no display."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def env(tmp_path):
    """Offscreen, with the person's config and data folders in the test's temp dir."""
    base = {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    return {
        **base,  # no session bus: no real desktop notifications from these windows
        "PYTHONPATH": str(ROOT),
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }


def taskloom(env, *args, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "taskloom", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def quick_workflow(tmp_path: Path) -> Path:
    path = tmp_path / "quick.toml"
    path.write_text(
        textwrap.dedent(
            f"""
            [workflow]
            name = "quick"

            [tasks.hello]
            command = ["{sys.executable}", "-c", "print('hello')"]
            """
        )
    )
    return path


@pytest.mark.slow
def test_opening_a_file_runs_nothing_until_start(env, tmp_path):
    path = quick_workflow(tmp_path)
    db = tmp_path / "quick.db"
    opened = taskloom(env, path, "--db", db, "--quit-after", "0.5")
    assert opened.returncode == 0, opened.stderr
    history = taskloom(env, "history", path, "--db", db)
    assert history.returncode == 0
    assert "no runs of quick yet" in history.stdout  # shown, not run

    started = taskloom(env, path, "--db", db, "--start", "--quit-after", "3")
    assert started.returncode == 0, started.stderr
    history = taskloom(env, "history", path, "--db", db)
    assert "hello" in history.stdout and "no runs" not in history.stdout


def test_a_bare_launch_shows_the_start_page(env, tmp_path):
    picture = tmp_path / "start.png"
    result = taskloom(env, "--screenshot", picture, "--quit-after", "0.3")
    assert result.returncode == 0, result.stderr
    assert picture.stat().st_size > 5000
    # It opened nothing, so it ran nothing: no store was made.
    assert not (tmp_path / "data").exists() or not list((tmp_path / "data").rglob("*.db"))
    assert not list(Path(env["XDG_CONFIG_HOME"]).rglob("*.toml"))


def test_example_and_file_together_are_a_usage_error(env, tmp_path):
    result = taskloom(env, quick_workflow(tmp_path), "--example", "etl")
    assert result.returncode == 2
    assert "not both" in result.stderr
    result = taskloom(env, "--start")
    assert result.returncode == 2 and "--start" in result.stderr
    result = taskloom(env, "--example", "nope")
    assert result.returncode == 2 and "invalid choice" in result.stderr


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="DISPLAY is X11/Wayland's")
def test_without_a_display_one_line_says_to_use_run_and_exits_2(tmp_path):
    bare = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    for args in ((), ("--example", "etl")):
        result = taskloom(bare, *args)
        assert result.returncode == 2, result.stderr  # not -6 (SIGABRT)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert "no display" in lines[0] and "taskloom run FILE" in lines[0]
        assert "xcb" not in result.stderr
    # A display named but gone (X forwarding dropped, an Xvfb that exited) is no
    # display either: Qt would abort with its xcb message.
    for gone in ({"DISPLAY": ":97"}, {"WAYLAND_DISPLAY": "wayland-97"}):
        result = taskloom({**bare, **gone, "XDG_RUNTIME_DIR": str(tmp_path)})
        assert result.returncode == 2, result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert "no display" in line and next(iter(gone.values())) in line, line
        assert "xcb" not in result.stderr
    # A screenshot needs no display: it falls back to the offscreen platform.
    picture = tmp_path / "etl.png"
    result = taskloom(bare, "--example", "etl", "--screenshot", picture, "--quit-after", "0.5")
    assert result.returncode == 0, result.stderr
    assert picture.exists()
