"""Editing the graph with real mouse and key events: connect, move, remove, edit; undo/redo."""

from __future__ import annotations

import sys
import threading
from dataclasses import replace

import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from taskloom.engine import Scheduler, TaskState

S = TaskState
LEFT = Qt.MouseButton.LeftButton
NONE = Qt.MouseButton.NoButton


def noop():
    return None


def send_mouse(widget, kind, pos: QPoint, button, buttons):
    event = QMouseEvent(
        kind,
        QPointF(pos),
        QPointF(widget.mapToGlobal(pos)),
        button,
        buttons,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(widget, event)


def viewport_point(window, scene_point: QPointF) -> QPoint:
    return window.graph_view.mapFromScene(scene_point)


def drag(window, start: QPointF, end: QPointF, release=True, steps=6):
    viewport = window.graph_view.viewport()
    a, b = viewport_point(window, start), viewport_point(window, end)
    send_mouse(viewport, QEvent.Type.MouseButtonPress, a, LEFT, LEFT)
    for i in range(1, steps + 1):
        p = a + (b - a) * (i / steps)
        send_mouse(viewport, QEvent.Type.MouseMove, p, NONE, LEFT)
    if release:
        send_mouse(viewport, QEvent.Type.MouseButtonRelease, b, LEFT, NONE)


def chain_window(make_window, scheduler):
    scheduler.add(noop, name="extract")
    scheduler.add(noop, name="transform", deps=["extract"])
    scheduler.add(noop, name="load", deps=["transform"])
    scheduler.add(noop, name="audit")
    window = make_window(scheduler)
    window.graph_view.resetTransform()
    window.graph_view.centerOn(window.scene.sceneRect().center())
    return window


def port_of(window, tid):
    return window.scene.nodes[tid].port.scenePos()


def centre_of(window, tid):
    return window.scene.nodes[tid].sceneBoundingRect().center()


def test_drag_from_port_adds_dependency_and_undo_redo(qtbot, make_window, manual_scheduler):
    window = chain_window(make_window, manual_scheduler)
    drag(window, port_of(window, "load"), centre_of(window, "audit"))
    assert manual_scheduler.task("audit").deps == ("load",)
    qtbot.waitUntil(lambda: window.scene.graph.has_edge("load", "audit"), timeout=3000)
    assert window.scene.rubber.path().isEmpty()  # feedback is gone after the drop

    qtbot.keyClick(window.graph_view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert manual_scheduler.task("audit").deps == ()
    qtbot.keyClick(
        window.graph_view,
        Qt.Key.Key_Z,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    assert manual_scheduler.task("audit").deps == ("load",)


def test_drag_that_would_close_a_cycle_is_shown_red_and_refused(
    qtbot, make_window, manual_scheduler
):
    window = chain_window(make_window, manual_scheduler)
    scene = window.scene
    drag(window, port_of(window, "load"), centre_of(window, "extract"), release=False)
    assert scene.target_ring.pen().color().name().lower() == "#d55e00"  # red target
    assert not scene.cycle_path.path().isEmpty()  # the would-be cycle is drawn
    assert scene.would_close_cycle("load", "extract") == ["extract", "transform", "load", "extract"]
    viewport = window.graph_view.viewport()
    send_mouse(
        viewport,
        QEvent.Type.MouseButtonRelease,
        viewport_point(window, centre_of(window, "extract")),
        LEFT,
        NONE,
    )
    assert manual_scheduler.task("extract").deps == ()  # the engine refused
    assert "cycle" in window.statusBar().currentMessage()
    assert not scene.cycle_path.path().isEmpty()  # the refused cycle stays visible for a moment
    assert window.controller.undo_stack.count() == 0


def test_drag_onto_a_valid_target_is_green(qtbot, make_window, manual_scheduler):
    window = chain_window(make_window, manual_scheduler)
    drag(window, port_of(window, "extract"), centre_of(window, "audit"), release=False)
    assert window.scene.target_ring.pen().color().name().lower() == "#009e73"
    assert window.scene.cycle_path.path().isEmpty()
    qtbot.keyClick(window.graph_view, Qt.Key.Key_Escape)
    assert not window.graph_view.connecting
    send_mouse(
        window.graph_view.viewport(),
        QEvent.Type.MouseButtonRelease,
        viewport_point(window, centre_of(window, "audit")),
        LEFT,
        NONE,
    )
    assert manual_scheduler.task("audit").deps == ()  # Esc cancelled the drag


def test_click_edge_then_delete_removes_dependency(qtbot, make_window, manual_scheduler):
    window = chain_window(make_window, manual_scheduler)
    from taskloom.gui.graph.items import edge_curve

    nodes = window.scene.nodes
    curve = edge_curve(nodes["transform"].output_point(), nodes["load"].input_point())
    point = viewport_point(window, curve.pointAtPercent(0.5))
    viewport = window.graph_view.viewport()
    send_mouse(viewport, QEvent.Type.MouseButtonPress, point, LEFT, LEFT)
    send_mouse(viewport, QEvent.Type.MouseButtonRelease, point, LEFT, NONE)
    assert window.scene.selected_edge == ("transform", "load")
    assert not window.scene.edge_highlight.path().isEmpty()
    qtbot.keyClick(window.graph_view, Qt.Key.Key_Delete)
    assert manual_scheduler.task("load").deps == ()
    qtbot.waitUntil(lambda: not window.scene.graph.has_edge("transform", "load"), timeout=3000)
    window.act_undo.trigger()
    assert manual_scheduler.task("load").deps == ("transform",)


def test_target_that_already_ran_is_red_and_refused(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="done")
    manual_scheduler.schedule_after(noop, 60, name="later")
    manual_scheduler.start()  # "done" runs at once (SyncExecutor)
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: window.bridge.tasks["done"].state is S.SUCCEEDED, timeout=3000)
    window.graph_view.resetTransform()
    hints = []
    window.graph_view.connectHint.connect(hints.append)
    drag(window, port_of(window, "later"), centre_of(window, "done"), release=False)
    assert window.scene.target_ring.pen().color().name().lower() == "#d55e00"
    assert "already started" in hints[-1]
    send_mouse(
        window.graph_view.viewport(),
        QEvent.Type.MouseButtonRelease,
        viewport_point(window, centre_of(window, "done")),
        LEFT,
        NONE,
    )
    assert manual_scheduler.task("done").deps == ()
    assert "Refused" in window.statusBar().currentMessage()
    assert window.controller.undo_stack.count() == 0


def test_connecting_an_existing_edge_adds_nothing_to_undo(qtbot, make_window, manual_scheduler):
    window = chain_window(make_window, manual_scheduler)
    drag(window, port_of(window, "extract"), centre_of(window, "transform"))
    assert manual_scheduler.task("transform").deps == ("extract",)
    assert window.controller.undo_stack.count() == 0
    assert "already runs after" in window.statusBar().currentMessage()


# -- removing tasks ------------------------------------------------------------------
def command(code: str = "pass"):
    from taskloom.gui.task_spec import make_command

    return make_command(f"{sys.executable} -c '{code}'")


def spec(name, deps=(), priority=0, delay=3600.0):
    from taskloom.engine import TaskDefinition

    return TaskDefinition(id=name, action=command(), after=delay, priority=priority, deps=deps)


def defined_chain(make_window, scheduler):
    """extract -> transform -> load, all defined through the window (so undoable)."""
    window = make_window(scheduler)
    for name, deps in (("extract", ()), ("transform", ("extract",)), ("load", ("transform",))):
        assert window.controller.add_task(spec(name, deps, priority=3))
    window.controller.undo_stack.clear()
    window.graph_view.resetTransform()
    return window


def wait_for_nodes(qtbot, window, ids):
    qtbot.waitUntil(lambda: set(window.scene.nodes) == set(ids), timeout=3000)


def test_delete_key_removes_selected_task_and_undo_restores_it(
    qtbot, make_window, manual_scheduler
):
    window = defined_chain(make_window, manual_scheduler)
    wait_for_nodes(qtbot, window, ["extract", "transform", "load"])
    window.select_tasks(["transform"])
    window.graph_view.setFocus()
    qtbot.keyClick(window.graph_view, Qt.Key.Key_Delete)
    # Between two tasks: asked (the default connects them); plain Remove here.
    box = window.remove_question
    assert box is not None
    qtbot.mouseClick(
        next(b for b in box.buttons() if b.text() == "Remove"), Qt.MouseButton.LeftButton
    )
    assert "transform" not in {t.id for t in manual_scheduler.tasks()}
    assert manual_scheduler.task("load").deps == ()  # the engine drops the dependent's edge
    wait_for_nodes(qtbot, window, ["extract", "load"])
    assert window.controller.undo_stack.count() == 1

    window.act_undo.trigger()
    back = manual_scheduler.task("transform")
    assert back.deps == ("extract",) and back.priority == 3  # same id, settings and edges
    assert manual_scheduler.task("load").deps == ("transform",)
    wait_for_nodes(qtbot, window, ["extract", "transform", "load"])
    window.act_redo.trigger()
    assert "transform" not in {t.id for t in manual_scheduler.tasks()}


def test_removing_a_running_task_is_refused_with_the_reason(qtbot, make_window, settings):
    release = threading.Event()
    started = threading.Event()

    def busy():
        started.set()
        release.wait(10)

    scheduler = Scheduler(workers=1)
    try:
        scheduler.add(busy, name="busy")
        scheduler.start()
        assert started.wait(5)
        window = make_window(scheduler)
        qtbot.waitUntil(lambda: window.bridge.tasks["busy"].state is S.RUNNING, timeout=3000)
        window.select_tasks(["busy"])
        assert not window.act_remove.isEnabled()
        window.controller.remove_tasks(["busy"])  # e.g. the Delete key
        assert "busy is running" in window.statusBar().currentMessage()
        assert scheduler.task("busy").state is S.RUNNING
        assert window.controller.can_edit("busy") is not None
        assert window.controller.undo_stack.count() == 0
    finally:
        release.set()
        scheduler.shutdown(wait=True)


def test_a_task_scheduled_by_code_is_removed_and_put_back_from_the_engines_definition(
    qtbot, make_window, manual_scheduler
):
    manual_scheduler.add(noop, name="upstream")
    manual_scheduler.add(noop, name="library_task", deps=["upstream"], priority=4)  # by code
    window = make_window(manual_scheduler)
    assert window.controller.can_edit("library_task") == (
        "library_task runs a Python object, which the dialog cannot show"
    )
    window.select_tasks(["library_task"])
    window.act_remove.trigger()
    assert "library_task" not in {t.id for t in manual_scheduler.tasks()}
    assert window.statusBar().currentMessage() == "Removed library_task"
    window.act_undo.trigger()
    back = manual_scheduler.definition("library_task")
    assert (back.action, back.deps, back.priority) == (noop, ("upstream",), 4)


# -- dragging nodes ---------------------------------------------------------------------
def test_dragging_a_node_moves_it_as_one_undo_step(qtbot, make_window, manual_scheduler):
    window = defined_chain(make_window, manual_scheduler)
    wait_for_nodes(qtbot, window, ["extract", "transform", "load"])
    scene = window.scene
    before = scene.nodes["load"].pos()
    start = centre_of(window, "load")
    drag(window, start, start + QPointF(30, 120), steps=8)  # eight moves, one gesture
    after = scene.nodes["load"].pos()
    assert (after - before).y() == pytest.approx(120, abs=2)
    assert scene.pins["load"] == (after.x(), after.y())
    assert window.controller.undo_stack.count() == 1
    # The edge follows the node: the curve ends at its new input point.
    assert scene.edges_item.path().boundingRect().bottom() >= after.y() + 20

    # A structure change re-lays out the graph but keeps the position a person chose.
    assert window.controller.add_task(spec("report", ("load",)))
    wait_for_nodes(qtbot, window, ["extract", "transform", "load", "report"])
    assert scene.nodes["load"].pos() == after

    window.controller.undo_stack.undo()  # the added task
    window.controller.undo_stack.undo()  # the move
    assert "load" not in scene.pins
    assert scene.nodes["load"].pos() == before
    window.controller.undo_stack.redo()
    assert scene.nodes["load"].pos() == after


def test_click_without_drag_does_not_move(qtbot, make_window, manual_scheduler):
    window = defined_chain(make_window, manual_scheduler)
    wait_for_nodes(qtbot, window, ["extract", "transform", "load"])
    point = centre_of(window, "extract")
    drag(window, point, point + QPointF(1, 0), steps=1)  # within the drag distance
    assert window.graph_view.selected() == ["extract"]
    assert not window.scene.pins and window.controller.undo_stack.count() == 0


# -- editing tasks ----------------------------------------------------------------------
def test_edit_dialog_is_prefilled_and_applies_as_one_undo_step(
    qtbot, make_window, manual_scheduler
):
    window = defined_chain(make_window, manual_scheduler)
    wait_for_nodes(qtbot, window, ["extract", "transform", "load"])
    window.select_tasks(["transform"])
    assert window.act_edit.isEnabled()
    window.act_edit.trigger()
    dialog = window.edit_dialog
    assert dialog.isVisible() and dialog.name.isReadOnly()
    assert dialog.name.text() == "transform" and dialog.priority.value() == 3
    assert dialog.schedule.currentData() == "after" and dialog.delay.text() == "1h"
    assert sys.executable in dialog.target.text()
    dialog.priority.setValue(9)
    dialog.delay.setText("2h")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    assert not dialog.isVisible()
    info = manual_scheduler.task("transform")
    assert info.priority == 9 and info.deps == ("extract",)  # same id, edges kept
    assert manual_scheduler.task("load").deps == ("transform",)
    assert window.controller.undo_stack.count() == 1

    window.act_undo.trigger()
    assert manual_scheduler.task("transform").priority == 3
    assert manual_scheduler.task("load").deps == ("transform",)
    window.act_redo.trigger()
    assert manual_scheduler.task("transform").priority == 9


def test_refused_edit_is_explained_next_to_the_field(qtbot, make_window, manual_scheduler):
    window = defined_chain(make_window, manual_scheduler)
    wait_for_nodes(qtbot, window, ["extract", "transform", "load"])
    window.select_tasks(["extract"])
    window.act_edit.trigger()
    dialog = window.edit_dialog
    items = {dialog.deps.item(i).text(): dialog.deps.item(i) for i in range(dialog.deps.count())}
    assert "extract" not in items  # a task cannot wait for itself
    items["load"].setCheckState(Qt.CheckState.Checked)  # extract after load: a cycle
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    assert dialog.isVisible()  # still open, with the reason by the dependencies
    assert "cycle" in dialog.errors["deps"].text() and dialog.errors["deps"].isVisibleTo(dialog)
    assert manual_scheduler.task("extract").deps == ()  # nothing changed in the engine
    assert manual_scheduler.task("transform").deps == ("extract",)
    assert window.controller.undo_stack.count() == 0
    dialog.reject()


def test_edit_is_refused_once_a_task_has_started(qtbot, make_window, manual_scheduler):
    window = make_window(manual_scheduler)
    window.controller.add_task(spec("soon", delay=0.0))
    assert window.controller.can_edit("soon") is None
    recurring = replace(spec("tick"), after=None, every=60.0)
    assert window.controller.add_task(recurring)
    manual_scheduler.start()
    manual_scheduler.clock.advance(1)  # "soon" runs (and succeeds): settled, editable again
    assert manual_scheduler.task("soon").state is S.SUCCEEDED
    assert window.controller.can_edit("soon") is None
    refused = window.controller.edit_task("missing", spec("missing"))
    assert refused == ("submit", "no task 'missing'")


def test_undoing_a_removal_puts_the_node_back_where_it_was_dragged(
    qtbot, make_window, manual_scheduler
):
    window = defined_chain(make_window, manual_scheduler)
    wait_for_nodes(qtbot, window, ["extract", "transform", "load"])
    start = centre_of(window, "load")
    drag(window, start, start + QPointF(0, -100))
    dropped = window.scene.nodes["load"].pos()
    window.act_remove.trigger()  # "load" is selected by the drag
    wait_for_nodes(qtbot, window, ["extract", "transform"])
    window.act_undo.trigger()
    wait_for_nodes(qtbot, window, ["extract", "transform", "load"])
    qtbot.waitUntil(lambda: window.scene.nodes["load"].isVisible(), timeout=3000)
    assert window.scene.nodes["load"].pos() == dropped


def test_an_undo_step_the_engine_can_no_longer_take_is_explained_and_dropped(
    qtbot, make_window, manual_scheduler
):
    manual_scheduler.schedule_after(noop, 60, name="library_a")
    manual_scheduler.schedule_after(noop, 60, name="library_b")
    window = make_window(manual_scheduler)
    assert window.controller.connect_tasks("library_a", "library_b")
    manual_scheduler.remove("library_b")  # by other code: the edge step cannot be undone
    assert window.controller.undo_stack.count() == 1
    window.act_undo.trigger()  # would re-add an edge to a task that is gone
    assert "Cannot undo" in window.statusBar().currentMessage()
    assert window.controller.undo_stack.count() == 0


def _samples(path, steps: int = 12) -> list[QPointF]:
    """Points along a path as drawn (curves flattened), each segment cut in ``steps``."""
    points = []
    for polygon in path.toSubpathPolygons():
        corners = [polygon.at(i) for i in range(polygon.count())]
        for a, b in zip(corners, corners[1:], strict=False):
            points += [a + (b - a) * (i / steps) for i in range(steps + 1)]
    return points


def test_cycle_preview_follows_the_cycles_edges_and_goes_round_the_nodes(
    qtbot, make_window, manual_scheduler
):
    window = chain_window(make_window, manual_scheduler)
    scene = window.scene
    drag(window, port_of(window, "load"), centre_of(window, "extract"), release=False)
    cycle = scene.would_close_cycle("load", "extract")
    assert cycle == ["extract", "transform", "load", "extract"]
    route = _samples(scene.cycle_route)
    assert route
    # every edge of the cycle that exists is drawn as the graph draws it
    for up, down in [("extract", "transform"), ("transform", "load")]:
        middle = scene.edge_path(up, down).pointAtPercent(0.5)
        assert min((p - middle).manhattanLength() for p in route) < 2.0, (up, down)
    # neither the preview nor the rubber band cuts through a node (transform sits
    # between load and extract: a straight curve back would cross it)
    rubber = _samples(scene.rubber.path())
    for tid, node in scene.nodes.items():
        inside = node.sceneBoundingRect().adjusted(3, 3, -3, -3)
        assert not [p for p in route if inside.contains(p)], tid
        assert not [p for p in rubber if inside.contains(p)], tid
    # the closing edge leaves load's output and enters extract's input
    closing = scene.closing_edge("load", "extract")
    assert (closing.pointAtPercent(0) - scene.nodes["load"].output_point()).manhattanLength() < 1
    end = scene.nodes["extract"].input_point()
    assert abs(closing.pointAtPercent(1).y() - end.y()) < 1
    assert closing.pointAtPercent(1).x() < end.x()
    qtbot.keyClick(window.graph_view, Qt.Key.Key_Escape)
    assert scene.cycle_route.isEmpty() and scene.cycle_path.path().isEmpty()


def test_connect_hints_last_exactly_while_they_hold(qtbot, make_window, manual_scheduler):
    window = chain_window(make_window, manual_scheduler)
    bar = window.statusBar()
    viewport = window.graph_view.viewport()
    drag(window, port_of(window, "extract"), centre_of(window, "audit"), release=False)
    assert bar.currentMessage() == "Release to make audit run after extract"
    # off every node: releasing would do nothing, so no hint says otherwise
    empty = window.scene.sceneRect().bottomRight() - QPointF(5, 5)
    send_mouse(viewport, QEvent.Type.MouseMove, viewport_point(window, empty), NONE, LEFT)
    assert window.scene.node_at(empty) is None
    assert bar.currentMessage() == ""
    centre = viewport_point(window, centre_of(window, "audit"))
    send_mouse(viewport, QEvent.Type.MouseMove, centre, NONE, LEFT)
    assert bar.currentMessage() == "Release to make audit run after extract"
    qtbot.keyClick(window.graph_view, Qt.Key.Key_Escape)  # the drag ends: so does its hint
    assert bar.currentMessage() == ""
    # a message shown since is not taken away by the end of a later drag
    bar.showMessage("something else")
    drag(window, port_of(window, "extract"), empty, release=False)
    qtbot.keyClick(window.graph_view, Qt.Key.Key_Escape)
    assert bar.currentMessage() == "something else"
    assert manual_scheduler.task("audit").deps == ()
