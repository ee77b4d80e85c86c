"""The timeline: a Gantt of attempts (this run and earlier ones) and what runs next.

One lane per task (with more than MANY_LANES tasks, only those with a bar or an
upcoming entry to show), or per worker ("By worker": which thread, process or cluster
worker ran each attempt; on by default when tasks run on a Dask cluster).
Attempts are bars coloured by outcome: this run's from the
event stream, earlier runs' (and this run's older ones) from the run store, read
for the visible window only, at most every few seconds, and off the GUI thread
(the window's ``HistoryReader``): the timeline draws what it has and adds the
stored bars when the read answers. Upcoming heap
entries are markers by kind (scheduled, retry with its attempt number,
recurring); an entry past its due time is marked late.

The window follows now until the user pans it: drag, Shift+wheel or a
horizontal wheel, or the arrow keys. "Now" or Home follows now again;
Ctrl+wheel or +/- zooms from 10 seconds to 24 hours. Until the user zooms or
pans, the window fits what there is (this run's first attempt to just past the
last upcoming entry, 20 s to 10 min), so a workflow of 1-second tasks is readable.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QBrush,
    QColor,
    QFont,
    QFontMetrics,
    QPainter,
    QPainterPath,
    QPalette,
    QPen,
)
from PySide6.QtWidgets import QApplication, QScrollArea, QToolButton, QToolTip, QVBoxLayout, QWidget

from taskloom.engine import Entry, Event

from .graph.groups import layers_of, natural_key
from .history_reader import HistoryReader
from .run_history import WindowHistory, store_of, wall_offset
from .style import ENTRY_COLOURS, OUTCOME_COLOURS, RECURRING_MARK

LANE_HEIGHT = 24
LABEL_WIDTH = 130
AXIS_HEIGHT = 24
SPANS: tuple[float, ...] = (10.0, 20.0, 30.0, 60.0, 150.0, 300.0, 600.0, 1800.0, 3600.0)
SPANS += (3 * 3600.0, 6 * 3600.0, 12 * 3600.0, 86400.0, 2 * 86400.0)
NOW_AT = 0.2  # where now sits while following, as a fraction of the width
# View > Look ahead: the next hour, day or week after now (the forecast fills it).
LOOK_AHEAD = {"hour": 3600.0, "day": 86400.0, "week": 7 * 86400.0}
SPANS += (LOOK_AHEAD["week"] / (1 - NOW_AT),)
DEFAULT_SPAN = 150.0  # 30 s of history, 2 min ahead (once a person zooms or pans)
FIT_SPANS = (20.0, 600.0)  # the range the automatic fit stays within
FIT_HISTORY = 30.0  # seconds shown before now when this run has no attempt yet
FIT_PAD = 0.06  # of the span, left of the first attempt and right of the last entry
PAN_STEP = 0.1  # of the span, per wheel notch or arrow key
LATE_COLOUR = QColor("#D55E00")
EARLIER_RUN_ALPHA = 150  # earlier runs' bars are a little faded
MANY_LANES = 200  # above this many tasks, only tasks with something to show get a lane
GHOST_COLOUR = QColor("#6F7782")  # forecast bars: neutral, hollow, dashed
CRITICAL_COLOUR = QColor("#8E44AD")  # the critical path, here and on the graph
# Up to this many lanes, new lanes are sorted in at once; beyond, at most once per
# LANE_SORT_MS (sorting 20,000 names per batch of new tasks held the GUI thread).
SORT_AT_ONCE_UP_TO = 2000
LANE_SORT_MS = 1000
MIN_TICK_MS = 100  # the timeline redraws at most ten times a second
MAX_TICK_MS = 3_600_000  # a tick an hour at least, whatever the zoom
GROUP_LANE = "\x01lane:"  # the lane of a group collapsed in the graph: its tasks' bars
GROUP_BARS = 400  # the newest attempts a group's lane keeps
TICK_GAP = 4  # px: a recurring band's occurrences closer than this are not drawn one by one


class TimelineModel:
    """Lanes, upcoming entries and attempt bars; fed by the bridge, read by the painter."""

    def __init__(self, attempts_of=None):
        self.attempts_of = attempts_of  # tid -> list[Attempt], to seed history of known tasks
        self.lanes: list[str] = []
        self.lane_index: dict[str, int] = {}
        self._deps: dict[str, tuple] = {}  # what the lane order is computed from
        self._names: dict[str, str] = {}
        self.order_dirty = False  # lanes added since the last sort (many lanes: sorted later)
        self._seeded = False
        # tid -> the collapsed group whose lane it shares, or None (its own lane).
        self.lane_group = None
        self.grouped_lanes: list[str] | None = None  # lanes with groups folded in
        self.group_sizes: dict[str, int] = {}
        self.group_bars: dict[str, deque] = {}  # group -> deque[(tid, task bar)], by start
        self.entries: dict[str, list[Entry]] = {}
        self.later: dict[str, list[Entry]] = {}  # recurring tasks' occurrences after the next
        self.attempts_next: dict[str, int] = {}
        self.bars: dict[str, deque] = {}  # tid -> deque[[start, end|None, outcome, attempt]]
        self.history: WindowHistory | None = None  # stored attempts of the visible window
        # "By worker": lanes are the workers that ran attempts (known once one ends).
        self.by_worker = False
        self.active_lanes: list[str] = []  # the lanes shown when there are many tasks
        self.workers: list[str] = []
        self.worker_bars: dict[str, deque] = {}  # worker -> deque[[start, end, outcome, n, tid]]
        # The forecast's runs still to come (gui/forecast_view.py): tid -> [(start, end,
        # on the critical path)], on the scheduler clock; drawn as ghosts after now.
        self.ghosts: dict[str, list[tuple[float, float, bool]]] = {}
        # The forecast's collisions: tid -> [(at, kind, detail)], drawn as warnings.
        self.collisions: dict[str, list[tuple[float, str, str]]] = {}
        # Recurring tasks: tid -> "every 10 s" (or its cron), drawn as one band with
        # its occurrences as ticks, not a marker and a ghost bar per occurrence.
        self.recurring: dict[str, str] = {}
        # Where the forecast's ghosts end (scheduler clock), whether a forecast that may
        # reach further is being computed, and why they end there (a look-ahead of a
        # week must not stop silently at +2 d).
        self.forecast_reach: float | None = None
        self.forecast_filling = False
        self.forecast_end_note = ""
        # Tasks with jitter: tid -> its most delay (s), or None; read once per task. An
        # upcoming entry of one is drawn as the window it may start in, not a point.
        self.jitter: dict[str, float | None] = {}

    def jitter_window(self, tid: str) -> tuple[float, float] | None:
        """(earliest, latest) start of the task's next upcoming entry, if it has jitter."""
        jitter, entries = self.jitter.get(tid), self.entries.get(tid)
        if not jitter or not entries:
            return None
        return entries[0].run_at, entries[0].run_at + jitter

    def visible_lanes(self) -> list[str]:
        if self.by_worker:
            return self.workers
        lanes = self.grouped_lanes if self.grouped_lanes is not None else self.lanes
        if len(lanes) <= MANY_LANES:
            return lanes
        return self.active_lanes

    def set_lane_groups(self, lane_group) -> None:
        """One lane per collapsed group (``lane_group(tid)``: its group, or None)."""
        self.lane_group = lane_group
        self._fold_groups()

    def _fold_groups(self) -> None:
        """The lanes with each collapsed group's tasks folded into one (in the place of
        its first task), and the group lanes' bars gathered from their tasks' bars."""
        lane_group = self.lane_group
        self.group_bars, self.group_sizes = {}, {}
        if lane_group is None:
            self.grouped_lanes = None
            return
        lanes: list[str] = []
        sizes = self.group_sizes
        for tid in self.lanes:
            group = lane_group(tid)
            if group is None:
                lanes.append(tid)
            elif group in sizes:
                sizes[group] += 1
            else:
                sizes[group] = 1
                lanes.append(GROUP_LANE + group)
        self.grouped_lanes = lanes if sizes else None
        gathered: dict[str, list] = {}
        for tid, bars in self.bars.items():
            group = lane_group(tid)
            if group is not None:
                gathered.setdefault(group, []).extend((tid, bar) for bar in bars)
        for group, items in gathered.items():
            items.sort(key=lambda item: item[1][0])
            self.group_bars[group] = deque(items, maxlen=GROUP_BARS)

    def refresh_active(self, selected: str | None = None) -> bool:
        """With many tasks, lanes only for those with something to show: an attempt
        bar, an upcoming entry, or the selection. Returns whether the set changed."""
        lanes = self.grouped_lanes if self.grouped_lanes is not None else self.lanes
        if len(lanes) <= MANY_LANES:
            return False
        shown = set(self.bars) | set(self.entries) | set(self.ghosts)
        if self.history is not None:
            shown |= set(self.history.bars)
        if selected:
            shown.add(selected)
        active = [tid for tid in lanes if tid in shown or tid.startswith(GROUP_LANE)]
        changed = active != self.active_lanes
        self.active_lanes = active
        return changed

    def set_by_worker(self, on: bool) -> None:
        """Switch lanes; turning it on reads the recent attempts of every task once."""
        self.by_worker = on
        self.workers, self.worker_bars = [], {}
        if on and self.attempts_of is not None:
            finished = []
            for tid in self.lanes:
                for attempt in self.attempts_of(tid)[-20:]:
                    if attempt.ended is not None:
                        finished.append((attempt.ended, tid, attempt))
            for _, tid, attempt in sorted(finished, key=lambda item: item[0]):
                self._add_worker_bar(tid, attempt)

    def _add_worker_bar(self, tid: str, attempt) -> None:
        worker = attempt.worker or "(unknown worker)"
        bars = self.worker_bars.get(worker)
        if bars is None:
            bars = self.worker_bars[worker] = deque(maxlen=200)
            self.workers.append(worker)
            self.workers.sort()
        bars.append([attempt.started, attempt.ended, attempt.outcome, attempt.number, tid])

    def _attempt_ended(self, tid: str, number: int) -> None:
        """Put a finished attempt in its worker's lane (its worker is known now)."""
        if self.attempts_of is None:
            return
        for attempt in reversed(self.attempts_of(tid)):
            if attempt.number == number:
                if attempt.ended is not None:
                    self._add_worker_bar(tid, attempt)
                return

    def set_tasks(self, tasks) -> None:
        reorder = False
        # Only the first tasks (the snapshot) ran before the events started: a task
        # heard of later has its attempts in the event stream (reading them all took
        # the scheduler's lock 20,000 times while tasks streamed in).
        seed = self.attempts_of is not None and not self._seeded
        self._seeded = True
        for tid, info in tasks.items():
            if tid not in self.lane_index:
                self.lane_index[tid] = len(self.lanes)
                self.lanes.append(tid)
                reorder = True
                if info.attempt and seed:
                    self._seed_bars(tid)
            if self._deps.get(tid) != info.deps or self._names.get(tid) != info.name:
                self._deps[tid], self._names[tid] = info.deps, info.name
                reorder = True
            self.attempts_next[tid] = info.attempt + 1
        if reorder:
            self.order_dirty = True
            if len(self.lanes) <= SORT_AT_ONCE_UP_TO:
                self.sort_lanes()
            elif self.lane_group is not None:
                self._fold_groups()  # new tasks show now; in order at the next sort

    def sort_lanes(self) -> None:
        """Upstream first (topological layers), then by name in natural order (task-2
        before task-10): the order a person reads a workflow in. Linear in tasks + edges,
        plus the sort; only when tasks or edges were added."""
        lanes = self.lanes
        layer = layers_of({tid: self._deps.get(tid, ()) for tid in lanes})
        names = self._names
        lanes.sort(key=lambda tid: (layer[tid], natural_key(names.get(tid) or tid), tid))
        self.lane_index = {tid: i for i, tid in enumerate(lanes)}
        self.order_dirty = False
        if self.lane_group is not None:
            self._fold_groups()

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
            self._deps.pop(tid, None)
            self._names.pop(tid, None)
            self.bars.pop(tid, None)
            self.entries.pop(tid, None)
            self.later.pop(tid, None)
            self.recurring.pop(tid, None)

    def set_upcoming(self, entries) -> None:
        grouped: dict[str, list[Entry]] = {}
        for entry in entries:
            grouped.setdefault(entry.task_id, []).append(entry)
        self.entries = grouped

    def add_events(self, events: list[Event]) -> None:
        # An attempt may already have its bar (seeded from attempts(), or an event
        # heard twice, as a watcher's replay of the run's recent past can be): each
        # event applies to its own attempt's bar, once.
        for event in events:
            if event.kind == "running":
                bars = self.bars.setdefault(event.task_id, deque(maxlen=20))
                if not any(bar[3] == event.attempt for bar in bars):
                    bar = [event.at, None, "running", event.attempt]
                    bars.append(bar)
                    group = self.lane_group(event.task_id) if self.lane_group else None
                    if group is not None:  # the same list: its end is filled in once
                        self.group_bars.setdefault(group, deque(maxlen=GROUP_BARS)).append(
                            (event.task_id, bar)
                        )
            elif event.outcome is not None:  # the engine says this event ended an attempt
                known = self.bars.get(event.task_id)
                if not known:
                    continue
                own = [bar for bar in known if bar[3] == event.attempt]
                bar = own[-1] if own else known[-1]
                if bar[1] is None:
                    bar[1] = event.at
                    bar[2] = event.outcome
                    if self.by_worker:
                        self._attempt_ended(event.task_id, bar[3])

    def stored_bars(self, tid: str):
        """Stored attempts of the task not also shown from the event stream."""
        if self.history is None:
            return ()
        rows = self.history.bars.get(tid, ())
        live = {bar[3] for bar in self.bars.get(tid, ())}
        run = self.history.run
        return [row for row in rows if not (row[4] == run and row[3] in live)]


