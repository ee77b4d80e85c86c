"""When a recurring task comes due next: fixed intervals and cron expressions.

Intervals live on the monotonic clock. Cron times are wall-clock times in a
zone; they are converted to the monotonic clock when queued and converted again
when the wall clock jumps (suspend, an NTP step).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

MODES = ("fixed_rate", "fixed_delay")
OVERLAPS = ("skip", "queue", "parallel")
MISFIRES = ("run_once", "skip", "run_all")
RUN_ALL_CAP = 1000  # a run_all catch-up after a long stall never queues more than this


class IntervalRecurrence:
    __slots__ = ("interval", "mode")

    def __init__(self, interval: float, mode: str):
        self.interval = interval
        self.mode = mode

    def first_due(self, clock) -> float:
        return clock.now() + self.interval

    def following(self, due: float, clock) -> float:
        return due + self.interval

    def due_until(self, due: float, now: float, clock) -> tuple[list[float], float]:
        """Occurrences from ``due`` up to ``now`` (capped), and the first one after ``now``."""
        missed = int(math.floor((now - due) / self.interval)) + 1
        shown = min(missed, RUN_ALL_CAP)
        dues = [due + k * self.interval for k in range(shown)]
        return dues, due + missed * self.interval

    def describe(self) -> str:
        return f"every {self.interval:g}s ({self.mode})"


class CronRecurrence:
    """Wraps a trigger with ``next_after(aware_datetime) -> aware_datetime``."""

    __slots__ = ("trigger", "expr", "tz")
    mode = "fixed_rate"

    def __init__(self, trigger, expr: str, tz: str):
        self.trigger = trigger
        self.expr = expr
        self.tz = tz

    @staticmethod
    def to_wall(mono: float, clock) -> datetime:
        return clock.wall() + timedelta(seconds=mono - clock.now())

    @staticmethod
    def to_mono(wall: datetime, clock) -> float:
        return clock.now() + (wall - clock.wall()).total_seconds()

    def first_due(self, clock) -> float:
        return self.to_mono(self.trigger.next_after(clock.wall()), clock)

    def following(self, due: float, clock) -> float:
        return self.to_mono(self.trigger.next_after(self.to_wall(due, clock)), clock)

    def due_until(self, due: float, now: float, clock) -> tuple[list[float], float]:
        dues = [due]
        wall = self.to_wall(due, clock)
        wall_now = self.to_wall(now, clock)
        while True:
            wall = self.trigger.next_after(wall)
            if wall > wall_now:
                return dues, self.to_mono(wall, clock)
            if len(dues) < RUN_ALL_CAP:
                dues.append(self.to_mono(wall, clock))

    def describe(self) -> str:
        return f"cron {self.expr!r} ({self.tz})"
