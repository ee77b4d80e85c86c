"""Run-store reads off the GUI thread, for the inspector and the timeline.

A read of the store can take a while: a big store, a busy disk, or the owner's
writer holding the shared connection for a commit. ``HistoryReader`` runs every
read on one background thread and hands the answer back on the GUI thread
through a queued signal that carries the request's id, so a view can drop an
answer it no longer wants (another task was selected, the timeline was panned
further). Reads run one at a time; while one runs, only the newest waiting
request of each kind is kept (``dropped`` counts the ones it replaced).

A read that fails (``sqlite3.Error``, ``StoreError``, the store closed when the
session stopped) answers ``None``: "history unavailable". Nothing is raised on
the GUI thread. ``close()`` stops it without blocking: no new read starts and
no answer is delivered; ``join()`` (from any thread, e.g. the one about to
close the store) waits for a read still running and for the thread to end.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from itertools import count

from PySide6.QtCore import QObject, Qt, Signal

from taskloom.engine import StoreError

from .run_history import read_window, stored_attempts

log = logging.getLogger(__name__)

READ_ERRORS = (sqlite3.Error, StoreError)
ATTEMPTS = "attempts"
WINDOW = "window"
GRID = "grid"
RUN = "run"


class HistoryReader(QObject):
    # (request id, task id, list[Attempt] oldest first, or None: unavailable)
    attemptsRead = Signal(int, str, object)
    # (request id, run_history.WindowRead, or None: unavailable)
    windowRead = Signal(int, object)
    # (request id, runs_view.RunsGrid, or None: unavailable)
    gridRead = Signal(int, object)
    # (request id, past_run.PastRun, or None: unavailable)
    runRead = Signal(int, object)
    _finished = Signal(int, str, object)  # worker -> GUI thread: (id, kind, (key, answer))

    def __init__(self, store, parent=None):
        super().__init__(parent)
        self.store = store
        self._ids = count(1)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="taskloom-history")
        self._future = None  # the read running, if any
        self._pending: dict[str, tuple[int, tuple]] = {}  # kind -> newest waiting (id, args)
        self._last_kind: str | None = None
        self._closed = False
        self._emit_lock = threading.Lock()  # closing and delivering do not interleave
        self.reads = 0  # reads answered
        self.dropped = 0  # requests replaced by a newer one before they ran
        self._finished.connect(self._on_finished, Qt.ConnectionType.QueuedConnection)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def busy(self) -> bool:
        """A read is running or waiting."""
        return self._future is not None or bool(self._pending)

    # -- requests (GUI thread) ---------------------------------------------------------
    def request_attempts(
        self, task_id: str, skip=frozenset(), keep: int = 100, offset: float = 0.0
    ) -> int:
        """Read the task's latest ``keep`` stored attempts not in ``skip`` ((run, number)
        pairs already shown), as ``Attempt`` records on the clock ``wall - offset``.
        Answers through ``attemptsRead``; returns the request's id (0 once closed: no
        answer will come)."""
        return self._request(ATTEMPTS, (task_id, frozenset(skip), keep, offset))

    def request_window(
        self, since: float, until: float | None, limit: int = 5000, offset: float = 0.0
    ) -> int:
        """Read the attempts that started in [since, until] (wall clock; to now for
        ``until=None``), newest ``limit``, as bars on the clock ``wall - offset``.
        Answers through ``windowRead``; returns the request's id (0 once closed)."""
        return self._request(WINDOW, (since, until, limit, offset))

    def request_grid(self) -> int:
        """Read the newest runs' attempts as the Runs view's grid (``runs_view``).
        Answers through ``gridRead``; returns the request's id (0 once closed)."""
        return self._request(GRID, ())

    def request_run(self, run: int, title: str = "") -> int:
        """Read one stored run's attempts as a ``past_run.PastRun`` (to open it
        read-only). Answers through ``runRead``; returns the request's id (0 once closed)."""
        return self._request(RUN, (run, title))

    def _request(self, kind: str, args: tuple) -> int:
        if self._closed:
            return 0
        rid = next(self._ids)
        if kind in self._pending:
            self.dropped += 1
        self._pending[kind] = (rid, args)
        if self._future is None:
            self._start_next()
        return rid

    def _start_next(self) -> None:
        if not self._pending or self._closed:
            return
        # Take turns when both kinds wait: a busy timeline does not starve the inspector.
        kinds = sorted(self._pending, key=lambda k: k == self._last_kind)
        kind = kinds[0]
        rid, args = self._pending.pop(kind)
        self._last_kind = kind
        try:
            self._future = self._executor.submit(self._run, rid, kind, args)
        except RuntimeError:  # shut down from another thread (join) meanwhile
            self._closed = True
            self._pending.clear()

    # -- the worker thread -------------------------------------------------------------
    def _run(self, rid: int, kind: str, args: tuple) -> None:
        key = args[0] if kind == ATTEMPTS else None
        answer: object
        try:
            if kind == ATTEMPTS:
                answer = stored_attempts(self.store, *args)
            elif kind == GRID:
                from .runs_view import read_grid

                answer = read_grid(self.store)
            elif kind == RUN:
                from .past_run import read_run

                answer = read_run(self.store, *args)
            else:
                answer = read_window(self.store, *args)
        except READ_ERRORS as exc:  # the store is busy, damaged or closed
            log.info("run history unavailable: %s", exc)
            answer = None
        except Exception:  # a bug: say so, but never leave the views waiting
            log.exception("reading the run history failed")
            answer = None
        with self._emit_lock:
            if self._closed:
                return
            try:
                self._finished.emit(rid, kind, (key, answer))
            except RuntimeError:  # the QObject went with its window
                pass

    # -- answers (GUI thread) ----------------------------------------------------------
    def _on_finished(self, rid: int, kind: str, payload) -> None:
        self._future = None
        if self._closed:
            return
        self.reads += 1
        self._start_next()
        key, answer = payload
        if kind == ATTEMPTS:
            self.attemptsRead.emit(rid, key, answer)
        elif kind == GRID:
            self.gridRead.emit(rid, answer)
        elif kind == RUN:
            self.runRead.emit(rid, answer)
        else:
            self.windowRead.emit(rid, answer)

    # -- stopping ----------------------------------------------------------------------
    def close(self) -> None:
        """No new reads and no more answers; a read still running ends on its own.
        Does not block. Idempotent."""
        with self._emit_lock:
            self._closed = True
        self._pending.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def join(self, timeout: float | None = None) -> bool:
        """Close, then wait for a running read and the thread to end (any thread: the
        session's stopper calls it before closing the store). False on timeout."""
        with self._emit_lock:
            self._closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)
        future = self._future
        if future is not None:
            done, _ = wait_for([future], timeout)
            if not done:
                return False
        self._executor.shutdown(wait=True)  # the thread exits once its queue is empty
        return True
