"""The add-task dialog: every field checked as you type, problems explained next to it.

It only builds a ``TaskDefinition``; the controller submits it (through the undo
stack). Given a task's definition it is the Edit dialog: pre-filled, the id fixed,
and a refused change shown next to the field it is about.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

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

from taskloom.engine import RetryPolicy, TaskDefinition, cron, durations
from taskloom.engine.actions import Call

from .task_spec import make_call, make_command, schedule_choice, target_text

SCHEDULES = (
    ("now", "As soon as its dependencies allow"),
    ("at", "At a date and time"),
    ("after", "After a delay"),
    ("every", "Every interval"),
    ("cron", "On a cron schedule"),
)
ERROR_STYLE = "color: #D55E00;"
# The engine names the argument it refused (InvalidArgument.field); the widget
# showing that argument explains it. Fields the dialog shows as they are map to
# themselves ("name", "timeout", "deps", "target"); the rest go above the buttons.
FIELD_WIDGETS = {
    "at": "schedule",
    "after": "schedule",
    "every": "schedule",
    "timezone": "schedule",
    "delay": "schedule",
    "run_at": "schedule",
    "interval": "schedule",
    "mode": "schedule",
    "cron": "schedule",
    "tz": "schedule",
    "overlap": "schedule",
    "misfire": "schedule",
    "misfire_grace": "schedule",
}


def parse_duration(text: str) -> float:
    seconds = durations.parse_duration(text)
    if seconds < 0:
        raise ValueError("must not be negative")
    return seconds


W = TypeVar("W", bound=QWidget)


def named(widget: W, name: str) -> W:
    """``widget`` with its object name (the stubs lack PySide's ``objectName=``)."""
    widget.setObjectName(name)
    return widget


def _error_label() -> QLabel:
    label = QLabel()
    label.setStyleSheet(ERROR_STYLE)
    label.setWordWrap(True)
    label.hide()
    return label


class AddTaskDialog(QDialog):
    specReady = Signal(object)  # a TaskDefinition

    def __init__(
        self,
        existing_ids,
        parent=None,
        spec: TaskDefinition | None = None,
        task_id=None,
        submit=None,
        template: TaskDefinition | None = None,
    ):
        """``spec``/``task_id``: edit the task so defined. ``submit(definition)`` -> None
        when done, or (field, why) to keep the dialog open with the reason shown by
        that field. ``template``: what a new task starts from (the workflow's
        ``[workflow.defaults]``, ``engine.workflow.new_task_template``): its priority,
        retry and timeout fill the form, and what the form does not show (cwd, env,
        pool, jitter) is kept."""
        super().__init__(parent)
        self.setObjectName("editTaskDialog" if spec is not None else "addTaskDialog")
        self.setWindowTitle(f"Edit {task_id}" if spec is not None else "Add task")
        self.original, self.task_id, self.submit = spec, task_id, submit
        self.template = template if spec is None else None
        self.existing = set(existing_ids) - {task_id}
        self.errors: dict[str, QLabel] = {}
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)

        self.name = named(QLineEdit(placeholderText="e.g. load_warehouse"), "taskName")
        self._row(form, "Name", self.name, "name")

        self.kind_command = named(QRadioButton("Command"), "kindCommand")
        self.kind_call = named(QRadioButton("Python callable"), "kindCall")
        self.kind_command.setChecked(True)
        self.kind_group = QButtonGroup(self)
        self.kind_group.addButton(self.kind_command)
        self.kind_group.addButton(self.kind_call)
        kinds = QHBoxLayout()
        kinds.addWidget(self.kind_command)
        kinds.addWidget(self.kind_call)
        kinds.addStretch(1)
        form.addRow("Runs", kinds)
        self.target = named(QLineEdit(), "taskTarget")
        self._row(form, "", self.target, "target")

        self.schedule = named(QComboBox(), "scheduleKind")
        for key, text in SCHEDULES:
            self.schedule.addItem(text, key)
        form.addRow("When", self.schedule)
        self.at = named(QDateTimeEdit(QDateTime.currentDateTime().addSecs(300)), "scheduleAt")
        self.at.setCalendarPopup(True)
        self.at.setDisplayFormat("yyyy-MM-dd HH:mm:ss")
        self.delay = named(QLineEdit(placeholderText="90s, 5m, 1h30m"), "scheduleDelay")
        self.interval = named(QLineEdit(placeholderText="30s, 5m, 1h"), "scheduleInterval")
        self.cron = named(QLineEdit(placeholderText="*/15 * * * *"), "scheduleCron")
        self.tz = named(QLineEdit(local_zone()), "scheduleTz")  # as the person reads clocks
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
        self.preview = named(QLabel(), "schedulePreview")
        self.preview.setWordWrap(True)
        self.preview.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # Room for a description and five times, so the dialog does not jump as you type.
        self.preview.setMinimumHeight(self.preview.fontMetrics().lineSpacing() * 6 + 4)
        self.preview.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        form.addRow("Next runs", self.preview)

        self.priority = named(QSpinBox(), "priority")
        self.priority.setRange(-1000, 1000)
        self.priority.setToolTip("Larger runs first when several tasks are due")
        form.addRow("Priority", self.priority)

        retry_box = QGroupBox("Retries")
        retry_form = QFormLayout(retry_box)
        self.max_attempts = named(QSpinBox(), "maxAttempts")
        self.max_attempts.setRange(1, 100)
        self.backoff = named(QLineEdit("1s"), "backoffBase")
        self.factor = named(QDoubleSpinBox(), "backoffFactor")
        self.factor.setRange(1.0, 10.0)
        self.factor.setValue(2.0)
        self.max_delay = named(QLineEdit("5m"), "backoffMax")
        retry_form.addRow("Attempts", self.max_attempts)
        self._row(retry_form, "First wait", self.backoff, "backoff")
        retry_form.addRow("Factor", self.factor)
        self._row(retry_form, "Longest wait", self.max_delay, "max_delay")
        self.timeout = named(QLineEdit(placeholderText="none, or 10m"), "timeout")
        deps_box = QVBoxLayout()
        self.deps = named(QListWidget(), "deps")
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
        self._row(form, "Runs after", self.deps, "deps")
        self.errors["submit"] = _error_label()
        self.errors["submit"].setObjectName("submitError")
        layout.addWidget(self.errors["submit"])
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText(
            "Apply" if spec is not None else "Add task"
        )
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
        if spec is not None:
            self._fill(spec, task_id)
        elif self.template is not None:
            self._fill_settings(self.template)
        self._on_target_kind()
        self._on_schedule_kind()
        self.resize(520, self.sizeHint().height())

    def _fill(self, spec: TaskDefinition, task_id: str) -> None:
        """Show an existing task's settings (the Edit dialog)."""
        self.name.setText(task_id)
        self.name.setReadOnly(True)  # an edit keeps the id: edges and history refer to it
        self.name.setToolTip("The id stays the same; add a new task to use another name")
        kind, text = target_text(spec.action) or ("command", "")
        (self.kind_call if kind == "call" else self.kind_command).setChecked(True)
        self.target.setText(text)
        self._fill_settings(spec)

    def _fill_settings(self, spec: TaskDefinition) -> None:
        """Show a definition's schedule, priority, retry, timeout and deps."""
        self.schedule.setCurrentIndex(max(0, self.schedule.findData(schedule_choice(spec))))
        if spec.at is not None:
            self.at.setDateTime(QDateTime.fromMSecsSinceEpoch(int(spec.at.timestamp() * 1000)))
        if spec.after is not None:
            self.delay.setText(_duration_text(spec.after))
        if spec.every is not None:
            self.interval.setText(_duration_text(spec.every))
        self.cron.setText(spec.cron or "")
        self.tz.setText(spec.timezone or "UTC")
        self.priority.setValue(spec.priority)
        if spec.retry is not None:
            self.max_attempts.setValue(spec.retry.max_attempts)
            self.backoff.setText(_duration_text(spec.retry.base))
            self.factor.setValue(spec.retry.factor)
            self.max_delay.setText(_duration_text(spec.retry.max_delay))
        if spec.timeout is not None:
            self.timeout.setText(_duration_text(spec.timeout))
        for i in range(self.deps.count()):
            item = self.deps.item(i)
            if item.text() in spec.deps:
                item.setCheckState(Qt.CheckState.Checked)

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
    def validate(self, *_) -> TaskDefinition | None:
        """Check every field; show problems next to them; return the definition when
        all are fine."""
        problems: dict[str, str] = {}
        name = self.name.text().strip()
        if not name:  # an id the engine invents ("echo-1") is no name to find it by
            problems["name"] = "give the task a name"
        elif name in self.existing:  # any other name is the engine's to judge, spaces too
            problems["name"] = f"a task named “{name}” already exists"
        target = None
        text = self.target.text().strip()
        if not text:
            problems["target"] = "say what to run"
        elif self.kind_command.isChecked():
            try:
                shlex.split(text)
                target = self._kept_target("command", text) or make_command(
                    text, like=self._base.action if self._base else None
                )
            except ValueError as exc:
                problems["target"] = f"cannot split this command line: {exc}"
        else:
            try:
                target = self._kept_target("call", text) or make_call(
                    text, like=self._base.action if self._base else None
                )
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
        fields: dict[str, Any] = dict(
            id=name,
            action=target,
            priority=self.priority.value(),
            retry=retry,
            timeout=timeout,
            deps=deps,
            at=None,
            after=None,
            every=None,
            cron=None,
            timezone=None,
        )
        fields.update(spec_kw)
        base = self._base
        if base is not None:  # keep what the dialog does not show (cwd, env, rules)
            if retry is not None and base.retry is not None:
                fields["retry"] = replace(retry, jitter=base.retry.jitter)
            if fields["timezone"] == "UTC" and base.timezone is None:
                fields["timezone"] = None  # shown as UTC, left as the file had it
            return replace(base, **fields)
        return TaskDefinition(**fields)

    @property
    def _base(self) -> TaskDefinition | None:
        """What the form's fields are applied to: the task edited, or a new task's
        template (the workflow's defaults)."""
        return self.original if self.original is not None else self.template

    def _kept_target(self, kind: str, text: str):
        """The task's own target when its text is unchanged (keeps cwd, env, args)."""
        if self.original is not None and target_text(self.original.action) == (kind, text):
            return self.original.action
        return None

    def _schedule(self, problems) -> tuple[dict, str]:
        kind = self.schedule.currentData()
        now = datetime.now(UTC)
        try:
            if kind == "at":
                at = _aware(self.at.dateTime())
                if at < now:
                    problems["schedule"] = "this time has passed; it would run at once"
                return {"at": at}, _times([at], now)
            if kind == "after":
                delay = parse_duration(self.delay.text() or "")
                return {"after": delay}, _times([now + timedelta(seconds=delay)], now)
            if kind == "every":
                interval = parse_duration(self.interval.text() or "")
                if interval <= 0:
                    raise ValueError("the interval must be longer than zero")
                times = [now + timedelta(seconds=interval * i) for i in range(1, 6)]
                return {"every": interval}, _times(times, now)
            if kind == "cron":
                trigger = cron.CronTrigger(self.cron.text(), tz=self.tz.text().strip() or "UTC")
                times = trigger.next_n(now, 5)
                described = cron.describe(trigger.expr)
                text = (described + "\n" if described else "") + _times(times, now, trigger.zone)
                return {"cron": trigger.expr, "timezone": trigger.tz}, text
        except ValueError as exc:
            problems["schedule"] = str(exc)
            return {}, ""
        return {}, "as soon as its dependencies have succeeded"

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
        if base > max_delay:
            problems["backoff"] = (
                f"the first wait is longer than the longest wait ({self.max_delay.text()})"
            )
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
        if isinstance(spec.action, Call) and not self._kept_target("call", spec.action.ref):
            try:  # checked once, on OK: importing on every keystroke would run half-typed names
                spec.action.resolve()
            except (ImportError, TypeError) as exc:
                self.show_refusal("target", str(exc))
                return
        if self.submit is not None:
            refused = self.submit(spec)
            if refused is not None:
                self.show_refusal(*refused)
                return
        self.specReady.emit(spec)
        super().accept()

    def show_refusal(self, field: str, why: str) -> None:
        """The engine said no about ``field`` (an engine argument or one of this
        dialog's fields): explain it next to its widget (or above the buttons)."""
        key = FIELD_WIDGETS.get(field, field)
        label = self.errors.get(key, self.errors["submit"])
        label.setText(why)
        label.show()


def _aware(moment: QDateTime) -> datetime:
    """A QDateTime (local time) as an aware datetime in the local zone."""
    return datetime.fromtimestamp(moment.toMSecsSinceEpoch() / 1000).astimezone()


def local_zone() -> str:
    """The IANA name of the local time zone ($TZ, else /etc/localtime), else "UTC"."""
    import os
    from pathlib import Path
    from zoneinfo import available_timezones

    name = os.environ.get("TZ", "").lstrip(":")
    if not name:
        try:
            target = str(Path("/etc/localtime").resolve())
        except OSError:
            target = ""
        _, found, name = target.partition("zoneinfo/")
        name = name if found else ""
    return name if name and name in available_timezones() else "UTC"


def _duration_text(seconds: float) -> str:
    return durations.format_duration(seconds)


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
