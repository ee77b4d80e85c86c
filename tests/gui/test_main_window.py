"""The main window's panels, actions, shortcuts, icons and status bar."""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QToolBar, QWidget

from taskloom.engine import TaskState

S = TaskState
ACTIONS = {
    "addTask": "Ctrl+N",
    "cancelTask": "Ctrl+K",
    "retryTask": "Ctrl+R",
    "runNow": "Ctrl+Return",
    "pauseAll": "Ctrl+P",
    "openWorkflow": "Ctrl+O",
    "saveWorkflow": "Ctrl+S",
    "retryFailed": "Ctrl+Shift+R",
    "editTask": "Ctrl+E",
    "removeTask": "Ctrl+Del",
    "clearTask": "F5",
    "clearDownstream": "Shift+F5",
    "relayout": "Ctrl+L",
    "deleteEdge": "Del",
    "exportGraph": "",
}


def fail():
    raise RuntimeError("disk full")


def noop():
    return None


def test_panels_and_actions_carry_their_object_names(make_window, manual_scheduler):
    window = make_window(manual_scheduler)
    for name in ("graphView", "timeline", "inspector", "eventLog"):
        widget = window.findChild(QWidget, name)
        assert widget is not None, name
        assert widget.isVisible(), name
    for name, shortcut in ACTIONS.items():
        action = window.findChild(QAction, name)
        assert action is not None, name
        assert action.shortcut().toString() == shortcut, name
        assert not action.icon().isNull(), name


def test_toolbar_icons_render_from_svg(make_window, manual_scheduler):
    window = make_window(manual_scheduler)
    toolbar = window.findChild(QToolBar, "mainToolbar")
    action = window.findChild(QAction, "addTask")
    assert action in toolbar.actions()
    image = action.icon().pixmap(24, 24).toImage()
    assert not image.isNull()
    painted = {image.pixelColor(x, y).alpha() > 0 for x in range(24) for y in range(24)}
    assert painted == {True, False}  # some pixels drawn, some transparent: the SVG rendered


def test_status_bar_counts_states(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="ok")
    manual_scheduler.add(fail, name="bad")
    manual_scheduler.schedule_after(noop, 60, name="later")
    window = make_window(manual_scheduler)
    manual_scheduler.start()  # with SyncExecutor the due tasks run before start() returns
    counts = window.status_panel.counts

    qtbot.waitUntil(lambda: "1 succeeded" in counts.text(), timeout=3000)
    assert "1 failed" in counts.text()
    assert "1 scheduled" in counts.text()
    assert "workers 0/2 busy" in window.status_panel.busy.text()


def test_window_leaves_nothing_behind(qtbot, make_window, manual_scheduler, monkeypatch):
    # The scheduler is the caller's and outlives the window: closing the window must end
    # its subscriptions to the engine and stop every timer it runs.
    listening: list = []
    subscribe, unsubscribe = manual_scheduler.subscribe, manual_scheduler.unsubscribe

    def counted_subscribe(callback):
        undo = subscribe(callback)
        listening.append(callback)

        def counted_undo():
            if callback in listening:
                listening.remove(callback)
            undo()

        return counted_undo

    def counted_unsubscribe(callback):
        if callback in listening:
            listening.remove(callback)
        unsubscribe(callback)

    monkeypatch.setattr(manual_scheduler, "subscribe", counted_subscribe)
    monkeypatch.setattr(manual_scheduler, "unsubscribe", counted_unsubscribe)
    manual_scheduler.add(noop, name="a")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: window.bridge.tasks["a"].state is S.SUCCEEDED)
    assert listening  # the window follows the engine while open

    window.close()
    QApplication.processEvents()
    assert not window.isVisible()
    assert listening == []  # no callback of the closed window is left in the engine
    running = [timer for timer in window.findChildren(QTimer) if timer.isActive()]
    assert not running, [(timer.parent(), timer.interval()) for timer in running]
    manual_scheduler.add(noop, name="b")  # the engine goes on without it
    manual_scheduler.clock.advance(1.0)
    assert manual_scheduler.task("b").state is S.SUCCEEDED


def test_zoom_shortcuts_and_find(qtbot, make_window, manual_scheduler):
    for i in range(12):
        manual_scheduler.add(noop, name=f"step_{i}", deps=[f"step_{i - 1}"] if i else [])
    window = make_window(manual_scheduler)
    view = window.graph_view
    view.resetTransform()
    qtbot.keyClick(view, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert view.zoom_level() > 1.0
    qtbot.keyClick(view, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(view, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    assert view.zoom_level() < 1.0
    qtbot.keyClick(view, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)
    visible = view.mapToScene(view.viewport().rect()).boundingRect()
    assert visible.adjusted(-2, -2, 2, 2).contains(window.scene.itemsBoundingRect())
    qtbot.keyClick(view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert window.search.hasFocus()
    qtbot.keyClicks(window.search, "step_7")
    qtbot.keyClick(window.search, Qt.Key.Key_Return)
    assert view.selected() == ["step_7"]
    assert window.inspector.title.text() == "step_7"


def test_status_bar_never_shows_more_running_than_workers(qtbot, make_window, tmp_path):
    # Tasks whose code returned wait for their success to reach the disk: RUNNING in the
    # engine, shown as "recording" beside the tasks whose code runs (held commits).
    from taskloom.engine import Call, Scheduler
    from taskloom.engine.store import SQLiteStore

    store = SQLiteStore(tmp_path / "run.db")
    scheduler = Scheduler(workers=2, store=store)
    window = make_window(scheduler)
    counts, busy = window.status_panel.counts, window.status_panel.busy
    held = threading.Event()
    commit = store._commit_batch

    def commit_when_let_go(*args):  # the writer thread: successes cannot be recorded
        held.wait(10)
        commit(*args)

    store._commit_batch = commit_when_let_go
    try:
        for i in range(5):
            scheduler.add(Call("tests.engine._store_jobs:noop"), name=f"n{i}")
        scheduler.start()
        qtbot.waitUntil(lambda: "5 recording" in counts.text(), timeout=5000)
        assert "0 running" in counts.text()
        assert "workers 0/2 busy" in busy.text()
        assert "recording" in counts.toolTip()
        # The inspector's run summary says it the same way (it said "5 running").
        summary = window.inspector.summary.summary_html()
        assert "5</td><td>&nbsp;recording" in summary and "5</td><td>&nbsp;running" not in summary
    finally:
        held.set()
    qtbot.waitUntil(lambda: "5 succeeded" in counts.text(), timeout=5000)
    assert "recording" not in counts.text() and "running" not in counts.text()
    scheduler.shutdown()
    store.close()
