"""The inspector's trend: how long the task's last attempts took, at a glance.

One bar per attempt (the last ``LAST``, oldest left), its height the duration, its
colour the outcome; dashed lines at the median and the p90 of the successes
(``durations_model.stats_of``, the numbers the forecast uses), written out below.
While an attempt runs past that p90 (with ``SLOW_MIN_RUNS`` successes to go by),
an amber "slower than usual" note says by how much.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPalette, QPen
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from taskloom.engine import Outcome
from taskloom.engine.durations_model import SLOW_MIN_RUNS, DurationStats, stats_of

from .style import OUTCOME_COLOURS

LAST = 30  # attempts drawn
SLOW_COLOUR = "#B26B00"  # amber text, readable on light and dark


def seconds_text(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


class Sparkline(QWidget):
    """The bars and the median/p90 lines (painted; no data of its own beyond them)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("durationSparkline")
        self.bars: list[tuple[float, str]] = []  # (seconds, outcome), oldest first
        self.stats: DurationStats | None = None
        self.setMinimumHeight(44)

    def sizeHint(self) -> QSize:
        return QSize(240, 48)

    def paintEvent(self, event) -> None:
        if not self.bars:
            return
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        top = max(s for s, _ in self.bars)
        if self.stats is not None:
            top = max(top, self.stats.p90)
        top = top or 1.0
        width, height = self.width(), self.height() - 2
        step = width / max(len(self.bars), 8)
        for i, (seconds, outcome) in enumerate(self.bars):
            h = max(2.0, seconds / top * height)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(OUTCOME_COLOURS.get(outcome, "#888888")))
            painter.drawRoundedRect(QRectF(i * step + 1, height - h + 1, step - 2, h), 1.5, 1.5)
        if self.stats is not None:
            ink = self.palette().color(QPalette.ColorRole.Text)
            for value, style in (
                (self.stats.median, Qt.PenStyle.DashLine),
                (self.stats.p90, Qt.PenStyle.DotLine),
            ):
                y = height - value / top * height + 1
                painter.setPen(QPen(ink, 1, style))
                painter.drawLine(QPointF(0, y), QPointF(width, y))
        painter.end()


class DurationTrend(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("durationTrend")
        self.sparkline = Sparkline()
        self.caption = QLabel()
        self.caption.setObjectName("durationStats")
        self.slow = QLabel()
        self.slow.setObjectName("slowerThanUsual")
        self.slow.setStyleSheet(f"color: {SLOW_COLOUR}; font-weight: bold;")
        self.slow.setVisible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        layout.setSpacing(2)
        layout.addWidget(self.sparkline)
        layout.addWidget(self.caption)
        layout.addWidget(self.slow)
        self.stats: DurationStats | None = None
        # The p90 of every stored run's successes (the forecast's model), when known:
        # the attempts listed here may be only this run's.
        self.usual_p90: float | None = None
        self.final = False  # the task has settled: no more attempts come by themselves
        self._shown: tuple[list, float] | None = None

    def show_attempts(self, attempts, now: float) -> None:
        """``attempts`` oldest first (``Attempt`` records on the clock of ``now``)."""
        recent = list(attempts)[-LAST:]
        bars = []
        for a in recent:
            end = now if a.ended is None else a.ended
            bars.append((max(0.0, end - a.started), str(a.outcome)))
        successes = [
            a.ended - a.started
            for a in attempts
            if a.outcome == Outcome.SUCCEEDED and a.ended is not None
        ]
        self.stats = stats_of("", successes) if successes else None
        self.sparkline.bars = bars
        self.sparkline.stats = self.stats
        self.sparkline.update()
        self.setVisible(bool(bars))
        if self.stats is None:
            n = len(bars)
            yet = "" if self.final else " yet"  # a task that failed for good: not "yet"
            self.caption.setText(
                f"{n} attempt{'' if n == 1 else 's'}, none succeeded{yet}" if bars else ""
            )
        else:
            self.caption.setText(
                f"median {seconds_text(self.stats.median)} · p90 {seconds_text(self.stats.p90)}"
                f" · {self.stats.runs} successes"
            )
        self._shown = (recent, now)
        self._show_slow(recent, now)

    def set_usual(self, p90: float | None) -> None:
        """The task's usual p90 from all its stored runs (None: not known)."""
        if p90 != self.usual_p90:
            self.usual_p90 = p90
            if self._shown is not None:
                self._show_slow(*self._shown)

    def _show_slow(self, recent, now: float) -> None:
        running = recent[-1] if recent and recent[-1].outcome == Outcome.RUNNING else None
        p90 = self.usual_p90
        if p90 is None and self.stats is not None and self.stats.runs >= SLOW_MIN_RUNS:
            p90 = self.stats.p90
        slow = running is not None and p90 is not None and now - running.started > p90
        if slow:
            assert running is not None and p90 is not None
            took = now - running.started
            self.slow.setText(
                f"⚠ slower than usual by {seconds_text(took - p90)}: running "
                f"{seconds_text(took)}, p90 {seconds_text(p90)}"
            )
        self.slow.setVisible(slow)
