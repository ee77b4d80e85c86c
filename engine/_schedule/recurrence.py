"""When a recurring task comes due next: fixed intervals and cron expressions.

Intervals live on the monotonic clock. Cron times are wall-clock times in a
zone, kept as a wall-clock cursor per task; they are converted to the monotonic
clock only to sleep until them, and again when the wall clock jumps (suspend, an
NTP step).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from ..clock import Clock
from ..options import Misfire, Mode, Overlap, values

MODES = values(Mode)
OVERLAPS = values(Overlap)
MISFIRES = values(Misfire)
RUN_ALL_CAP = 1000  # a run_all catch-up after a long stall never queues more than this


class IntervalRecurrence:
    """Every ``interval`` seconds; ``skip`` (calendars.SkipDays): occurrences on those
    days are left out (fixed_rate: the cadence goes on past them)."""

    __slots__ = ("interval", "mode", "skip")

    def __init__(self, interval: float, mode: Mode, skip: Any = None) -> None:
        self.interval = interval
        self.mode = mode
        self.skip = skip or None

    def first_due(self, clock: Clock) -> float:
        return self.kept(clock.now() + self.interval, clock)

    def due_until(self, due: float, now: float, clock: Clock) -> tuple[list[float], float]:
        """Occurrences from ``due`` up to ``now`` (capped), and the first one after ``now``."""
        missed = int(math.floor((now - due) / self.interval)) + 1
        shown = min(missed, RUN_ALL_CAP)
        dues = [due + k * self.interval for k in range(shown)]
        following = due + missed * self.interval
        if self.skip is not None:
            dues = [d for d in dues if not self.skip.skips(_wall_at(d, clock))]
            following = self.kept(following, clock)
        return dues, following

    def kept(self, due: float, clock: Clock) -> float:
        """``due``, or the first occurrence of the cadence after the skipped days it is on."""
        if self.skip is None:
            return due
        while True:
            resumes = self.skip.resumes(_wall_at(due, clock))
            if resumes is None:
                return due
            gap = (resumes - clock.wall()).total_seconds() + clock.now() - due
            due += max(1, math.ceil(gap / self.interval)) * self.interval

    def describe(self) -> str:
        return f"every {self.interval:g}s ({self.mode})"


class CronRecurrence:
    """Wraps a trigger with ``next_after(aware_datetime) -> aware_datetime``.

    A cron task's next occurrence is kept as a wall-clock cursor (``Task.cron_next``);
    the following one is always computed from that cursor, never from a monotonic time
    converted back to wall time: that conversion can land a hair before the occurrence
    (clock skew) and give the same occurrence again.
    """

    __slots__ = ("trigger", "expr", "tz", "skip")
    mode = Mode.FIXED_RATE

    def __init__(self, trigger: Any, expr: str, tz: str, skip: Any = None) -> None:
        self.trigger = trigger
        self.expr = expr
        self.tz = tz
        self.skip = skip or None  # calendars.SkipDays: those days' occurrences are left out

    @staticmethod
    def to_mono(wall: datetime, clock: Clock) -> float:
        return clock.now() + (wall - clock.wall()).total_seconds()

    def next_after(self, wall: datetime) -> datetime:
        # Kept in UTC: aware datetimes sharing a zone compare by local time (fold).
        following = self.trigger.next_after(wall).astimezone(UTC)
        while self.skip is not None:
            resumes = self.skip.resumes(following)
            if resumes is None:
                break
            following = self.trigger.next_after(resumes - _TICK).astimezone(UTC)
        return following

    def skipped_between(self, start: datetime, end: datetime) -> list[datetime]:
        """The occurrences after ``start`` up to ``end`` that the skipped days leave out."""
        if self.skip is None:
            return []
        found: list[datetime] = []
        wall = start
        while True:
            wall = self.trigger.next_after(wall).astimezone(UTC)
            if wall > end or len(found) >= RUN_ALL_CAP:
                return found
            if self.skip.skips(wall):
                found.append(wall)

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


def _wall_at(due: float, clock: Clock) -> datetime:
    return clock.wall() + timedelta(seconds=due - clock.now())


_TICK = timedelta(microseconds=1)  # next_after(t) is strictly after t: midnight is a candidate

Recurrence = IntervalRecurrence | CronRecurrence  # what Task.recurrence holds, if anything
