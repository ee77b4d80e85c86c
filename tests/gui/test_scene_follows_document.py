"""The scene follows the document (bridge -> document -> scene): edits made here and
changes made through the engine by others reach it as the document's batched changes."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication

from taskloom.gui.structure import Structure, StructureChange

LEFT, NONE = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton


def noop():
    return None


def send_mouse(widget, kind, pos: QPoint, button, buttons):
    event = QMouseEvent(
        kind, QPointF(pos), QPointF(widget.mapToGlobal(pos)), button, buttons,
        Qt.KeyboardModifier.NoModifier,
    )  # fmt: skip
    QApplication.sendEvent(widget, event)


def drag(window, start: QPointF, end: QPointF, steps=6):
    viewport = window.graph_view.viewport()
    a, b = window.graph_view.mapFromScene(start), window.graph_view.mapFromScene(end)
    send_mouse(viewport, QEvent.Type.MouseButtonPress, a, LEFT, LEFT)
    for i in range(1, steps + 1):
        send_mouse(viewport, QEvent.Type.MouseMove, a + (b - a) * (i / steps), NONE, LEFT)
    send_mouse(viewport, QEvent.Type.MouseButtonRelease, b, LEFT, NONE)


def recorded(window) -> list[StructureChange]:
    changes: list[StructureChange] = []
    window.document.structureChanged.connect(changes.append)
    return changes


def test_undo_and_redo_reach_the_scene_through_the_document(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="load")
    manual_scheduler.add(noop, name="audit")
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: set(window.scene.nodes) == {"load", "audit"})
    window.graph_view.resetTransform()
    window.graph_view.centerOn(window.scene.sceneRect().center())
    changes = recorded(window)
    window.bridge.close()  # the engine's events no longer reach the window

    load, audit = window.scene.nodes["load"], window.scene.nodes["audit"]
    drag(window, load.port.scenePos(), audit.sceneBoundingRect().center())
    assert manual_scheduler.task("audit").deps == ("load",)
    assert changes == [StructureChange(edges_added=(("load", "audit"),))]
    qtbot.waitUntil(lambda: window.scene.graph.has_edge("load", "audit"))

    qtbot.keyClick(window.graph_view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert changes[-1] == StructureChange(edges_removed=(("load", "audit"),))
    qtbot.waitUntil(lambda: not window.scene.graph.has_edge("load", "audit"))

    window.act_redo.trigger()
    assert changes[-1] == StructureChange(edges_added=(("load", "audit"),))
    qtbot.waitUntil(lambda: window.scene.graph.has_edge("load", "audit"))

    window.select_tasks(["audit"])
    qtbot.keyClick(window.graph_view, Qt.Key.Key_Delete)
    assert changes[-1].removed == ("audit",)
    qtbot.waitUntil(lambda: "audit" not in window.scene.nodes)
    window.act_undo.trigger()
    assert changes[-1].added == ("audit",)
    qtbot.waitUntil(lambda: "audit" in window.scene.nodes)
    assert len(changes) == 5  # one change per step, nothing from the (stopped) bridge


def test_a_task_added_through_the_api_appears_through_the_document(
    qtbot, make_window, manual_scheduler
):
    manual_scheduler.add(noop, name="first")
    window = make_window(manual_scheduler)
    changes = recorded(window)
    manual_scheduler.add(noop, name="second", deps=["first"])  # someone else's call
    qtbot.waitUntil(lambda: "second" in window.scene.nodes)
    assert changes[0].added == ("second",) and changes[0].edges_added == (("first", "second"),)
    assert window.scene.graph.has_edge("first", "second")
    manual_scheduler.remove("second")
    qtbot.waitUntil(lambda: "second" not in window.scene.nodes)
    assert changes[-1].removed == ("second",)


def test_thousands_of_tasks_added_at_once_come_in_few_changes_and_few_layouts(
    qtbot, make_window, manual_scheduler, monkeypatch
):
    # The bridge re-reads at most REREADS_PER_DRAIN new tasks per drain, or a share of
    # those it knows when more (a GUI-thread slice stays short, the batches few); each
    # drain is one document change, never one per task.
    from taskloom.gui import bridge as bridge_module
    from taskloom.gui.bridge import REREADS_PER_DRAIN, SHARE_OF_KNOWN

    monkeypatch.setattr(bridge_module, "READ_SLICE_S", 60.0)  # counts, not the clock
    manual_scheduler.add(noop, name="root")
    window = make_window(manual_scheduler)
    changes = recorded(window)
    layouts = []
    set_tasks = window.scene.set_tasks
    window.scene.set_tasks = lambda tasks: (layouts.append(len(tasks)), set_tasks(tasks))
    for i in range(3000):
        manual_scheduler.add(noop, name=f"t{i}", deps=["root"])
    qtbot.waitUntil(
        lambda: bool(layouts) and layouts[-1] == 3001 and not window.scene.building,
        timeout=20000,
    )
    assert sum(len(change.added) for change in changes) == 3000
    assert sum(len(change.edges_added) for change in changes) == 3000
    known = 1
    for change in changes:
        assert len(change.added) <= max(REREADS_PER_DRAIN, int(known * SHARE_OF_KNOWN))
        known += len(change.added)
    assert len(changes) <= 3000 // REREADS_PER_DRAIN + 2
    assert len(layouts) <= len(changes)


def test_structure_tells_only_changes_of_shape():
    from taskloom.engine import TaskInfo, TaskState

    def info(tid, deps=(), state=TaskState.PENDING):
        return TaskInfo(tid, tid, state, tuple(deps), (), 0, 0, None, False, False, None)

    structure = Structure()
    structure.reset({"a": info("a")})
    assert not structure.apply([info("a", state=TaskState.RUNNING)])  # a state: no change
    change = structure.apply([info("b", ["a"])], changed=["a"])
    assert change == StructureChange(("b",), (), (("a", "b"),), (), ("a",))
    assert structure.apply([], ["b", "ghost"]) == StructureChange(
        removed=("b",), edges_removed=(("a", "b"),)
    )
