"""The timeline widget: canvas, axis and buttons together; ticks only while time changes what it
shows."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QScrollArea, QVBoxLayout, QWidget

from taskloom.engine import Entry

from ..background import LatestWorker
from ..history_reader import HistoryReader
from ..run_history import WindowHistory, store_of, wall_offset
from ._common import (
    FIT_PAD,
    LANE_HEIGHT,
    LANE_SORT_MS,
    MAX_TICK_MS,
    MIN_TICK_MS,
    NOW_AT,
    SORT_AT_ONCE_UP_TO,
    SPANS,
)
from .axis import TimelineAxis
from .canvas import TimelineCanvas
from .model import TimelineModel, lane_order


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
        self._order_worker = LatestWorker("taskloom-lane-order")
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
        model = self.model
        if len(model.lanes) <= SORT_AT_ONCE_UP_TO:
            model.sort_lanes()
            self._lanes_sorted(None)
            return
        # Thousands of lanes: ordered on a worker (the layers and the sort of 10,000
        # lanes held the GUI thread 1.6 s on a busy machine), applied here.
        from .. import relay

        relay.install()
        inputs = model.order_inputs()

        def run() -> None:
            relay.post(self, "_lanes_sorted", lane_order(*inputs))

        self._order_worker.submit(run)

    def _lanes_sorted(self, order) -> None:
        if order is not None and not self.model.apply_order(order):
            self._order_timer.start()  # lanes came or went meanwhile: again, later
            return
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
        self.model.jitter_of = self.jitter_of  # a painted ghost asks (canvas._paint_ghosts)
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
