"""A run's deadline (``[workflow] timeout = "2h"``): past it, what is unfinished is
cancelled and the run has failed.

``RunDeadline(scheduler, seconds, on_expired=...)`` counts on the scheduler's clock
from when it is made (``elapsed`` seconds already used: a resumed run keeps the
deadline it had). ``start()`` arms it; on a ``ManualClock`` it is checked each time
the clock moves (no thread), else one thread waits for it. When it passes, every
task that has not settled is cancelled (``Scheduler.cancel``: running commands are
ended with their process groups), ``reason`` says why and ``on_expired(reason,
cancelled ids)`` is called once, on that thread (``on_expiring(reason)`` before
the cancels, so that a listener knows why it hears them). ``stop()`` disarms it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .durations import format_duration


class RunDeadline:
    """Cancels a run's unfinished tasks once its timeout has passed."""

    def __init__(
        self,
        scheduler,
        seconds: float,
        *,
        elapsed: float = 0.0,
        on_expired: Callable[[str, list[str]], None] | None = None,
        on_expiring: Callable[[str], None] | None = None,
    ):
        self.scheduler = scheduler
        self.seconds = float(seconds)
        self.clock = scheduler.clock
        self.due = self.clock.now() + max(0.0, self.seconds - elapsed)
        self.on_expired = on_expired
        self.on_expiring = on_expiring
        self.reason = (
            f"the run passed its deadline: [workflow] timeout = {format_duration(self.seconds)}"
        )
        self.expired = False
        self.cancelled: list[str] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> RunDeadline:
        if getattr(self.clock, "manual", False):
            self.clock.attach(self._check)
            self._check()
        else:
            self._thread = threading.Thread(
                target=self._wait, name="taskloom-deadline", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if getattr(self.clock, "manual", False):
            self.clock.detach(self._check)

    def remaining(self) -> float:
        return max(0.0, self.due - self.clock.now())

    def _wait(self) -> None:
        while not self._stopped.wait(min(self.remaining(), 3600.0)):
            if self.remaining() <= 0:
                self._expire()
                return

    def _check(self) -> None:
        if not self._stopped.is_set() and self.clock.now() >= self.due:
            self._expire()

    def _expire(self) -> None:
        with self._lock:
            if self.expired:
                return
            self.expired = True
        if self.on_expiring is not None:  # before the cancels' events are heard
            self.on_expiring(self.reason)
        try:
            infos = self.scheduler.tasks()
        except RuntimeError:  # shut down meanwhile: nothing left to end
            infos = []
        # Every task unfinished now (a dependent is cancelled with its upstream)
        cancelled = [info.id for info in infos if not info.state.settled]
        # Downstream first (tasks come upstream first): a dependent is CANCELLED, not
        # SKIPPED, and an ``all_done`` one does not start for its cancelled upstream.
        for tid in reversed(cancelled):
            try:
                self.scheduler.cancel(tid)
            except (KeyError, RuntimeError):  # removed, or shut down, meanwhile
                continue
        self.cancelled = cancelled
        if self.on_expired is not None:
            self.on_expired(self.reason, cancelled)
