"""The event log: a bounded table of engine events, filterable by task and kind."""

from __future__ import annotations

import re

from PySide6.QtCore import (
    QAbstractTableModel,
    QEvent,
    QModelIndex,
    QRegularExpression,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QBrush, QFontMetrics, QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from taskloom.engine import Event, TaskState

from .style import STATE_GLYPHS, kind_label, state_text_colour

OTHER_KINDS = (
    "dependency_added",
    "dependency_removed",
    "paused",
    "resumed",
    "removed",
    "edited",
    "restored",
)
KINDS = tuple(s.value for s in TaskState) + OTHER_KINDS
COLUMNS = ("seq", "time", "task", "event", "#", "detail")
TASK_COLUMN_WIDTHS = (64, 140)  # the task column shares what is left with the detail
DETAIL_MIN_WIDTH = 70
TASK_NARROWEST = 36  # the task column in the narrowest log, before a scroll bar shows
# Short labels where a kind's name is long ("• dependency removed" was cut to "• …");
# the event column fits the longest label shown.
SHORT_LABELS = {"dependency_added": "+ dependency", "dependency_removed": "− dependency"}
HEADER_TIPS = {4: "attempt number"}
# What the filter matches rows on: "kind<US>task id" (the proxy's own C++ matching:
# with no filter set, it accepts inserted rows without calling Python per row).
FILTER_ROLE = Qt.ItemDataRole.UserRole + 1
_SEPARATOR = "\x1f"


def event_label(event: Event) -> str:
    """The event column's text: the state's glyph and name, or a short label."""
    if event.kind in SHORT_LABELS:
        return SHORT_LABELS[event.kind]
    state = event.state
    glyph = STATE_GLYPHS.get(state, "") if state is not None and _is_state(event) else "•"
    return f"{glyph} {kind_label(event.kind)}"


def _label_of_kind(kind: str) -> str:
    if kind in SHORT_LABELS:
        return SHORT_LABELS[kind]
    glyphs = {state.value: glyph for state, glyph in STATE_GLYPHS.items()}
    return f"{glyphs.get(kind, '•')} {kind_label(kind)}"


SAMPLE_TEXT = {
    0: "00000",
    1: "00:00:00.000",
    3: tuple(_label_of_kind(kind) for kind in KINDS),  # the widest one, measured
    4: "#",
}


class EventLogModel(QAbstractTableModel):
    """The newest ``capacity`` events; older ones fall off the top."""

    def __init__(self, capacity: int = 5000, clock_to_text=None, parent=None):
        super().__init__(parent)
        self.capacity = capacity
        self.events: list[Event] = []
        # What an edit made here changed ("command changed"), waiting for its
        # ``edited`` event, then shown as that event's detail (by seq).
        self.edit_notes: dict[str, list[str]] = {}
        self.details: dict[int, str] = {}
        # What opening the store adopted ({task: (attempt, "adopted: ...")}): its
        # ``restored`` event is shown as "adopted", with what was found.
        self.adoptions: dict[str, tuple[int, str]] = {}
        self.labels: dict[int, str] = {}
        self.clock_to_text = clock_to_text or (lambda at: f"{at:.3f}")
        self.text_colours: dict[TaskState, QBrush] = {}
        self.set_palette(QGuiApplication.palette())

    def set_palette(self, palette: QPalette) -> None:
        """Pick state text colours that read on this palette's rows (both shades)."""
        rows = (
            palette.color(QPalette.ColorRole.Base),
            palette.color(QPalette.ColorRole.AlternateBase),
        )
        self.text_colours = {s: QBrush(state_text_colour(s, rows)) for s in TaskState}

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self.events)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if role == Qt.ItemDataRole.ToolTipRole:
            return HEADER_TIPS.get(section)
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        event = self.events[index.row()]
        if role == FILTER_ROLE:
            return f"{event.kind}{_SEPARATOR}{event.task_id}"
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 0:
                return event.seq
            if column == 1:
                return self.clock_to_text(event.at)
            if column == 2:
                return event.task_id
            if column == 3:
                return self.labels.get(event.seq) or event_label(event)
            if column == 4:
                return event.attempt or ""
            if column == 5:
                return self.details.get(event.seq) or _detail(event)
        is_state = _is_state(event)
        if role == Qt.ItemDataRole.ForegroundRole and column == 3 and is_state:
            return self.text_colours[event.state]
        if role == Qt.ItemDataRole.ToolTipRole and column == 5:
            return self.details.get(event.seq) or _detail(event)
        if role == Qt.ItemDataRole.ToolTipRole and column == 3:
            return kind_label(event.kind)
        if role == Qt.ItemDataRole.ToolTipRole and column == 2:
            return event.task_id  # a long id is elided in its column
        return None

    def note_edit(self, task_id: str, text: str) -> None:
        """The next ``edited`` event of ``task_id`` says ``text`` (what the edit changed)."""
        self.edit_notes.setdefault(task_id, []).append(text)

    def append(self, events: list[Event]) -> None:
        if not events:
            return
        events = events[-self.capacity :]
        if self.edit_notes:
            for event in events:
                notes = self.edit_notes.get(event.task_id) if event.kind == "edited" else None
                if notes:
                    self.details[event.seq] = notes.pop(0)
        if self.adoptions:
            for event in events:
                adopted = self.adoptions.get(event.task_id) if event.kind == "restored" else None
                if adopted and adopted[0] == event.attempt:
                    kind, _, found = adopted[1].partition(": ")
                    self.labels[event.seq], self.details[event.seq] = f"• {kind}", found
        overflow = len(self.events) + len(events) - self.capacity
        if overflow > 0:
            self.beginRemoveRows(QModelIndex(), 0, overflow - 1)
            if self.details:
                for event in self.events[:overflow]:
                    self.details.pop(event.seq, None)
                    self.labels.pop(event.seq, None)
            del self.events[:overflow]
            self.endRemoveRows()
        first = len(self.events)
        self.beginInsertRows(QModelIndex(), first, first + len(events) - 1)
        self.events.extend(events)
        self.endInsertRows()

    def clear(self) -> None:
        self.beginResetModel()
        self.events.clear()
        self.endResetModel()


