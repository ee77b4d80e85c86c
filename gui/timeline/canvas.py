"""The timeline's canvas: lanes, bars, markers and bands, painted; drag, wheel and keys pan and
zoom it."""

from __future__ import annotations

import time

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontMetrics, QPainter, QPainterPath, QPalette, QPen
from PySide6.QtWidgets import QApplication, QToolTip, QWidget

from ..style import ENTRY_COLOURS, OUTCOME_COLOURS, RECURRING_MARK
from ._common import (
    CRITICAL_COLOUR,
    DEFAULT_SPAN,
    EARLIER_RUN_ALPHA,
    FIT_HISTORY,
    FIT_PAD,
    FIT_SPANS,
    GHOST_COLOUR,
    GROUP_LANE,
    LABEL_WIDTH,
    LANE_HEIGHT,
    LATE_COLOUR,
    NOW_AT,
    PAN_STEP,
    SPANS,
    TICK_GAP,
    _marker,
    _short,
)
from .axis import reach_text, run_starts_in
from .model import TimelineModel


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
        self._brushes: dict[str, QBrush] = {}  # outcome -> its bars' brush
        self.group_segments = 0  # group-lane rectangles drawn (the tests count them)
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
        over each other; bars of one outcome that touch on screen merge into one (a
        flood's hundreds of short attempts a pixel apart are a few rectangles, not
        hundreds: one paint of many group lanes took 43 ms). The tooltip names the
        task, or how many attempts a merged bar stands for."""
        left, right_t = window
        scale = self.plot_width() / self.span
        segments: list[list] = []  # [x0, x1, outcome, first (tid, attempt), last, count]
        open_of: dict[str, list] = {}  # outcome -> its segment still growing
        for tid, (start, end, outcome, attempt) in self.model.group_bars.get(group, ()):
            finish = now if end is None else end
            if finish < left or start > right_t:
                continue
            x0 = max(LABEL_WIDTH, LABEL_WIDTH + (start - left) * scale)
            x1 = min(right, max(x0 + 3, LABEL_WIDTH + (finish - left) * scale))
            last = open_of.get(outcome)
            if last is not None and last[0] - 1 <= x0 <= last[1] + 1:
                last[1] = max(last[1], x1)
                last[4] = (tid, attempt)
                last[5] += 1
            else:
                segment = [x0, x1, outcome, (tid, attempt), (tid, attempt), 1]
                segments.append(segment)
                open_of[outcome] = segment
        self.group_segments += len(segments)
        painter.setPen(Qt.PenStyle.NoPen)
        for x0, x1, outcome, first, last, count in segments:
            painter.setBrush(self._outcome_brush(outcome))
            rect = QRectF(x0, top + 6, x1 - x0, LANE_HEIGHT - 12)
            painter.drawRoundedRect(rect, 3, 3)
            tid, attempt = last
            if count == 1:
                tip = f"{tid} attempt {attempt}: {outcome}"
            else:
                tip = f"{count} attempts {outcome}: {first[0]} … {tid}"
            self._hits.append((rect.adjusted(-2, -4, 2, 4), tid, tip))

    def _outcome_brush(self, outcome: str) -> QBrush:
        brush = self._brushes.get(outcome)
        if brush is None:
            brush = self._brushes[outcome] = QBrush(QColor(OUTCOME_COLOURS.get(outcome, "#888888")))
        return brush

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
            known = self.model.jitter
            if tid not in known:  # asked once, for ghosts that are painted
                ask = self.model.jitter_of
                known[tid] = ask(tid) if ask is not None else None
            jitter = known[tid]
            if jitter:  # it may start up to ``jitter`` later: the window, faint, under the bar
                span = QColor(colour)
                span.setAlpha(30)
                window_rect = self._bar_rect(start, start + jitter, top, now, right)
                painter.fillRect(window_rect.adjusted(0, 4, 0, -4), span)
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
            if jitter:
                tip += f"; may start up to {_short(jitter)} later (jitter)"
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
