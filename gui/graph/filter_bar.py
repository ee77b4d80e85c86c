"""The strip above the graph that filters it and opens or closes its groups."""

from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLineEdit, QToolButton, QWidget

from taskloom.engine import TaskState

from ..style import STATE_GLYPHS
from .filters import GraphFilter

S = TaskState
# (label, states, with what they block)
STATE_CHOICES: tuple[tuple[str, frozenset[TaskState], bool], ...] = (
    ("All states", frozenset(), False),
    (f"{STATE_GLYPHS[S.FAILED]} Failed and what they block", frozenset({S.FAILED}), True),
    (f"{STATE_GLYPHS[S.FAILED]} Failed only", frozenset({S.FAILED}), False),
    (f"{STATE_GLYPHS[S.RUNNING]} Running", frozenset({S.RUNNING}), False),
    (
        f"{STATE_GLYPHS[S.PENDING]} Waiting (pending, scheduled, ready, retry)",
        frozenset({S.PENDING, S.SCHEDULED, S.READY, S.RETRY_WAIT}),
        False,
    ),
    (
        f"{STATE_GLYPHS[S.SUCCEEDED]} Finished",
        frozenset({S.SUCCEEDED, S.FAILED, S.SKIPPED, S.CANCELLED}),
        False,
    ),
)
TYPING_PAUSE_MS = 250  # a big graph is laid out again per filter: wait for the typing


class FilterBar(QWidget):
    filterChanged = Signal(object)  # GraphFilter
    expandAll = Signal()
    collapseAll = Signal()

    def __init__(self, selection=lambda: [], parent=None):
        super().__init__(parent)
        self.setObjectName("graphFilter")
        self.selection = selection  # callable: the selected task ids, for "around"
        self._around: tuple[str, ...] = ()
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 2, 6, 2)
        self.states = QComboBox()
        self.states.setObjectName("graphFilterState")
        for label, states, blocked in STATE_CHOICES:
            self.states.addItem(label, (states, blocked))
        # Never wider than a short label: the bar must not set the window's minimum width.
        self.states.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.states.setMinimumContentsLength(8)
        self.text = QLineEdit()
        self.text.setObjectName("graphFilterText")
        self.text.setPlaceholderText("Filter graph by name…")
        self.text.setClearButtonEnabled(True)
        self.text.setMinimumWidth(60)
        self.around = QToolButton()
        self.around.setObjectName("graphFilterAround")
        self.around.setText("Around")
        self.around.setCheckable(True)
        self.around.setToolTip("Show only the selected tasks and what they wait for or block")
        self.expand = QToolButton()
        self.expand.setText("⊞ All")
        self.expand.setToolTip("Expand every group (double-click or + expands one)")
        self.collapse = QToolButton()
        self.collapse.setText("⊟ All")
        self.collapse.setToolTip("Collapse every group (- collapses the selected task's)")
        for widget, name in (  # what a screen reader says for each control
            (self.states, "Show tasks in state"),
            (self.text, "Filter graph by name"),
            (self.around, "Only the selection and what it waits for or blocks"),
            (self.expand, "Expand every group"),
            (self.collapse, "Collapse every group"),
        ):
            widget.setAccessibleName(name)
            row.addWidget(widget)
        row.setStretch(1, 1)
        self._typing = QTimer(self)
        self._typing.setSingleShot(True)
        self._typing.setInterval(TYPING_PAUSE_MS)
        self._typing.timeout.connect(self._emit)
        self.states.currentIndexChanged.connect(self._emit)
        self.text.textChanged.connect(lambda _text: self._typing.start())
        self.around.toggled.connect(self._toggle_around)
        self.expand.clicked.connect(self.expandAll)
        self.collapse.clicked.connect(self.collapseAll)

    def _toggle_around(self, on: bool) -> None:
        self._around = tuple(self.selection()) if on else ()
        if on and not self._around:
            self.around.setChecked(False)  # nothing selected: nothing to centre on
            return
        self._emit()

    def current(self) -> GraphFilter:
        states, blocked = self.states.currentData()
        return GraphFilter(
            states=states, with_blocked=blocked, text=self.text.text(), around=self._around
        )

    def _emit(self, *_) -> None:
        self._typing.stop()
        self.filterChanged.emit(self.current())
