"""A window on a workflow whose run another live process owns.

``Sessions.open`` ends up here when opening the workflow's store as its owner is
refused with ``StoreBusy``: instead of a second, competing run, the window
watches the owner's (``engine.watched_run.WatchedRun``), steers it through the
store's control channel, and offers to take the run over once the owner stops.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from taskloom.engine.watched_run import WatchedRun

log = logging.getLogger(__name__)
T = TypeVar("T")

READER_JOIN_TIMEOUT = 10.0
SHOW_AFTER_MS = 300  # work off the GUI thread still going this long shows a window


class OpenAbandoned(RuntimeError):
    """The window of a run being opened was closed (or the app quit): nothing opens."""


_abandon: list[Callable[[], None]] = []  # the open under way (GUI thread): abandons it


def abandon_opening() -> None:
    """Abandon an ``off_gui_thread`` open under way, if any (closing all, quitting)."""
    for abandon in list(_abandon):
        abandon()


class GuiThread:
    """What a worker of ``off_gui_thread`` has of the GUI thread."""

    def __init__(self, post: Callable[..., None], abandoned: Callable[[], bool]) -> None:
        self.post = post  # post(function, *args): function(*args) on the GUI thread
        self.abandoned = abandoned  # whether the open was abandoned (nobody will answer)


def off_gui_thread(work: Callable[[GuiThread], T], name: str, settings, stage: str, undo=None) -> T:
    """``work(gui)`` on a worker thread (``taskloom-attach``) while the GUI thread turns a
    nested event loop, so that the store work of opening a run never blocks it; its
    result, or its error raised again here. After ``SHOW_AFTER_MS`` a window named
    ``name`` says ``stage``; closing it (or quitting) abandons the open: this raises
    ``OpenAbandoned``, and ``undo(result)`` is called on a result that comes later.
    ``gui.post(function, *args)``, from the worker, calls ``function(*args)`` on the GUI
    thread (a question to ask there), unless ``gui.abandoned()``."""
    from PySide6.QtCore import QEventLoop, QTimer

    from taskloom.gui import relay
    from taskloom.gui.loading import LoadingWindow

    outcome: dict = {}
    lock = threading.Lock()
    loop = QEventLoop()
    window = LoadingWindow(name, settings)
    window.set_stage(stage)

    def post(function, *args) -> None:
        relay.post(window, "call", function, args)

    def abandoned() -> bool:
        with lock:
            return "abandoned" in outcome

    gui = GuiThread(post, abandoned)

    def run() -> None:
        try:
            result = work(gui)
        except BaseException as exc:  # raised again on the GUI thread
            with lock:
                if "abandoned" not in outcome:
                    outcome["error"] = exc
        else:
            with lock:
                kept = "abandoned" not in outcome
                if kept:
                    outcome["result"] = result
            if not kept and undo is not None:
                undo(result)
        relay.post(window, "call", loop.quit)

    def closed() -> None:
        with lock:
            outcome.setdefault("abandoned", True)
        loop.quit()

    window.closed.connect(closed)
    shower = QTimer(window)
    shower.setSingleShot(True)
    shower.timeout.connect(window.show)
    shower.start(SHOW_AFTER_MS)
    threading.Thread(target=run, name="taskloom-attach", daemon=True).start()
    _abandon.append(closed)
    try:
        loop.exec()  # until done, failed, or abandoned (app.quit ends nested loops too)
    finally:
        _abandon.remove(closed)
    with lock:
        outcome.setdefault("abandoned", True)  # a result from now on is undone
    shower.stop()
    window.closed.disconnect(closed)
    window.close()
    window.deleteLater()
    if "result" in outcome:
        return outcome["result"]
    if "error" in outcome:
        raise outcome["error"]
    raise OpenAbandoned(f"{name}: closed before its run was open")


def attach_off_gui_thread(
    db_path: Path, name: str, settings=None, workflow=None
) -> tuple[WatchedRun, float | None]:
    """A window's ``WatchedRun`` of the store at ``db_path``, attached off the GUI
    thread (``off_gui_thread``): its first reads of the feed (up to ``ATTACH_TIMEOUT``
    while the owner cannot write it, e.g. another connection holds the store's write
    lock) never block the window. Its errors (``OwnerGone``, ``StoreBusy``) are raised
    here. With the run comes when ``workflow``'s ``[workflow] timeout`` passes (None:
    no timeout, or not started yet), read there too."""
    from taskloom.engine.watched_run import WatchedRun

    from .runs import run_deadline

    def attach(gui: GuiThread) -> tuple[WatchedRun, float | None]:
        run = WatchedRun(db_path, name=name, answer_from_memory=True)
        reader = run.store
        try:
            known = workflow is not None and reader is not None
            deadline = run_deadline(workflow, reader) if known else None
        except Exception:
            run.close()
            raise
        return run, deadline

    stage = "Another process runs it: waiting for its run to be published…"
    return off_gui_thread(attach, name, settings, stage, undo=lambda got: got[0].close())


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
        self.scheduler, deadline = attach_off_gui_thread(
            self.db_path, workflow.name, settings, workflow
        )
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
        self.window.set_deadline(deadline)
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
