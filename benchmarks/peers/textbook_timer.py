"""The classic interview timer: one heap keyed by run time, a Condition, a thread pool.

A dispatcher thread sleeps on the Condition until the earliest entry is due, pops
everything that is due and submits it to a ``ThreadPoolExecutor`` (one Future per
task). Priority only breaks ties between equal run times. ``cancel`` marks the
heap entry as removed and leaves it in the heap until it is popped, as in the
``heapq`` documentation's "priority queue implementation notes".
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor

# Heap entry layout: [run_at, -priority, seq, fn, cancelled]
_FN, _CANCELLED = 3, 4


class TextbookTimer:
    def __init__(self, workers: int = 4, listener=None):
        self._heap: list[list] = []
        self._cv = threading.Condition()
        self._seq = itertools.count()
        self._pool = ThreadPoolExecutor(max_workers=workers)
        self._listener = listener  # called as listener(ok) after each task
        self._stopped = False
        self._thread = threading.Thread(target=self._dispatch, name="textbook-timer", daemon=True)

    def schedule(self, fn, run_at: float | None = None, priority: int = 0) -> list:
        """Run ``fn`` at ``run_at`` (time.monotonic seconds; None = now)."""
        if run_at is None:
            run_at = time.monotonic()
        entry = [run_at, -priority, next(self._seq), fn, False]
        with self._cv:
            heapq.heappush(self._heap, entry)
            self._cv.notify()
        return entry

    def cancel(self, entry: list) -> None:
        # Tombstone: the entry keeps its memory until the dispatcher pops it.
        with self._cv:
            entry[_CANCELLED] = True

    def start(self) -> None:
        self._thread.start()

    def shutdown(self, wait: bool = True) -> None:
        with self._cv:
            self._stopped = True
            self._cv.notify()
        if self._thread.is_alive():
            self._thread.join()
        self._pool.shutdown(wait=wait)

    def _dispatch(self) -> None:
        while True:
            with self._cv:
                while True:
                    if self._stopped:
                        return
                    if not self._heap:
                        self._cv.wait()
                        continue
                    delay = self._heap[0][0] - time.monotonic()
                    if delay <= 0:
                        break
                    self._cv.wait(delay)
                entry = heapq.heappop(self._heap)
            if not entry[_CANCELLED]:
                self._pool.submit(self._run, entry[_FN])

    def _run(self, fn) -> None:
        try:
            fn()
            ok = True
        except Exception:
            ok = False
        if self._listener is not None:
            self._listener(ok)
