"""The inspector: everything about the selected task, and its attempts with their output."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFormLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QScrollArea,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine import TaskInfo, TaskState

from .style import (
    OUTCOME_COLOURS,
    RECURRING_MARK,
    STATE_COLOURS,
    STATE_GLYPHS,
    STATE_LABELS,
    text_colour_on,
)


def describe_delay(seconds: float) -> str:
    """'in 4.2 s', 'in 3 min', 'due 2 s ago'."""
    late = seconds < 0
    seconds = abs(seconds)
    if seconds < 60:
        text = f"{seconds:.1f} s"
    elif seconds < 3600:
        text = f"{seconds / 60:.1f} min"
    elif seconds < 86400:
        text = f"{seconds / 3600:.1f} h"
    else:
        text = f"{seconds / 86400:.1f} d"
    return f"due {text} ago" if late else f"in {text}"


class Inspector(QWidget):
    taskActivated = Signal(str)  # a dependency link was clicked

    def __init__(self, bridge, parent=None):
        super().__init__(parent)
        self.setObjectName("inspector")
        self.bridge = bridge
        self.task_id: str | None = None
        self.title = QLabel("No task selected")
        font = QFont()
        font.setPointSizeF(font.pointSizeF() * 1.25)
        font.setBold(True)
        self.title.setFont(font)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.state = QLabel()
        self.fields: dict[str, QLabel] = {}
        form = QFormLayout()
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        form.addRow("State", self.state)
        for key in ("next run", "priority", "attempts", "recurring", "after", "before", "error"):
            label = QLabel("—")
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
            label.linkActivated.connect(self.taskActivated)
            self.fields[key] = label
            form.addRow(key.capitalize(), label)
        self.attempt_list = QTreeWidget()
        self.attempt_list.setObjectName("attempts")
        self.attempt_list.setHeaderLabels(["#", "started", "took", "outcome", "exit"])
        self.attempt_list.setRootIsDecorated(False)
        self.attempt_list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.attempt_list.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.attempt_list.header().setStretchLastSection(True)
        self.attempt_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.attempt_list.currentItemChanged.connect(self._show_attempt)
        self.output = QPlainTextEdit()
        self.output.setObjectName("attemptOutput")
        self.output.setReadOnly(True)
        self.output.setPlaceholderText("Select an attempt to see its error, traceback and output")
        mono = QFont("DejaVu Sans Mono")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        mono.setPointSizeF(9)
        self.output.setFont(mono)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.title)
        top_layout.addLayout(form)
        top_layout.addStretch(1)
        # The settings scroll rather than clip when the dock is short.
        top_scroll = QScrollArea()
        top_scroll.setWidget(top)
        top_scroll.setWidgetResizable(True)
        top_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        top_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top_scroll)
        split.addWidget(self.attempt_list)
        split.addWidget(self.output)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 1)
        split.setStretchFactor(2, 1)
        split.setSizes([250, 110, 160])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(split)
        self._attempts = []
        self.show_task(None)

    def show_task(self, tid: str | None) -> None:
        self.task_id = tid
        self.refresh()

    def refresh(self) -> None:
        info = self.bridge.tasks.get(self.task_id) if self.task_id else None
        for label in self.fields.values():
            label.setText("—")
        if info is None:
            self.title.setText("No task selected" if not self.task_id else f"{self.task_id} (gone)")
            self.state.setText("")
            self.attempt_list.clear()
            self.output.clear()
            self._attempts = []
            return
        self._show_info(info)
        self._show_attempts(self.bridge.attempts(info.id))

    def tick(self) -> None:
        """Refresh only the countdown (called every second)."""
        info = self.bridge.tasks.get(self.task_id) if self.task_id else None
        if info is None:
            return
        if info.state is TaskState.RUNNING:  # its attempt's duration grows
            self._show_attempts(self.bridge.attempts(info.id))
        self.fields["next run"].setText(self._next_run_text(info))

    def _next_run_text(self, info: TaskInfo) -> str:
        waiting = info.state in (TaskState.SCHEDULED, TaskState.RETRY_WAIT, TaskState.READY)
        if info.run_at is None or not (waiting or info.recurring and info.state.settled):
            return "—"
        return describe_delay(info.run_at - self.bridge.clock_now())

    def _show_info(self, info: TaskInfo) -> None:
        self.title.setText(info.name or info.id)
        fill = QColor(STATE_COLOURS[info.state])
        ink = text_colour_on(fill).name()
        paused = " · paused" if info.paused else ""
        self.state.setText(
            f'<span style="background:{fill.name()}; color:{ink}; padding:2px 6px;">'
            f"&nbsp;{STATE_GLYPHS[info.state]} {STATE_LABELS[info.state]}&nbsp;</span>{paused}"
        )
        self.fields["next run"].setText(self._next_run_text(info))
        self.fields["priority"].setText(str(info.priority))
        self.fields["attempts"].setText(str(info.attempt))
        self.fields["recurring"].setText(f"{RECURRING_MARK} yes" if info.recurring else "no")
        self.fields["after"].setText(_links(info.deps))
        self.fields["before"].setText(_links(info.dependents))
        self.fields["error"].setText(info.error or "—")

    def _show_attempts(self, attempts) -> None:
        current = self.attempt_list.currentItem()
        keep = current.data(0, Qt.ItemDataRole.UserRole) if current else None
        self._attempts = attempts
        self.attempt_list.clear()
        now = self.bridge.clock_now()
        for index, attempt in enumerate(attempts):
            took = (attempt.ended if attempt.ended is not None else now) - attempt.started
            started = time.strftime(
                "%H:%M:%S", time.localtime(self.bridge.clock_to_wall(attempt.started))
            )
            item = QTreeWidgetItem(
                [
                    str(attempt.number),
                    started,
                    f"{took:.2f} s",
                    attempt.outcome,
                    "" if attempt.exit_code is None else str(attempt.exit_code),
                ]
            )
            item.setData(0, Qt.ItemDataRole.UserRole, index)
            item.setForeground(3, QColor(OUTCOME_COLOURS.get(attempt.outcome, "#888888")))
            self.attempt_list.addTopLevelItem(item)
        if attempts:
            row = keep if keep is not None and keep < len(attempts) else len(attempts) - 1
            self.attempt_list.setCurrentItem(self.attempt_list.topLevelItem(row))
        else:
            self.output.clear()

    def _show_attempt(self, item, _previous=None) -> None:
        if item is None:
            return
        attempt = self._attempts[item.data(0, Qt.ItemDataRole.UserRole)]
        parts = []
        if attempt.error:
            parts.append(attempt.error)
        if attempt.output:
            parts.append("── output ──\n" + attempt.output.rstrip())
        if attempt.traceback:
            parts.append("── traceback ──\n" + attempt.traceback.rstrip())
        if attempt.log_path:
            parts.append(f"log: {attempt.log_path}")
        self.output.setPlainText(
            "\n\n".join(parts) or f"attempt {attempt.number}: {attempt.outcome}"
        )


def _links(ids) -> str:
    if not ids:
        return "—"
    return ", ".join(f'<a href="{tid}">{tid}</a>' for tid in ids)
