"""The start page: what a bare ``taskloom`` (a launcher click) shows.

Recent workflows, the bundled examples, New and Open. Choosing one opens it in the
window, where it waits for Start: the start page itself never runs anything.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from taskloom import resources_dir

from .icons import icon

PATH_ROLE = Qt.ItemDataRole.UserRole


def bundled_examples() -> list[tuple[str, Path, str]]:
    """(name, path, what it shows) of each bundled example, from its first comment."""
    examples = []
    for path in sorted((resources_dir() / "examples").glob("*.toml")):
        comment = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.startswith("#"):
                break
            comment.append(line.lstrip("# ").strip())
        about = " ".join(comment).split(". ")[0].rstrip(".")
        examples.append((path.stem, path, about))
    order = {"etl": 0, "flaky": 1, "recurring": 2}  # simplest first
    return sorted(examples, key=lambda e: (order.get(e[0], 9), e[0]))


def _shown(folder: Path) -> str:
    """A folder as people write it: ~ for their home."""
    try:
        return str(Path("~") / folder.relative_to(Path.home()))
    except ValueError:
        return str(folder)


class StartPage(QWidget):
    """Emits what the person chose; the app layer opens it."""

    openRequested = Signal(str)  # a workflow file
    newRequested = Signal()

    def __init__(self, recent: list[Path], examples, last: Path | None = None, parent=None):
        super().__init__(parent)
        self.setObjectName("startPage")
        self.setWindowTitle("Taskloom")
        self.setWindowIcon(icon("app"))
        self.setAccessibleName("Taskloom start page")
        self.setAccessibleDescription("Open a recent workflow or an example, or make a new one")
        self._requested = False  # one choice per showing: a double click is two clicks

        title = QLabel("Taskloom")
        title.setObjectName("startTitle")
        font = QFont(title.font())
        font.setPointSizeF(font.pointSizeF() * 1.8)
        font.setBold(True)
        title.setFont(font)
        subtitle = QLabel("Open a workflow to see its tasks. Nothing runs until you press Start.")
        subtitle.setObjectName("startSubtitle")
        subtitle.setWordWrap(True)

        self.continue_button = QPushButton()
        self.continue_button.setObjectName("continueButton")
        self.continue_button.setIcon(icon("open-workflow"))
        self.last = last
        if last is not None:
            self.continue_button.setText(f"Continue with {last.name}")
            self.continue_button.setToolTip(str(last))
            self.continue_button.setAccessibleName(f"Continue with {last.name}")
            self.continue_button.setAccessibleDescription(f"Open {last}, the last workflow open")
            self.continue_button.clicked.connect(lambda: self._request(str(last)))
            self.continue_button.setDefault(True)
        self.continue_button.setVisible(last is not None)

        self.recent_list = self._list("recentList", "Recent workflows")
        for path in recent:
            self._add_item(self.recent_list, path.stem, _shown(path.parent), path)
        if not recent:
            empty = QListWidgetItem("No recent workflows yet: try an example")
            empty.setFlags(Qt.ItemFlag.NoItemFlags)
            self.recent_list.addItem(empty)
        self.examples_list = self._list("examplesList", "Examples")
        for name, path, about in examples:
            self._add_item(self.examples_list, name, about, path)

        self.new_button = QPushButton(icon("add-task"), "New workflow")
        self.new_button.setObjectName("newButton")
        self.new_button.setAccessibleDescription("An empty workflow: add tasks, then save it")
        self.new_button.clicked.connect(self._new)
        self.open_button = QPushButton(icon("open-workflow"), "Open…")
        self.open_button.setObjectName("openButton")
        self.open_button.setAccessibleDescription("Choose a workflow file (TOML)")
        self.open_button.clicked.connect(self.browse)
        QShortcut(QKeySequence.StandardKey.Open, self, self.browse)

        columns = QHBoxLayout()
        for heading, widget in (("Recent", self.recent_list), ("Examples", self.examples_list)):
            column = QVBoxLayout()
            label = QLabel(f"<b>{heading}</b>")
            label.setBuddy(widget)
            column.addWidget(label)
            column.addWidget(widget, 1)
            columns.addLayout(column, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.new_button)
        buttons.addWidget(self.open_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 20, 24, 20)
        layout.addWidget(title)
        layout.addWidget(subtitle)
        layout.addSpacing(8)
        layout.addWidget(self.continue_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addLayout(columns, 1)
        layout.addLayout(buttons)
        self.resize(820, 520)

    def _list(self, name: str, accessible: str) -> QListWidget:
        widget = QListWidget()
        widget.setObjectName(name)
        widget.setAccessibleName(accessible)
        widget.setAccessibleDescription("Enter or a click opens the workflow")
        widget.setAlternatingRowColors(True)
        widget.setWordWrap(True)
        widget.setSpacing(3)
        widget.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        widget.setIconSize(widget.iconSize() * 1.5)
        widget.itemClicked.connect(self._item_chosen)
        widget.itemActivated.connect(self._item_chosen)
        return widget

    @staticmethod
    def _add_item(widget: QListWidget, name: str, detail: str, path: Path) -> None:
        item = QListWidgetItem(icon("open-workflow"), f"{name}\n{detail}" if detail else name)
        item.setData(PATH_ROLE, str(path))
        item.setData(Qt.ItemDataRole.AccessibleTextRole, f"{name}, {detail}" if detail else name)
        item.setToolTip(str(path))
        widget.addItem(item)

    def _item_chosen(self, item: QListWidgetItem) -> None:
        path = item.data(PATH_ROLE)
        if path:
            self._request(path)

    def _request(self, path: str) -> None:
        if self._requested:
            return
        self._requested = True
        self.openRequested.emit(path)

    def _new(self) -> None:
        if not self._requested:
            self._requested = True
            self.newRequested.emit()

    def ready(self) -> None:
        """Take the next choice (the last one could not be opened)."""
        self._requested = False

    def browse(self) -> None:
        start = str(self.last.parent) if self.last is not None else ""
        path, _ = QFileDialog.getOpenFileName(self, "Open workflow", start, "Workflows (*.toml)")
        if path:
            self._request(path)
