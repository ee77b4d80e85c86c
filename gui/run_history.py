"""Attempts from the run store, for the inspector and the timeline.

The store keeps every attempt of every run with wall-clock epoch times; the
views draw on the scheduler clock (monotonic seconds). The views never read the
store themselves: ``HistoryReader`` (history_reader.py) runs ``stored_attempts``
and ``read_window`` on its own thread and hands the answers back. Reads stay
small and infrequent: a task's latest attempts when it is selected, or one time
window every few seconds.
"""

from __future__ import annotations

import inspect
import time
from typing import TYPE_CHECKING, NamedTuple

from taskloom.engine import Attempt

if TYPE_CHECKING:
    from taskloom.engine.run_api import RunInterface, StoreReads


def store_of(scheduler: RunInterface) -> StoreReads | None:
    """The run's store, or None (a scheduler without one)."""
    return scheduler.store


def wall_offset(clock) -> float:
    """wall = mono + offset on this clock (a ManualClock has its own wall time)."""
    return clock.wall().timestamp() - clock.now()


def stored_attempts(
    store, task_id: str, skip: set[tuple[int, int]], keep: int, offset: float = 0.0
) -> list[Attempt]:
    """The task's latest ``keep`` stored attempts that are not in ``skip`` ((run, number)
    pairs already known from memory), oldest first, as engine ``Attempt`` records with
    their ``run``, on the clock ``wall - offset`` (the scheduler's, given its offset)."""
    rows = store.attempts(task_id, limit=keep + len(skip))
    found = [Attempt.from_row(r, offset) for r in rows if (r["run"], r["number"]) not in skip]
    return found[:keep][::-1]


class WindowQuery(NamedTuple):
    """One window read, as planned on the GUI thread (``WindowHistory.plan``)."""

    since: float  # wall clock
    until: float | None  # wall clock; None: the store's attempts() has no ``until``
    limit: int
    offset: float  # wall = scheduler clock + offset, when the read was planned
    right: float  # the right edge (scheduler clock) the read covers


class WindowRead(NamedTuple):
    """What a window read found, on the scheduler clock (built off the GUI thread)."""

    bars: dict[str, list[tuple]]  # tid -> [(start, end, outcome, number, run)], oldest first
    run_starts: dict[int, float]  # run -> its first attempt's start, in range
    truncated: bool  # the limit cut the read short: the oldest part is missing
    oldest: float | None  # the oldest start read, None if nothing was


def read_window(store, since: float, until: float | None, limit: int, offset: float) -> WindowRead:
    """Stored attempts that started in [since, until] (wall clock; to now without
    ``until``), newest ``limit`` of them, as bars on the scheduler clock
    (``offset``: wall = clock + offset). Reads the store: not on the GUI thread."""
    if until is not None:
        rows = store.attempts(since=since, until=until, limit=limit)
    else:
        rows = store.attempts(since=since, limit=limit)
    bars: dict[str, list[tuple]] = {}
    run_starts: dict[int, float] = {}
    for row in reversed(rows):  # oldest first
        start = row["started"] - offset
        end = None if row["ended"] is None else row["ended"] - offset
        bars.setdefault(row["task_id"], []).append(
            (start, end, row["outcome"], row["number"], row["run"])
        )
        run_starts.setdefault(row["run"], start)
    oldest = rows[-1]["started"] - offset if rows else None
    return WindowRead(bars, run_starts, len(rows) >= limit, oldest)


class WindowHistory:
    """Stored attempts overlapping the timeline's window, re-read at most every
    ``min_interval`` seconds (real time) and only when the window is not covered.

    It does not read the store: ``plan`` says what to read, someone else reads it
    (the timeline asks its ``HistoryReader``), and ``apply`` takes the answer."""

    def __init__(self, store, clock, limit: int = 5000, min_interval: float = 3.0):
        self.store = store
        self.clock = clock
        self.limit = limit
        self.min_interval = min_interval
        self.bars: dict[str, list[tuple]] = {}  # tid -> [(start, end, outcome, number, run)]
        self.run_starts: dict[int, float] = {}  # run -> its first attempt's start, in range
        self.covered: tuple[float, float] | None = None  # scheduler-clock range read
        self.truncated = False  # the limit cut the read short: the oldest part is missing
        self.reads = 0  # answers applied
        self.failures = 0  # reads that found the store unavailable
        self.pending: WindowQuery | None = None  # planned, not answered yet
        self._last_read = -float("inf")  # when the last read was planned (real time)
        # A store whose attempts() takes ``until`` reads just the window; without it
        # the read runs from the window's start to now, newest first, up to ``limit``.
        try:
            self._until = "until" in inspect.signature(store.attempts).parameters
        except (TypeError, ValueError):
            self._until = False

    @property
    def run(self) -> int | None:
        return None if self.store is None else self.store.run

    def needs_read(self, t0: float, t1: float, news: bool = True) -> bool:
        """Whether the window [t0, t1] is to be read; ``news``: whether attempts may
        have been added since the last read (without, a window that moved on past
        what was read is not read again: an idle run has nothing new to show)."""
        if self.pending is not None and self.pending.since - self.pending.offset <= t0:
            # The read on its way covers this window's start: wait for it (asking again
            # would make its answer stale, and slow reads would never land).
            return False
        if self.covered is None:
            return True
        c0, c1 = self.covered
        # Attempts of this run arrive as events; re-read a window that reaches past
        # the last read only now and then, for attempts the event tail did not keep.
        if t0 < c0:
            return True
        return news and t1 > c1 and time.monotonic() - self._last_read >= 4 * self.min_interval

    def due(self) -> bool:
        return time.monotonic() - self._last_read >= self.min_interval

    def plan(self, t0: float, t1: float) -> WindowQuery:
        """The read for the window [t0, t1]: attempts that started in [t0 - span, t1]
        (the margin catches long attempts that began before the window); to now if
        the store has no ``until``. Counts as a read for ``due``."""
        span = max(1.0, t1 - t0)
        offset = wall_offset(self.clock)
        since = t0 - span
        self._last_read = time.monotonic()
        if self._until:
            query = WindowQuery(since + offset, t1 + offset, self.limit, offset, t1)
        else:
            right = max(t1, self.clock.now())
            query = WindowQuery(since + offset, None, self.limit, offset, right)
        self.pending = query
        return query

    def apply(self, query: WindowQuery, found: WindowRead) -> None:
        """Take the answer to ``query``: its bars replace the ones shown."""
        if query is self.pending:
            self.pending = None
        self.bars = found.bars
        self.run_starts = found.run_starts
        self.truncated = found.truncated
        since = query.since - query.offset
        oldest = found.oldest if found.truncated and found.oldest is not None else since
        self.covered = (oldest, query.right)
        self.reads += 1

    def failed(self, query: WindowQuery) -> None:
        """The read for ``query`` found the store unavailable: keep what is shown; the
        window is read again when due."""
        if query is self.pending:
            self.pending = None
        self.failures += 1
