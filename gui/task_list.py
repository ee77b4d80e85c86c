"""The graph's tasks as a list: what assistive technology reads, and a keyboard
route to every task.

A graph drawn on a canvas is one opaque picture to a screen reader. This panel
(View > Tasks, a tab beside Events) lists every task with its state; each row's
accessible name is "task, state" and its description the dependencies and the
error. Selecting a row selects the task in the graph and the other way round.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping

from PySide6.QtCore import (
    QIdentityProxyModel,
    QItemSelectionModel,
    QStringListModel,
    Qt,
    Signal,
)
from PySide6.QtWidgets import QAbstractItemView, QListView, QVBoxLayout, QWidget

from .style import RECURRING_MARK, STATE_GLYPHS, STATE_LABELS

ID_ROLE = Qt.ItemDataRole.UserRole
# A batch adding or removing more rows than this is shown by a reset (one signal;
# Qt re-reads the rows in C++) rather than row by row: each Qt call may wait for the
# GIL from busy workers. Fewer are inserted in place (work per row changed).
RESET_ABOVE = 32


class Rows(Mapping):
    """Task id -> row, read from the sorted ids by bisection: nothing to rebuild
    when a row goes in or out."""

    def __init__(self, ids: list[str]):
        self._ids = ids

    def __getitem__(self, tid: str) -> int:
        row = bisect_left(self._ids, tid)
        if row < len(self._ids) and self._ids[row] == tid:
            return row
        raise KeyError(tid)

    def __contains__(self, tid: object) -> bool:
        if not isinstance(tid, str):
            return False
        row = bisect_left(self._ids, tid)
        return row < len(self._ids) and self._ids[row] == tid

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


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


class TaskListModel(QIdentityProxyModel):
    """One row per task, sorted by id.

    The rows themselves live in a C++ ``QStringListModel``; this proxy answers
    ``data`` from the tasks. A list view lays out every row again after any change,
    asking the model for each row's index: with the rows counted in Python that was
    two Python calls a row (each waiting for the GIL from busy workers), 40,000 for
    one task added to 20,000. Only the rows painted reach Python now.
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self._rows = QStringListModel(self)
        self.setSourceModel(self._rows)
        self.ids: list[str] = []
        self.infos: dict = {}
        self.row_of: Mapping[str, int] = Rows(self.ids)
        self.resets = 0  # full rebuilds (the tests count them)

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

    def set_tasks(self, tasks: Mapping) -> None:
        self.ids = sorted(tasks)
        self.infos = dict(tasks)
        self.row_of = Rows(self.ids)
        self.resets += 1
        self._rows.setStringList(self.ids)  # one reset, in C++

    def apply_change(self, tasks: Mapping, added: Iterable[str], removed: Iterable[str]) -> None:
        """One batch: rows in and out where they sort, the rest untouched (a reset
        only when the batch is big). ``tasks`` is every task after the batch."""
        added = [t for t in added if t in tasks and t not in self.row_of]
        removed = [t for t in removed if t not in tasks and t in self.row_of]
        if len(added) + len(removed) > RESET_ABOVE:
            self._merge(tasks, added, removed)
            return
        for tid in removed:
            row = self.row_of[tid]
            del self.ids[row]
            del self.infos[tid]
            self._rows.removeRows(row, 1)
        for tid in added:
            row = bisect_left(self.ids, tid)
            self.ids.insert(row, tid)
            self.infos[tid] = tasks[tid]
            self._rows.insertRows(row, 1)  # its text is ``data``'s: none kept there

    def _merge(self, tasks: Mapping, added: list[str], removed: list[str]) -> None:
        """A big batch: the new ids merged into the sorted ones (two sorted runs: one
        linear merge in C, not a sort of every task in Python's order), then one reset.
        Python work per task added or removed; Qt reads the rows in C++."""
        ids, infos = self.ids, self.infos
        if removed:
            gone = set(removed)
            ids[:] = [t for t in ids if t not in gone]
            for tid in gone:
                del infos[tid]
        if added:
            ids.extend(sorted(added))
            ids.sort()
            for tid in added:
                infos[tid] = tasks[tid]
        self.resets += 1
        self._rows.setStringList(ids)

    def update_tasks(self, changed: dict) -> None:
        """New states of known tasks: one dataChanged over the rows touched."""
        rows = []
        for tid, info in changed.items():
            row = self.row_of.get(tid)
            if row is not None:
                self.infos[tid] = info
                rows.append(row)
        if rows:
            self.dataChanged.emit(self.index(min(rows), 0), self.index(max(rows), 0))


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
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
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

    def apply_change(self, tasks: Mapping, added: Iterable[str], removed: Iterable[str]) -> None:
        """A batch's rows added and removed (``set_tasks`` rebuilds them all)."""
        current = self.view.currentIndex().data(ID_ROLE)
        self._syncing = True
        try:
            self.model.apply_change(tasks, added, removed)
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
        index = self.model.index(self.model.row_of[tid], 0)
        flags = QItemSelectionModel.SelectionFlag.ClearAndSelect
        self.view.selectionModel().setCurrentIndex(index, flags)

    def _on_current(self, current, _previous) -> None:
        if not self._syncing and current.isValid():
            self.taskSelected.emit(current.data(ID_ROLE))
