"""The timeline: what ran in the last 30 s and what the engine will run next.

One lane per task. Finished attempts are bars coloured by outcome (from the
event stream); upcoming heap entries are markers by kind (scheduled, retry with
its attempt number, recurring); an entry past its due time is marked late.
The time axis moves with now; the wheel zooms the horizon.
"""

from __future__ import annotations

from collections import deque

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPainterPath, QPalette, QPen
from PySide6.QtWidgets import QScrollArea, QToolTip, QVBoxLayout, QWidget

from engine import Entry, Event

from .style import ENTRY_COLOURS, OUTCOME_COLOURS, RECURRING_MARK

PAST = 30.0  # seconds of history on the left of "now"
LANE_HEIGHT = 24
LABEL_WIDTH = 130
AXIS_HEIGHT = 24
HORIZONS = (10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 4 * 3600.0, 86400.0)
END_KINDS = {
    "succeeded": "succeeded",
    "failed": "failed",
    "retry_wait": "failed",
    "cancelled": "cancelled",
}
LATE_COLOUR = QColor("#D55E00")


class TimelineModel:
    """Lanes, upcoming entries and recent attempt bars; fed by the bridge, read by the painter."""

    def __init__(self, attempts_of=None):
        self.attempts_of = attempts_of  # tid -> list[Attempt], to seed history of known tasks
        self.lanes: list[str] = []
        self.lane_index: dict[str, int] = {}
        self.entries: dict[str, list[Entry]] = {}
        self.attempts_next: dict[str, int] = {}
        self.bars: dict[str, deque] = {}  # tid -> deque[[start, end|None, outcome, attempt]]

    def set_tasks(self, tasks) -> None:
        for tid in tasks:
            if tid not in self.lane_index:
                self.lane_index[tid] = len(self.lanes)
                self.lanes.append(tid)
                if tasks[tid].attempt and self.attempts_of is not None:
                    self._seed_bars(tid)
            self.attempts_next[tid] = tasks[tid].attempt + 1

    def _seed_bars(self, tid: str) -> None:
        """Attempts that ran before we subscribed (the event stream starts at the snapshot)."""
        bars = self.bars.setdefault(tid, deque(maxlen=20))
        for attempt in self.attempts_of(tid)[-20:]:
            bars.append([attempt.started, attempt.ended, attempt.outcome, attempt.number])

    def remove(self, ids) -> None:
        gone = set(ids)
        self.lanes = [t for t in self.lanes if t not in gone]
        self.lane_index = {t: i for i, t in enumerate(self.lanes)}
        for tid in gone:
            self.bars.pop(tid, None)
            self.entries.pop(tid, None)

    def set_upcoming(self, entries) -> None:
        grouped: dict[str, list[Entry]] = {}
        for entry in entries:
            grouped.setdefault(entry.task_id, []).append(entry)
        self.entries = grouped

    def add_events(self, events: list[Event]) -> None:
        for event in events:
            if event.kind == "running":
                bars = self.bars.setdefault(event.task_id, deque(maxlen=20))
                bars.append([event.at, None, "running", event.attempt])
            elif event.kind in END_KINDS:
                bars = self.bars.get(event.task_id)
                if bars and bars[-1][1] is None:
                    bars[-1][1] = event.at
                    bars[-1][2] = END_KINDS[event.kind]


