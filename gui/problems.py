"""The problems panel: every problem of a workflow file, where people look.

Each row is ``file:line:column: message``; activating one selects the task it is
about (when the window shows that file) and says where it is. Reload opens the
file again once it is fixed.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from taskloom.engine.workflow_text import locate


def located(problems, text: str | None):
    """(problem, line, column) for each problem: its own place, else where its task
    (and key) is written in ``text``, else (None, None)."""
    rows = []
    for problem in problems:
        line, column = problem.line, problem.column
        if line is None and text is not None and (problem.task or problem.key):
            found = locate(text, problem.task, problem.key)
            if found is not None:
                line, column = found
        rows.append((problem, line, column))
    return rows


def _read(path) -> str | None:
    try:
        return Path(path).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None


class ProblemsPanel(QWidget):
    taskActivated = Signal(str)
    reloadRequested = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("problems")
        self.path: str | None = None
        self.summary = QLabel()
        self.summary.setObjectName("problemsSummary")
        self.summary.setWordWrap(True)
        self.list = QListWidget()
        self.list.setObjectName("problemsList")
        self.list.setWordWrap(True)  # a long message wraps instead of being cut off
        self.list.itemActivated.connect(self._activated)
        self.list.itemClicked.connect(self._activated)
        self.reload = QPushButton("Reload")
        self.reload.setToolTip("Open the file again (after fixing it)")
        self.reload.clicked.connect(lambda: self.path and self.reloadRequested.emit(self.path))
        self.edit = QPushButton("Open in editor")
        self.edit.clicked.connect(
            lambda: self.path and QDesktopServices.openUrl(QUrl.fromLocalFile(self.path))
        )
        buttons = QHBoxLayout()
        buttons.addWidget(self.summary, 1)
        buttons.addWidget(self.edit)
        buttons.addWidget(self.reload)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(buttons)
        layout.addWidget(self.list, 1)

    def show_problems(self, path, problems) -> None:
        self.path = str(path)
        self.list.clear()
        count = len(problems)
        self.summary.setText(
            f"{Path(path).name}: {count} problem{'s' if count != 1 else ''}; "
            "nothing in it was started. Fix the file, then Reload."
        )
        for problem, line, column in located(problems, _read(path)):
            file = Path(problem.file).name  # the whole path is in the tooltip
            place = f"{file}:{line}:{column}" if line is not None else file
            where = f" {problem.where}:" if problem.where and problem.line is None else ""
            item = QListWidgetItem(f"{place}:{where} {problem.message}")
            item.setData(Qt.ItemDataRole.UserRole, problem.task)
            item.setToolTip(str(problem))
            self.list.addItem(item)

    def _activated(self, item: QListWidgetItem) -> None:
        task = item.data(Qt.ItemDataRole.UserRole)
        if task:
            self.taskActivated.emit(task)
