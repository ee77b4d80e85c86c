"""The graph's tasks as a list: what assistive technology reads, and a keyboard
route to every task.

A graph drawn on a canvas is one opaque picture to a screen reader. This panel
(View > Tasks, a tab beside Events) lists every task with its state; each row's
accessible name is "task, state" and its description the dependencies and the
error. Selecting a row selects the task in the graph and the other way round.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QItemSelectionModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import QListView, QVBoxLayout, QWidget

from .style import RECURRING_MARK, STATE_GLYPHS, STATE_LABELS

ID_ROLE = Qt.ItemDataRole.UserRole


def describe(info) -> str:
    """What a person needs to hear about a task beyond its name and state."""
    parts = []
    if info.recurring:
        parts.append("recurring")
    if info.paused:
        parts.append("paused")
    if info.attempt:
        parts.append(f"attempt {info.attempt}")
    parts.append("depends on " + ", ".join(info.deps) if info.deps else "no dependencies")
    if info.error:
        parts.append(f"error: {info.error}")
    return "; ".join(parts)


def spoken(info) -> str:
    """The accessible name of a task: its id and its state."""
    state = STATE_LABELS[info.state]
    return f"{info.id}, {state}" + (", paused" if info.paused else "")


class TaskListModel(QAbstractListModel):
    """One row per task, in the order the graph's layout gives (or first seen)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.ids: list[str] = []
        self.infos: dict = {}
        self.row_of: dict[str, int] = {}

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: B008 (Qt's default)
        return 0 if parent.isValid() else len(self.ids)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        info = self.infos[self.ids[index.row()]]
        if role == Qt.ItemDataRole.DisplayRole:
            mark = f" {RECURRING_MARK}" if info.recurring else ""
            return f"{STATE_GLYPHS[info.state]} {info.id}{mark}  ({STATE_LABELS[info.state]})"
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return spoken(info)
        if role in (Qt.ItemDataRole.AccessibleDescriptionRole, Qt.ItemDataRole.ToolTipRole):
            return describe(info)
        if role == ID_ROLE:
            return info.id
        return None

    def set_tasks(self, tasks: dict) -> None:
        self.beginResetModel()
        self.ids = sorted(tasks)
        self.infos = dict(tasks)
        self.row_of = {tid: row for row, tid in enumerate(self.ids)}
        self.endResetModel()

    def update_tasks(self, changed: dict) -> None:
        """New states of known tasks: one dataChanged over the rows touched."""
        rows = []
        for tid, info in changed.items():
            row = self.row_of.get(tid)
            if row is not None:
                self.infos[tid] = info
                rows.append(row)
        if rows:
            self.dataChanged.emit(self.index(min(rows)), self.index(max(rows)))


class TaskList(QWidget):
    """The list view and its model; emits the task the person moved to."""

    taskSelected = Signal(str)
    taskActivated = Signal(str)  # Enter or a double click: show its inspector

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("taskListPanel")
        self.setAccessibleName("Tasks")
        self.model = TaskListModel(self)
        self.view = QListView()
        self.view.setObjectName("taskList")
        self.view.setModel(self.model)
        self.view.setUniformItemSizes(True)
        self.view.setAccessibleName("Tasks in the graph")
        self.view.setAccessibleDescription(
            "Every task with its state; moving here selects it in the graph, Enter shows "
            "the inspector"
        )
        self.view.selectionModel().currentChanged.connect(self._on_current)
        self.view.activated.connect(lambda index: self.taskActivated.emit(index.data(ID_ROLE)))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        self._syncing = False

    def set_tasks(self, tasks: dict) -> None:
        current = self.view.currentIndex().data(ID_ROLE)
        self._syncing = True
        try:
            self.model.set_tasks(tasks)
            if current in self.model.row_of:
                self._make_current(current)
        finally:
            self._syncing = False

    def update_tasks(self, changed: dict) -> None:
        self.model.update_tasks(changed)

    def select(self, tid: str | None) -> None:
        """The graph's selection changed: follow it without echoing it back."""
        if tid == self.view.currentIndex().data(ID_ROLE):
            return
        self._syncing = True
        try:
            if tid is None or tid not in self.model.row_of:
                self.view.clearSelection()
            else:
                self._make_current(tid)
        finally:
            self._syncing = False

    def _make_current(self, tid: str) -> None:
        index = self.model.index(self.model.row_of[tid])
        flags = QItemSelectionModel.SelectionFlag.ClearAndSelect
        self.view.selectionModel().setCurrentIndex(index, flags)

    def _on_current(self, current, _previous) -> None:
        if not self._syncing and current.isValid():
            self.taskSelected.emit(current.data(ID_ROLE))
