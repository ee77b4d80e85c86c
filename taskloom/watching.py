"""A window on a workflow whose run another live process owns.

``Sessions.open`` ends up here when opening the workflow's store as its owner is
refused with ``StoreBusy``: instead of a second, competing run, the window
watches the owner's (``engine.watched_run.WatchedRun``), steers it through the
store's control channel, and offers to take the run over once the owner stops.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from taskloom.engine.watched_run import WatchedRun

log = logging.getLogger(__name__)

READER_JOIN_TIMEOUT = 10.0
SHOW_AFTER_MS = 300  # an attach still waiting this long shows a window saying so


class AttachAbandoned(RuntimeError):
    """The window of a run being attached was closed (or the app quit): nothing opens."""


def attach_off_gui_thread(db_path: Path, name: str, settings=None) -> WatchedRun:
    """A window's ``WatchedRun`` of the store at ``db_path``, attached on a worker
    thread: its first reads of the feed (up to ``ATTACH_TIMEOUT`` while the owner cannot
    write it, e.g. another connection holds the store's write lock) never happen on the
    GUI thread, which turns a nested event loop meanwhile. After ``SHOW_AFTER_MS`` a
    window says what is awaited; closing it (or quitting) abandons the open: this
    raises ``AttachAbandoned`` and the run attached meanwhile is closed. Errors of the
    attach (``OwnerGone``, ``StoreBusy``, ...) are raised here, on the GUI thread."""
    from PySide6.QtCore import QEventLoop, QTimer

    from taskloom.engine.watched_run import WatchedRun
    from taskloom.gui.loading import LoadingWindow

    outcome: dict = {}
    lock = threading.Lock()
    loop = QEventLoop()
    window = LoadingWindow(name, settings)
    window.set_stage("Another process runs it: waiting for its run to be published…")

    def attach() -> None:
        try:
            run = WatchedRun(db_path, name=name, answer_from_memory=True)
        except BaseException as exc:  # raised again on the GUI thread
            with lock:
                if "abandoned" not in outcome:
                    outcome["error"] = exc
        else:
            with lock:
                kept = "abandoned" not in outcome
                if kept:
                    outcome["run"] = run
            if not kept:
                run.close()
        relay.post(window, "call", loop.quit)

    def closed() -> None:
        with lock:
            outcome.setdefault("abandoned", True)
        loop.quit()

    from taskloom.gui import relay

    window.closed.connect(closed)
    shower = QTimer(window)
    shower.setSingleShot(True)
    shower.timeout.connect(window.show)
    shower.start(SHOW_AFTER_MS)
    worker = threading.Thread(target=attach, name="taskloom-attach", daemon=True)
    worker.start()
    loop.exec()  # until attached, failed, or abandoned (app.quit ends nested loops too)
    with lock:
        outcome.setdefault("abandoned", True)  # a run attached from now on is closed
    shower.stop()
    window.closed.disconnect(closed)
    window.close()
    window.deleteLater()
    if "run" in outcome:
        return outcome["run"]
    if "error" in outcome:
        raise outcome["error"]
    raise AttachAbandoned(f"{db_path}: closed before its run was watched")


class WatchSession:
    """One watched workflow: a ``WatchedRun`` and the window that shows it."""

    watching = True

    def __init__(self, workflow, settings=None, *, db_path):
        from taskloom.gui.main_window import MainWindow
        from taskloom.gui.watch_status import WatchStatus

        from .closing import _CloseWatcher

        self.workflow = workflow
        self.db_path = Path(db_path)
        self.store = None
        # The window never waits for the store: attached on a worker, then attempts come
        # from the watcher's thread.
        self.scheduler = attach_off_gui_thread(self.db_path, workflow.name, settings)
        self.scheduler.definitions = dict(workflow.tasks)  # Save writes the file's tasks back
        self._stopped = False
        try:
            self.window = MainWindow(
                self.scheduler, settings=settings, title=workflow.name, workflow=workflow
            )
        except BaseException:
            self.scheduler.close()
            raise
        self.window.owns_run = False  # its schedules are the owner's: no tray icon here
        self.status = WatchStatus(self.window, self.scheduler, workflow.name)
        self.window.installEventFilter(_CloseWatcher(self))

    @property
    def owner(self):
        return self.scheduler.owner

    @property
    def stopped(self) -> bool:
        return self._stopped

    def stop(self) -> None:
        """Stop watching (the owner's run goes on). Idempotent; does not block long:
        it waits for one feed read and for a history read still running."""
        if self._stopped:
            return
        self._stopped = True
        self.status.close_status()
        self.window.stop_history()
        reader = self.window.history_reader
        if reader is not None and not reader.join(READER_JOIN_TIMEOUT):
            log.warning("a run-history read is still running; closing the store anyway")
        self.window.shutdown_views()
        self.scheduler.close()

    def join(self, timeout: float | None = None) -> bool:
        return self._stopped

    def close(self, wait: bool = True) -> None:
        self.window.close()
        self.stop()
        self.window.deleteLater()
