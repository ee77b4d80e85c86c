"""Editing a FAILED task to fix it: history kept, "edited" logged, run again offered."""

from __future__ import annotations

import sys

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from taskloom.engine import TaskDefinition, TaskState
from taskloom.gui.fix_task import describe_changes
from taskloom.gui.task_spec import make_command

S = TaskState


def command(code: str):
    return make_command(f"{sys.executable} -c '{code}'")


def failed_chain(qtbot, make_window, scheduler):
    """fetch fails; publish and report, downstream of it, are skipped."""
    scheduler.add(command("raise SystemExit(3)"), name="fetch")
    scheduler.add(command("pass"), name="publish", deps=["fetch"])
    scheduler.add(command("pass"), name="report", deps=["publish"])
    scheduler.start()
    window = make_window(scheduler)
    qtbot.waitUntil(lambda: window.bridge.tasks["report"].state is S.SKIPPED, timeout=5000)
    return window


def log_rows(window):
    model = window.event_log.model
    return [
        (model.index(r, 2).data(), model.index(r, 3).data(), model.index(r, 5).data())
        for r in range(model.rowCount())
    ]


def test_fixing_a_failed_task_keeps_its_history_and_offers_to_run_it_again(
    qtbot, make_window, manual_scheduler
):
    window = failed_chain(qtbot, make_window, manual_scheduler)
    old = manual_scheduler.definition("fetch")
    window.select_tasks(["fetch"])
    qtbot.waitUntil(lambda: window.inspector.attempt_list.topLevelItemCount() == 1)
    qtbot.keyClick(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    dialog = window.edit_dialog
    assert dialog.isVisible()
    dialog.target.clear()
    qtbot.keyClicks(dialog.target, f"{sys.executable} -c pass")
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    assert not dialog.isVisible()

    # The task keeps what it did: still FAILED, its attempt listed, nothing run yet.
    assert manual_scheduler.task("fetch").state is S.FAILED
    assert [a.outcome for a in manual_scheduler.attempts("fetch")] == ["failed"]
    qtbot.waitUntil(lambda: ("fetch", "• edited", "command changed") in log_rows(window))
    assert not any(kind.endswith("removed") for _t, kind, _d in log_rows(window))
    assert window.inspector.attempt_list.topLevelItemCount() == 1
    assert manual_scheduler.task("publish").deps == ("fetch",)

    # It offers to run the fix with the downstream it skipped, saying what will run.
    qtbot.waitUntil(lambda: window.clear_question.box is not None)
    box = window.clear_question.box
    assert "fetch is fixed" in box.text()
    assert "will run fetch, then publish (skipped), report (skipped)" in box.informativeText()
    run = next(b for b in box.buttons() if b.text() == "Run again")
    qtbot.mouseClick(run, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.bridge.tasks["report"].state is S.SUCCEEDED, timeout=5000)
    assert [a.outcome for a in manual_scheduler.attempts("fetch")] == ["failed", "succeeded"]
    qtbot.waitUntil(lambda: window.inspector.attempt_list.topLevelItemCount() == 2)

    # Undo puts the old definition back (by the same call), history and states kept.
    window.act_undo.trigger()
    assert manual_scheduler.definition("fetch") == old
    assert len(manual_scheduler.attempts("fetch")) == 2
    assert manual_scheduler.task("report").state is S.SUCCEEDED


def test_not_now_leaves_the_fixed_task_failed_and_undo_restores_it_exactly(
    qtbot, make_window, manual_scheduler
):
    window = failed_chain(qtbot, make_window, manual_scheduler)
    before = manual_scheduler.tasks()
    old = manual_scheduler.definition("fetch")
    window.controller.can_edit = lambda tid: None
    window._submit_edit("fetch", TaskDefinition("fetch", command("pass"), priority=5))
    qtbot.waitUntil(lambda: window.clear_question.box is not None)
    box = window.clear_question.box
    qtbot.mouseClick(box.button(box.StandardButton.Cancel), Qt.MouseButton.LeftButton)
    assert box.button(box.StandardButton.Cancel).text() == "Not now"
    assert manual_scheduler.task("fetch").state is S.FAILED
    assert manual_scheduler.task("report").state is S.SKIPPED
    window.act_undo.trigger()
    assert manual_scheduler.definition("fetch") == old
    assert manual_scheduler.tasks() == before  # the engine is as it was before the edit
    assert len(manual_scheduler.attempts("fetch")) == 1


def test_describe_changes_names_what_an_edit_changed():
    old = TaskDefinition("t", command("pass"), after=60.0)
    assert describe_changes(old, old) == "nothing changed"
    new = TaskDefinition("t", command("pass"), after=90.0, priority=2, deps=("x",))
    assert describe_changes(old, new) == "schedule changed, dependencies changed, priority changed"
