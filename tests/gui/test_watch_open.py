"""Opening a workflow another process runs (a real ``taskloom run`` owner, a real
window offscreen): from File > Open to the window's first picture the GUI thread
makes no SQLite call, and a window opened while the owner holds the store's write
lock keeps its event loop turning."""

from __future__ import annotations

import sqlite3
import threading
import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from taskloom.engine import TaskState
from taskloom.engine.workflow import load
from taskloom.sessions import WorkflowSession, store_paths
from taskloom.watching import WatchSession
from tests.gui.test_history_reader import TickGaps
from tests.gui.test_watch import owners, sessions, wait_started  # noqa: F401 (fixtures)
from tests.gui.test_watched_window_actions import FLOW, SqliteThreads

S = TaskState
HELD = 2.0  # seconds another connection holds the store's write lock


def started_owner(qtbot, tmp_path, owners, db=None):  # noqa: F811
    path = tmp_path / "flow.toml"
    path.write_text(FLOW)
    if db is None:
        db = tmp_path / "run.db"
    owner = owners(path, db)
    wait_started(qtbot, owner)
    qtbot.waitUntil(lambda: "running" in owner.events("slow"), timeout=30000)
    return path, db, owner


def test_opening_a_watched_run_makes_no_sqlite_call_on_the_gui_thread(
    qtbot,
    monkeypatch,
    tmp_path,
    owners,  # noqa: F811
    sessions,  # noqa: F811
):
    path, db, owner = started_owner(qtbot, tmp_path, owners)
    threads = SqliteThreads(monkeypatch)
    s = sessions(db)
    threads.record = True
    assert s.open(path)  # what `taskloom FILE` and File > Open do
    qtbot.waitUntil(lambda: isinstance(s.current, WatchSession), timeout=30000)
    window = s.current.window
    qtbot.waitExposed(window)
    qtbot.waitUntil(lambda: window.bridge.tasks["slow"].state is S.RUNNING, timeout=10000)
    window.grab()  # the first picture
    # The Runs view and the inspector's attempts: read off the GUI thread as well.
    window.runs_dock.show()
    view = window.runs_view
    qtbot.waitUntil(lambda: view.grid is not None and len(view.grid.runs) == 1, timeout=10000)
    window.select_tasks(["a"])
    qtbot.waitUntil(lambda: window.inspector.attempt_list.topLevelItemCount() == 1)
    window._refresh_status()
    threads.record = False
    assert any(name == "taskloom-watch" for name, _ in threads.calls)  # the recording works
    assert threads.on_gui_thread() == []


def test_a_window_opened_while_the_owners_write_lock_is_held_stays_responsive(
    qtbot,
    tmp_path,
    owners,  # noqa: F811
    sessions,  # noqa: F811
):
    path, db, owner = started_owner(qtbot, tmp_path, owners)
    held, release = threading.Event(), threading.Event()

    def hold_the_write_lock() -> None:  # the owner cannot publish its run meanwhile
        blocker = sqlite3.connect(db, isolation_level=None, timeout=10)
        try:
            blocker.execute("BEGIN IMMEDIATE")
            held.set()
            release.wait(HELD)
            blocker.execute("COMMIT")
        finally:
            blocker.close()

    holder = threading.Thread(target=hold_the_write_lock)
    holder.start()
    try:
        assert held.wait(10)
        s = sessions(db)
        loading_seen: list[bool] = []
        QTimer.singleShot(1000, lambda: loading_seen.append(loading_window_shown()))
        gaps = TickGaps()
        began = time.monotonic()
        assert s.open(path)
        ended = time.monotonic()
        gaps.timer.stop()
        ticks = [began, *gaps.ticks, ended]  # no tick at all: blocked throughout
        longest = max(b - a for a, b in zip(ticks, ticks[1:], strict=False))
    finally:
        release.set()
        holder.join(10)
    assert isinstance(s.current, WatchSession)
    assert ended - began >= HELD - 0.5  # the open waited for the lock (5 s at most before)
    assert longest < 0.5  # and the event loop kept turning meanwhile
    assert loading_seen == [True]  # a window said what it waits for
    window = s.current.window
    qtbot.waitUntil(lambda: window.bridge.tasks["slow"].state is S.RUNNING, timeout=10000)


def loading_window_shown() -> bool:
    return any(
        w.objectName() == "loadingWindow" and w.isVisible() for w in QApplication.topLevelWidgets()
    )


def test_taking_a_watched_run_over_makes_no_sqlite_call_on_the_gui_thread(
    qtbot,
    monkeypatch,
    tmp_path,
    owners,  # noqa: F811
    sessions,  # noqa: F811
):
    path, db, owner = started_owner(qtbot, tmp_path, owners)
    s = sessions(db)
    assert s.open(path)
    watch = s.current
    qtbot.waitUntil(lambda: watch.window.bridge.tasks["slow"].state is S.RUNNING, timeout=10000)
    owner.process.kill()  # no goodbye: the lock going away is what tells
    owner.process.wait(10)
    qtbot.waitUntil(watch.status.take_over.isVisible, timeout=10000)
    threads = SqliteThreads(monkeypatch)
    threads.record = True
    watch.status.take_over.click()  # the run opens here as its owner
    session = s.current
    assert isinstance(session, WorkflowSession) and session is not watch
    mine = session.window
    qtbot.waitExposed(mine)
    qtbot.waitUntil(lambda: mine.bridge.tasks["slow"].state is S.RUNNING, timeout=10000)
    mine.grab()  # the first picture
    threads.record = False
    assert any(name == "taskloom-attach" for name, _ in threads.calls)  # opened there
    assert threads.on_gui_thread() == []


def test_closing_the_loading_window_abandons_the_open_and_closes_the_watched_run(
    qtbot,
    tmp_path,
    owners,  # noqa: F811
    sessions,  # noqa: F811
):
    (tmp_path / "flow.toml").write_text(FLOW)
    db, _ = store_paths(load(tmp_path / "flow.toml"), data_dir=tmp_path / "data")
    path, db, owner = started_owner(qtbot, tmp_path, owners, db)  # where File > Open looks
    local = tmp_path / "local.toml"
    local.write_text('[workflow]\nname = "local"\n[tasks.t]\ncommand = ["true"]\n')
    s = sessions(tmp_path / "local.db")
    assert s.open(local)
    first = s.current
    blocker = sqlite3.connect(db, isolation_level=None, timeout=10)
    try:
        blocker.execute("BEGIN IMMEDIATE")  # the owner cannot publish: the attach waits

        def close_it() -> None:
            [loading] = [
                w for w in QApplication.topLevelWidgets() if w.objectName() == "loadingWindow"
            ]
            loading.close()  # what the person does

        QTimer.singleShot(1000, close_it)
        assert not s.open(path)
        assert s.current is first  # nothing opened, the first window stays
        # Abandoned, not refused after ATTACH_TIMEOUT (which says "Cannot open ...").
        assert "Cannot open" not in first.window.statusBar().currentMessage()
    finally:
        blocker.execute("COMMIT")
        blocker.close()
    # The run attached meanwhile is closed: no watcher thread is left.
    qtbot.waitUntil(
        lambda: not any(t.name == "taskloom-watch" for t in threading.enumerate()), timeout=10000
    )
