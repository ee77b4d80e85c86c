"""Every action of a window watching a run another process owns (a real ``taskloom
run`` owner, a real window offscreen): Run again goes to the owner (it raised in a Qt
slot), the actions say the engine's reasons when they cannot act, no SQLite call
happens on the GUI thread, and a Cancel clicked while another connection holds the
store's write lock leaves the window responsive and lands once the lock is gone."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from PySide6.QtWidgets import QApplication

from taskloom.engine import Action, TaskState
from taskloom.engine.run_api import Refused
from taskloom.watching import WatchSession
from tests.gui.test_history_reader import TickGaps
from tests.gui.test_watch import owners, sessions, wait_started  # noqa: F401 (fixtures)

S = TaskState

FLOW = """
[workflow]
name = "flow"
[tasks.a]
command = ["true"]
[tasks.b]
command = ["true"]
deps = ["a"]
[tasks.slow]
command = ["sleep", "60"]
[tasks.hourly]
command = ["true"]
every = "1h"
"""


class SqliteThreads:
    """Every SQLite connection made from now on records the thread of each call on it
    (``record`` turns the recording on and off)."""

    def __init__(self, monkeypatch):
        self.calls: list[tuple[str, str]] = []  # (thread name, what)
        self.record = False
        threads = self

        class Recorded(sqlite3.Connection):
            def _note(self, what: str) -> None:
                if threads.record:
                    threads.calls.append((threading.current_thread().name, what))

            def execute(self, *args, **kwargs):
                self._note(str(args[0])[:60] if args else "execute")
                return super().execute(*args, **kwargs)

            def executemany(self, *args, **kwargs):
                self._note("executemany")
                return super().executemany(*args, **kwargs)

            def executescript(self, *args, **kwargs):
                self._note("executescript")
                return super().executescript(*args, **kwargs)

            def cursor(self, *args, **kwargs):
                self._note("cursor")
                return super().cursor(*args, **kwargs)

            def commit(self):
                self._note("commit")
                return super().commit()

        real = sqlite3.connect

        def connect(*args, **kwargs):
            if threads.record:
                threads.calls.append((threading.current_thread().name, "connect"))
            kwargs.setdefault("factory", Recorded)
            return real(*args, **kwargs)

        monkeypatch.setattr(sqlite3, "connect", connect)

    def on_gui_thread(self) -> list[tuple[str, str]]:
        gui = threading.main_thread().name
        return [call for call in self.calls if call[0] == gui]


def watch(qtbot, tmp_path, owners, sessions):  # noqa: F811
    path = tmp_path / "flow.toml"
    path.write_text(FLOW)
    db = tmp_path / "run.db"
    owner = owners(path, db)
    wait_started(qtbot, owner)
    qtbot.waitUntil(lambda: "succeeded" in owner.events("b"), timeout=30000)
    qtbot.waitUntil(lambda: "running" in owner.events("slow"), timeout=30000)
    s = sessions(db)
    assert s.open(path)
    session = s.current
    assert isinstance(session, WatchSession)
    window = session.window
    qtbot.waitUntil(lambda: window.bridge.tasks["slow"].state is S.RUNNING)
    return owner, session, window


def answer_run_again(qtbot, window) -> None:
    qtbot.waitUntil(lambda: window.clear_question.box is not None, timeout=5000)
    box = window.clear_question.box
    [run] = [b for b in box.buttons() if b.text() == "Run again"]
    run.click()


def test_run_again_and_every_action_of_a_watching_window(
    qtbot,
    tmp_path,
    owners,  # noqa: F811
    sessions,  # noqa: F811
):
    owner, session, window = watch(qtbot, tmp_path, owners, sessions)
    run = session.scheduler

    # Why not, in the engine's words, on each action that cannot act.
    window.select_tasks(["slow"])
    assert not window.act_clear.isEnabled()
    assert window.act_clear.toolTip() == "slow is running: only a finished task can run again"
    assert window.act_retry.toolTip() == (
        "slow is running: only a failed, skipped or cancelled task can be retried"
    )
    window.select_tasks(["hourly"])
    qtbot.waitUntil(lambda: window.bridge.tasks["hourly"].state is S.SCHEDULED)
    window.select_tasks(["hourly"])
    assert window.act_clear.toolTip() == "hourly is recurring: use Run now for an extra run"
    assert run.why_not("hourly", Action.CLEAR) == window.act_clear.toolTip()
    # Graph edits: refused with the reason (a typed refusal), never AttributeError.
    assert "only watches" in (run.why_not("a", Action.EDIT) or "")
    with pytest.raises(Refused, match="only watches"):
        run.update("a", run.definition("a"))

    # Task > Run again (with downstream): the owner runs a and b again.
    window.select_tasks(["a"])
    assert window.act_clear_downstream.isEnabled()
    window.act_clear_downstream.trigger()
    answer_run_again(qtbot, window)
    qtbot.waitUntil(lambda: owner.events("b").count("succeeded") == 2, timeout=10000)
    assert owner.events("a").count("succeeded") == 2
    assert "Running again: a, b" in window.statusBar().currentMessage() or any(
        "cleared" in line for line in owner.lines
    )
    # Task > Run again of b alone.
    qtbot.waitUntil(lambda: window.bridge.tasks["b"].state is S.SUCCEEDED, timeout=10000)
    window.select_tasks(["b"])
    qtbot.waitUntil(window.act_clear.isEnabled, timeout=5000)
    window.act_clear.trigger()
    answer_run_again(qtbot, window)
    qtbot.waitUntil(lambda: owner.events("b").count("succeeded") == 3, timeout=10000)
    assert owner.events("a").count("succeeded") == 2

    # Run now, pause, resume, cancel, retry: each reaches the owner.
    window.select_tasks(["hourly"])
    qtbot.waitUntil(window.act_run_now.isEnabled, timeout=5000)
    window.act_run_now.trigger()
    qtbot.waitUntil(lambda: "succeeded" in owner.events("hourly"), timeout=10000)
    window.act_pause_task.trigger()
    qtbot.waitUntil(lambda: window.bridge.tasks["hourly"].paused, timeout=5000)
    window.act_pause_task.trigger()
    qtbot.waitUntil(lambda: not window.bridge.tasks["hourly"].paused, timeout=5000)
    window.select_tasks(["slow"])
    window.act_cancel.trigger()
    qtbot.waitUntil(lambda: window.bridge.tasks["slow"].state is S.CANCELLED, timeout=10000)
    window.select_tasks(["slow"])
    qtbot.waitUntil(window.act_retry.isEnabled, timeout=5000)
    window.act_retry.trigger()
    qtbot.waitUntil(lambda: owner.events("slow").count("running") == 2, timeout=10000)


def test_a_watching_window_makes_no_sqlite_call_on_the_gui_thread(
    qtbot,
    monkeypatch,
    tmp_path,
    owners,  # noqa: F811
    sessions,  # noqa: F811
):
    threads = SqliteThreads(monkeypatch)
    owner, session, window = watch(qtbot, tmp_path, owners, sessions)
    window.resize(1200, 800)
    window.show()
    qtbot.waitExposed(window)
    threads.record = True
    # Everything that reads attempts or sends a request, on a real window.
    for tid in ("a", "b", "slow"):
        window.select_tasks([tid])
        qtbot.waitUntil(lambda tid=tid: len(window.bridge.attempts(tid)) == 1, timeout=5000)
    qtbot.waitUntil(lambda: window.inspector.attempt_list.topLevelItemCount() == 1)
    window.select_tasks(["slow"])
    window.act_cancel.trigger()
    qtbot.waitUntil(lambda: window.bridge.tasks["slow"].state is S.CANCELLED, timeout=10000)
    window.select_tasks(["a"])
    window.act_clear.trigger()
    answer_run_again(qtbot, window)
    qtbot.waitUntil(lambda: owner.events("a").count("succeeded") == 2, timeout=10000)
    qtbot.waitUntil(lambda: len(window.bridge.attempts("a")) == 2, timeout=5000)
    window._refresh_status()
    QApplication.processEvents()
    threads.record = False
    assert any(name == "taskloom-watch" for name, _ in threads.calls)  # the recording works
    assert threads.on_gui_thread() == []
    window.hide()


def test_a_cancel_while_the_store_is_locked_keeps_the_window_responsive_and_lands(
    qtbot,
    tmp_path,
    owners,  # noqa: F811
    sessions,  # noqa: F811
):
    owner, session, window = watch(qtbot, tmp_path, owners, sessions)
    blocker = sqlite3.connect(tmp_path / "run.db", isolation_level=None, timeout=10)
    try:
        blocker.execute("BEGIN IMMEDIATE")  # the store's write lock, held
        gaps = TickGaps()
        clicked = time.monotonic()
        window.select_tasks(["slow"])
        window.act_cancel.trigger()
        qtbot.wait(1500)  # the lock stays held this long
        assert session.scheduler.awaiting_answers  # queued, not lost, not refused
        assert "cancelled" not in owner.events("slow")
        blocker.execute("COMMIT")
        qtbot.waitUntil(lambda: "cancelled" in owner.events("slow"), timeout=10000)
        qtbot.waitUntil(lambda: window.bridge.tasks["slow"].state is S.CANCELLED, timeout=10000)
        assert gaps.stop() < 0.5  # the click blocked the event loop 2.0 s before
        assert time.monotonic() - clicked >= 1.5
        assert "Not sent" not in window.statusBar().currentMessage()
    finally:
        blocker.close()
