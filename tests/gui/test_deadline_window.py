"""The window shows the run's deadline (``[workflow] timeout``) in the header above the
graph, owning the run or watching it, and says when the run failed by passing it."""

from __future__ import annotations

import time

import pytest

from taskloom.app import WorkflowSession
from taskloom.engine import TaskInfo, TaskState
from taskloom.engine.workflow import load
from taskloom.gui.run_header import clock_text, header_text
from taskloom.watching import WatchSession

S = TaskState

TWO_HOURS = """
[workflow]
name = "deadline"
timeout = "2h"

[tasks.wait]
command = ["sh", "-c", "sleep 30"]
"""


def _info(tid: str, state: TaskState) -> TaskInfo:
    return TaskInfo(tid, tid, state, (), (), 0, 1, None, False, False, None)


def test_the_header_names_the_deadline_until_the_run_is_over():
    at = time.time() + 3600
    running = header_text(
        3, {"a": _info("a", S.RUNNING)}, started=True, paused=False,
        started_at=time.time(), finished_at=None, deadline=at,
    )  # fmt: skip
    assert f"deadline {clock_text(at)}" in running.split(" · ")
    not_started = header_text(
        3, {"a": _info("a", S.PENDING)}, started=False, paused=False,
        started_at=None, finished_at=None, deadline=at,
    )  # fmt: skip
    assert "deadline" not in not_started  # it counts from the start
    failed = header_text(
        3, {"a": _info("a", S.CANCELLED), "b": _info("b", S.FAILED)}, started=True,
        paused=False, started_at=at - 7200, finished_at=at + 1, deadline=at,
    )  # fmt: skip
    assert failed.split(" · ")[-2:] == ["deadline passed", failed.split(" · ")[-1]]
    assert failed.startswith("Run 3 · failed")


def test_clock_text_names_the_day_when_it_is_not_today():
    now = time.mktime((2026, 12, 2, 10, 0, 0, 0, 0, -1))
    assert clock_text(now + 3600, now) == "11:00"
    assert clock_text(now + 86400, now) == "Thu 10:00"


def test_an_owning_window_shows_its_runs_deadline(qtbot, tmp_path, settings):
    path = tmp_path / "deadline.toml"
    path.write_text(TWO_HOURS)
    began = time.time()
    session = WorkflowSession(
        load(path), settings, db_path=tmp_path / "s.db", log_dir=tmp_path / "logs", start=True
    )
    try:
        window = session.window
        assert window.deadline_at is not None
        assert began + 7200 - 1 <= window.deadline_at <= time.time() + 7200
        qtbot.waitUntil(lambda: window.run_header.full_text.startswith("Run 1 · running"))
        assert f"deadline {clock_text(window.deadline_at)}" in window.run_header.full_text
    finally:
        session.close()


@pytest.mark.slow  # a real second process owns the run
def test_a_watching_window_shows_the_owners_deadline(qtbot, tmp_path, settings):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    path = tmp_path / "deadline.toml"
    path.write_text(TWO_HOURS)
    db = tmp_path / "run.db"
    began = time.time()
    owner = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(path), "--db", str(db)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root), "XDG_DATA_HOME": str(tmp_path / "xdg")},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    session = None
    try:
        assert owner.stdout is not None
        for line in owner.stdout:  # its first line: the run has started
            if line.startswith("running "):
                break
        session = WatchSession(load(path), settings, db_path=db)
        window = session.window
        assert window.deadline_at is not None
        assert began + 7200 - 1 <= window.deadline_at <= time.time() + 7200
        qtbot.waitUntil(lambda: "deadline " in window.run_header.full_text, timeout=20000)
    finally:
        if session is not None:
            session.close()
        owner.terminate()
        owner.wait(30)
