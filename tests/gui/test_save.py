"""Saving writes the workflow with the dependencies as edited in the window."""

from __future__ import annotations

import sys

import pytest

from taskloom.app import WorkflowSession
from taskloom.engine.workflow import load


def test_save_keeps_edges_added_in_the_window(qtbot, tmp_path, settings):
    source = tmp_path / "flow.toml"
    source.write_text(
        '[workflow]\nname = "flow"\nworkers = 2\n\n'
        f'[tasks.a]\ncommand = ["{sys.executable}", "-c", "pass"]\nafter = "1h"\n\n'
        f'[tasks.b]\ncommand = ["{sys.executable}", "-c", "pass"]\nafter = "1h"\n',
        encoding="utf-8",
    )
    session = WorkflowSession(load(source), settings)
    try:
        qtbot.addWidget(session.window)
        assert session.window.controller.connect_tasks("a", "b")
        qtbot.waitUntil(lambda: session.window.bridge.tasks["b"].deps == ("a",), timeout=3000)
        target = tmp_path / "saved.toml"
        assert session.window.save_workflow(str(target))
        assert load(target).tasks["b"].deps == ("a",)
        assert "Saved" in session.window.statusBar().currentMessage()
    finally:
        session.close()


def test_open_replaces_the_engine_and_the_window(qtbot, tmp_path, settings):
    from PySide6.QtWidgets import QApplication

    from taskloom.app import Sessions

    first = tmp_path / "one.toml"
    second = tmp_path / "two.toml"
    for path, task in ((first, "alpha"), (second, "beta")):
        path.write_text(
            f'[workflow]\nname = "{path.stem}"\nworkers = 1\n\n'
            f'[tasks.{task}]\ncommand = ["{sys.executable}", "-c", "pass"]\nafter = "1h"\n',
            encoding="utf-8",
        )
    sessions = Sessions(settings, data_dir=tmp_path / "data")
    try:
        sessions.open(first)
        old = sessions.current
        assert set(old.window.bridge.tasks) == {"alpha"}
        old.window.openRequested.emit(str(second))  # what File > Open does after the dialog
        assert sessions.current is not old
        assert set(sessions.current.window.bridge.tasks) == {"beta"}
        assert "two" in sessions.current.window.windowTitle()
        with pytest.raises(RuntimeError):  # the old engine was shut down
            old.scheduler.schedule_after("os:getcwd", 1)
        bad = tmp_path / "bad.toml"
        bad.write_text("[workflow\\n", encoding="utf-8")
        assert not sessions.open(bad)  # refused, explained, current session kept
        assert "⚠" in sessions.current.window.statusBar().currentMessage()
        QApplication.processEvents()
    finally:
        sessions.close()


def test_save_writes_dialog_tasks_dragged_positions_and_drops_removed(qtbot, tmp_path, make_window):
    from PySide6.QtCore import QPointF, Qt
    from PySide6.QtWidgets import QDialogButtonBox

    from taskloom.engine import Scheduler
    from tests.gui.test_editing import centre_of, drag

    source = tmp_path / "flow.toml"
    source.write_text(
        '[workflow]\nname = "flow"\nworkers = 2\n\n'
        f'[tasks.a]\ncommand = ["{sys.executable}", "-c", "pass"]\nafter = "1h"\npriority = 2\n\n'
        f'[tasks.b]\ncommand = ["{sys.executable}", "-c", "pass"]\nafter = "1h"\ndeps = ["a"]\n'
        f"pos = [500.0, 300.0]\n\n"
        f'[tasks.gone]\ncall = "os:getcwd"\nafter = "1h"\n',
        encoding="utf-8",
    )
    workflow = load(source)
    scheduler = Scheduler(workers=2)
    workflow.schedule_into(scheduler)
    try:
        window = make_window(scheduler)
        window.attach_workflow(workflow)
        assert window.scene.nodes["b"].pos() == QPointF(500, 300)  # the file's position

        window.act_add.trigger()  # a task added through the dialog
        dialog = window.add_dialog
        dialog.name.setText("report")
        dialog.target.setText(f"{sys.executable} -c 'print(1)'")
        dialog.schedule.setCurrentIndex(dialog.schedule.findData("every"))
        dialog.interval.setText("5m")
        dialog.priority.setValue(4)
        for i in range(dialog.deps.count()):
            if dialog.deps.item(i).text() == "b":
                dialog.deps.item(i).setCheckState(Qt.CheckState.Checked)
        dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
        qtbot.waitUntil(lambda: "report" in window.scene.nodes, timeout=3000)

        window.graph_view.resetTransform()
        window.graph_view.centerOn(window.scene.nodes["a"])
        start = centre_of(window, "a")
        drag(window, start, start + QPointF(-40, 90))  # real mouse events
        moved = window.scene.nodes["a"].pos()
        window.controller.remove_tasks(["gone"])

        target = tmp_path / "saved.toml"
        assert window.save_workflow(str(target))
        saved = load(target)
        assert list(saved.tasks) == ["a", "b", "report"]
        report = saved.tasks["report"]
        assert report.action.argv == [sys.executable, "-c", "print(1)"]
        assert report.every == 300 and report.priority == 4 and report.deps == ("b",)
        assert saved.positions["a"] == pytest.approx((moved.x(), moved.y()), abs=0.1)
        assert saved.positions["b"] == (500.0, 300.0)
        assert "report" not in saved.positions  # placed by the layout: stays unpinned
        assert saved.tasks["a"].priority == 2 and saved.tasks["b"].deps == ("a",)
        assert "Saved" in window.statusBar().currentMessage()
        assert not list(tmp_path.glob(".saved.toml.*"))  # atomic: no temporary left over
    finally:
        scheduler.shutdown(wait=True)


def test_save_explains_a_task_that_has_no_file_form(qtbot, tmp_path, make_window, manual_scheduler):
    from taskloom.engine import TaskDefinition
    from taskloom.gui.task_spec import make_call

    window = make_window(manual_scheduler)
    assert window.controller.add_task(TaskDefinition(id="pyobj", action=print, after=60))
    assert window.controller.add_task(TaskDefinition(id="kept", action=make_call("os:getcwd")))
    target = tmp_path / "out.toml"
    assert window.save_workflow(str(target))
    assert "left out pyobj" in window.statusBar().currentMessage()
    assert list(load(target).tasks) == ["kept"]