class EventFilter(QSortFilterProxyModel):
    """Rows of one kind and/or whose task id contains a text (any case). Matched by
    Qt on ``FILTER_ROLE``: a Python ``filterAcceptsRow`` ran for every inserted row,
    filter or not (184 ms for a batch of 10,000 events)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.task_text = ""
        self.kind = ""
        self.setFilterRole(FILTER_ROLE)
        self.setFilterKeyColumn(0)

    def set_filter(self, task_text: str, kind: str) -> None:
        self.task_text, self.kind = task_text.strip().lower(), kind or ""
        pattern = ""
        if self.task_text or self.kind:
            kind_part = re.escape(self.kind) if self.kind else f"[^{_SEPARATOR}]*"
            pattern = f"^{kind_part}{_SEPARATOR}.*{re.escape(self.task_text)}"
        expression = QRegularExpression(
            pattern, QRegularExpression.PatternOption.CaseInsensitiveOption
        )
        self.setFilterRegularExpression(expression)


class EventLog(QWidget):
    _fitting = False  # the task column is being fitted (its own resizes wait)

    def __init__(self, clock_to_text=None, capacity: int = 5000, parent=None):
        super().__init__(parent)
        self.setObjectName("eventLog")
        self.model = EventLogModel(capacity, clock_to_text, self)
        self.proxy = EventFilter(self)
        self.proxy.setSourceModel(self.model)
        self.task_filter = QLineEdit(placeholderText="Filter by task…", clearButtonEnabled=True)
        self.task_filter.setObjectName("eventTaskFilter")
        self.kind_filter = QComboBox()
        self.kind_filter.setObjectName("eventKindFilter")
        self.kind_filter.addItem("all events", "")
        for kind in KINDS:
            self.kind_filter.addItem(kind_label(kind), kind)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(20)
        self.table.setAlternatingRowColors(True)
        self.table.setShowGrid(False)
        self.table.setTabKeyNavigation(False)  # Tab leaves the log (it walked its cells)
        self.table.setMinimumHeight(40)  # two rows: a small window keeps the graph's room
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        # The detail column takes what is left (a stretched last section would keep
        # its 100 px default and force a horizontal scroll bar).
        header.setSectionResizeMode(COLUMNS.index("detail"), QHeaderView.ResizeMode.Stretch)
        self._size_columns()
        self.table.viewport().installEventFilter(self)  # refit the task column on resize
        filters = QHBoxLayout()
        filters.setContentsMargins(0, 0, 0, 0)
        filters.addWidget(self.task_filter, 2)
        filters.addWidget(self.kind_filter, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(filters)
        layout.addWidget(self.table)
        self.task_filter.textChanged.connect(self._refilter)
        self.kind_filter.currentIndexChanged.connect(self._refilter)

    def _size_columns(self) -> None:
        """Fixed columns just wide enough for their longest usual text (measured once:
        sizing to contents re-measures rows on every batch of events)."""
        cell = QFontMetrics(self.table.font())
        head = QFontMetrics(self.table.horizontalHeader().font())
        for column, sample in SAMPLE_TEXT.items():
            samples = sample if isinstance(sample, tuple) else (sample,)
            width = max(
                *(cell.horizontalAdvance(text) for text in samples),
                head.horizontalAdvance(COLUMNS[column]),
            )
            self.table.setColumnWidth(column, width + 14)  # cell padding
        self._fit_task_column()

    def _fit_task_column(self) -> None:
        """The task column takes what the fixed columns leave, minus room for the detail.
        A narrow log hides seq and # first, so that the event column stays in view.

        Whether it is narrow is judged on the table's width less a vertical scroll bar,
        shown or not: judged on the viewport, hiding columns and the horizontal bar
        changed the viewport, which changed the verdict, which refitted it again, without
        end (a RecursionError at some sizes)."""
        if self._fitting:
            return
        self._fitting = True
        try:
            self._fit()
        finally:
            self._fitting = False

    def _fit(self) -> None:
        table = self.table
        outer = table.width() - 2 * table.frameWidth()
        outer -= table.verticalScrollBar().sizeHint().width()
        narrow = outer < sum(table.columnWidth(c) for c in SAMPLE_TEXT) + 64 + 40
        for column in (COLUMNS.index("seq"), COLUMNS.index("#")):
            if table.isColumnHidden(column) != narrow:
                table.setColumnHidden(column, narrow)
        policy = (  # a scroll bar would take the rows' room
            Qt.ScrollBarPolicy.ScrollBarAlwaysOff
            if narrow
            else Qt.ScrollBarPolicy.ScrollBarAsNeeded
        )
        if table.horizontalScrollBarPolicy() != policy:
            table.setHorizontalScrollBarPolicy(policy)
        fixed = sum(table.columnWidth(c) for c in SAMPLE_TEXT if not table.isColumnHidden(c))
        low, high = TASK_COLUMN_WIDTHS
        # Narrower still (an 820 px window's dock): the detail goes too (its tooltip and
        # the inspector keep it), so that the event column is whole.
        no_detail = narrow and outer - fixed - low < DETAIL_MIN_WIDTH
        detail = COLUMNS.index("detail")
        if table.isColumnHidden(detail) != no_detail:
            table.setColumnHidden(detail, no_detail)
        room = outer - fixed - (0 if no_detail else DETAIL_MIN_WIDTH)
        # Without the detail, the task column gives way (elided) before the event does.
        self.table.setColumnWidth(2, max(TASK_NARROWEST if no_detail else low, min(high, room)))

    def eventFilter(self, watched, event) -> bool:
        if watched is self.table.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_task_column()
        return False

    def _refilter(self, *_):
        self.proxy.set_filter(self.task_filter.text(), self.kind_filter.currentData())

    def add_events(self, events: list[Event]) -> None:
        bar = self.table.verticalScrollBar()
        follow = bar.value() >= bar.maximum() - 2
        self.model.append(events)
        if follow:
            self.table.scrollToBottom()

    def changeEvent(self, event) -> None:
        if event.type() == event.Type.PaletteChange:
            self.model.set_palette(self.table.palette())
            self.table.viewport().update()
        super().changeEvent(event)

    def row_count(self) -> int:
        return self.proxy.rowCount()


def _detail(event) -> str:
    """The detail column: the error, and for a restored task the state it came back in."""
    if event.kind == "restored" and event.state is not None:
        state = kind_label(event.state.value)
        return f"as {state}: {event.error}" if event.error else f"as {state}"
    return event.error or ""


def _is_state(event) -> bool:
    """A change of state (engine-wide events such as a paused dispatcher have none)."""
    return event.state is not None and event.kind == event.state.value