class TimelineCanvas(QWidget):
    taskClicked = Signal(str)
    viewChanged = Signal()  # the span or the window's position changed

    def __init__(self, model: TimelineModel, clock_now, parent=None):
        super().__init__(parent)
        self.model = model
        self.clock_now = clock_now
        self.wall_offset = lambda: time.time() - clock_now()  # wall = clock + offset
        self.span = DEFAULT_SPAN
        self.following = True
        self.auto_fit = True  # until the user zooms or pans
        self.fit_left: float | None = None  # the fitted window's left edge
        self.start = 0.0  # the left edge on the scheduler clock, while not following
        self.selected: str | None = None
        self._hits: list[tuple[QRectF, str, str]] = []  # (rect, task, tooltip)
        self.bands: list[tuple[str, QRectF, str]] = []  # recurring bands drawn: (task, rect, label)
        self.reach_region: QRectF | None = None  # past where the forecast's ghosts end
        self._press: tuple[float, float] | None = None  # (x, left edge) at the mouse press
        self._dragging = False
        self.setMouseTracking(True)
        self.setMinimumHeight(LANE_HEIGHT)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # Tab reaches it: keys pan and zoom

    # -- the window ---------------------------------------------------------------
    @property
    def horizon(self) -> float:
        """Seconds ahead of now shown while following."""
        return self.span * (1 - NOW_AT)

    def window(self, now: float | None = None) -> tuple[float, float]:  # type: ignore[override]  # not Qt's window()
        """(left, right) of the visible window on the scheduler clock."""
        now = self.clock_now() if now is None else now
        if not self.following:
            left = self.start
        elif self.auto_fit and self.fit_left is not None:
            left = self.fit_left
        else:
            left = now - self.span * NOW_AT
        return left, left + self.span

    def refit(self, now: float | None = None) -> bool:
        """Fit the window to this run's attempts and upcoming entries (while the user
        has not zoomed or panned). Returns True if the window changed."""
        if not (self.auto_fit and self.following):
            return False
        now = self.clock_now() if now is None else now
        starts = [bars[0][0] for bars in self.model.bars.values() if bars]
        first = min(starts) if starts else now - FIT_HISTORY
        # The run, not the forecast's horizon: each task's next entry and its first
        # ghost (a recurring task's later occurrences fill the horizon, 8 min of 3 px bars).
        last = max([now, *(min(e.run_at for e in es) for es in self.model.entries.values() if es)])
        last = max([last, *(min(g[1] for g in gs) for gs in self.model.ghosts.values() if gs)])
        low, high = FIT_SPANS
        span = min(high, max(low, (last - first) / (1 - 2 * FIT_PAD)))
        left = first - FIT_PAD * span
        if left + span < last + FIT_PAD * span:  # more than fits: keep now and what is next
            left = min(now - span * NOW_AT, last + FIT_PAD * span - span)
        left = min(left, now - FIT_PAD * span)  # now always in view
        changed = (span, left) != (self.span, self.fit_left)
        self.span, self.fit_left = span, left
        return changed

    def plot_width(self) -> float:
        return max(1.0, self.width() - LABEL_WIDTH - 8)

    def x_of(self, t: float, now: float) -> float:
        left, _ = self.window(now)
        return LABEL_WIDTH + (t - left) / self.span * self.plot_width()

    def t_of(self, x: float, now: float) -> float:
        left, _ = self.window(now)
        return left + (x - LABEL_WIDTH) / self.plot_width() * self.span

    def pan(self, seconds: float) -> None:
        """Move the window by ``seconds`` (negative: back in time); stops following now."""
        left, _ = self.window()
        self.start = left + seconds
        self.following = False
        self.auto_fit = False
        self._changed()

    def follow_now(self) -> None:
        self.following = True
        self._changed()

    def zoom(self, steps: int, anchor_x: float | None = None) -> None:
        """Step through SPANS; a panned window keeps the time under ``anchor_x`` in place."""
        index = min(range(len(SPANS)), key=lambda i: abs(SPANS[i] - self.span))
        self.set_span(SPANS[max(0, min(len(SPANS) - 1, index + steps))], anchor_x)

    def set_span(self, seconds: float, anchor_x: float | None = None) -> None:
        seconds = max(SPANS[0], min(SPANS[-1], float(seconds)))
        if self.auto_fit and self.following:  # zoom around now, not the fitted edge
            self.auto_fit = False
            self._changed()
        if seconds == self.span:
            return
        if not self.following:
            now = self.clock_now()
            x = LABEL_WIDTH + self.plot_width() / 2 if anchor_x is None else anchor_x
            fraction = (x - LABEL_WIDTH) / self.plot_width()
            self.start = self.t_of(x, now) - fraction * seconds
        self.span = seconds
        self._changed()

    def _changed(self) -> None:
        self.update()
        self.viewChanged.emit()

    # -- painting -----------------------------------------------------------------
    def sizeHint(self) -> QSize:
        return QSize(600, max(LANE_HEIGHT, len(self.model.visible_lanes()) * LANE_HEIGHT))

    def update_height(self) -> None:
        self.setFixedHeight(max(LANE_HEIGHT, len(self.model.visible_lanes()) * LANE_HEIGHT))

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        text = palette.color(QPalette.ColorRole.Text)
        faint = QColor(text)
        faint.setAlpha(28)
        now = self.clock_now()
        left, right_t = self.window(now)
        clip = event.rect()
        first = max(0, clip.top() // LANE_HEIGHT)
        lanes = self.model.visible_lanes()
        by_worker = self.model.by_worker
        last = min(len(lanes), clip.bottom() // LANE_HEIGHT + 1)
        self._hits = []
        self.bands = []
        self.reach_region = None
        metrics = QFontMetrics(self.font())
        right = self.width() - 8
        for row in range(first, last):
            tid = lanes[row]
            top = row * LANE_HEIGHT
            if tid == self.selected and not by_worker:
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
            if tid.startswith(GROUP_LANE):
                group = tid[len(GROUP_LANE) :]
                label = f"▣ {group} ({self.model.group_sizes.get(group, 0):,})"
                painter.drawText(
                    QRectF(6, top, LABEL_WIDTH - 10, LANE_HEIGHT),
                    Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                    metrics.elidedText(label, Qt.TextElideMode.ElideMiddle, LABEL_WIDTH - 12),
                )
                self._paint_group_bars(painter, group, top, now, (left, right_t), right)
                continue
            label = metrics.elidedText(tid, Qt.TextElideMode.ElideMiddle, LABEL_WIDTH - 12)
            painter.drawText(
                QRectF(6, top, LABEL_WIDTH - 10, LANE_HEIGHT),
                Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                label,
            )
            if by_worker:
                self._paint_worker_bars(painter, tid, top, now, (left, right_t), right)
                continue
            self._paint_stored(painter, tid, top, now, (left, right_t), right)
            self._paint_bars(painter, tid, top, now, (left, right_t), right)
            if tid in self.model.recurring:
                self._paint_band(painter, tid, top, now, (left, right_t), right)
            self._paint_ghosts(painter, tid, top, now, (left, right_t), right)
            self._paint_entries(painter, tid, top, now, (left, right_t), right)
        self._paint_run_starts(painter, now, (left, right_t), clip)
        self._paint_reach(painter, now, (left, right_t), clip, right)
        if left <= now <= right_t:
            x_now = self.x_of(now, now)
            painter.setPen(QPen(palette.color(QPalette.ColorRole.Highlight), 2))
            painter.drawLine(QPointF(x_now, clip.top()), QPointF(x_now, clip.bottom() + 1))
        painter.end()

    def _paint_run_starts(self, painter, now, window, clip) -> None:
        """A dashed line where each stored run began (its "run N" label is on the axis,
        where it hides no bars)."""
        left, right_t = window
        line = QColor(self.palette().color(QPalette.ColorRole.Text))
        line.setAlpha(110)
        painter.setPen(QPen(line, 1, Qt.PenStyle.DashLine))
        for start in run_starts_in(self.model, left, right_t):
            x = self.x_of(start, now) - 2  # just left of the run's first bar
            painter.drawLine(QPointF(x, clip.top()), QPointF(x, clip.bottom() + 1))

    def _bar_rect(self, start, finish, top, now, right) -> QRectF:
        x0 = max(LABEL_WIDTH, self.x_of(start, now))
        x1 = min(right, max(x0 + 3, self.x_of(finish, now)))
        return QRectF(x0, top + 6, x1 - x0, LANE_HEIGHT - 12)

    def _paint_stored(self, painter, tid, top, now, window, right) -> None:
        """Stored attempts; neighbours that would overlap on screen merge into one bar
        (a day of a busy task is hundreds of bars a pixel apart)."""
        left, right_t = window
        current_run = self.model.history.run if self.model.history else None
        scale = self.plot_width() / self.span
        segments: list[list] = []  # [x0, x1, outcome, earlier, first, last, count]
        for bar in self.model.stored_bars(tid):
            start, end, outcome = bar[0], bar[1], bar[2]
            if start > right_t:
                break
            finish = start if end is None else end
            if finish < left:
                continue
            x0 = max(LABEL_WIDTH, LABEL_WIDTH + (start - left) * scale)
            x1 = min(right, max(x0 + 3, LABEL_WIDTH + (finish - left) * scale))
            earlier = bar[4] != current_run
            last = segments[-1] if segments else None
            if last and x0 <= last[1] + 1 and last[2] == outcome and last[3] == earlier:
                last[1] = max(last[1], x1)
                last[5] = bar
                last[6] += 1
            else:
                segments.append([x0, x1, outcome, earlier, bar, bar, 1])
        painter.setPen(Qt.PenStyle.NoPen)
        for x0, x1, outcome, earlier, first, last, count in segments:
            colour = QColor(OUTCOME_COLOURS.get(outcome, "#888888"))
            if earlier:
                colour.setAlpha(EARLIER_RUN_ALPHA)
            painter.setBrush(colour)
            rect = QRectF(x0, top + 6, x1 - x0, LANE_HEIGHT - 12)
            painter.drawRoundedRect(rect, 3, 3)
            self._hits.append(
                (rect.adjusted(-2, -4, 2, 4), tid, self._stored_tip(tid, first, last, count))
            )

    def _stored_tip(self, tid, first, last, count) -> str:
        offset = self.wall_offset()
        current_run = self.model.history.run if self.model.history else None

        def when(t):
            return time.strftime("%d %b %H:%M:%S", time.localtime(t + offset))

        start, end, outcome, number, run = first
        which = f"run {run} · " if run != current_run else ""
        if count > 1:
            return f"{tid}: {count} attempts {outcome}, {when(start)} – {when(last[0])}"
        took = "" if end is None else f", {end - start:.2f} s"
        return f"{tid} {which}attempt {number}: {outcome}{took} ({when(start)})"

    def _paint_group_bars(self, painter, group, top, now, window, right) -> None:
        """A collapsed group's lane: its tasks' newest attempts, overlapping ones drawn
        over each other (the tooltip names the task)."""
        left, right_t = window
        painter.setPen(Qt.PenStyle.NoPen)
        for tid, (start, end, outcome, attempt) in self.model.group_bars.get(group, ()):
            finish = now if end is None else end
            if finish < left or start > right_t:
                continue
            rect = self._bar_rect(start, finish, top, now, right)
            painter.setBrush(QColor(OUTCOME_COLOURS.get(outcome, "#888888")))
            painter.drawRoundedRect(rect, 3, 3)
            self._hits.append(
                (rect.adjusted(-2, -4, 2, 4), tid, f"{tid} attempt {attempt}: {outcome}")
            )

    def _paint_bars(self, painter, tid, top, now, window, right) -> None:
        left, right_t = window
        for start, end, outcome, attempt in self.model.bars.get(tid, ()):
            finish = now if end is None else end
            if finish < left or start > right_t:
                continue
            rect = self._bar_rect(start, finish, top, now, right)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(OUTCOME_COLOURS.get(outcome, "#888888")))
            painter.drawRoundedRect(rect, 3, 3)
            took = finish - start
            self._hits.append(
                (
                    rect.adjusted(-2, -4, 2, 4),
                    tid,
                    f"{tid} attempt {attempt}: {outcome}, {took:.2f} s",
                )
            )

    def _paint_ghosts(self, painter, tid, top, now, window, right) -> None:
        """The forecast of what has not run yet: hollow dashed bars after now, so no one
        takes them for attempts; the critical path's in its own colour."""
        left, right_t = window
        ghosts = () if tid in self.model.recurring else self.model.ghosts.get(tid, ())
        for start, end, critical in ghosts:  # (a recurring task's are its band's ticks)
            start = max(start, now)
            if end <= start or end < left or start > right_t:
                continue
            rect = self._bar_rect(start, end, top, now, right).adjusted(0, 1, 0, -1)
            colour = QColor(CRITICAL_COLOUR if critical else GHOST_COLOUR)
            fill = QColor(colour)
            fill.setAlpha(45)
            painter.setPen(QPen(colour, 1.5, Qt.PenStyle.DashLine))
            painter.setBrush(fill)
            painter.drawRoundedRect(rect, 3, 3)
            offset = self.wall_offset()
            when = time.strftime("%H:%M:%S", time.localtime(start + offset))
            path = ", on the critical path" if critical else ""
            took = end - start
            took_text = _short(took) if took >= 60 else f"{took:.1f} s"
            tip = f"{tid} forecast: starts ~{when}, takes ~{took_text}{path}"
            self._hits.append((rect.adjusted(-2, -4, 2, 4), tid, tip))
        for at, kind, detail in self.model.collisions.get(tid, ()):
            if not left <= at <= right_t or at < now:
                continue
            x, y = self.x_of(at, now), top + 3
            mark = QPainterPath(QPointF(x, y))
            mark.lineTo(x + 6, y + LANE_HEIGHT - 6)
            mark.lineTo(x - 6, y + LANE_HEIGHT - 6)
            mark.closeSubpath()
            painter.setPen(QPen(QColor("#FFFFFF"), 1))
            painter.setBrush(LATE_COLOUR)
            painter.drawPath(mark)
            when = time.strftime("%H:%M:%S", time.localtime(at + self.wall_offset()))
            tip = f"{tid} at ~{when}: {kind}, {detail}"
            self._hits.append((mark.boundingRect().adjusted(-3, -3, 3, 3), tid, tip))

    def _paint_band(self, painter, tid, top, now, window, right) -> None:
        """A recurring task: one band from its next occurrence to its last one known
        (the forecast's, or the definition's), labelled "every 10 s", its occurrences
        as thin ticks while they are at least TICK_GAP px apart (a comb of markers and
        ghost bars said nothing more)."""
        left, right_t = window
        model = self.model
        times = {g[0] for g in model.ghosts.get(tid, ()) if g[0] >= now}
        later = model.later.get(tid, ())
        times.update(e.run_at for e in later if e.kind != "skipped")
        times.update(e.run_at for e in model.entries.get(tid, ()) if e.kind == "recurring")
        self._paint_skipped(painter, tid, top, now, window, right, later)
        ahead = sorted(t for t in times if t >= min(now, left))
        if not ahead or ahead[0] > right_t or ahead[-1] < left:
            return
        first, last = ahead[0], ahead[-1]
        x0 = max(LABEL_WIDTH, self.x_of(first, now))
        x1 = min(right, max(x0 + 6, self.x_of(last, now)))
        rect = QRectF(x0, top + 5, x1 - x0, LANE_HEIGHT - 10)
        colour = QColor(ENTRY_COLOURS.get("recurring", "#888888"))
        fill = QColor(colour)
        fill.setAlpha(45)
        edge = QColor(colour)
        edge.setAlpha(150)
        painter.setPen(QPen(edge, 1))
        painter.setBrush(fill)
        painter.drawRoundedRect(rect, 3, 3)
        xs = sorted({round(self.x_of(t, now)) for t in ahead if left <= t <= right_t})
        dense = any(b - a < TICK_GAP for a, b in zip(xs, xs[1:], strict=False))
        if not dense:
            painter.setPen(QPen(edge, 1))
            for x in xs:
                painter.drawLine(QPointF(x, rect.top() + 2), QPointF(x, rect.bottom() - 2))
        label = model.recurring[tid]
        metrics = QFontMetrics(self.font())
        room = rect.width() - 26  # right of the next occurrence's marker and glyph
        if room > 30:
            painter.setPen(self.palette().color(QPalette.ColorRole.Text))
            painter.drawText(
                QRectF(rect.left() + 22, rect.top(), room, rect.height()),
                Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                metrics.elidedText(label, Qt.TextElideMode.ElideRight, int(room)),
            )
        offset = self.wall_offset()
        shown = sum(1 for t in ahead if left <= t <= right_t)
        when = time.strftime("%H:%M:%S", time.localtime(first + offset))
        tip = f"{tid}: {label}, next at {when}; {shown:,} occurrences in view"
        self._hits.append((rect.adjusted(-2, -4, 2, 4), tid, tip))
        self.bands.append((tid, rect, label))

    def _paint_skipped(self, painter, tid, top, now, window, right, later) -> None:
        """Occurrences a calendar leaves out (``skip``, ``calendar``): a cross each."""
        left, right_t = window
        mid = top + LANE_HEIGHT / 2
        for entry in later:
            if entry.kind != "skipped" or not left <= entry.run_at <= right_t:
                continue
            x = self.x_of(entry.run_at, now)
            if x > right:
                continue
            painter.setPen(QPen(QColor(ENTRY_COLOURS["skipped"]), 2))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawPath(_marker("skipped", x, mid))
            when = time.strftime(
                "%Y-%m-%d %H:%M", time.localtime(entry.run_at + self.wall_offset())
            )
            tip = f"{tid}: skipped (calendar), {when}"
            self._hits.append((QRectF(x - 7, mid - 7, 14, 14), tid, tip))

    def _paint_reach(self, painter, now, window, clip, right) -> None:
        """Past where the forecast's ghosts end: hatched, and the axis says "filling…"
        while a forecast that may reach further is computed, else where it ends."""
        left, right_t = window
        model = self.model
        reach = model.forecast_reach
        if reach is None or reach >= right_t or not (model.recurring or model.forecast_filling):
            return
        x = max(LABEL_WIDTH, self.x_of(max(reach, now, left), now))
        if x >= right:
            return
        region = QRectF(x, clip.top(), right - x, clip.height() + 1)
        grey = QColor(GHOST_COLOUR)
        grey.setAlpha(70)
        painter.fillRect(region, QBrush(grey, Qt.BrushStyle.BDiagPattern))
        painter.setPen(QPen(GHOST_COLOUR, 1, Qt.PenStyle.DashLine))
        painter.drawLine(QPointF(x, clip.top()), QPointF(x, clip.bottom() + 1))
        self._hits.insert(0, (region, "", reach_text(model, now)[1]))  # under every bar
        self.reach_region = region

    def _paint_worker_bars(self, painter, worker, top, now, window, right) -> None:
        left, right_t = window
        for start, end, outcome, attempt, tid in self.model.worker_bars.get(worker, ()):
            if end < left or start > right_t:
                continue
            rect = self._bar_rect(start, end, top, now, right)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(OUTCOME_COLOURS.get(outcome, "#888888")))
            painter.drawRoundedRect(rect, 3, 3)
            tip = f"{tid} attempt {attempt} on {worker}: {outcome}, {end - start:.2f} s"
            self._hits.append((rect.adjusted(-2, -4, 2, 4), tid, tip))

    def _paint_entries(self, painter, tid, top, now, window, right) -> None:
        left, right_t = window
        mid = top + LANE_HEIGHT / 2
        later = () if tid in self.model.recurring else self.model.later.get(tid, ())
        self._paint_skipped(painter, tid, top, now, window, right, later)
        later = [entry for entry in later if entry.kind != "skipped"]
        for entry in later:  # later occurrences: faint, no text (a band for recurring tasks)
            x = self.x_of(entry.run_at, now)
            if x <= right and left <= entry.run_at:
                colour = QColor(ENTRY_COLOURS.get(entry.kind, "#888888"))
                colour.setAlpha(110)
                painter.setBrush(colour)
                painter.setPen(Qt.PenStyle.NoPen)
                painter.drawPath(_marker(entry.kind, x, mid))
        for entry in self.model.entries.get(tid, ()):
            if not self.following and not left <= entry.run_at <= right_t:
                continue  # a panned window shows only what falls inside it
            late = entry.run_at < now
            x = self.x_of(entry.run_at, now)
            beyond = x > right
            x = min(x, right - 6)
            colour = QColor(ENTRY_COLOURS.get(entry.kind, "#888888"))
            jitter = self.model.jitter.get(tid) if entry.kind != "retry" else None
            if jitter:  # the window it may start in (jitter): a faint span after the marker
                span = QColor(colour)
                span.setAlpha(70)
                end = min(self.x_of(entry.run_at + jitter, now), right)
                painter.fillRect(QRectF(x, mid - 5, max(2.0, end - x), 10), span)
            painter.setBrush(colour)
            painter.setPen(QPen(LATE_COLOUR if late else colour.darker(150), 2 if late else 1))
            painter.drawPath(_marker(entry.kind, x, mid))
            delay = entry.run_at - now
            when = f"late by {-delay:.1f} s" if late else f"in {delay:.1f} s"
            if jitter:
                when += f", starts within {_short(jitter)} after (jitter)"
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

    # -- input --------------------------------------------------------------------
    def mousePressEvent(self, event) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._press = (event.position().x(), self.window()[0])
            self._dragging = False

    def mouseMoveEvent(self, event) -> None:
        pos = event.position()
        if self._press is not None and event.buttons() & Qt.MouseButton.LeftButton:
            dx = pos.x() - self._press[0]
            if self._dragging or abs(dx) >= QApplication.startDragDistance():
                self._dragging = True  # drag the time axis: earlier is to the left
                self.setCursor(Qt.CursorShape.ClosedHandCursor)
                self.start = self._press[1] - dx / self.plot_width() * self.span
                self.following = False
                self.auto_fit = False
                self._changed()
            return
        for rect, _tid, tip in reversed(self._hits):
            if rect.contains(pos):
                QToolTip.showText(event.globalPosition().toPoint(), tip, self)
                return
        QToolTip.hideText()

    def mouseReleaseEvent(self, event) -> None:
        clicked = self._press is not None and not self._dragging
        self._press = None
        self._dragging = False
        self.unsetCursor()
        if clicked and event.button() == Qt.MouseButton.LeftButton:
            pos = event.position()
            if self.model.by_worker:  # a lane is a worker: select the task of the bar
                for rect, tid, _tip in reversed(self._hits):
                    if rect.contains(pos) and tid:  # (not the forecast's end)
                        self.taskClicked.emit(tid)
                        return
                return
            row = int(pos.y() // LANE_HEIGHT)
            lanes = self.model.visible_lanes()
            if 0 <= row < len(lanes) and not lanes[row].startswith(GROUP_LANE):
                self.taskClicked.emit(lanes[row])

    def wheelEvent(self, event) -> None:
        # Ctrl+wheel zooms; Shift+wheel or a horizontal wheel pans; a plain wheel
        # scrolls the lanes (the scroll area gets it).
        delta = event.angleDelta()
        modifiers = event.modifiers()
        if modifiers & Qt.KeyboardModifier.ControlModifier and delta.y():
            self.zoom(1 if delta.y() < 0 else -1, event.position().x())
            event.accept()
            return
        sideways = delta.x() or (delta.y() if modifiers & Qt.KeyboardModifier.ShiftModifier else 0)
        if sideways:
            self.pan(-sideways / 120 * PAN_STEP * self.span)  # wheel up/left: back in time
            event.accept()
            return
        event.ignore()

    def keyPressEvent(self, event) -> None:
        key = event.key()
        if key == Qt.Key.Key_Home:
            self.follow_now()
        elif key in (Qt.Key.Key_Left, Qt.Key.Key_Right):
            self.pan((-1 if key == Qt.Key.Key_Left else 1) * PAN_STEP * self.span)
        elif key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal, Qt.Key.Key_Minus):
            self.zoom(1 if key == Qt.Key.Key_Minus else -1)
        else:
            super().keyPressEvent(event)
            return
        event.accept()


