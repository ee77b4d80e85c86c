"""The timeline's sizes, spans and colours, and the small helpers its parts share (ticks, markers,
durations)."""

from __future__ import annotations

import math
import time

from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QPainterPath

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
