"""Edits that would start something say so, hold it, and undo in full."""

from __future__ import annotations

from PySide6.QtCore import Qt

from taskloom.engine import TaskState

S = TaskState


def noop():
    return None


def test_deleting_a_waiting_tasks_only_dependency_holds_it_and_undo_restores_all(
    qtbot, make_window, manual_scheduler
):
    manual_scheduler.schedule_after(noop, 3600, name="a")
    manual_scheduler.add(noop, name="b", deps=["a"])
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: "b" in window.scene.nodes, timeout=3000)
    window.scene.selected_edge = ("a", "b")
    qtbot.keyClick(window.graph_view, Qt.Key.Key_Delete)
    b = manual_scheduler.task("b")
    assert b.deps == () and b.paused and b.state is S.READY  # held, not run
    assert "would start at once" in window.statusBar().currentMessage()
    qtbot.keyClick(window.graph_view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    b = manual_scheduler.task("b")
    assert b.deps == ("a",) and not b.paused and b.state is S.PENDING
    assert manual_scheduler.attempts("b") == []  # it never ran


def test_removing_a_task_holds_the_dependents_it_would_release(
    qtbot, make_window, manual_scheduler
):
    manual_scheduler.schedule_after(noop, 3600, name="a")
    manual_scheduler.add(noop, name="b", deps=["a"])
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    assert window.controller.remove_tasks(["a"]) == 1
    assert manual_scheduler.task("b").paused
    window.controller.undo_stack.undo()
    b = manual_scheduler.task("b")
    assert b.deps == ("a",) and not b.paused and b.state is S.PENDING


def test_undone_removal_brings_back_edges_to_dependents_that_ran_and_the_file_keeps_them(
    qtbot, make_window, manual_scheduler, tmp_path
):
    from taskloom.engine.workflow import load

    manual_scheduler.add("os:getcwd", name="a")
    manual_scheduler.add("os:getcwd", name="b", deps=["a"])
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: manual_scheduler.task("b").state is S.SUCCEEDED, timeout=3000)
    assert window.controller.remove_tasks(["a"]) == 1
    window.controller.undo_stack.undo()
    # The engine puts a back as it was, with its edge to b (b ran: nothing re-runs).
    assert manual_scheduler.task("b").deps == ("a",)
    assert manual_scheduler.task("a").state is S.SUCCEEDED
    assert [len(manual_scheduler.attempts(t)) for t in "ab"] == [1, 1]
    assert window.save_workflow(str(tmp_path / "saved.toml"))
    assert load(tmp_path / "saved.toml").tasks["b"].deps == ("a",)


calls = []


def flaky_fixed():
    calls.append("fixed")


def always_fails():
    raise RuntimeError("broken")
