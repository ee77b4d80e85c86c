"""Clocks: the real one, and a manual one that tests advance by hand.

A clock gives monotonic seconds (``now``) for timers and an aware UTC datetime
(``wall``) for cron and absolute times.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """What the scheduler asks of a clock (``SystemClock``, ``ManualClock``). A clock
    whose ``manual`` is true is driven by hand and has ``ManualClock``'s ``attach`` and
    ``detach`` too: the scheduler attaches itself to learn when it moves."""

    @property
    def manual(self) -> bool: ...

    def now(self) -> float: ...

    def wall(self) -> datetime: ...


class SystemClock:
    """The real clock: ``time.monotonic()`` for timers, the system's UTC time for walls."""

    manual = False

    # Monotonic seconds: the time timers are kept in. The builtin itself, not a method
    # wrapping it: the engine reads the clock several times per task run.
    now = staticmethod(time.monotonic)

    def wall(self) -> datetime:
        """The wall-clock time, an aware UTC datetime (for cron and absolute times)."""
        return datetime.now(UTC)

    # ``wall().timestamp()`` without building a datetime: the store stamps every row.
    wall_seconds = staticmethod(time.time)


class ManualClock:
    """A clock that only moves when ``advance`` is called.

    Schedulers using it attach themselves; ``advance`` returns once the work that
    became due has been dispatched (and, with ``SyncExecutor``, has run).
    """

    manual = True

    def __init__(self, start: float = 0.0, wall: datetime | None = None):
        self._now = float(start)
        # Kept in UTC: adding a timedelta to a zoned datetime is wall-clock arithmetic,
        # which would be off by an hour across a DST change.
        self._wall0 = (wall or datetime(2026, 1, 1, tzinfo=UTC)).astimezone(UTC)
        self._wall_offset = 0.0
        # Guards changes to _now, _wall_offset and _listeners; now() and wall() read
        # without it (one attribute read is atomic; a reader sees before or after).
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def now(self) -> float:
        """Monotonic seconds: only ``advance`` moves them."""
        return self._now

    def wall(self) -> datetime:
        """The wall-clock time: the start wall plus elapsed seconds plus ``jump_wall`` steps."""
        return self._wall0 + timedelta(seconds=self._now + self._wall_offset)

    def wall_seconds(self) -> float:
        """``wall().timestamp()``: epoch seconds, as the store keeps them."""
        return self.wall().timestamp()

    def advance(self, seconds: float) -> None:
        """Move time forward; returns once the work that came due has been dispatched."""
        if seconds < 0:
            raise ValueError(f"ManualClock.advance: seconds must be >= 0, got {seconds!r}")
        with self._lock:
            self._now += seconds
            listeners = list(self._listeners)
        for callback in listeners:
            callback()

    def jump_wall(self, seconds: float) -> None:
        """Move wall time only (an NTP step or a suspend), monotonic time stays."""
        with self._lock:
            self._wall_offset += seconds
            listeners = list(self._listeners)
        for callback in listeners:
            callback()

    def attach(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` whenever the clock moves (a scheduler attaches itself)."""
        with self._lock:
            self._listeners.append(callback)

    def detach(self, callback: Callable[[], None]) -> None:
        """Stop calling ``callback`` when the clock moves."""
        with self._lock:
            if callback in self._listeners:
                self._listeners.remove(callback)


def iso_time(epoch: float) -> str:
    """``epoch`` (seconds) as local ISO 8601 with the offset: whole seconds when it is
    one, else milliseconds (a nominal time read back from the monotonic clock is a few
    microseconds off its second)."""
    millis = round(epoch * 1000)
    moment = datetime.fromtimestamp(millis / 1000).astimezone()
    return moment.isoformat(timespec="seconds" if millis % 1000 == 0 else "milliseconds")
