"""The window and run ownership: it never starts a second run of a workflow another
process runs, and a signal to its process stops it like closing it would.

Real processes (``python -m taskloom``, offscreen), real stores, real signals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox

from taskloom.app import Sessions
from taskloom.engine.store import SQLiteStore, StoreBusy
from tests._processes import group_exists

ROOT = Path(__file__).resolve().parents[2]


def env(tmp_path) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
    }


def announcing_workflow(tmp_path, name="demo") -> tuple[Path, Path]:
    """A workflow whose one task writes its process group to a FIFO, then sleeps."""
    fifo = tmp_path / "announce"
    os.mkfifo(fifo)
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'[workflow]\nname = "{name}"\n'
        "[tasks.long]\n"
        f'command = ["sh", "-c", "echo $$ > \'{fifo}\'; sleep 60"]\n'
        "[tasks.after]\n"
        'command = ["true"]\ndeps = ["long"]\n'
    )
    return path, fifo


def stored_outcomes(db: Path, task: str) -> list[str]:
    reader = SQLiteStore.reader(db)
    try:
        return [row["outcome"] for row in reader.attempts(task)][::-1]
    finally:
        reader.close()


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGQUIT", "SIGINT"])
def test_a_stop_signal_to_the_window_ends_its_commands_and_leaves_the_run_resumable(tmp_path, sig):
    path, fifo = announcing_workflow(tmp_path)
    db = tmp_path / "run.db"
    window = subprocess.Popen(
        [sys.executable, "-m", "taskloom", str(path), "--db", str(db), "--start"],
        cwd=ROOT,
        env=env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with open(fifo) as stream:  # the window's engine runs the command
        group = int(stream.read())
    window.send_signal(getattr(signal, sig))
    out, err = window.communicate(timeout=30)
    assert window.returncode == 0, out + err
    assert "Traceback" not in err
    assert not group_exists(group)
    assert stored_outcomes(db, "long") == ["interrupted"]


@pytest.mark.slow
def test_a_window_on_a_workflow_that_runs_elsewhere_watches_it_and_starts_nothing(tmp_path):
    path, fifo = announcing_workflow(tmp_path)
    db = tmp_path / "run.db"
    owner = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(path), "--db", str(db)],
        cwd=ROOT,
        env=env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with open(fifo) as stream:
            group = int(stream.read())
        window = subprocess.run(
            [sys.executable, "-m", "taskloom", str(path), "--db", str(db), "--quit-after", "1"],
            cwd=ROOT,
            env=env(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
        # It watched the owner's run (tests/gui/test_watch.py shows what it sees) and
        # closing it stopped nothing.
        assert window.returncode == 0, window.stdout + window.stderr
        assert "Traceback" not in window.stderr
        assert group_exists(group)  # the owner's command was left alone
        assert owner.poll() is None
        assert stored_outcomes(db, "long") == ["running"]  # and its run untouched
    finally:
        owner.send_signal(signal.SIGINT)
        owner.wait(30)


@pytest.mark.slow
def test_file_open_of_a_workflow_owned_elsewhere_says_who_and_keeps_the_window(
    qtbot, tmp_path, settings
):
    from taskloom.app import store_paths
    from taskloom.engine.workflow import load

    paths = []
    for name in ("first", "other"):
        path = tmp_path / f"{name}.toml"
        path.write_text(
            f'[workflow]\nname = "{name}"\n[tasks.t]\ncommand = ["true"]\nafter = "1h"\n'
        )
        paths.append(path)
    first, other = paths
    sessions = Sessions(settings, data_dir=tmp_path / "data")
    try:
        sessions.open(first)
        current = sessions.current
        # Another process owns the other workflow's store: stand in for it with a
        # second owner in this process (the lock is the same flock, refused the same).
        other_db, _ = store_paths(load(other), data_dir=tmp_path / "data")
        owner = SQLiteStore(other_db)
        try:
            assert sessions.open(other) is False
            assert sessions.current is current  # the open window and its run stay
            message = current.window.statusBar().currentMessage()
            assert f"Cannot open {other}" in message and "is in use by" in message
            box = current.window.findChild(QMessageBox, "busy_message")
            assert box is not None and box.isVisible()
            assert box.text().startswith("other is already running in pytest")
            box.close()
        finally:
            owner.close()
        with pytest.raises(StoreBusy):  # the open window's own store is still its own
            SQLiteStore(current.db_path)
    finally:
        sessions.close()