class TimelineCanvas(QWidget):
    taskClicked = Signal(str)
    horizonChanged = Signal(float)

    def __init__(self, model: TimelineModel, clock_now, parent=None):
        super().__init__(parent)
        self.model = model
        self.clock_now = clock_now
        self.horizon = 120.0
        self.selected: str | None = None
        self._hits: list[tuple[QRectF, str, str]] = []  # (rect, task, tooltip)
        self.setMouseTracking(True)
        self.setMinimumHeight(LANE_HEIGHT)

    def sizeHint(self) -> QSize:
        return QSize(600, max(LANE_HEIGHT, len(self.model.lanes) * LANE_HEIGHT))

    def update_height(self) -> None:
        self.setFixedHeight(max(LANE_HEIGHT, len(self.model.lanes) * LANE_HEIGHT))

    def x_of(self, t: float, now: float) -> float:
        width = max(1.0, self.width() - LABEL_WIDTH - 8)
        return LABEL_WIDTH + (t - now + PAST) / (self.horizon + PAST) * width

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        text = palette.color(QPalette.ColorRole.Text)
        faint = QColor(text)
        faint.setAlpha(28)
        now = self.clock_now()
        clip = event.rect()
        first = max(0, clip.top() // LANE_HEIGHT)
        last = min(len(self.model.lanes), clip.bottom() // LANE_HEIGHT + 1)
        self._hits = []
        metrics = QFontMetrics(self.font())
        x_now = self.x_of(now, now)
        right = self.width() - 8
        for row in range(first, last):
            tid = self.model.lanes[row]
            top = row * LANE_HEIGHT
            if tid == self.selected:
                painter.fillRect(
                    0,
                    top,
                    self.width(),
                    LANE_HEIGHT,
                    palette.color(QPalette.ColorRole.Highlight).lighter(170)
                    if palette.color(QPalette.ColorRole.Base).lightness() > 128
                    else palette.color(QPalette.ColorRole.Highlight).darker(200),
                )
            elif row % 2:
                painter.fillRect(0, top, self.width(), LANE_HEIGHT, faint)
            painter.setPen(text)
            label = metrics.elidedText(tid, Qt.TextElideMode.ElideMiddle, LABEL_WIDTH - 12)
            painter.drawText(
                QRectF(6, top, LABEL_WIDTH - 10, LANE_HEIGHT),
                Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                label,
            )
            self._paint_bars(painter, tid, top, now, right)
            self._paint_entries(painter, tid, top, now, right)
        painter.setPen(QPen(palette.color(QPalette.ColorRole.Highlight), 2))
        painter.drawLine(QPointF(x_now, clip.top()), QPointF(x_now, clip.bottom() + 1))
        painter.end()

    def _paint_bars(self, painter, tid, top, now, right) -> None:
        for start, end, outcome, attempt in self.model.bars.get(tid, ()):
            finish = now if end is None else end
            if finish < now - PAST:
                continue
            x0 = max(LABEL_WIDTH, self.x_of(start, now))
            x1 = min(right, max(x0 + 3, self.x_of(finish, now)))
            rect = QRectF(x0, top + 6, x1 - x0, LANE_HEIGHT - 12)
            colour = QColor(OUTCOME_COLOURS.get(outcome, "#888888"))
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(colour)
            painter.drawRoundedRect(rect, 3, 3)
            took = finish - start
            self._hits.append(
                (
                    rect.adjusted(-2, -4, 2, 4),
                    tid,
                    f"{tid} attempt {attempt}: {outcome}, {took:.2f} s",
                )
            )

    def _paint_entries(self, painter, tid, top, now, right) -> None:
        mid = top + LANE_HEIGHT / 2
        for entry in self.model.entries.get(tid, ()):
            late = entry.run_at < now
            x = self.x_of(entry.run_at, now)
            beyond = x > right
            x = min(x, right - 6)
            colour = QColor(ENTRY_COLOURS.get(entry.kind, "#888888"))
            painter.setBrush(colour)
            painter.setPen(QPen(LATE_COLOUR if late else colour.darker(150), 2 if late else 1))
            painter.drawPath(_marker(entry.kind, x, mid))
            delay = entry.run_at - now
            when = f"late by {-delay:.1f} s" if late else f"in {delay:.1f} s"
            what = entry.kind
            if entry.kind == "retry":
                attempt = self.model.attempts_next.get(tid, 0)
                what = f"retry (attempt {attempt})"
                painter.setPen(self.palette().color(QPalette.ColorRole.Text))
                painter.drawText(QPointF(x + 8, mid + 4), f"#{attempt}")
            elif entry.kind == "recurring":
                painter.setPen(self.palette().color(QPalette.ColorRole.Text))
                painter.drawText(QPointF(x + 8, mid + 4), RECURRING_MARK)
            if late:
                painter.setPen(LATE_COLOUR)
                painter.drawText(QPointF(x + 8, mid + 4), "late")
            if beyond:
                painter.setPen(self.palette().color(QPalette.ColorRole.Text))
                painter.drawText(QPointF(x - 60, mid + 4), "→ " + _short(delay))
            self._hits.append(
                (
                    QRectF(x - 7, mid - 7, 14, 14),
                    tid,
                    f"{tid}: {what}, {when} (priority {entry.priority})",
                )
            )

    def mouseMoveEvent(self, event) -> None:
        pos = event.position()
        for rect, _tid, tip in reversed(self._hits):
            if rect.contains(pos):
                QToolTip.showText(event.globalPosition().toPoint(), tip, self)
                return
        QToolTip.hideText()

    def mousePressEvent(self, event) -> None:
        row = int(event.position().y() // LANE_HEIGHT)
        if 0 <= row < len(self.model.lanes):
            self.taskClicked.emit(self.model.lanes[row])

    def wheelEvent(self, event) -> None:
        # Ctrl+wheel zooms the time axis; a plain wheel scrolls the lanes.
        if not event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            event.ignore()
            return
        step = 1 if event.angleDelta().y() < 0 else -1
        index = min(range(len(HORIZONS)), key=lambda i: abs(HORIZONS[i] - self.horizon))
        index = max(0, min(len(HORIZONS) - 1, index + step))
        self.horizonChanged.emit(HORIZONS[index])
        event.accept()


class TimelineAxis(QWidget):
    def __init__(self, canvas: TimelineCanvas, parent=None):
        super().__init__(parent)
        self.canvas = canvas
        self.setFixedHeight(AXIS_HEIGHT)

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        text = self.palette().color(QPalette.ColorRole.Text)
        now = self.canvas.clock_now()
        canvas = self.canvas
        room = max(2, int((self.width() - LABEL_WIDTH) / 70))  # a label needs ~70 px
        step = _tick_step(canvas.horizon + PAST, room)
        painter.setPen(text)
        small = QFont(self.font())
        small.setPointSizeF(max(7.0, small.pointSizeF() - 1))
        painter.setFont(small)
        painter.drawText(
            QRectF(6, 0, LABEL_WIDTH - 10, AXIS_HEIGHT),
            Qt.AlignmentFlag.AlignVCenter,
            f"next {_short(canvas.horizon)}",
        )
        t = -PAST - (-PAST % step) + step if -PAST % step else -PAST
        while t <= canvas.horizon:
            x = canvas.x_of(now + t, now)
            painter.drawLine(QPointF(x, AXIS_HEIGHT - 6), QPointF(x, AXIS_HEIGHT))
            label = "now" if abs(t) < 1e-9 else f"{'+' if t > 0 else '−'}{_short(abs(t))}"
            painter.drawText(
                QRectF(min(x - 40, self.width() - 80), 0, 80, AXIS_HEIGHT - 6),
                Qt.AlignmentFlag.AlignCenter,
                label,
            )
            t += step
        painter.setPen(QPen(self.palette().color(QPalette.ColorRole.Highlight), 2))
        x_now = canvas.x_of(now, now)
        painter.drawLine(QPointF(x_now, AXIS_HEIGHT - 8), QPointF(x_now, AXIS_HEIGHT))
        painter.end()


class Timeline(QWidget):
    taskClicked = Signal(str)

    def __init__(self, clock_now, attempts_of=None, parent=None):
        super().__init__(parent)
        self.setObjectName("timeline")
        self.model = TimelineModel(attempts_of)
        self.canvas = TimelineCanvas(self.model, clock_now)
        self.axis = TimelineAxis(self.canvas)
        self.scroll = QScrollArea()
        self.scroll.setWidget(self.canvas)
        self.scroll.setWidgetResizable(True)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 4)
        layout.setSpacing(0)
        layout.addWidget(self.axis)
        layout.addWidget(self.scroll)
        self.canvas.taskClicked.connect(self.taskClicked)
        self.canvas.horizonChanged.connect(self.set_horizon)
        self._timer = QTimer(self)
        self._timer.setInterval(100)  # the axis moves with now
        self._timer.timeout.connect(self._tick)
        self._timer.start()

    def _tick(self) -> None:
        if self.isVisible():
            self.canvas.update()
            self.axis.update()

    def set_tasks(self, tasks) -> None:
        before = len(self.model.lanes)
        self.model.set_tasks(tasks)
        if len(self.model.lanes) != before:
            self.canvas.update_height()

    def remove_tasks(self, ids) -> None:
        self.model.remove(ids)
        self.canvas.update_height()

    def set_upcoming(self, entries) -> None:
        self.model.set_upcoming(entries)

    def add_events(self, events) -> None:
        self.model.add_events(events)

    def select(self, tid: str | None) -> None:
        self.canvas.selected = tid
        row = self.model.lane_index.get(tid) if tid else None
        if row is not None:
            self.scroll.ensureVisible(0, row * LANE_HEIGHT + LANE_HEIGHT // 2, 0, LANE_HEIGHT)
        self.canvas.update()

    def set_horizon(self, seconds: float) -> None:
        self.canvas.horizon = seconds
        self.canvas.update()
        self.axis.update()


def _marker(kind: str, x: float, y: float) -> QPainterPath:
    path = QPainterPath()
    if kind == "retry":
        path.addEllipse(QPointF(x, y), 5.5, 5.5)
    elif kind == "recurring":
        path.moveTo(x - 6, y - 6)
        path.lineTo(x + 6, y)
        path.lineTo(x - 6, y + 6)
        path.closeSubpath()
    else:  # scheduled: a diamond
        path.moveTo(x, y - 6.5)
        path.lineTo(x + 6.5, y)
        path.lineTo(x, y + 6.5)
        path.lineTo(x - 6.5, y)
        path.closeSubpath()
    return path


def _tick_step(span: float, max_ticks: int = 8) -> float:
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600):
        if span / step <= min(8, max_ticks):
            return float(step)
    return 43200.0


def _short(seconds: float) -> str:
    seconds = abs(seconds)
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            value = seconds / size
            return (
                f"{value:.0f} {unit}" if abs(value - round(value)) < 0.05 else f"{value:.1f} {unit}"
            )
    return f"{seconds:.0f} s"
