"""Editing the graph: drag-to-connect with real mouse events, cycles refused, undo/redo, Delete."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication

from engine import TaskState

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
    qtbot.waitUntil(lambda: window.bridge.tasks["audit"].deps == ("load",), timeout=3000)
    assert window.scene.graph.has_edge("load", "audit")
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
    from gui.graph.items import edge_curve

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
