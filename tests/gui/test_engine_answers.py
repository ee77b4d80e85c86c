"""The window asks the engine what is allowed (edges, actions, refusals, outcomes)
instead of deciding from its own copy of the graph and of the state rules."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt

from taskloom.engine import Event, TaskState
from tests.gui.test_editing import send_mouse

S = TaskState
LEFT = Qt.MouseButton.LeftButton
NONE = Qt.MouseButton.NoButton
RED = "#d55e00"
GREEN = "#009e73"


def noop():
    return None


def fail():
    raise RuntimeError("upstream broke")


def hover_connect(window, upstream: str, downstream: str) -> None:
    """Press on ``upstream``'s port and move onto ``downstream`` without releasing."""
    view = window.graph_view
    viewport = view.viewport()
    a = view.mapFromScene(window.scene.nodes[upstream].port.scenePos())
    b = view.mapFromScene(window.scene.nodes[downstream].sceneBoundingRect().center())
    send_mouse(viewport, QEvent.Type.MouseButtonPress, a, LEFT, LEFT)
    for i in range(1, 7):
        send_mouse(viewport, QEvent.Type.MouseMove, a + (b - a) * (i / 6), NONE, LEFT)


def release_at(window, tid: str) -> None:
    view = window.graph_view
    b = view.mapFromScene(window.scene.nodes[tid].sceneBoundingRect().center())
    send_mouse(view.viewport(), QEvent.Type.MouseButtonRelease, b, LEFT, NONE)


def shown_window(make_window, scheduler):
    window = make_window(scheduler)
    window.graph_view.resetTransform()
    window.graph_view.centerOn(window.scene.sceneRect().center())
    return window


def test_drag_feedback_follows_the_engine_not_the_windows_copy_of_the_graph(
    qtbot, make_window, manual_scheduler
):
    manual_scheduler.add(noop, name="extract")
    manual_scheduler.add(noop, name="load", deps=["extract"])
    manual_scheduler.add(noop, name="audit")
    window = shown_window(make_window, manual_scheduler)
    asked = []
    engine_answer = manual_scheduler.would_close_cycle

    def spy(task_id, dep_id):
        asked.append((task_id, dep_id))
        return engine_answer(task_id, dep_id)

    manual_scheduler.would_close_cycle = spy
    # An edge the window has not heard of yet (its bridge drains on a timer).
    manual_scheduler.add_dependency("audit", "load")
    assert not window.scene.graph.has_edge("load", "audit")
    hover_connect(window, "audit", "extract")  # extract would wait for audit: a cycle
    scene = window.scene
    assert ("extract", "audit") in asked
    assert scene.target_ring.pen().color().name().lower() == RED
    assert not scene.cycle_path.path().isEmpty()
    assert "extract → load → audit → extract" in window.statusBar().currentMessage()
    release_at(window, "extract")
    assert manual_scheduler.task("extract").deps == ()  # and the engine refuses it
    assert window.controller.undo_stack.count() == 0


def test_drag_onto_a_task_that_has_run_is_red_unless_it_is_recurring(
    qtbot, make_window, manual_scheduler
):
    manual_scheduler.add(noop, name="done")
    manual_scheduler.schedule_every(noop, 60.0, name="tick")
    manual_scheduler.add(noop, name="source")
    manual_scheduler.start()
    manual_scheduler.clock.advance(61.0)  # "tick" ran once and waits for its next time
    window = shown_window(make_window, manual_scheduler)
    qtbot.waitUntil(lambda: window.bridge.tasks["done"].state is S.SUCCEEDED, timeout=3000)
    scene = window.scene
    hover_connect(window, "source", "done")
    assert scene.target_ring.pen().color().name().lower() == RED
    assert "cannot gain a dependency" in window.statusBar().currentMessage()
    release_at(window, "done")
    hover_connect(window, "source", "tick")
    assert scene.target_ring.pen().color().name().lower() == GREEN
    release_at(window, "tick")
    assert manual_scheduler.task("tick").deps == ("source",)


def test_toolbar_enables_what_the_engine_allows(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(fail, name="up")
    manual_scheduler.add(noop, name="down", deps=["up"])
    manual_scheduler.schedule_after(noop, 600, name="later")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: window.bridge.tasks["down"].state is S.SKIPPED, timeout=3000)

    # Skipped because "up" failed: retrying it would only skip it again.
    window.select_tasks(["down"])
    assert not window.act_retry.isEnabled()
    assert not window.act_cancel.isEnabled() and not window.act_run_now.isEnabled()
    assert window.act_remove.isEnabled()
    assert not window.act_edit.isEnabled()  # defined by code, not the window
    assert window.act_retry_failed.isEnabled()  # retries "up", which re-arms "down"

    window.select_tasks(["up"])
    assert window.act_retry.isEnabled()

    # Run now stays offered while the dispatcher is paused: the task is due at once
    # and starts when it is resumed (see Scheduler.allowed_actions).
    window.act_pause_all.trigger()
    window.select_tasks(["later"])
    assert window.act_run_now.isEnabled() and window.act_cancel.isEnabled()
    window.act_run_now.trigger()
    qtbot.waitUntil(lambda: window.bridge.tasks["later"].state is S.READY, timeout=3000)
    assert not window.act_run_now.isEnabled()  # already due
    window.act_pause_all.trigger()
    qtbot.waitUntil(lambda: window.bridge.tasks["later"].state is S.SUCCEEDED, timeout=3000)
    assert not window.act_cancel.isEnabled() and window.act_remove.isEnabled()


def test_an_edit_refused_by_the_engine_is_shown_by_the_field_it_names(
    qtbot, make_window, manual_scheduler
):
    from taskloom.engine import TaskDefinition
    from taskloom.gui.add_task import AddTaskDialog
    from taskloom.gui.task_spec import make_command

    window = make_window(manual_scheduler)
    spec = TaskDefinition(id="nightly", action=make_command("true"), after=600.0)
    assert window.controller.add_task(spec)
    bad = TaskDefinition(id="nightly", action=spec.action, cron="0 3 * * *", timezone="Mars/Base")
    refused = window.controller.edit_task("nightly", bad)
    assert refused == ("tz", "unknown time zone 'Mars/Base'")
    assert manual_scheduler.task("nightly").deps == ()  # the old definition is back

    dialog = AddTaskDialog(["nightly"], spec=spec, task_id="nightly")
    qtbot.addWidget(dialog)
    dialog.show_refusal(*refused)
    assert dialog.errors["schedule"].text() == "unknown time zone 'Mars/Base'"
    dialog.show_refusal("priority", "no widget of its own")
    assert dialog.errors["submit"].text() == "no widget of its own"
    dialog.reject()


def test_timeline_ends_a_bar_only_on_the_event_that_carries_an_outcome(qtbot):
    from taskloom.gui.timeline import TimelineModel

    model = TimelineModel()
    running = Event(1, "running", "job", S.RUNNING, 10.0, 1, None, None)
    # A "ready" event that ends no attempt (e.g. a queued occurrence) leaves the bar open.
    ready = Event(2, "ready", "job", S.READY, 11.0, 1, None, None)
    model.add_events([running, ready])
    assert model.bars["job"][-1][1:3] == [None, "running"]
    ended = Event(3, "retry_wait", "job", S.RETRY_WAIT, 12.0, 1, None, "boom", "failed")
    model.add_events([ended])
    assert model.bars["job"][-1][1:3] == [12.0, "failed"]
