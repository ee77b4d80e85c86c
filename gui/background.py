"""A worker thread that runs the newest job it was given, started once.

``threading.Thread.start()`` waits until the new thread runs Python, so it waits for
the GIL; with the engine's workers busy that took the GUI thread 5-30 ms a start,
for every view worked out while tasks poured in. A ``LatestWorker`` hands its job
over without waiting, and drops a job a newer one replaced before it began (the
scene wants the view of its newest tasks, not every one in between).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

IDLE_S = 10.0  # a worker with nothing to do this long ends; the next job starts another


class LatestWorker:
    """One daemon thread per owner and purpose; ``submit`` never waits for it."""

    def __init__(self, name: str, rest: float = 0.0):
        self.name = name
        # After a job that took t seconds, the next waits rest * t: jobs back to back
        # (a view worked out per batch while 20,000 tasks pour in) held the GIL the
        # GUI thread needs most of the time; a rest of 1 holds it at most half, and
        # the jobs replaced meanwhile are never run.
        self.rest = rest
        self._closed = threading.Event()  # never set: what the rest waits on
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._job: Callable[[], None] | None = None
        self._thread: threading.Thread | None = None
        self.starts = 0  # threads started (the tests count them)
        self.dropped = 0  # jobs replaced before they began

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._job is not None:
                self.dropped += 1
            self._job = job
            thread = None
            if self._thread is None:
                thread = self._thread = threading.Thread(
                    target=self._run, name=self.name, daemon=True
                )
                self.starts += 1
        self._wake.set()
        if thread is not None:
            thread.start()  # the first job only (and after a long idle)

    def _run(self) -> None:
        while True:
            self._wake.wait(IDLE_S)
            with self._lock:
                self._wake.clear()
                job, self._job = self._job, None
                if job is None:
                    self._thread = None  # idle: the next submit starts a thread again
                    return
            began = time.monotonic()
            try:
                job()
            except Exception:  # reported as a thread's would be; the worker goes on
                threading.excepthook(
                    threading.ExceptHookArgs([*sys.exc_info(), threading.current_thread()])
                )
            if self.rest:
                self._closed.wait(self.rest * (time.monotonic() - began))
