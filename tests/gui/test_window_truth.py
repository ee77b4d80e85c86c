"""Issue 24: the window tells the truth (edits without side effects, what runs, the
forecast, paused, small windows and the keyboard)."""

from __future__ import annotations

import sys

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from taskloom.app import WorkflowSession
from taskloom.engine import TaskState
from taskloom.engine.workflow import load

S = TaskState
CTRL = Qt.KeyboardModifier.ControlModifier


def _flow(tmp_path, name="flow", extra="") -> object:
    source = tmp_path / f"{name}.toml"
    quick = f'["{sys.executable}", "-c", "pass"]'
    source.write_text(
        f'[workflow]\nname = "{name}"\nworkers = 2\n\n'
        f"[tasks.load]\ncommand = {quick}\n\n"
        f'[tasks.report]\ncommand = {quick}\ndeps = ["load"]\n\n'
        f'[tasks.cleanup]\ncommand = {quick}\ndeps = ["report"]\ntrigger_rule = "all_done"\n'
        + extra,
        encoding="utf-8",
    )
    return source


def test_undo_of_a_remove_puts_the_finished_task_back_as_it_was_and_runs_nothing(
    qtbot, tmp_path, settings
):
    session = WorkflowSession(
        load(_flow(tmp_path)), settings, db_path=tmp_path / "run.db", log_dir=tmp_path / "logs"
    )
    try:
        window = session.window
        qtbot.addWidget(window)
        window.resize(1400, 900)
        window.show()
        with qtbot.waitActive(window):
            window.activateWindow()
        scheduler = session.scheduler
        qtbot.waitUntil(
            lambda: all(t.state is S.SUCCEEDED for t in scheduler.tasks()), timeout=20000
        )
        qtbot.waitUntil(lambda: window.bridge.tasks["cleanup"].state is S.SUCCEEDED)
        before = scheduler.attempts("report")
        window.select_tasks(["report"])
        qtbot.keyClick(window.graph_view, Qt.Key.Key_Delete)
        # A finished task is not removed without asking.
        box = window.remove_question
        assert isinstance(box, QMessageBox) and box.isVisible()
        assert "report" in {t.id for t in scheduler.tasks()}
        remove = next(b for b in box.buttons() if b.text() == "Remove")
        qtbot.mouseClick(remove, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: "report" not in window.scene.nodes)
        assert "report" not in {t.id for t in scheduler.tasks()}
        with qtbot.waitActive(window):  # the question had the focus (offscreen: kept)
            window.activateWindow()
        qtbot.keyClick(window.graph_view, Qt.Key.Key_Z, CTRL)
        report = scheduler.task("report")
        assert report.state is S.SUCCEEDED  # as it was: nothing runs
        assert scheduler.attempts("report") == before  # its attempt is still there
        assert scheduler.task("cleanup").deps == ("report",)  # the edge to its downstream
        qtbot.waitUntil(lambda: window.scene.graph.has_edge("report", "cleanup"))
        qtbot.waitUntil(lambda: window.bridge.tasks.get("report") is not None)
        assert window.bridge.tasks["report"].state is S.SUCCEEDED
        assert all(len(scheduler.attempts(t.id)) == 1 for t in scheduler.tasks())
        assert not window.document.kept_edges  # the engine holds the edge itself
    finally:
        session.close()


def test_cancel_in_the_remove_question_keeps_the_task(qtbot, make_window, manual_scheduler):
    manual_scheduler.add("os:getcwd", name="a")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(
        lambda: window.bridge.tasks.get("a") and window.bridge.tasks["a"].state is S.SUCCEEDED
    )
    window.select_tasks(["a"])
    window.act_remove.trigger()
    box = window.remove_question
    assert box is not None
    qtbot.mouseClick(box.button(QMessageBox.StandardButton.Cancel), Qt.MouseButton.LeftButton)
    assert manual_scheduler.task("a").state is S.SUCCEEDED
    assert window.controller.undo_stack.count() == 0


def test_a_discarded_edit_never_comes_back_after_reopening(qtbot, tmp_path, settings):
    """Edit a failed task's command, Apply, close without saving (Discard), reopen: the
    run is the file's (the engine runs the file's command), not dirty, and Save writes
    the file's command."""
    from dataclasses import replace

    from taskloom.engine.command import Command

    source = tmp_path / "fix.toml"
    fails = f'["{sys.executable}", "-c", "raise SystemExit(3)"]'
    text = (
        '[workflow]\nname = "fix"\nworkers = 2\n\n'
        f"[tasks.fetch]\ncommand = {fails}\n\n"
        f'[tasks.later]\ncommand = ["{sys.executable}", "-c", "pass"]\nafter = "1h"\n'
    )
    source.write_text(text, encoding="utf-8")
    paths = dict(db_path=tmp_path / "run.db", log_dir=tmp_path / "logs")
    session = WorkflowSession(load(source), settings, **paths)
    try:
        qtbot.addWidget(session.window)
        scheduler = session.scheduler
        qtbot.waitUntil(lambda: scheduler.task("fetch").state is S.FAILED, timeout=20000)
        old = scheduler.definition("fetch")
        edited = Command([sys.executable, "-c", "print('edited')"], cwd=old.action.cwd)
        assert session.window.controller.edit_task("fetch", replace(old, action=edited)) is None
        assert session.window.document.dirty
    finally:
        session.close()  # Discard: the file is unchanged
    assert source.read_text(encoding="utf-8") == text

    session = WorkflowSession(load(source), settings, start=False, **paths)
    try:
        qtbot.addWidget(session.window)
        window = session.window
        argv = session.scheduler.definition("fetch").action.argv
        assert argv[-1] == "raise SystemExit(3)"  # the file's command, not the edit
        assert not window.document.dirty
        assert window.save_workflow()
        assert load(source).tasks["fetch"].action.argv[-1] == "raise SystemExit(3)"
    finally:
        session.close()


def test_paused_is_visible_on_the_graph_and_drawn_with_a_glyph_the_font_has(
    qtbot, make_window, manual_scheduler
):
    from PySide6.QtGui import QFontMetrics

    from taskloom.gui.graph.items import NodeItem

    manual_scheduler.start()
    window = make_window(manual_scheduler)
    assert not window.pause_bar.isVisible()
    qtbot.keyClick(window.graph_view, Qt.Key.Key_P, CTRL)  # Pause all
    qtbot.waitUntil(lambda: manual_scheduler.paused)
    assert window.pause_bar.isVisible()
    assert "nothing starts" in window.pause_bar.label.text()
    ran = []
    manual_scheduler.add(lambda: ran.append(1), name="job")
    qtbot.waitUntil(lambda: "job" in window.scene.nodes)
    qtbot.waitUntil(lambda: window.bridge.tasks["job"].state is S.READY)
    node = window.scene.nodes["job"]
    qtbot.waitUntil(lambda: "paused" in node.status_text.text())
    metrics = QFontMetrics(NodeItem._status_font)
    text = node.status_text.text()
    assert all(metrics.inFontUcs4(ord(ch)) for ch in text), text  # no empty boxes
    status = window.status_panel.paused.text()
    assert all(QFontMetrics(window.font()).inFontUcs4(ord(ch)) for ch in status if ord(ch) > 127)
    qtbot.mouseClick(window.pause_bar.button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: ran == [1])
    assert not manual_scheduler.paused and not window.pause_bar.isVisible()
