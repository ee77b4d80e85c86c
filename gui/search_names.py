"""The names Find offers as a person types: every task's id, sorted.

Read again only when the search field has the focus (when a person is in it, or
gets there with Ctrl+F), not on every batch of new tasks: sorting 20,000 names and
handing them to Qt at every structure change of a flood held the GUI thread for
nothing anyone saw.
"""

from __future__ import annotations

from collections.abc import Mapping

from PySide6.QtCore import QEvent, QObject, QStringListModel
from PySide6.QtWidgets import QWidget


class SearchNames(QStringListModel):
    def __init__(self, field: QWidget, parent: QObject | None = None):
        super().__init__(parent)
        self._field = field
        self._tasks: Mapping[str, object] = {}
        self._stale = False
        self.reads = 0  # times the names were read again (the tests count them)
        field.installEventFilter(self)

    def follow(self, tasks: Mapping[str, object]) -> None:
        """``tasks`` (task id -> anything) changed: the names are read again now if
        the field has the focus, else when it gets it."""
        self._tasks = tasks
        self._stale = True
        if self._field.hasFocus():
            self.fresh()

    def fresh(self) -> None:
        if self._stale:
            self._stale = False
            self.reads += 1
            self.setStringList(sorted(self._tasks))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.FocusIn:
            self.fresh()  # before the completer reads them for the first key
        return False
