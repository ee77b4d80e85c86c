"""The timeline's axis: tick labels, run starts and where the forecast's ghosts end."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette, QPen
from PySide6.QtWidgets import QToolButton, QWidget

from ._common import AXIS_HEIGHT, GHOST_COLOUR, LABEL_WIDTH, _short, _tick_step, _ticks
from .model import TimelineModel

if TYPE_CHECKING:
    from .canvas import TimelineCanvas


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
