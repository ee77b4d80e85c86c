"""The inspector: everything about the selected task, and its attempts with their output.

The attempts list shows this run's attempts from the engine and, with a run
store, earlier runs' attempts (and this run's from before a restart) from the
store, oldest first, with their run number. The store is read once per selected
task (attempts of finished runs never change), off the GUI thread by the window's
``HistoryReader``: this run's attempts show at once, earlier runs' join them when
the read answers ("loading earlier runs…" until then).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QColor, QDesktopServices, QFont, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from taskloom.engine import Attempt, Outcome, TaskInfo, TaskState
from taskloom.engine.durations import format_duration

from .duration_trend import DurationTrend
from .live_output import LogTail
from .run_history import store_of, wall_offset
from .run_summary import SHOWN, RunSummary, delay_changes_in, describe_delay
from .style import (
    RECURRING_MARK,
    is_dark,
    link_colours,
    outcome_colour,
    readable_on,
    state_colour,
    state_words,
    text_colour_on,
)
from .task_definition import attempts_text, definition_rows, why_not_running

EARLIER_KEPT = 100  # stored attempts listed per task
COLUMNS = ["#", "started", "took", "outcome", "exit", "run"]
RUN_COLUMN = COLUMNS.index("run")


class Inspector(QWidget):
    taskActivated = Signal(str)  # a dependency link was clicked

    def __init__(self, bridge, parent=None, *, reader=None):
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
        # "Why not running", then what the task is (its definition), then its run.
        for key in (
            "why not",
            "runs",
            "folder",
            "trigger",
            "retry",
            "timeout",
            "rule",
            "next run",
            "priority",
            "attempts",
            "recurring",
            "after",
            "before",
            "error",
        ):
            label = QLabel("—")
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
            label.linkActivated.connect(self.taskActivated)
            label.setObjectName(f"inspector_{key.replace(' ', '_')}")
            self.fields[key] = label
            form.addRow(key.capitalize() + ("?" if key == "why not" else ""), label)
        # (definition, base folder) of the task as the workflow file says, or None:
        # the window sets it; a live definition that differs is flagged.
        # tid -> (the file's definition, its folder) or None; the window's
        self.file_definition: Callable[[str], tuple | None] | None = None
        self.dispatcher_paused = lambda: False  # the window's
        self.attempt_list = QTreeWidget()
        self.attempt_list.setObjectName("attempts")
        self.attempt_list.setHeaderLabels(COLUMNS)
        self.attempt_list.setRootIsDecorated(False)
        self.attempt_list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.attempt_list.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.attempt_list.header().setStretchLastSection(True)
        self.attempt_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.attempt_list.currentItemChanged.connect(self._show_attempt)
        self.store = store_of(bridge.scheduler)
        self.attempt_list.setColumnHidden(RUN_COLUMN, self.store is None)
        self.earlier_runs = QCheckBox("Earlier runs")
        self.earlier_runs.setObjectName("showEarlierRuns")
        self.earlier_runs.setToolTip("Also list attempts from earlier runs kept in the run store")
        self.earlier_runs.setChecked(True)
        self.earlier_runs.setVisible(self.store is not None)
        self.earlier_runs.toggled.connect(lambda _on: self.refresh())
        # Earlier runs come from the reader, off the GUI thread; None: this run only.
        self.reader = reader if self.store is not None else None
        if self.reader is not None:
            self.reader.attemptsRead.connect(self._history_read)
        self._stored: dict[str, list[Attempt]] = {}  # per task, read once
        self._asked: tuple[int, str] | None = None  # (request id, task) awaited
        self._unavailable: set[str] = set()  # tasks whose read failed (retried on reselect)
        self.history_note = QLabel()
        self.history_note.setObjectName("earlierRunsNote")
        self.history_note.setEnabled(False)  # drawn faint, like a hint
        self.history_note.setVisible(False)
        self.output = QPlainTextEdit()
        self.output.setObjectName("attemptOutput")
        self.output.setReadOnly(True)
        self.output.setPlaceholderText("Select an attempt to see its error, traceback and output")
        mono = QFont("DejaVu Sans Mono")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        mono.setPointSizeF(9)
        self.output.setFont(mono)
        # A running command's output, followed as its log file fills.
        self.tail = LogTail()
        self.tail_timer = QTimer(self)
        self.tail_timer.setInterval(250)
        self.tail_timer.timeout.connect(self._poll_live)
        self._live_header = ""
        self.open_log = QPushButton("Open whole log")
        self.open_log.setObjectName("openLog")
        self.open_log.setEnabled(False)
        self.open_log.clicked.connect(self._open_log)
        self._log_path: str | None = None
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.title)
        top_layout.addLayout(form)
        self.trend = DurationTrend()  # the last attempts' durations, median and p90
        top_layout.addWidget(self.trend)
        top_layout.addStretch(1)
        # The settings scroll rather than clip when the dock is short.
        top_scroll = QScrollArea()
        top_scroll.setWidget(top)
        top_scroll.setWidgetResizable(True)
        top_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        top_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        attempts_box = QWidget()
        attempts_layout = QVBoxLayout(attempts_box)
        attempts_layout.setContentsMargins(0, 0, 0, 0)
        attempts_layout.setSpacing(2)
        earlier_row = QHBoxLayout()
        earlier_row.setContentsMargins(0, 0, 0, 0)
        earlier_row.addWidget(self.earlier_runs)
        earlier_row.addWidget(self.history_note)
        earlier_row.addStretch(1)
        attempts_layout.addLayout(earlier_row)
        attempts_layout.addWidget(self.attempt_list)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top_scroll)
        split.addWidget(attempts_box)
        output_box = QWidget()
        output_layout = QVBoxLayout(output_box)
        output_layout.setContentsMargins(0, 0, 0, 0)
        output_layout.setSpacing(2)
        output_layout.addWidget(self.output, 1)
        log_row = QHBoxLayout()
        log_row.addStretch(1)
        log_row.addWidget(self.open_log)
        output_layout.addLayout(log_row)
        split.addWidget(output_box)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 1)
        split.setStretchFactor(2, 1)
        split.setSizes([250, 110, 160])
        # With nothing selected, the run at a glance instead of empty fields.
        self.summary = RunSummary(bridge)
        self.summary.taskActivated.connect(self.taskActivated)
        summary_scroll = QScrollArea()
        summary_scroll.setWidget(self.summary)
        summary_scroll.setWidgetResizable(True)
        summary_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.pages = QStackedWidget()
        self.pages.addWidget(split)
        self.pages.addWidget(summary_scroll)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(self.pages)
        self._attempts = []
        self.chosen: tuple[int, int] | None = None  # (run, number) to select when listed
        self.show_task(None)

    def choose_attempt(self, tid: str, run: int, number: int) -> None:
        """Show ``tid`` with its attempt ``number`` of run ``run`` selected (once the
        store's answer lists it, for an earlier run's)."""
        self.chosen = (run, number)
        if not self.earlier_runs.isChecked():
            self.earlier_runs.setChecked(True)
        self.show_task(tid)
        self.refresh()

    def show_task(self, tid: str | None) -> None:
        if tid != self.task_id:  # a new task starts on its latest attempt
            self.attempt_list.clear()
            self._attempts = []
            self._unavailable.discard(tid)  # selecting it again tries the store again
        self.task_id = tid
        self.refresh()

    # A past run shown read-only (the window's): info -> (the task as that run left
    # it, the run's number), or None while the live run is shown.
    # the task as a past run shown left it, with that run's number, or None: the window's
    past_info: Callable[[TaskInfo], tuple[TaskInfo, int] | None] | None = None

    def refresh(self) -> None:
        info = self.bridge.tasks.get(self.task_id) if self.task_id else None
        for label in self.fields.values():
            label.setText("—")
        self.pages.setCurrentIndex(1 if self.task_id is None else 0)
        if self.task_id is None:
            self.summary.refresh()
        if info is None:
            self.title.setText("No task selected" if not self.task_id else f"{self.task_id} (gone)")
            self.state.setText("")
            self.attempt_list.clear()
            self.output.clear()
            self._follow(None)
            self._attempts = []
            self._show_note("")
            return
        past = self.past_info(info) if self.past_info is not None else None
        self._show_info(info if past is None else past[0])
        if past is not None:
            self.state.setText(self.state.text() + f" · in run {past[1]} (read-only)")
            self.fields["why not"].setText(f"run {past[1]} is over: this is how it left the task")
            self.fields["next run"].setText("—")
        self._ask_history(info.id)
        self._show_attempts(self._rows(info.id))

    def tick(self) -> None:
        """Refresh only what time changes (called when ``changes_in`` says)."""
        if self.task_id is None:
            self.summary.refresh()
            return
        info = self.bridge.tasks.get(self.task_id)
        if info is None:
            return
        if info.state is TaskState.RUNNING:  # its attempt's duration grows
            self._show_attempts(self._rows(info.id))
        self.fields["next run"].setText(self._next_run_text(info))

    def changes_in(self) -> float | None:
        """Seconds until time alone changes what the inspector shows (a running
        attempt's duration, a countdown), at least one; None if nothing moves."""
        now = self.bridge.clock_now()
        if self.task_id is None:  # the run summary: its next entries due
            upcoming = sorted(self.bridge.upcoming, key=lambda e: e.run_at)[:SHOWN]
            if not upcoming:
                return None
            return max(1.0, min(delay_changes_in(e.run_at - now) for e in upcoming))
        info = self.bridge.tasks.get(self.task_id)
        if info is None:
            return None
        if info.state is TaskState.RUNNING:
            return 1.0
        if self._next_run_text(info) == "—":
            return None
        return max(1.0, delay_changes_in(info.run_at - now))

    def _next_run_text(self, info: TaskInfo) -> str:
        waiting = info.state in (TaskState.SCHEDULED, TaskState.RETRY_WAIT, TaskState.READY)
        if info.run_at is None or not (waiting or info.recurring and info.state.settled):
            return "—"
        return describe_delay(info.run_at - self.bridge.clock_now())

    def _show_info(self, info: TaskInfo) -> None:
        self.title.setText(info.name or info.id)
        fill = state_colour(info.state, is_dark(self.palette()))
        ink = text_colour_on(fill).name()
        paused = " · paused" if info.paused else ""
        self.state.setText(
            f'<span style="background:{fill.name()}; color:{ink}; padding:2px 6px;">'
            f"&nbsp;{' '.join(state_words(info))}&nbsp;</span>{paused}"
        )
        self.fields["next run"].setText(self._next_run_text(info))
        self.fields["priority"].setText(str(info.priority))
        adopted = self.bridge.scheduler.adoptions().get(info.id)
        found = ""
        if adopted and adopted[0] == info.attempt:  # what was found while it runs on
            found = f" · {adopted[1] if info.state is TaskState.RUNNING else 'adopted'}"
        self.fields["attempts"].setText(attempts_text(info.attempt) + found)
        self.trend.final = info.state.settled and not info.recurring
        self._show_definition(info)
        self.fields["recurring"].setText(f"{RECURRING_MARK} yes" if info.recurring else "no")
        self.fields["after"].setText(self._links(info.deps))
        self.fields["before"].setText(self._links(info.dependents))
        self.fields["error"].setText(info.error or "—")

    def _retry_at(self, tid: str) -> float | None:
        for entry in self.bridge.upcoming:
            if entry.task_id == tid and entry.kind == "retry":
                return entry.run_at
        return None

    def _show_definition(self, info: TaskInfo) -> None:
        """What the task is (the engine's definition) and why it is not running."""
        scheduler = self.bridge.scheduler
        now = self.bridge.clock_now()
        retry_at = self._retry_at(info.id)
        pool_wait = None
        if info.state is TaskState.READY:
            try:
                pool_wait = scheduler.pool_wait(info.id)
            except (KeyError, RuntimeError):
                pass
        self.fields["why not"].setText(
            why_not_running(
                info,
                self.bridge.tasks,
                dispatcher_paused=bool(self.dispatcher_paused()),
                clock_now=now,
                busy=scheduler.busy,
                workers=scheduler.workers,
                retry_at=retry_at,
                pool_wait=pool_wait,
            )
            or "—"
        )
        try:
            definition = scheduler.definition(info.id)
        except (KeyError, RuntimeError):
            return  # a watched run without the file's definitions: nothing to say
        rows = definition_rows(definition, info, retry_at, now)
        differs = self._differs_from_file(info.id, definition)
        if differs:
            rows["runs"] += f" — {differs}"
        for key, text in rows.items():
            self.fields[key].setText(text)

    def _differs_from_file(self, tid: str, definition) -> str:
        """ "changed here, not in the file" when the live definition is not the file's."""
        if self.file_definition is None:
            return ""
        found = self.file_definition(tid)
        if found is None:
            return "not in the file (Save writes it)"
        in_file, base = found
        try:
            same = in_file.with_deps(definition.deps, tid).fingerprint(base) == (
                definition.fingerprint(base)
            )
        except (TypeError, ValueError, AttributeError):
            return ""
        return "" if same else "changed here, not in the file (Save writes it)"

    def _wants_history(self) -> bool:
        return self.reader is not None and self.earlier_runs.isChecked()

    def _ask_history(self, tid: str) -> None:
        """Ask the reader for the task's stored attempts, unless they are known or asked
        for already; say so beside "Earlier runs" while the answer is on its way."""
        if not self._wants_history() or tid in self._stored:
            self._show_note("")
            return
        if tid in self._unavailable:
            self._show_note("earlier runs unavailable")
            return
        if self._asked is None or self._asked[1] != tid:
            reader, store = self.reader, self.store
            assert reader is not None and store is not None  # _wants_history() said so
            known = {(store.run, a.number) for a in self.bridge.attempts(tid)}
            offset = wall_offset(self.bridge.scheduler.clock)
            rid = reader.request_attempts(tid, known, EARLIER_KEPT, offset)
            if not rid:  # the reader stopped with the session: this run only
                self._show_note("")
                return
            self._asked = (rid, tid)  # an answer for any earlier request is stale now
        self._show_note("loading earlier runs…")

    def _history_read(self, rid: int, tid: str, found) -> None:
        if self._asked is None or self._asked[0] != rid:
            return  # stale: another task was selected since
        self._asked = None
        if found is None:
            self._unavailable.add(tid)
        else:
            self._stored[tid] = found
        if tid == self.task_id:
            self.refresh()

    def _show_note(self, text: str) -> None:
        self.history_note.setText(text)
        self.history_note.setVisible(bool(text))

    def _rows(self, tid: str) -> list[Attempt]:
        """This run's attempts from memory, plus stored ones it does not hold (once
        read), oldest first, on the scheduler clock. Never reads the store."""
        run = None if self.store is None else self.store.run
        rows = [a._replace(task_id=tid, run=run) for a in self.bridge.attempts(tid)]
        if not self._wants_history() or tid not in self._stored:
            return rows
        known = {row.number for row in rows}
        stored = [r for r in self._stored[tid] if not (r.run == run and r.number in known)]
        return sorted(stored + rows, key=lambda r: (r.started, r.run or 0, r.number))

    def _show_attempts(self, attempts: list[Attempt]) -> None:
        self.trend.show_attempts(attempts, self.bridge.clock_now())
        current = self.attempt_list.currentItem()
        keep = current.data(0, Qt.ItemDataRole.UserRole) if current else None
        if keep is not None and keep == len(self._attempts) - 1:
            keep = None  # the newest attempt was shown: show the newest again
        keep_key = self._key(self._attempts[keep]) if keep is not None else None
        if self.chosen is not None:  # an attempt chosen elsewhere (the Runs view)
            keep_key = self.chosen
            if any(self._key(a) == keep_key for a in attempts):
                self.chosen = None
        self._attempts = attempts
        self.attempt_list.clear()
        now = self.bridge.clock_now()
        wall_now = now + wall_offset(self.bridge.scheduler.clock)
        this_run = None if self.store is None else self.store.run
        faded = self.palette().color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text)
        base = self.palette().color(QPalette.ColorRole.Base)
        dark = is_dark(self.palette())
        select = None
        for index, attempt in enumerate(attempts):
            ended = attempt.ended if attempt.ended is not None else now
            earlier = attempt.run != this_run
            item = QTreeWidgetItem(
                [
                    str(attempt.number),
                    _when(attempt.started + wall_now - now, wall_now),
                    f"{max(0.0, ended - attempt.started):.2f} s",
                    str(attempt.outcome),
                    "" if attempt.exit_code is None else str(attempt.exit_code),
                    "" if attempt.run is None else str(attempt.run),
                ]
            )
            item.setData(0, Qt.ItemDataRole.UserRole, index)
            if earlier:
                for column in range(len(COLUMNS)):
                    item.setForeground(column, faded)
                item.setToolTip(0, f"run {attempt.run} (an earlier run)")
            item.setForeground(3, readable_on(outcome_colour(attempt.outcome, dark), base))
            self.attempt_list.addTopLevelItem(item)
            if keep_key is not None and self._key(attempt) == keep_key:
                select = index
        if attempts:
            row = select if select is not None else len(attempts) - 1
            current = self.attempt_list.topLevelItem(row)
            if current is not None:
                self.attempt_list.setCurrentItem(current)
        else:
            self.output.clear()

    @staticmethod
    def _key(attempt: Attempt) -> tuple:
        return (attempt.run, attempt.number)

    def _show_attempt(self, item, _previous=None) -> None:
        if item is None:
            self._follow(None)
            return
        attempt = self._attempts[item.data(0, Qt.ItemDataRole.UserRole)]
        if self._show_live(attempt):
            return
        self._follow(None)
        self._set_log(attempt.log_path)
        parts = []
        if attempt.run is not None and self.store is not None and attempt.run != self.store.run:
            parts.append(f"run {attempt.run}, attempt {attempt.number}: {attempt.outcome}")
        if attempt.error:
            parts.append(attempt.error)
        if attempt.output:
            parts.append("── output ──\n" + attempt.output.rstrip())
        if attempt.traceback:
            parts.append("── traceback ──\n" + attempt.traceback.rstrip())
        details = []
        if attempt.exit_code is not None:
            details.append(f"exit code: {attempt.exit_code}")
        if attempt.worker:
            details.append(f"worker: {attempt.worker}")
        if attempt.log_path:
            details.append(f"log: {attempt.log_path}")
        details += self._jitter_and_outputs(attempt)
        if details:
            parts.append("\n".join(details))
        self.output.setPlainText(
            "\n\n".join(parts) or f"attempt {attempt.number}: {attempt.outcome}"
        )

    def _jitter_and_outputs(self, attempt: Attempt) -> list[str]:
        """The attempt's jitter delay, and the outputs its success gave (the latest)."""
        scheduler, tid = self.bridge.scheduler, self.task_id
        lines: list[str] = []
        if tid is None or (attempt.run is not None and self.store is not None
                           and attempt.run != self.store.run):  # fmt: skip
            return lines
        try:
            delay = scheduler.jitter_delays(tid).get(attempt.number)
            succeeded = [a for a in self._attempts if a.outcome == Outcome.SUCCEEDED]
            latest = bool(succeeded) and succeeded[-1] is attempt
            outputs = scheduler.outputs(tid) if latest else None
        except (KeyError, RuntimeError):  # gone, or the run has ended
            return lines
        if delay is not None:
            lines.append(f"jitter: started {format_duration(round(delay, 3))} after its time")
        if outputs:
            shown = ", ".join(f"{k}={v}" for k, v in outputs.items())
            lines.append(f"outputs: {shown}")
        return lines

    # -- a running attempt's output, live ----------------------------------------
    def _show_live(self, attempt: Attempt) -> bool:
        """Follow the log of the running attempt shown, if it is this run's newest."""
        running = attempt.outcome == Outcome.RUNNING and attempt is self._attempts[-1]
        if not running or self.task_id is None:
            return False
        try:
            path = self.bridge.scheduler.live_log(self.task_id)
        except (KeyError, RuntimeError):
            path = None
        self._live_header = f"attempt {attempt.number}: running" + (
            "" if path else " (no output yet)"
        )
        self._set_log(path)
        if path != self.tail.path or not self.tail_timer.isActive():
            self._follow(path)
        self._poll_live(force=True)
        return True

    def _follow(self, path: str | None) -> None:
        self.tail.follow(path)
        if path is None:
            self.tail_timer.stop()
        else:
            self.tail_timer.start()

    def _poll_live(self, force: bool = False) -> None:
        if not self.tail.poll() and not force:
            return
        text = self.tail.text
        bar = self.output.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 2
        self.output.setPlainText(
            f"{self._live_header}\n── output (live) ──\n{text}" if text else self._live_header
        )
        if at_end:  # keep following the end unless the person scrolled up
            bar.setValue(bar.maximum())

    def _set_log(self, path: str | None) -> None:
        self._log_path = path
        self.open_log.setEnabled(path is not None)
        self.open_log.setToolTip(path or "This attempt wrote no log file")

    def _open_log(self) -> None:
        if self._log_path:
            QDesktopServices.openUrl(QUrl.fromLocalFile(self._log_path))

    def changeEvent(self, event) -> None:
        # Links carry their colour in the HTML: re-render them for the new palette.
        if event.type() == event.Type.PaletteChange and hasattr(self, "pages"):
            self.refresh()
        super().changeEvent(event)

    def _links(self, ids) -> str:
        return _links(ids, link_colours(self.palette())[0])


def _when(started: float, wall_now: float) -> str:
    """A start time: the clock time today, the date too for an older one."""
    fmt = "%H:%M:%S" if wall_now - started < 20 * 3600 else "%d %b %H:%M"
    return time.strftime(fmt, time.localtime(started))


def _links(ids, colour: QColor) -> str:
    if not ids:
        return "—"
    style = f"color:{colour.name()}"
    return ", ".join(f'<a href="{tid}" style="{style}">{tid}</a>' for tid in ids)