class TimelineAxis(QWidget):
    """Tick labels: relative to now while following, wall-clock times when panned."""

    def __init__(self, canvas: TimelineCanvas, parent=None):
        super().__init__(parent)
        self.canvas = canvas
        self.setFixedHeight(AXIS_HEIGHT)
        # Opaque, in the window's colour as before: redrawn as now moves, it would
        # otherwise have the dock and the window under it painted every time too.
        self.setAutoFillBackground(True)
        self.now_button = QToolButton(self)
        self.now_button.setObjectName("timelineNow")
        self.now_button.setText("Now")
        self.now_button.setToolTip("Follow now again (Home)")
        self.now_button.setAutoRaise(True)
        self.now_button.setGeometry(2, 1, 44, AXIS_HEIGHT - 2)
        self.now_button.clicked.connect(canvas.follow_now)
        self.now_button.setVisible(False)
        self.reach_label = ""  # where the forecast's ghosts end, as last painted

    def paintEvent(self, event) -> None:
        self.now_button.setVisible(not self.canvas.following)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        text = self.palette().color(QPalette.ColorRole.Text)
        canvas = self.canvas
        now = canvas.clock_now()
        left, right = canvas.window(now)
        room = max(2, int((self.width() - LABEL_WIDTH) / 70))  # a label needs ~70 px
        step = _tick_step(canvas.span, room)
        painter.setPen(text)
        small = QFont(self.font())
        small.setPointSizeF(max(7.0, small.pointSizeF() - 1))
        painter.setFont(small)
        offset = canvas.wall_offset()
        if canvas.following:
            cell = QRectF(6, 0, LABEL_WIDTH - 10, AXIS_HEIGHT)
            caption = f"next {_short(right - now)}"
        else:
            cell = QRectF(50, 0, LABEL_WIDTH - 54, AXIS_HEIGHT)
            caption = time.strftime("%a %d %b", time.localtime(left + offset))
        painter.drawText(cell, Qt.AlignmentFlag.AlignVCenter, caption)
        caption_end = cell.left() + QFontMetrics(small).horizontalAdvance(caption) + 6
        metrics = QFontMetrics(small)
        self.label_rects = []
        reach = self._reach_box(now, (left, right), metrics)
        for t, label in _ticks(left, right, now, step, offset, canvas.following):
            x = canvas.x_of(t, now)
            painter.drawLine(QPointF(x, AXIS_HEIGHT - 6), QPointF(x, AXIS_HEIGHT))
            # Centred on its tick, or not at all: a shifted label names the wrong time.
            width = metrics.horizontalAdvance(label) + 6
            box = QRectF(x - width / 2, 0, width, AXIS_HEIGHT - 6)
            if box.left() < LABEL_WIDTH or box.right() > self.width() - 2:
                continue
            if reach is not None and box.intersects(reach[0]):
                continue  # where the forecast ends says more than a tick's time
            painter.drawText(box, Qt.AlignmentFlag.AlignCenter, label)
            self.label_rects.append((t, box))
        taken = [box for _t, box in self.label_rects]
        self.reach_label = ""
        if reach is not None:
            painter.save()
            painter.setPen(GHOST_COLOUR)
            painter.drawText(reach[0], Qt.AlignmentFlag.AlignCenter, reach[1])
            painter.restore()
            taken.append(reach[0])
            self.reach_label = reach[1]
        self._paint_run_labels(painter, now, (left, right), taken, caption_end)
        if left <= now <= right:
            painter.setPen(QPen(self.palette().color(QPalette.ColorRole.Highlight), 2))
            x_now = canvas.x_of(now, now)
            painter.drawLine(QPointF(x_now, AXIS_HEIGHT - 8), QPointF(x_now, AXIS_HEIGHT))
        painter.end()

    def _reach_box(self, now, window, metrics) -> tuple[QRectF, str] | None:
        """Where the forecast's ghosts end, as (box, label): "filling…" or "ghosts end
        +2.3 d", right of the line (tick labels under it are left out)."""
        canvas = self.canvas
        model = canvas.model
        reach = model.forecast_reach
        left, right = window
        if reach is None or reach >= right or not (model.recurring or model.forecast_filling):
            return None
        label = reach_text(model, now)[0]
        x = max(LABEL_WIDTH, canvas.x_of(max(reach, now, left), now))
        width = metrics.horizontalAdvance(label) + 8
        box = QRectF(min(x + 2, self.width() - width - 2), 0, width, AXIS_HEIGHT - 6)
        return box, label

    def _paint_run_labels(self, painter, now, window, taken: list[QRectF], free_from) -> None:
        """'run N' beside each stored run's start line (right of it, else left of it),
        where no tick label is; skipped when neither side is free."""
        canvas = self.canvas
        tiny = QFont(self.font())
        tiny.setPointSizeF(max(6.5, tiny.pointSizeF() - 2))
        painter.setFont(tiny)
        metrics = QFontMetrics(tiny)
        faint = QColor(self.palette().color(QPalette.ColorRole.Text))
        faint.setAlpha(170)
        painter.setPen(faint)
        taken = list(taken)
        for run, start in run_starts_in(canvas.model, window[0], window[1], with_runs=True):
            x = canvas.x_of(start, now) - 2
            label = f"run {run}"
            width = metrics.horizontalAdvance(label) + 4
            for box in (
                QRectF(x + 2, 0, width, AXIS_HEIGHT - 6),
                QRectF(x - 2 - width, 0, width, AXIS_HEIGHT - 6),
            ):
                free = not any(box.intersects(t) for t in taken)
                # Left of the line it may use the lane-name column, past the caption.
                if free and box.left() >= free_from and box.right() <= self.width():
                    painter.drawText(box, Qt.AlignmentFlag.AlignCenter, label)
                    taken.append(box)
                    break


