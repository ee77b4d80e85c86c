"""The timer heap's side of the engine: due times, recurring occurrences, misfires.

A mixin of ``Scheduler``; runs under the engine lock. With a real clock one
timer thread sleeps until the earliest due time and is woken only when that
changes; with a ``ManualClock`` each ``advance`` promotes what came due.
"""

from __future__ import annotations

import math

from .options import Misfire, Mode, Overlap
from .recurrence import CronRecurrence
from .states import TaskState
from .task import Task

S = TaskState
WALL_RESET_BACK = 3 * 3600.0  # seconds the wall clock must go back for cron to start afresh


class TimerLogic:
    def _release(self, task: Task, first: bool = False) -> None:
        """Dependencies allow the task: put it on the timer heap or make it ready."""
        if task.recurrence is not None:
            if first and task.run_at is not None:
                self._set_timer(task, task.run_at)
            else:
                self._start_cadence(task)
            self._set_state(task, S.SCHEDULED)
            return
        if task.run_at is not None and task.run_at > self._clock.now():
            self._set_timer(task, task.run_at)
            self._set_state(task, S.SCHEDULED)
            return
        task.waiting_runs = 1
        self._make_ready(task)

    def _start_cadence(self, task: Task) -> None:
        recurrence = task.recurrence
        if isinstance(recurrence, CronRecurrence):
            self._set_cron(task, recurrence.next_after(self._clock.wall()))
        else:
            self._set_timer(task, recurrence.first_due(self._clock))

    def _set_cron(self, task: Task, wall) -> None:
        """Queue a cron occurrence: the wall time is the cursor, the heap gets the
        monotonic time to sleep until."""
        task.cron_next = wall
        self._set_timer(task, CronRecurrence.to_mono(wall, self._clock))

    def _cron_due(self, task: Task) -> float:
        """Monotonic due of a cron task's cursor (a fresh one if it has none)."""
        if task.cron_next is None:
            task.cron_next = task.recurrence.next_after(self._clock.wall())
        return CronRecurrence.to_mono(task.cron_next, self._clock)

    def _set_timer(self, task: Task, due: float) -> None:
        self._timers.discard(task.timer)
        task.run_at = due
        task.timer = self._timers.add(due, task, "recurring" if task.recurrence else "scheduled")
        self._timers_changed()

    def _drop_queued(self, task: Task) -> None:
        """Forget every timer and ready entry of a task (cancel, remove)."""
        self._timers.discard(task.timer)
        self._timers.discard(task.retry_timer)
        self._ready.discard(task.ready)
        task.timer = task.retry_timer = task.ready = None
        task.cron_next = None
        task.waiting_runs = 0
        task.retry_pending = False
        task.held = False

    def _timers_changed(self) -> None:
        """Wake the timer thread only when its deadline is no longer the earliest."""
        if self._timer_wait is not None and self._timers.next_due() != self._timer_wait:
            self._timer_cond.notify()

    def _promote_due(self) -> bool:
        """Move every timer that came due into action. Returns whether any did."""
        self._check_wall_jump()
        now = self._clock.now()
        timers = self._timers
        moved = False
        while True:
            entry = timers.pop_due(now)
            if entry is None:
                return moved
            moved = True
            due, _, target, kind, _ = entry
            try:
                self._promote(due, target, kind, now)
            except Exception as exc:  # a bug fails what it was handling, not the thread
                run = target if kind == "timeout" else None
                self._engine_error(f"the timer ({kind})", exc, run, returned=False)

    def _promote(self, due: float, target, kind: str, now: float) -> None:
        if kind == "timeout":
            self._on_timeout(target)
        elif kind == "retry":
            target.retry_timer = None
            target.retry_pending = True
            # A parallel occurrence may have run and settled the task since: from
            # SCHEDULED too, the retry makes it READY (while one still runs, it is RUNNING).
            if target.state in (S.RETRY_WAIT, S.SCHEDULED) and not target.runs:
                self._set_state(target, S.READY)
            self._push_ready(target)
        elif kind == "recurring":
            target.timer = None
            self._occurrence(target, due, now)
        else:
            target.timer = None
            target.waiting_runs = 1
            self._make_ready(target)

    def _occurrence(self, task: Task, due: float, now: float) -> None:
        """A recurring task came due: apply misfire and overlap, queue the next one."""
        recurrence = task.recurrence
        if recurrence.mode == Mode.FIXED_DELAY:
            dues, following = [due], None
        elif isinstance(recurrence, CronRecurrence):
            # Counted from the cursor in wall time. The cursor itself came due: its
            # monotonic due arrived, even if the wall clock reads a hair earlier (skew).
            wall_now = self._clock.wall()
            walls, following = recurrence.due_until(task.cron_next, wall_now)
            self._set_cron(task, following)
            dues = [due] + [now - (wall_now - w).total_seconds() for w in walls[1:]]
        else:
            dues, following = recurrence.due_until(due, now, self._clock)
            self._set_timer(task, following)
        # Occurrences at most misfire_grace late run; older ones were missed (a stall,
        # a suspend) and follow the misfire policy.
        grace = task.misfire_grace
        on_time = sum(1 for d in dues if now - d <= grace)
        missed = len(dues) - on_time
        if task.misfire == Misfire.RUN_ALL:
            runs = len(dues)
        elif task.misfire == Misfire.SKIP:
            runs = on_time
        else:
            runs = on_time + (1 if missed else 0)
        if runs == 0:
            if recurrence.mode == Mode.FIXED_DELAY:
                self._set_timer(task, now + recurrence.interval)
            if task.state is S.SCHEDULED:
                self._emit(task, "scheduled")  # same state, a new next run time
            return
        if task.busy:
            if task.overlap == Overlap.SKIP:
                return
            if task.overlap == Overlap.QUEUE:
                task.waiting_runs = 1
                if task.runs or task.state is S.RETRY_WAIT:
                    return  # made ready when that run (or its retry) ends
                self._make_ready(task)  # only a lingering run: held until it ends
                return
        if task.paused:
            runs = 1  # occurrences due while paused fold into one run
            task.waiting_runs = 0
        task.waiting_runs += runs
        self._make_ready(task)

    def _current_wall_offset(self) -> float:
        return self._clock.wall().timestamp() - self._clock.now()

    def _check_wall_jump(self) -> None:
        """Cron timers follow the wall clock: re-queue them when it jumps.

        Each keeps its cursor, so a jump forward makes the occurrences it passed due
        (their misfire policy applies) and a jump back runs none of them twice. Only
        a jump back of hours means the clock was wrong before: start afresh from the
        new time, as Debian cron does.
        """
        if not self._cron_tasks or self._wall_offset is None:
            return
        offset = self._current_wall_offset()
        jump = offset - self._wall_offset
        if abs(jump) < 1.0:
            return
        self._wall_offset = offset
        wall = self._clock.wall()
        for task in self._tasks.values():
            if isinstance(task.recurrence, CronRecurrence) and task.timer is not None:
                if jump <= -WALL_RESET_BACK or task.cron_next is None:
                    task.cron_next = task.recurrence.next_after(wall)
                self._set_cron(task, task.cron_next)

    def _on_clock_moved(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._promote_due()
            deferred = self._take_deferred()
        self._after(deferred)

    def _timer_loop(self) -> None:
        lock = self._lock
        while True:
            try:
                with lock:
                    while not self._stopping:
                        if self._promote_due():
                            break
                        deadline = self._timers.next_due()
                        self._timer_wait = math.inf if deadline is None else deadline
                        now = self._clock.now()
                        timeout = None if deadline is None else max(0.0, deadline - now)
                        if self._cron_tasks:  # notice wall-clock jumps within a minute
                            timeout = 60.0 if timeout is None else min(timeout, 60.0)
                        self._timer_cond.wait(timeout)
                        self._timer_wait = None
                    if self._stopping:
                        return
                    deferred = self._take_deferred()
                self._after(deferred)
            except BaseException as exc:  # noqa: BLE001 - the timer thread must outlive a bug
                with lock:
                    self._timer_wait = None
                    self._engine_error("the timer thread", exc)
