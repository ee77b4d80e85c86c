"""Names and descriptions for assistive technology, in one place.

Qt names a button after its text and a dock after its title; everything drawn or
unlabelled (the graph, the timeline, filters, inspector fields, status labels) is
named here. The graph's own description follows the selected task, and an
accessibility event tells a screen reader when it changes; its tasks are listed
one by one in the Tasks panel (``task_list.py``).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible, QAccessibleEvent
from PySide6.QtWidgets import QDockWidget, QFocusFrame, QScrollArea, QToolBar

from .task_list import describe, spoken

GRAPH_KEYS = "Arrow keys move between tasks; the Tasks panel lists every task"
TIMELINE_KEYS = "Left and Right pan, plus and minus zoom, Home follows now"


def name(widget, text: str, description: str = "") -> None:
    widget.setAccessibleName(text)
    if description:
        widget.setAccessibleDescription(description)


def label_window(window) -> None:
    """Name every panel and control of a MainWindow that Qt would leave unnamed."""
    name(window, "Taskloom", "A workflow's task graph, timeline, inspector and events")
    name(window.graph_view, "Task graph", GRAPH_KEYS)
    name(window.graph_view.viewport(), "Task graph")
    name(window.legend, "State legend", "The colour and glyph of each task state")
    name(window.search, "Find task", "Type a task's name and press Enter to select it")
    name(window.inspector, "Inspector", "The selected task's settings, attempts and output")
    inspector = window.inspector
    name(inspector.title, "Selected task")
    name(inspector.state, "State")
    for key, label in inspector.fields.items():
        name(label, key.capitalize())
    name(inspector.attempt_list, "Attempts", "Every attempt of the selected task, newest first")
    name(inspector.earlier_runs, "Earlier runs", "Also list attempts of earlier runs")
    name(inspector.output, "Attempt output", "The selected attempt's error, traceback, output")
    name(inspector.open_log, "Open whole log")
    for area in inspector.findChildren(QScrollArea):
        name(area, "Inspector page")
    timeline = window.timeline
    name(timeline, "Timeline", "Attempts and upcoming runs of each task over time")
    name(timeline.canvas, "Timeline lanes", TIMELINE_KEYS)
    # The lanes take focus themselves: their scroll area is no separate Tab stop.
    timeline.scroll_area.setFocusPolicy(Qt.FocusPolicy.NoFocus)
    name(timeline.axis, "Time axis")
    name(timeline.axis.now_button, "Follow now")
    log = window.event_log
    name(log, "Events", "The newest events of the run")
    name(log.task_filter, "Filter events by task")
    name(log.kind_filter, "Filter events by kind")
    name(log.table, "Event log", "One row per event: sequence, time, task, event, attempt")
    panel = window.status_panel
    for label, text in (
        (panel.counts, "Tasks per state"),
        (panel.rate, "Runs per second"),
        (panel.busy, "Busy workers"),
        (panel.paused, "Paused"),
    ):
        name(label, text)
    name(window.task_list, "Tasks", "Every task of the graph with its state")
    for dock in window.findChildren(QDockWidget):
        name(dock, dock.windowTitle())
    toolbar = window.findChild(QToolBar, "mainToolbar")
    if toolbar is not None:
        name(toolbar, "Main toolbar")
    name(window.menuBar(), "Menu bar")
    name(window.statusBar(), "Status bar")


def focusable_unnamed(root) -> list:
    """The visible widgets under ``root`` that take keyboard focus and have no
    accessible name (what a screen reader would announce as nothing)."""
    from PySide6.QtWidgets import QWidget

    missing = []
    for widget in root.findChildren(QWidget):
        if not widget.isVisibleTo(root) or isinstance(widget, QFocusFrame):
            continue
        if widget.focusPolicy() == Qt.FocusPolicy.NoFocus:
            continue
        interface = QAccessible.queryAccessibleInterface(widget)
        if interface is None or not interface.text(QAccessible.Text.Name).strip():
            missing.append(widget)
    return missing


class GraphDescription:
    """Keeps the graph's accessible description on the selected task, and tells
    assistive technology when it changes."""

    def __init__(self, view, tasks_of):
        self.view = view
        self.tasks_of = tasks_of  # () -> {task id: TaskInfo}

    def update(self, selected: list[str]) -> None:
        tasks = self.tasks_of()
        info = tasks.get(selected[0]) if selected else None
        if info is None:
            text = f"{len(tasks)} tasks. {GRAPH_KEYS}"
        else:
            text = f"Selected {spoken(info)}; {describe(info)}"
        if text == self.view.accessibleDescription():
            return
        self.view.setAccessibleDescription(text)
        if QAccessible.isActive():
            event = QAccessibleEvent(self.view, QAccessible.Event.DescriptionChanged)
            QAccessible.updateAccessibility(event)
