"""Delivering events to listeners, outside the engine lock, in ``seq`` order.

The engine appends events to ``outbox`` while it holds its lock (so the deque is
in ``seq`` order) and calls ``kick()`` after releasing it. Two modes:

- threaded: one delivery thread drains the outbox, so a slow listener never
  blocks the thread that scheduled or ran a task;
- inline (with ``SyncExecutor``): the calling thread drains it before returning,
  which keeps tests deterministic. Re-entrant calls (a listener that schedules)
  leave their events to the outer drain loop.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from collections.abc import Callable

from ..models import Event

log = logging.getLogger("taskloom.engine")


class EventDelivery:
    """Hands queued events to listeners, outside the core lock (see the module doc)."""

    def __init__(self, threaded: bool) -> None:
        # Appended under the core lock (in seq order), popped by the drain loop under
        # _drain_lock; a deque's append and popleft are atomic.
        self.outbox: deque[Event] = deque()
        # (kind or None, callback) pairs. Replaced whole under _listeners_lock, never
        # mutated, so the drain loop reads it without the lock.
        self._listeners: tuple[tuple[str | None, Callable[[Event], object]], ...] = ()
        # bool(_listeners), read per event under the core lock: a plain attribute, not
        # a property. Written with _listeners under _listeners_lock.
        self.has_listeners = False
        self._listeners_lock = threading.Lock()  # serialises add/remove
        self._threaded = threaded
        # One drain loop at a time; held while listeners run (they may take the core lock).
        self._drain_lock = threading.Lock()
        # Wake-ups for the delivery thread: a token in a C-level queue, at most one
        # pending (_wake_pending: set by kick(), cleared by the thread before it
        # drains, so a later kick sends a new token). A threading.Event here cost a
        # Python-level Condition per kick, whose lock the kickers and the delivery
        # thread queued on (lock convoys under load).
        self._wakeups: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._wake_pending = False
        # seq of the last event handed to the listeners: written by the drain loop
        # (under _drain_lock), waited for under _progress.
        self._delivered = 0
        self.last_queued = 0  # seq of the last event put in the outbox (under the core lock)
        self._progress = threading.Condition()  # wakes wait_delivered() after each drain
        self._closed = False  # set once by close(); the delivery thread reads it
        self._thread: threading.Thread | None = None  # set here, never changed
        self._drainer: int | None = None  # thread id of the drain loop under way (_drain_lock)
        if threaded:
            self._thread = threading.Thread(target=self._run, name="taskloom-events", daemon=True)
            self._thread.start()

    # listeners -----------------------------------------------------------
    def add(self, kind: str | None, callback: Callable[[Event], object]) -> None:
        with self._listeners_lock:
            self._listeners = self._listeners + ((kind, callback),)
            self.has_listeners = True

    def remove(self, kind: str | None, callback: Callable[[Event], object]) -> None:
        with self._listeners_lock:
            items = list(self._listeners)
            if (kind, callback) in items:
                items.remove((kind, callback))
            self._listeners = tuple(items)
            self.has_listeners = bool(items)

    # delivery ------------------------------------------------------------
    def kick(self) -> None:
        if self._threaded:
            if not self._wake_pending:  # a token is already on its way otherwise
                self._wake_pending = True
                self._wakeups.put(None)
        else:
            self._drain()

    def _run(self) -> None:
        while True:
            try:
                self._wakeups.get()
                self._wake_pending = False  # before draining: a later kick sends a token
                self._drain()
            except BaseException:  # delivery must outlive a bug
                log.exception("event delivery failed")
            if self._closed and not self.outbox:
                return

    def _drain(self) -> None:
        while self.outbox:
            if not self._drain_lock.acquire(blocking=False):
                return  # another drain loop (an outer frame in this thread) will finish
            self._drainer = threading.get_ident()
            try:
                outbox = self.outbox
                while outbox:
                    event = outbox.popleft()
                    for kind, callback in self._listeners:
                        if kind is None or kind == event.kind:
                            try:
                                callback(event)
                            except Exception:
                                log.exception("listener %r failed on %s", callback, event)
                            except BaseException:  # SystemExit: only the caller's own
                                if not self._threaded:
                                    raise
                                log.exception("listener %r failed on %s", callback, event)
                    self._delivered = event.seq
                if self._threaded:
                    with self._progress:
                        self._progress.notify_all()
            finally:
                self._drainer = None
                self._drain_lock.release()

    def in_listener(self) -> bool:
        """Whether the calling thread is delivering events (inside a listener)."""
        if self._thread is not None and self._thread is threading.current_thread():
            return True
        return self._drainer == threading.get_ident()

    def wait_delivered(self, seq: int, timeout: float | None = None) -> bool:
        """Block until every event up to ``seq`` has been handed to the listeners."""
        if not self._threaded:
            self._drain()
            return True
        target = min(seq, self.last_queued)  # events made while nobody listened never queue
        with self._progress:
            return self._progress.wait_for(lambda: self._delivered >= target, timeout)

    def close(self, wait: bool = True) -> None:
        self._closed = True
        if self._thread is not None:
            self._wakeups.put(None)
            if wait and self._thread is not threading.current_thread():
                self._thread.join()
        else:
            self._drain()
