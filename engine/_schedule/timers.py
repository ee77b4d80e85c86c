"""The timer queue: due times, cron cursors, wall-clock jumps, the timer thread.

With a real clock one timer thread sleeps until the earliest due time and is
woken only when that changes; with a ``ManualClock`` each ``advance`` promotes
what came due. What a due entry means (a run, a retry, an occurrence, a timeout)
is the lifecycle's business: the queue hands each one to ``on_due``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .._core.core import Core
from .._core.heaps import TimerHeap
from .._core.task import Run, Task
from ..clock import Clock
from ..models import Entry
from .recurrence import CronRecurrence

WALL_RESET_BACK = 3 * 3600.0  # seconds the wall clock must go back for cron to start afresh
_LONGEST_WAIT = 86400.0  # the timer thread wakes at least daily (refused timers aside)
_TIMER_KINDS = ("scheduled", "retry", "recurring")  # what upcoming() shows; not "timeout"

# on_due(due, target, kind, now): target is a Task, or a Run for kind "timeout"
DueHandler = Callable[[float, Any, str, float], None]
ErrorHandler = Callable[..., None]


class TimerQueue:
    """Timers not yet due, on one heap keyed by due time (see ``heaps.py``).

    Not thread-safe: every method but ``loop`` and ``on_clock_moved`` is called with
    the core lock held; those two take it. ``connect`` wires the handlers once."""

    def __init__(self, core: Core, clock: Clock) -> None:
        self._core = core
        self.clock = clock
        self.heap = TimerHeap()
        self.wait_deadline: float | None = None  # deadline the timer thread sleeps to
        self.wall_offset: float | None = None  # wall - monotonic, to notice wall jumps
        self._cron: dict[Task, None] = {}  # cron tasks in the engine, in order added
        # One-shot tasks queued for an aware wall time (``at``): re-queued, as cron
        # occurrences are, when the wall clock jumps. Left when they come due or drop.
        self._at: dict[Task, None] = {}
        self._on_due: DueHandler | None = None
        self._on_error: ErrorHandler | None = None
        self._after: Callable[[list[Callable[[], object]]], None] | None = None

    def connect(self, on_due: DueHandler, on_error: ErrorHandler, after: Callable) -> None:
        """``on_due`` handles a due entry, ``on_error(where, exc, run=None, returned=True)``
        an engine error, ``after(deferred)`` runs deferred work once the lock is released."""
        self._on_due, self._on_error, self._after = on_due, on_error, after

    # entries -------------------------------------------------------------
    def add(self, due: float, target: Task | Run, kind: str) -> list:
        return self.heap.add(due, target, kind)

    def discard(self, entry: list | None) -> None:
        self.heap.discard(entry)

    def changed(self) -> None:
        """Wake the timer thread only when its deadline is no longer the earliest."""
        if self.wait_deadline is not None and self.heap.next_due() != self.wait_deadline:
            self._core.timer_cond.notify()

    def add_timeout(self, due: float, run: Run) -> list:
        entry = self.heap.add(due, run, "timeout")
        self.changed()
        return entry

    def set_timer(self, task: Task, due: float) -> None:
        self.heap.discard(task.timer)
        task.run_at = due
        task.timer = self.heap.add(due, task, "recurring" if task.recurrence else "scheduled")
        self.changed()

    def set_retry(self, task: Task, due: float) -> None:
        self.heap.discard(task.retry_timer)
        task.retry_timer = self.heap.add(due, task, "retry")
        self.changed()

    def upcoming(self, limit: int) -> list[Entry]:
        import heapq

        entries = heapq.nsmallest(
            limit, (e for e in self.heap.alive() if e[4] in _TIMER_KINDS), key=lambda e: e[:2]
        )
        return [Entry(e[0], e[3].priority, e[3].id, e[4]) for e in entries]

    def next_due(self) -> float | None:
        """When the earliest timer of any kind (timeouts too) comes due, or None."""
        return self.heap.next_due()

    def due_by(self, until: float) -> list[Entry]:
        """The timer entries (not timeouts) due at or before ``until``, earliest first."""
        return [
            Entry(e[0], e[3].priority, e[3].id, e[4])
            for e in self.heap.alive_until(until)
            if e[4] in _TIMER_KINDS
        ]

    # wall-clock one-shots (``at``) ----------------------------------------
    @staticmethod
    def wall_time(task: Task) -> datetime | None:
        """The aware wall time a one-shot task was given (``schedule(run_at=datetime)``,
        ``at`` in a file), or None (a time on the scheduler clock, a delay, none)."""
        definition = task.definition
        if isinstance(definition, datetime):
            return definition
        if definition is None or isinstance(definition, float):
            return None
        at = getattr(definition, "at", None)  # a TaskDefinition
        return at if isinstance(at, datetime) else None

    def set_at(self, task: Task, wall: datetime) -> None:
        """Queue a one-shot task for its wall time: the heap gets the monotonic time now,
        and a wall-clock jump re-queues it from ``wall`` (suspend, an NTP step)."""
        self.set_timer(task, self.clock_time(wall))
        self._at[task] = None

    def clock_time(self, wall: datetime) -> float:
        """A wall time as a time on the scheduler clock, as the wall clock reads now."""
        return CronRecurrence.to_mono(wall, self.clock)

    def drop_at(self, task: Task) -> None:
        """The task's wall-time timer came due or was dropped."""
        if self._at:
            self._at.pop(task, None)

    def _requeue_at(self) -> None:
        for task in list(self._at):
            wall = self.wall_time(task)
            if task.timer is None or task.recurrence is not None or wall is None:
                del self._at[task]  # already due, dropped, or edited into something else
            else:
                self.set_timer(task, self.clock_time(wall))

    # recurrence ----------------------------------------------------------
    def add_cron(self, task: Task) -> None:
        self._cron[task] = None

    def drop_cron(self, task: Task) -> None:
        self._cron.pop(task, None)

    def start_cadence(self, task: Task) -> None:
        recurrence = task.recurrence
        assert recurrence is not None
        if isinstance(recurrence, CronRecurrence):
            self.set_cron(task, recurrence.next_after(self.clock.wall()))
        else:
            self.set_timer(task, recurrence.first_due(self.clock))

    def set_cron(self, task: Task, wall: datetime) -> None:
        """Queue a cron occurrence: the wall time is the cursor, the heap gets the
        monotonic time to sleep until."""
        task.cron_next = wall
        self.set_timer(task, self.clock_time(wall))

    def cron_due(self, task: Task) -> float:
        """Monotonic due of a cron task's cursor (a fresh one if it has none)."""
        assert isinstance(task.recurrence, CronRecurrence)
        if task.cron_next is None:
            task.cron_next = task.recurrence.next_after(self.clock.wall())
        return CronRecurrence.to_mono(task.cron_next, self.clock)

    # promotion -----------------------------------------------------------
    def promote_due(self) -> bool:
        """Hand every timer that came due to ``on_due``. Returns whether any did."""
        self._check_wall_jump()
        now = self.clock.now()
        timers = self.heap
        on_due = self._on_due
        assert on_due is not None and self._on_error is not None
        moved = False
        while True:
            entry = timers.pop_due(now)
            if entry is None:
                return moved
            moved = True
            due, _, _, target, kind = entry
            try:
                on_due(due, target, kind, now)
            except Exception as exc:  # a bug fails what it was handling, not the thread
                run = target if kind == "timeout" else None
                self._on_error(f"the timer ({kind})", exc, run, returned=False)

    def start(self) -> None:
        """The scheduler starts: wall-clock jumps count from now (and ``at`` tasks queued
        before it follow the wall clock as it reads now)."""
        self.wall_offset = self._current_wall_offset()
        for entry in list(self.heap.alive()):  # restored from a store, too
            if entry[4] == "scheduled" and self.wall_time(entry[3]) is not None:
                self._at[entry[3]] = None
        self._requeue_at()

    def stop(self) -> None:
        """start() was undone: no wall-clock jumps to notice."""
        self.wall_offset = None

    def _current_wall_offset(self) -> float:
        return self.clock.wall().timestamp() - self.clock.now()

    def _check_wall_jump(self) -> None:
        """Cron and ``at`` timers follow the wall clock: re-queue them when it jumps.

        An ``at`` task is re-queued for its wall time (one already passed comes due
        now: it runs once, late). Each cron task keeps its cursor, so a jump forward
        makes the occurrences it passed due (their misfire policy applies) and a jump
        back runs none of them twice. Only a jump back of hours means the clock was
        wrong before: start afresh from the new time, as Debian cron does.
        """
        if (not self._cron and not self._at) or self.wall_offset is None:
            return
        offset = self._current_wall_offset()
        jump = offset - self.wall_offset
        if abs(jump) < 1.0:
            return
        self.wall_offset = offset
        self._requeue_at()
        wall = self.clock.wall()
        for task in self._cron:
            if task.timer is not None:
                assert isinstance(task.recurrence, CronRecurrence)
                if jump <= -WALL_RESET_BACK or task.cron_next is None:
                    task.cron_next = task.recurrence.next_after(wall)
                self.set_cron(task, task.cron_next)

    # threads -------------------------------------------------------------
    def on_clock_moved(self) -> None:
        """A ``ManualClock`` moved (called on the thread that moved it, without the lock)."""
        core = self._core
        with core.lock:
            if core.closed:
                return
            self.promote_due()
            deferred = core.take_deferred()
        assert self._after is not None
        self._after(deferred)

    def loop(self) -> None:
        """The timer thread (real clocks only)."""
        core = self._core
        lock = core.lock
        after, on_error = self._after, self._on_error
        assert after is not None and on_error is not None
        while True:
            try:
                with lock:
                    while not core.stopping:
                        if self.promote_due():
                            break
                        deadline = self.heap.next_due()
                        self.wait_deadline = math.inf if deadline is None else deadline
                        now = self.clock.now()
                        timeout = None if deadline is None else max(0.0, deadline - now)
                        if timeout is not None and timeout > _LONGEST_WAIT:
                            timeout = _LONGEST_WAIT  # a lock cannot wait longer: wake, wait on
                        if self._cron or self._at:  # notice wall-clock jumps within a minute
                            timeout = 60.0 if timeout is None else min(timeout, 60.0)
                        core.timer_cond.wait(timeout)
                        self.wait_deadline = None
                    if core.stopping:
                        return
                    deferred = core.take_deferred()
                after(deferred)
            except BaseException as exc:  # the timer thread must outlive a bug
                with lock:
                    self.wait_deadline = None
                    on_error("the timer thread", exc)
