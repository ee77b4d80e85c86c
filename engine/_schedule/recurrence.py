"""When a recurring task comes due next: fixed intervals and cron expressions.

Intervals live on the monotonic clock. Cron times are wall-clock times in a
zone, kept as a wall-clock cursor per task; they are converted to the monotonic
clock only to sleep until them, and again when the wall clock jumps (suspend, an
NTP step).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from ..clock import Clock
from ..options import Misfire, Mode, Overlap, values

MODES = values(Mode)
OVERLAPS = values(Overlap)
MISFIRES = values(Misfire)
RUN_ALL_CAP = 1000  # a run_all catch-up after a long stall never queues more than this


class IntervalRecurrence:
    __slots__ = ("interval", "mode")

    def __init__(self, interval: float, mode: Mode) -> None:
        self.interval = interval
        self.mode = mode

    def first_due(self, clock: Clock) -> float:
        return clock.now() + self.interval

    def due_until(self, due: float, now: float, clock: Clock) -> tuple[list[float], float]:
        """Occurrences from ``due`` up to ``now`` (capped), and the first one after ``now``."""
        missed = int(math.floor((now - due) / self.interval)) + 1
        shown = min(missed, RUN_ALL_CAP)
        dues = [due + k * self.interval for k in range(shown)]
        return dues, due + missed * self.interval

    def describe(self) -> str:
        return f"every {self.interval:g}s ({self.mode})"


class CronRecurrence:
    """Wraps a trigger with ``next_after(aware_datetime) -> aware_datetime``.

    A cron task's next occurrence is kept as a wall-clock cursor (``Task.cron_next``);
    the following one is always computed from that cursor, never from a monotonic time
    converted back to wall time: that conversion can land a hair before the occurrence
    (clock skew) and give the same occurrence again.
    """

    __slots__ = ("trigger", "expr", "tz")
    mode = Mode.FIXED_RATE

    def __init__(self, trigger: Any, expr: str, tz: str) -> None:
        self.trigger = trigger
        self.expr = expr
        self.tz = tz

    @staticmethod
    def to_mono(wall: datetime, clock: Clock) -> float:
        return clock.now() + (wall - clock.wall()).total_seconds()

    def next_after(self, wall: datetime) -> datetime:
        # Kept in UTC: aware datetimes sharing a zone compare by local time (fold).
        return self.trigger.next_after(wall).astimezone(UTC)

    def due_until(self, cursor: datetime, wall_now: datetime) -> tuple[list[datetime], datetime]:
        """Occurrences from ``cursor`` up to ``wall_now`` (capped; ``cursor`` always, it
        came due), and the first one after both."""
        dues = [cursor]
        wall = cursor
        while True:
            wall = self.next_after(wall)
            if wall > wall_now:
                return dues, wall
            if len(dues) == RUN_ALL_CAP:  # no need to count the rest one by one
                return dues, self.next_after(wall_now)
            dues.append(wall)

    def describe(self) -> str:
        return f"cron {self.expr!r} ({self.tz})"


Recurrence = IntervalRecurrence | CronRecurrence  # what Task.recurrence holds, if anything
