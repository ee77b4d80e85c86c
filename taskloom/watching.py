"""A window on a workflow whose run another live process owns.

``Sessions.open`` ends up here when opening the workflow's store as its owner is
refused with ``StoreBusy``: instead of a second, competing run, the window
watches the owner's (``engine.watched_run.WatchedRun``), steers it through the
store's control channel, and offers to take the run over once the owner stops.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

READER_JOIN_TIMEOUT = 10.0


class WatchSession:
    """One watched workflow: a ``WatchedRun`` and the window that shows it."""

    watching = True

    def __init__(self, workflow, settings=None, *, db_path):
        from taskloom.engine.watched_run import WatchedRun
        from taskloom.gui.main_window import MainWindow
        from taskloom.gui.watch_status import WatchStatus

        from .closing import _CloseWatcher

        self.workflow = workflow
        self.db_path = Path(db_path)
        self.store = None
        # The window never waits for the store: attempts come from the watcher's thread.
        self.scheduler = WatchedRun(self.db_path, name=workflow.name, answer_from_memory=True)
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