def reach_text(model: TimelineModel, now: float) -> tuple[str, str]:
    """(axis label, tooltip) for where the forecast's ghosts end."""
    ahead = _short(max(0.0, model.forecast_reach - now)) if model.forecast_reach else "0 s"
    if model.forecast_filling:
        return (
            f"filling… (+{ahead} so far)",
            f"The forecast is being computed this far ahead; it has runs up to +{ahead}.",
        )
    note = model.forecast_end_note or "the forecast stops here"
    return f"ghosts end +{ahead}", f"No forecast past +{ahead}: {note}."


def run_starts_in(model, left: float, right: float, with_runs: bool = False):
    """Start times of stored runs inside [left, right], oldest first."""
    history = model.history
    if history is None:
        return []
    runs = sorted(history.run_starts.items(), key=lambda item: item[1])
    inside = [(run, start) for run, start in runs if left <= start <= right]
    return inside if with_runs else [start for _run, start in inside]


class Timeline(QWidget):
    taskClicked = Signal(str)
    lookAheadChanged = Signal()  # a look-ahead was chosen: the forecast should reach it

    def __init__(self, clock_now, attempts_of=None, parent=None):
        super().__init__(parent)
        self.setObjectName("timeline")
        self.model = TimelineModel(attempts_of)
        self.canvas = TimelineCanvas(self.model, clock_now)
        self.axis = TimelineAxis(self.canvas)
        self.scroll_area = QScrollArea()
        self.scroll_area.setWidget(self.canvas)
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll_area.setFrameShape(QScrollArea.Shape.NoFrame)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 4)
        layout.setSpacing(0)
        layout.addWidget(self.axis)
        layout.addWidget(self.scroll_area)
        self.canvas.taskClicked.connect(self.taskClicked)
        # Right-click (and View > Timeline lanes by worker) switches the lanes.
        self.by_worker_action = QAction("Lanes by worker", self)
        self.by_worker_action.setObjectName("timelineByWorker")
        self.by_worker_action.setToolTip(
            "One lane per worker: which thread, process or cluster worker ran each attempt"
        )
        self.by_worker_action.setCheckable(True)
        self.by_worker_action.toggled.connect(self.set_by_worker)
        self.canvas.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.canvas.addAction(self.by_worker_action)
        self.canvas.viewChanged.connect(self.axis.update)
        self._dirty = True
        self._painted_now = -math.inf
        self.canvas.viewChanged.connect(self._touch)
        self.reader: HistoryReader | None = None  # reads the store's window off the GUI thread
        self._own_reader = False
        self._history_request = None  # (request id, WindowQuery) awaited
        self._order_timer = QTimer(self)
        self._order_timer.setSingleShot(True)
        self._order_timer.setInterval(LANE_SORT_MS)
        self._order_timer.timeout.connect(self._sort_lanes)
        # Ticks when something on screen can have moved: now by a pixel at this zoom,
        # or new data (``_touch``); none while nothing moves or nobody sees it.
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._tick)
        self._news = True  # attempts may have come since the store was last read
        self.past = None  # past_run.PastRun shown instead of the live run, if any
        self._recurring_ids = set()
        self._live_view: tuple | None = None  # the live view's settings, while it is
        self.ticks = 0  # ticks run (tests count them: a window at rest has few)
        self._timer.start(0)

    def attach_history(self, scheduler, reader: HistoryReader | None = None) -> None:
        """Draw attempts from the scheduler's run store too (earlier runs, older attempts),
        read by ``reader`` (the window's; without one, the timeline starts its own)."""
        store = store_of(scheduler)
        if store is None:
            return
        clock = scheduler.clock
        if reader is None:
            reader, self._own_reader = HistoryReader(store, self), True
        self.reader = reader
        reader.windowRead.connect(self._history_read)
        self.model.history = WindowHistory(store, clock)
        self.canvas.wall_offset = lambda: wall_offset(clock)

    def detach_history(self) -> None:
        """The store is about to close: stop reading it (bars read so far go too)."""
        self.model.history = None
        self._history_request = None
        if self.reader is not None:
            try:
                self.reader.windowRead.disconnect(self._history_read)
            except (RuntimeError, TypeError):  # the reader went with the window already
                pass
            if self._own_reader:
                self.reader.close()
            self.reader = None

    def seen(self) -> bool:
        """Whether a person can see the timeline (shown, its window not minimised)."""
        return self.isVisible() and not self.window().isMinimized()

    def _tick(self) -> None:
        if not self.seen():
            return  # wake() ticks again when it is seen
        self.ticks += 1
        canvas = self.canvas
        history = self.model.history if self.past is None else None
        read_later = False
        if history is not None and history.needs_read(*canvas.window(), news=self._news):
            if history.due():
                self._news = False
                self.read_history()
            else:  # read when it is due
                read_later = True
        # Repaint when something changed or now moved by half a pixel: a day-wide
        # window needs a new picture every ~40 s, not ten times a second.
        now = canvas.clock_now()
        per_pixel = canvas.span / canvas.plot_width()  # seconds
        moved = abs(now - self._painted_now) / per_pixel
        span, left = canvas.span, canvas.window(now)[0]
        if canvas.refit(now):  # a new span, or the fitted edge moved a visible amount
            new_left = canvas.window(now)[0]
            if canvas.span != span or abs(new_left - left) >= 0.5 * per_pixel:
                self._dirty = True
                self.axis.update()
        if self._dirty or moved >= 0.5:
            self._dirty = False
            self._painted_now = now
            if self.model.refresh_active(canvas.selected):
                canvas.update_height()
            canvas.update()
            self.axis.update()
        wait = self._next_move(now)
        if read_later and history is not None:
            wait = min(wait, history.min_interval)
        if wait < math.inf and not self._timer.isActive():
            self._timer.start(max(MIN_TICK_MS, min(int(wait * 1000), MAX_TICK_MS)))

    def _next_move(self, now: float) -> float:
        """Seconds until something in view moves: now by a pixel, if it is in view
        (the now line, running bars and the axis's labels move with it); now coming
        into view, if the window was panned ahead; never, if panned into the past."""
        canvas = self.canvas
        left, right = canvas.window(now)
        if now < left:
            return left - now
        if now <= right or canvas.following:
            return canvas.span / canvas.plot_width()
        return math.inf

    def wake(self) -> None:
        """Tick now (the window was shown or restored, or the view changed)."""
        self._dirty = True
        self._timer.start(0)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.wake()

    def _touch(self) -> None:
        """Something to draw changed: a tick soon, with whatever else changes by then."""
        self._dirty = True
        if not self._timer.isActive() or self._timer.remainingTime() > MIN_TICK_MS:
            self._timer.start(MIN_TICK_MS)

    def read_history(self) -> None:
        """Ask for the visible window's stored attempts now (the tick does it when
        needed); the bars are drawn when the answer comes."""
        history = self.model.history
        if history is None or self.reader is None:
            return
        query = history.plan(*self.canvas.window())
        rid = self.reader.request_window(query.since, query.until, query.limit, query.offset)
        if rid:  # an answer to an earlier request is stale now
            self._history_request = (rid, query)
        else:  # the reader has stopped: no answer will come
            history.pending = None

    def _history_read(self, rid: int, found) -> None:
        history = self.model.history
        request = self._history_request
        if history is None or request is None or request[0] != rid:
            return  # stale: the window moved on and a newer read is on its way
        self._history_request = None
        if found is None:  # unavailable: keep what we have, try again when due
            history.failed(request[1])
            return
        history.apply(request[1], found)
        self._touch()
        self.canvas.update()
        self.axis.update()

    def set_by_worker(self, on: bool) -> None:
        """Lanes per worker (on) or per task (off)."""
        if self.by_worker_action.isChecked() != on:
            self.by_worker_action.setChecked(on)  # comes back here through toggled
            return
        self.model.set_by_worker(on)
        self.canvas.update_height()
        self._touch()
        self.canvas.update()

    def set_tasks(self, tasks) -> None:
        self._touch()
        before = len(self.model.lanes)
        self.model.set_tasks(tasks)
        self._label_recurring(tasks)
        if len(self.model.lanes) != before:
            self.canvas.update_height()
        if self.model.order_dirty and not self._order_timer.isActive():
            self._order_timer.start()  # many lanes: sorted once tasks stop pouring in

    def _sort_lanes(self) -> None:
        self.model.sort_lanes()
        self._touch()
        self.canvas.update()

    def remove_tasks(self, ids) -> None:
        self._touch()
        self._recurring_ids.difference_update(ids)
        self.model.remove(ids)
        if self.model.lane_group is not None:
            self.model._fold_groups()
        self.canvas.update_height()

    def set_lane_groups(self, lane_group) -> None:
        """Fold each collapsed group's tasks into one lane (``lane_group(tid)``)."""
        self.model.set_lane_groups(lane_group)
        self.model.refresh_active(self.canvas.selected)
        self.canvas.update_height()
        self._touch()

    # entries -> recurring tasks' occurrences after the next
    later_occurrences: Callable[[list[Entry]], list[Entry]] | None = None
    _recurring_ids: set[str]  # tasks known to recur (their labels are read again)
    # tid -> "every 10 s" (or its cron), None if not recurring
    recurrence_text: Callable[[str], str | None] | None = None

    def _label_recurring(self, tasks) -> None:
        """Each recurring task's band label, read once per task (again after
        ``forget_recurrence``); a task that stopped recurring loses its band."""
        labels = self.model.recurring
        for tid, info in tasks.items():
            if not info.recurring:
                labels.pop(tid, None)
                self._recurring_ids.discard(tid)
                continue
            self._recurring_ids.add(tid)
            if tid not in labels and self.recurrence_text is not None:
                text = self.recurrence_text(tid)
                if text:
                    labels[tid] = text

    jitter_of: Callable[[str], float | None] | None = None  # tid -> its jitter (seconds)

    def set_upcoming(self, entries) -> None:
        self._touch()
        self.model.set_upcoming(entries)
        if self.jitter_of is not None:
            known = self.model.jitter
            for tid in self.model.entries:
                if tid not in known:
                    known[tid] = self.jitter_of(tid)
        later: dict[str, list] = {}
        if self.later_occurrences is not None:
            for entry in self.later_occurrences(entries):
                later.setdefault(entry.task_id, []).append(entry)
        self.model.later = later  # drawn faint; the window is fitted to the next ones

    def set_ghosts(self, ghosts: dict[str, list], collisions: dict | None = None) -> None:
        """The forecast's runs still to come and its collisions (``TimelineModel.ghosts``
        and ``.collisions``)."""
        self._touch()
        self.model.ghosts = ghosts
        self.model.collisions = collisions or {}
        if self.model.refresh_active(self.canvas.selected):
            self.canvas.update_height()

    def forget_recurrence(self, ids=None) -> None:
        """Definitions changed (of ``ids``; None: any): their labels are read again."""
        if ids is None:
            self.model.jitter.clear()  # read again with the entries
        else:
            for tid in ids:
                self.model.jitter.pop(tid, None)
        ids = set(self._recurring_ids if ids is None else ids) & self._recurring_ids
        for tid in ids:
            self.model.recurring.pop(tid, None)
        if self.recurrence_text is not None:
            for tid in ids:
                text = self.recurrence_text(tid)
                if text:
                    self.model.recurring[tid] = text
        self._touch()

    def set_forecast_reach(self, reach: float | None, filling: bool, note: str = "") -> None:
        """Where the forecast's ghosts end (scheduler clock), whether one that may reach
        further is being computed, and why they end there."""
        model = self.model
        if (model.forecast_reach, model.forecast_filling, model.forecast_end_note) == (
            reach,
            filling,
            note,
        ):
            return
        model.forecast_reach, model.forecast_filling, model.forecast_end_note = reach, filling, note
        self._touch()

    def add_events(self, events) -> None:
        self._touch()
        self._news = True
        workers = len(self.model.workers)
        self.model.add_events(events)
        if len(self.model.workers) != workers:
            self.canvas.update_height()

    def show_past_run(self, past, offset: float) -> None:
        """Show a past run's attempts (``past_run.PastRun``, wall clock = scheduler
        clock + ``offset``) instead of the live ones, fitted to the run, nothing ahead;
        the live model goes on taking events. ``show_live`` goes back."""
        canvas = self.canvas
        if self._live_view is None:
            self._live_view = (canvas.following, canvas.auto_fit, canvas.span, canvas.start)
        model = TimelineModel()
        model.lanes = list(self.model.lanes)
        for tid in past.attempts:
            if tid not in model.lanes:
                model.lanes.append(tid)
        model.lane_index = {tid: i for i, tid in enumerate(model.lanes)}
        for tid, attempts in past.attempts.items():
            model.bars[tid] = deque(
                [
                    a.started - offset,
                    (a.started if a.ended is None else a.ended) - offset,
                    "lost" if a.ended is None else a.outcome,
                    a.number,
                ]
                for a in attempts
            )
        model.refresh_active(canvas.selected)
        self.past = past
        canvas.model = model
        canvas.following = canvas.auto_fit = False
        if past.started is not None and past.ended is not None:
            span = max(SPANS[0], min(SPANS[-1], (past.ended - past.started) / (1 - 2 * FIT_PAD)))
            canvas.span = span
            canvas.start = past.started - offset - FIT_PAD * span
        canvas.update_height()
        canvas._changed()
        self.wake()

    def show_live(self) -> None:
        """Back to the live run, the view as it was before the past run was shown."""
        if self._live_view is None:
            return
        canvas = self.canvas
        canvas.following, canvas.auto_fit, canvas.span, canvas.start = self._live_view
        self._live_view = None
        self.past = None
        canvas.model = self.model
        canvas.update_height()
        canvas._changed()
        self.wake()

    def select(self, tid: str | None) -> None:
        self.canvas.selected = tid
        if self.canvas.model.refresh_active(tid):
            self.canvas.update_height()
        lanes = self.canvas.model.visible_lanes()
        row = lanes.index(tid) if tid in lanes else None
        if row is not None:
            self.scroll_area.ensureVisible(0, row * LANE_HEIGHT + LANE_HEIGHT // 2, 0, LANE_HEIGHT)
        self.canvas.update()

    def set_span(self, seconds: float) -> None:
        self.canvas.set_span(seconds)

    def follow_now(self) -> None:
        self.canvas.follow_now()

    def look_ahead(self, seconds: float) -> None:
        """Follow now and show ``seconds`` after it (the forecast's ghosts fill it)."""
        self.canvas.follow_now()
        self.canvas.set_span(seconds / (1 - NOW_AT))
        self.lookAheadChanged.emit()


def _ticks(left, right, now, step, offset, following):
    """(time, label) pairs: "now", "−30 s", "+1 min" while following; wall-clock
    times aligned to local ``step`` boundaries when panned."""
    if following:
        t = math.ceil((left - now) / step) * step
        while now + t <= right:
            label = "now" if abs(t) < 1e-9 else f"{'+' if t > 0 else '−'}{_short(abs(t))}"
            yield now + t, label
            t += step
        return
    local = time.localtime(left + offset).tm_gmtoff  # align to local midnight, hours, ...
    wall = math.ceil((left + offset + local) / step) * step - local
    fmt = "%H:%M:%S" if step < 60 else "%H:%M"
    while wall - offset <= right:
        yield wall - offset, time.strftime(fmt, time.localtime(wall))
        wall += step


def _marker(kind: str, x: float, y: float) -> QPainterPath:
    path = QPainterPath()
    if kind == "retry":
        path.addEllipse(QPointF(x, y), 5.5, 5.5)
    elif kind == "skipped":  # a cross: this one does not run
        path.moveTo(x - 5, y - 5)
        path.lineTo(x + 5, y + 5)
        path.moveTo(x + 5, y - 5)
        path.lineTo(x - 5, y + 5)
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
    steps = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600)
    for step in (*steps, 43200, 86400, 2 * 86400):  # up to a week ahead (View > Look ahead)
        if span / step <= min(8, max_ticks):
            return float(step)
    return 7 * 86400.0


def _short(seconds: float) -> str:
    seconds = abs(seconds)
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            value = seconds / size
            return (
                f"{value:.0f} {unit}" if abs(value - round(value)) < 0.05 else f"{value:.1f} {unit}"
            )
    return f"{seconds:.0f} s"


short_duration = _short  # "10 s", "2.3 d": the timeline's words for a length of time
