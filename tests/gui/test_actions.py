"""Toolbar actions call the engine's public methods on the selected tasks."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QContextMenuEvent
from PySide6.QtWidgets import QApplication

from taskloom.engine import TaskState

S = TaskState
runs: list[str] = []


def noop():
    runs.append("noop")


def fail():
    raise RuntimeError("flaky network")


def wait_state(qtbot, window, tid, state):
    qtbot.waitUntil(lambda: window.bridge.tasks[tid].state is state, timeout=3000)


def test_cancel_selected_scheduled_task(qtbot, make_window, manual_scheduler):
    manual_scheduler.schedule_after(noop, 60, name="later")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    assert not window.act_cancel.isEnabled()  # nothing selected
    window.select_tasks(["later"])
    assert window.act_cancel.isEnabled()
    window.act_cancel.trigger()
    assert manual_scheduler.task("later").state is S.CANCELLED
    wait_state(qtbot, window, "later", S.CANCELLED)
    assert not window.act_cancel.isEnabled() and window.act_retry.isEnabled()


def test_retry_failed_task_runs_it_again(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(fail, name="flaky")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    wait_state(qtbot, window, "flaky", S.FAILED)
    window.select_tasks(["flaky"])
    qtbot.keyClick(window.graph_view, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    manual_scheduler.clock.advance(0)
    assert manual_scheduler.task("flaky").attempt == 2
    qtbot.waitUntil(lambda: window.bridge.tasks["flaky"].attempt == 2, timeout=3000)


def test_run_now_runs_a_task_that_is_not_due(qtbot, make_window, manual_scheduler):
    runs.clear()
    manual_scheduler.schedule_after(noop, 3600, name="hourly_report")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    window.select_tasks(["hourly_report"])
    assert window.act_run_now.isEnabled()
    window.act_run_now.trigger()
    manual_scheduler.clock.advance(0)
    assert manual_scheduler.task("hourly_report").state is S.SUCCEEDED
    assert runs == ["noop"]
    wait_state(qtbot, window, "hourly_report", S.SUCCEEDED)


def test_pause_and_resume_selected_task(qtbot, make_window, manual_scheduler):
    manual_scheduler.schedule_after(noop, 10, name="job")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    window.select_tasks(["job"])
    window.act_pause_task.trigger()
    assert manual_scheduler.task("job").paused
    qtbot.waitUntil(lambda: "paused" in window.scene.nodes["job"].status_text.text(), timeout=3000)
    manual_scheduler.clock.advance(20)
    assert manual_scheduler.task("job").state is not S.SUCCEEDED  # held while paused
    window.act_pause_task.trigger()
    assert not manual_scheduler.task("job").paused
    manual_scheduler.clock.advance(0)
    assert manual_scheduler.task("job").state is S.SUCCEEDED


def test_pause_all_holds_the_dispatcher(qtbot, make_window, manual_scheduler):
    runs.clear()
    manual_scheduler.schedule_after(noop, 5, name="job")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    window.act_pause_all.trigger()
    assert window.act_pause_all.isChecked()
    manual_scheduler.clock.advance(10)
    assert runs == [] and manual_scheduler.task("job").state is not S.SUCCEEDED
    window.act_pause_all.trigger()
    manual_scheduler.clock.advance(0)
    assert manual_scheduler.task("job").state is S.SUCCEEDED
    assert runs == ["noop"]


def test_refused_action_is_explained(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="done")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    wait_state(qtbot, window, "done", S.SUCCEEDED)
    window.select_tasks(["done"])
    window.controller.cancel(["done"])  # the action is disabled; the controller still refuses
    assert "Cannot cancel done (succeeded)" in window.statusBar().currentMessage()


def test_right_click_offers_the_task_actions(qtbot, make_window, manual_scheduler):
    manual_scheduler.schedule_after(noop, 60, name="later")
    window = make_window(manual_scheduler)
    view = window.graph_view
    view.resetTransform()
    view.centerOn(window.scene.nodes["later"])
    point = view.mapFromScene(window.scene.nodes["later"].sceneBoundingRect().center())
    event = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, point, view.mapToGlobal(point))
    QApplication.sendEvent(view.viewport(), event)
    assert view.selected() == ["later"]
    menu = window.task_menu
    assert menu.isVisible()
    names = [a.objectName() for a in menu.actions() if not a.isSeparator()]
    menu.close()
    assert names == [
        "runNow",
        "cancelTask",
        "retryTask",
        "retryFailed",
        "pauseTask",
        "clearTask",
        "clearDownstream",
        "editTask",
        "removeTask",
    ]


def test_retry_failed_reruns_upstream_failures_and_what_they_skipped(
    qtbot, make_window, manual_scheduler
):
    manual_scheduler.add(fail, name="fetch")
    manual_scheduler.add(noop, name="parse", deps=["fetch"])
    manual_scheduler.add(fail, name="other")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    wait_state(qtbot, window, "parse", S.SKIPPED)
    wait_state(qtbot, window, "other", S.FAILED)
    assert window.act_retry_failed.isEnabled()

    window.select_tasks(["parse"])  # a skipped task: its upstream failure is retried
    window.act_retry_failed.trigger()
    assert manual_scheduler.task("fetch").attempt == 2  # ran again (and failed again)
    assert manual_scheduler.task("other").attempt == 1  # not upstream of the selection
    assert "Retry: fetch" in window.statusBar().currentMessage()

    window.select_tasks([])  # nothing selected: every failed task
    qtbot.keyClick(
        window.graph_view,
        Qt.Key.Key_R,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    assert manual_scheduler.task("fetch").attempt == 3
    assert manual_scheduler.task("other").attempt == 2


def test_retry_failed_rearms_skipped_downstream(qtbot, make_window, manual_scheduler):
    attempts = []

    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first time fails")

    runs.clear()
    manual_scheduler.add(flaky, name="fetch")
    manual_scheduler.add(noop, name="parse", deps=["fetch"])
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    wait_state(qtbot, window, "parse", S.SKIPPED)
    window.act_retry_failed.trigger()
    manual_scheduler.clock.advance(0)
    assert manual_scheduler.task("parse").state is S.SUCCEEDED
    assert runs == ["noop"]
    wait_state(qtbot, window, "parse", S.SUCCEEDED)
    assert not window.act_retry_failed.isEnabled()
