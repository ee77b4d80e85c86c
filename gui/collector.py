"""Python's cyclic garbage collector, run on the GUI thread only, and paused while a
big file opens.

**Only on the GUI thread.** Left automatic, a collection runs on whichever thread
allocates past the threshold: a worker of the graph's view, the engine's writer, the
forecast. There it can destroy a Qt object of the GUI thread that was kept only by a
reference cycle (a scene, a dialog, a timer's owner): its timers stay registered with
the GUI thread's event loop and the next one fires into freed memory (a segfault in
``QCoreApplication::notifyInternal2``, seen in the test suite). As pyqtgraph's
``GarbageCollector`` does, the automatic collector is turned off and a timer on the GUI
thread collects each generation whose threshold was passed. It checks every second
while there is garbage to collect, and backs off to every ``IDLE_INTERVAL_MS`` while
there is none (a window at rest is woken rarely).

**Paused for a big file** (issue 25). Reading, checking and scheduling a 100,000-task
file makes millions of objects that all live on, and every full collection walked all
of them again: about 40% of the open's time at 50,000 tasks. Nothing is collected from
the open until its graph is drawn (pauses nest). Then what exists is frozen
(``gc.freeze``): the next full pass would walk it all on the GUI thread (1-2 s at
100,000 tasks). ``thaw`` when a run closes hands it back (what became garbage goes).
"""

from __future__ import annotations

import gc
import threading

from PySide6.QtCore import QObject, QTimer

BUSY_INTERVAL_MS = 1000  # between checks while collections find work
IDLE_INTERVAL_MS = 10_000  # the longest between checks


class GuiThreadCollector:
    """The process's one collector (``COLLECTOR``); ``install`` on the GUI thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the pause count (opens run off the GUI thread)
        self._pauses = 0  # guarded by _lock
        self._was_enabled = True  # not installed: whether automatic collection was on
        self.paused_total = 0  # pauses taken (tests count them)
        self.frozen = False  # objects were frozen at the end of a pause
        self.collections = 0  # checks that collected (tests count them)
        self._timer: QTimer | None = None  # made by install(), on the GUI thread

    @property
    def installed(self) -> bool:
        return self._timer is not None

    def install(self, owner: QObject) -> None:
        """From now on only this collects, on ``owner``'s (the GUI) thread. Idempotent."""
        if self._timer is not None:
            return
        gc.disable()
        self._timer = QTimer(owner)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.check)
        self._timer.start(BUSY_INTERVAL_MS)

    def check(self) -> None:
        """Collect the generations whose thresholds were passed (CPython's own rule, on
        this thread), unless a big file is opening; check again soon if there was work."""
        collected = False
        if not self.paused:
            counts, thresholds = gc.get_count(), gc.get_threshold()
            if counts[0] > thresholds[0]:
                collected = True
                generation = 0
                if counts[1] > thresholds[1]:
                    generation = 2 if counts[2] > thresholds[2] else 1
                gc.collect(generation)
                self.collections += 1
        if self._timer is not None:
            busy = collected or self.paused
            self._timer.start(BUSY_INTERVAL_MS if busy else IDLE_INTERVAL_MS)

    # -- a big file's open --------------------------------------------------------------
    def pause(self) -> None:
        with self._lock:
            if self._pauses == 0 and self._timer is None:  # not installed (a library use)
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._pauses += 1
            self.paused_total += 1

    def resume(self) -> None:
        with self._lock:
            if self._pauses == 0:
                return
            self._pauses -= 1
            if self._pauses == 0:
                gc.freeze()
                self.frozen = True
                if self._timer is None and self._was_enabled:
                    gc.enable()

    def thaw(self) -> None:
        """A run closed: what was frozen is the collector's again (not while paused)."""
        with self._lock:
            if self.frozen and self._pauses == 0:
                gc.unfreeze()
                self.frozen = False

    @property
    def paused(self) -> bool:
        return self._pauses > 0


COLLECTOR = GuiThreadCollector()
