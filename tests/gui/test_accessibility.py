"""Assistive technology sees the window: every task of the graph with its state in
the accessible tree, names on every control that takes focus, the timeline on the
Tab chain, and the graph's description following the selected task."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import QApplication

from taskloom.engine import TaskState
from taskloom.gui.accessibility import focusable_unnamed

S = TaskState


def boom():
    raise RuntimeError("disk full")


def small_graph(scheduler) -> None:
    scheduler.add(lambda: None, name="extract")
    scheduler.add(boom, deps=["extract"], name="load")
    scheduler.add(lambda: None, deps=["load"], name="report")


def settled_window(qtbot, make_window, scheduler):
    small_graph(scheduler)
    window = make_window(scheduler)
    expected = {"extract": S.SUCCEEDED, "load": S.FAILED, "report": S.SKIPPED}
    qtbot.waitUntil(
        lambda: all(
            window.bridge.tasks.get(t) is not None and window.bridge.tasks[t].state is state
            for t, state in expected.items()
        )
    )
    return window


def walk(widget, limit=40):
    """(name, role, description) of every accessible interface under ``widget``, as a
    screen reader walks them. Only texts leave here: an interface's Python wrapper kept
    past its widget outlives the C++ object Qt deletes with it, and a later object at
    that address came back as the stale wrapper (a segfault in a later test)."""
    found: list[tuple[str, QAccessible.Role, str]] = []

    def visit(interface, depth):
        found.append(
            (
                interface.text(QAccessible.Text.Name),
                interface.role(),
                interface.text(QAccessible.Text.Description),
            )
        )
        if depth >= limit:
            return
        for i in range(interface.childCount()):
            child = interface.child(i)
            if child is not None and child.isValid():
                visit(child, depth + 1)

    visit(QAccessible.queryAccessibleInterface(widget), 0)
    return found


def test_every_task_of_the_graph_is_in_the_accessible_tree_with_its_state(
    qtbot, make_window, sched
):
    window = settled_window(qtbot, make_window, sched)
    window.task_dock.raise_()  # the Tasks tab beside Events
    QApplication.processEvents()
    items = {
        name: description
        for name, role, description in walk(window)
        if role == QAccessible.Role.ListItem
    }
    for name in ("extract, succeeded", "load, failed", "report, skipped"):
        assert name in items, sorted(items)
    failed = items["load, failed"]
    assert "disk full" in failed and "depends on extract" in failed
    # The list sits in a panel named for what it is.
    names = {name for name, _, _ in walk(window, limit=12)}
    assert {"Task graph", "Tasks in the graph", "Timeline lanes", "Inspector"} <= names


def test_the_task_list_moves_the_graph_selection_and_follows_it(qtbot, make_window, sched):
    window = settled_window(qtbot, make_window, sched)
    window.task_dock.raise_()
    view = window.task_list.view
    view.setFocus()
    qtbot.waitUntil(view.hasFocus)
    qtbot.keyClick(view, Qt.Key.Key_Home)  # the first row: tasks in name order
    assert window.selected == ["extract"]
    qtbot.keyClick(view, Qt.Key.Key_Down)
    assert window.selected == ["load"]
    # The graph's own description says what is selected, for a screen reader.
    assert window.graph_view.accessibleDescription().startswith("Selected load, failed")
    window.select_tasks(["report"])  # chosen in the graph: the list follows
    assert view.currentIndex().data(Qt.ItemDataRole.AccessibleTextRole) == "report, skipped"


def test_tab_reaches_the_timeline(qtbot, make_window, sched):
    window = settled_window(qtbot, make_window, sched)
    window.graph_view.setFocus()
    qtbot.waitUntil(window.graph_view.hasFocus)
    reached = []
    for _ in range(80):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        reached.append(QApplication.focusWidget())
        if reached[-1] is window.timeline.canvas:
            break
    assert window.timeline.canvas in reached
    canvas = window.timeline.canvas
    span = canvas.span
    qtbot.keyClick(canvas, Qt.Key.Key_Minus)  # the keys work once it has focus
    assert canvas.span != span


def test_every_control_that_takes_focus_has_an_accessible_name(qtbot, make_window, sched):
    window = settled_window(qtbot, make_window, sched)
    for dock in (window.event_dock, window.task_dock):
        dock.raise_()
        QApplication.processEvents()
        missing = focusable_unnamed(window)
        assert not missing, [(w.metaObject().className(), w.objectName()) for w in missing]


def test_the_start_page_and_preferences_name_their_controls(qtbot, settings, tmp_path):
    from taskloom.gui.preferences import PreferencesDialog
    from taskloom.gui.start_page import StartPage, bundled_examples

    page = StartPage([], bundled_examples())
    qtbot.addWidget(page)
    page.show()
    qtbot.waitExposed(page)
    assert not focusable_unnamed(page)
    names = [name for name, _, _ in walk(page.examples_list, limit=3)]
    assert any(name.startswith("etl, A small ETL pipeline") for name in names), names
    dialog = PreferencesDialog(settings)
    qtbot.addWidget(dialog)
    dialog.show()
    assert not focusable_unnamed(dialog)
    dialog.reject()
    page.close()
