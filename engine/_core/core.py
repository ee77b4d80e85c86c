"""The core lock and what every part of the scheduler reads under it.

One lock guards the whole core: the task graph, the timer queue, the ready queue,
every ``Task`` and ``Run`` record and the flags below. A transition touches
several parts at once (a run's end frees a slot, records an attempt, changes a
state, arms a retry timer, wakes dependents), so one lock keeps it atomic.
Task code, listeners and cancel callbacks never run under it: a part that needs
one collects it with ``defer`` and the caller runs it after releasing the lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..errors import StoreError


class Core:
    """The core lock, its three conditions, the run flags and the deferred callbacks.

    Every field is guarded by ``lock`` (the conditions share it). Flags are read
    without it only where a stale value is harmless (``paused_all`` for the
    ``Scheduler.paused`` property)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.work_cond = threading.Condition(self.lock)  # own workers wait for ready work
        self.timer_cond = threading.Condition(self.lock)  # the timer thread sleeps here
        self.settled_cond = threading.Condition(self.lock)  # wait() and shutdown() sleep here
        self.settle_waiters = 0  # threads in settled_cond (wait_settled): notify only if any
        self.started = False
        self.closed = False  # shutdown() was called: no more scheduling calls
        self.stopping = False  # no new runs start
        self.interrupting = False  # shutdown(cancel_running=True): runs are being stopped
        self.paused_all = False
        self.unsettled = 0  # tasks wait() waits for that have not settled
        self.store_error: StoreError | None = None  # writing failed: the engine stopped
        self.deferred: list[Callable[[], object]] = []  # run after the lock is released

    def defer(self, callback: Callable[[], object]) -> None:
        self.deferred.append(callback)

    def take_deferred(self) -> list[Callable[[], object]]:
        deferred = self.deferred
        if deferred:
            self.deferred = []
        return deferred

    def wait_settled(self, predicate: Callable[[], bool], timeout: float | None = None) -> bool:
        """``settled_cond.wait_for``, counted in ``settle_waiters`` (under the lock)."""
        self.settle_waiters += 1
        try:
            return self.settled_cond.wait_for(predicate, timeout)
        finally:
            self.settle_waiters -= 1

    def notify_settled(self) -> None:
        """Wake wait()/shutdown(), if any waits: the hot path asks on every run's end."""
        if self.settle_waiters:
            self.settled_cond.notify_all()

    def notify_if_settled(self) -> None:
        if self.unsettled == 0 and self.settle_waiters:
            self.settled_cond.notify_all()

    def wake_all(self) -> None:
        """Every thread sleeping on the lock looks again (stop, store failure)."""
        self.work_cond.notify_all()
        self.timer_cond.notify_all()
        self.settled_cond.notify_all()
