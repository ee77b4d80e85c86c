"""The add-task dialog: every field checked as you type, problems explained next to it.

It only builds a TaskSpec; the controller submits it (through the undo stack).
"""

from __future__ import annotations

import importlib
import shlex
from datetime import UTC, datetime, timedelta

from PySide6.QtCore import QDateTime, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QComboBox,
    QDateTimeEdit,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QRadioButton,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from engine import RetryPolicy

from .task_spec import TaskSpec, make_call, make_command

SCHEDULES = (
    ("now", "As soon as its dependencies allow"),
    ("at", "At a date and time"),
    ("after", "After a delay"),
    ("every", "Every interval"),
    ("cron", "On a cron schedule"),
)
ERROR_STYLE = "color: #D55E00;"


def parse_duration(text: str) -> float:
    durations = importlib.import_module("engine.durations")
    seconds = durations.parse_duration(text)
    if seconds < 0:
        raise ValueError("must not be negative")
    return seconds


def _error_label() -> QLabel:
    label = QLabel()
    label.setStyleSheet(ERROR_STYLE)
    label.setWordWrap(True)
    label.hide()
    return label


class AddTaskDialog(QDialog):
    specReady = Signal(object)  # a TaskSpec

    def __init__(self, existing_ids, parent=None):
        super().__init__(parent)
        self.setObjectName("addTaskDialog")
        self.setWindowTitle("Add task")
        self.existing = set(existing_ids)
        self.errors: dict[str, QLabel] = {}
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)

        self.name = QLineEdit(objectName="taskName", placeholderText="e.g. load_warehouse")
        self._row(form, "Name", self.name, "name")

        self.kind_command = QRadioButton("Command", objectName="kindCommand")
        self.kind_call = QRadioButton("Python callable", objectName="kindCall")
        self.kind_command.setChecked(True)
        self.kind_group = QButtonGroup(self)
        self.kind_group.addButton(self.kind_command)
        self.kind_group.addButton(self.kind_call)
        kinds = QHBoxLayout()
        kinds.addWidget(self.kind_command)
        kinds.addWidget(self.kind_call)
        kinds.addStretch(1)
        form.addRow("Runs", kinds)
        self.target = QLineEdit(objectName="taskTarget")
        self._row(form, "", self.target, "target")

        self.schedule = QComboBox(objectName="scheduleKind")
        for key, text in SCHEDULES:
            self.schedule.addItem(text, key)
        form.addRow("When", self.schedule)
        self.at = QDateTimeEdit(QDateTime.currentDateTime().addSecs(300), objectName="scheduleAt")
        self.at.setCalendarPopup(True)
        self.at.setDisplayFormat("yyyy-MM-dd HH:mm:ss")
        self.delay = QLineEdit(objectName="scheduleDelay", placeholderText="90s, 5m, 1h30m")
        self.interval = QLineEdit(objectName="scheduleInterval", placeholderText="30s, 5m, 1h")
        self.cron = QLineEdit(objectName="scheduleCron", placeholderText="*/15 * * * *")
        self.tz = QLineEdit("UTC", objectName="scheduleTz")
        cron_box = QWidget()
        cron_layout = QHBoxLayout(cron_box)
        cron_layout.setContentsMargins(0, 0, 0, 0)
        cron_layout.addWidget(self.cron, 3)
        cron_layout.addWidget(QLabel("zone"))
        cron_layout.addWidget(self.tz, 2)
        self.when = QStackedWidget()
        for widget in (QWidget(), self.at, self.delay, self.interval, cron_box):
            self.when.addWidget(widget)
        self._row(form, "", self.when, "schedule")
        self.preview = QLabel(objectName="schedulePreview")
        self.preview.setWordWrap(True)
        self.preview.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # Room for a description and five times, so the dialog does not jump as you type.
        self.preview.setMinimumHeight(self.preview.fontMetrics().lineSpacing() * 6 + 4)
        self.preview.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        form.addRow("Next runs", self.preview)

        self.priority = QSpinBox(objectName="priority")
        self.priority.setRange(-1000, 1000)
        self.priority.setToolTip("Larger runs first when several tasks are due")
        form.addRow("Priority", self.priority)

        retry_box = QGroupBox("Retries")
        retry_form = QFormLayout(retry_box)
        self.max_attempts = QSpinBox(objectName="maxAttempts")
        self.max_attempts.setRange(1, 100)
        self.backoff = QLineEdit("1s", objectName="backoffBase")
        self.factor = QDoubleSpinBox(objectName="backoffFactor")
        self.factor.setRange(1.0, 10.0)
        self.factor.setValue(2.0)
        self.max_delay = QLineEdit("5m", objectName="backoffMax")
        retry_form.addRow("Attempts", self.max_attempts)
        self._row(retry_form, "First wait", self.backoff, "backoff")
        retry_form.addRow("Factor", self.factor)
        self._row(retry_form, "Longest wait", self.max_delay, "max_delay")
        self.timeout = QLineEdit(objectName="timeout", placeholderText="none, or 10m")
        deps_box = QVBoxLayout()
        self.deps = QListWidget(objectName="deps")
        self.deps.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        for tid in sorted(self.existing):
            item = QListWidgetItem(tid)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.deps.addItem(item)
        self.deps.setMaximumHeight(110)
        deps_box.addWidget(self.deps)

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        form.addRow(retry_box)
        self._row(form, "Timeout", self.timeout, "timeout")
        form.addRow("Runs after", self.deps)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Add task")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)

        for line in (
            self.name,
            self.target,
            self.delay,
            self.interval,
            self.cron,
            self.tz,
            self.backoff,
            self.max_delay,
            self.timeout,
        ):
            line.textChanged.connect(self.validate)
        self.at.dateTimeChanged.connect(self.validate)
        self.schedule.currentIndexChanged.connect(self._on_schedule_kind)
        self.kind_group.buttonToggled.connect(self._on_target_kind)
        self._on_target_kind()
        self._on_schedule_kind()
        self.resize(520, self.sizeHint().height())

    def _row(self, form: QFormLayout, label: str, widget: QWidget, key: str) -> None:
        box = QWidget()
        column = QVBoxLayout(box)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(widget)
        self.errors[key] = _error_label()
        self.errors[key].setObjectName(f"{key}Error")
        column.addWidget(self.errors[key])
        form.addRow(label, box)

    def _on_target_kind(self, *_):
        if self.kind_command.isChecked():
            self.target.setPlaceholderText("python3 etl.py --date today")
        else:
            self.target.setPlaceholderText("package.module:function")
        self.validate()

    def _on_schedule_kind(self, *_):
        self.when.setCurrentIndex(self.schedule.currentIndex())
        self.when.setVisible(self.schedule.currentData() != "now")
        self.validate()

    # -- checking ------------------------------------------------------------------
    def validate(self, *_) -> TaskSpec | None:
        """Check every field; show problems next to them; return the spec when all are fine."""
        problems: dict[str, str] = {}
        name = self.name.text().strip()
        if name in self.existing:
            problems["name"] = f"a task named “{name}” already exists"
        elif name and any(c.isspace() for c in name):
            problems["name"] = "no spaces in a task name"
        target = None
        text = self.target.text().strip()
        if not text:
            problems["target"] = "say what to run"
        elif self.kind_command.isChecked():
            try:
                shlex.split(text)
                target = make_command(text)
            except ValueError as exc:
                problems["target"] = f"cannot split this command line: {exc}"
        else:
            try:
                target = make_call(text)
            except (ValueError, TypeError) as exc:
                problems["target"] = str(exc)
        spec_kw, preview = self._schedule(problems)
        retry = self._retry(problems)
        timeout = None
        if self.timeout.text().strip():
            try:
                timeout = parse_duration(self.timeout.text())
                if timeout <= 0:
                    problems["timeout"] = "must be longer than zero"
            except ValueError as exc:
                problems["timeout"] = str(exc)
        for key, label in self.errors.items():
            label.setText(problems.get(key, ""))
            label.setVisible(key in problems)
        self.preview.setText(preview)
        ok = not problems
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok)
        if not ok:
            return None
        deps = tuple(
            self.deps.item(i).text()
            for i in range(self.deps.count())
            if self.deps.item(i).checkState() == Qt.CheckState.Checked
        )
        return TaskSpec(
            name=name,
            target=target,
            priority=self.priority.value(),
            retry=retry,
            timeout=timeout,
            deps=deps,
            **spec_kw,
        )

    def _schedule(self, problems) -> tuple[dict, str]:
        kind = self.schedule.currentData()
        now = datetime.now(UTC)
        try:
            if kind == "at":
                at = self.at.dateTime().toPython().astimezone()
                if at < now:
                    problems["schedule"] = "this time has passed; it would run at once"
                return {"schedule": "at", "at": at}, _times([at], now)
            if kind == "after":
                delay = parse_duration(self.delay.text() or "")
                return {"schedule": "after", "delay": delay}, _times(
                    [now + timedelta(seconds=delay)], now
                )
            if kind == "every":
                interval = parse_duration(self.interval.text() or "")
                if interval <= 0:
                    raise ValueError("the interval must be longer than zero")
                times = [now + timedelta(seconds=interval * i) for i in range(1, 6)]
                return {"schedule": "every", "interval": interval}, _times(times, now)
            if kind == "cron":
                cron = importlib.import_module("engine.cron")
                trigger = cron.CronTrigger(self.cron.text(), tz=self.tz.text().strip() or "UTC")
                times = trigger.next_n(now, 5) if hasattr(trigger, "next_n") else []
                described = cron.describe(trigger.expr) if hasattr(cron, "describe") else ""
                text = (described + "\n" if described else "") + _times(times, now, trigger.zone)
                return {"schedule": "cron", "cron": trigger.expr, "tz": trigger.tz}, text
        except ValueError as exc:
            problems["schedule"] = str(exc)
            return {}, ""
        return {"schedule": "now"}, "as soon as its dependencies have succeeded"

    def _retry(self, problems) -> RetryPolicy | None:
        try:
            base = parse_duration(self.backoff.text())
        except ValueError as exc:
            problems["backoff"] = str(exc)
            return None
        try:
            max_delay = parse_duration(self.max_delay.text())
        except ValueError as exc:
            problems["max_delay"] = str(exc)
            return None
        if self.max_attempts.value() == 1:
            return None
        return RetryPolicy(
            max_attempts=self.max_attempts.value(),
            base=base,
            factor=self.factor.value(),
            max_delay=max_delay,
        )

    def accept(self) -> None:
        spec = self.validate()
        if spec is None:
            return
        self.specReady.emit(spec)
        super().accept()


def _times(times, now: datetime, zone=None) -> str:
    """One line per time, in ``zone`` (the cron's) or the local zone, with its name."""
    lines = []
    for t in times:
        shown = t.astimezone(zone) if zone is not None else t.astimezone()
        delta = (t - now).total_seconds()
        lines.append(f"{shown:%a %Y-%m-%d %H:%M:%S %Z}  (in {_human(delta)})")
    return "\n".join(lines)


def _human(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"
