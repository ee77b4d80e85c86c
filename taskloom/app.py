"""The window's entry point: ``taskloom FILE`` (and a bare ``taskloom``) ends up in
``run_window``: the display check, the Qt application and its theme, the stop signals,
screenshots, then the start page (launcher.py) or the workflow's session (sessions.py).

Import order, no cycle: app -> launcher -> sessions -> watching, closing.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, cast

from taskloom import example_path
from taskloom.desktop import DESKTOP_ID  # the .desktop entry's and AppStream's id
from taskloom.engine.store import StoreBusy

from .closing import CLOSE_BACKGROUND, CLOSE_CANCEL, CLOSE_STOP, ask_keep_schedule
from .sessions import (
    OPEN_ERRORS,
    Sessions,
    WorkflowSession,
    _show_busy,
    resume_without_asking,
    store_paths,
)
from .watching import OpenAbandoned

# The sessions and the close question live in sessions.py and closing.py; their names
# are kept here, where callers have imported them from.
__all__ = [
    "CLOSE_BACKGROUND",
    "CLOSE_CANCEL",
    "CLOSE_STOP",
    "Sessions",
    "WorkflowSession",
    "ask_keep_schedule",
    "resume_without_asking",
    "run_window",
    "store_paths",
]

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

log = logging.getLogger(__name__)

EXIT_BUSY = 75  # as ``taskloom run`` (EX_TEMPFAIL): another live process owns the workflow's run

DEFAULT_WORKFLOW = example_path("etl")


NO_DISPLAY = (
    "taskloom: no display to open the window on ({why}); "
    "use 'taskloom run FILE' to run a workflow without one"
)


def _ensure_platform(screenshot: str | None) -> str:
    """ "" if Qt can show a window here, else the one line that says what to do instead.

    Without a display Qt's xcb plugin aborts the process (SIGABRT) with a message about
    plugins; we look first. A screenshot needs no screen: it falls back to the
    offscreen platform on a headless box. QT_QPA_PLATFORM set by the person wins."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return ""
    from taskloom.display import unreachable, x11_only, x11_plugin_problem

    why = unreachable()
    if why is None:
        problem = x11_plugin_problem() if x11_only() else None
        return "" if problem is None else f"taskloom: {problem}; or use 'taskloom run FILE'"
    if screenshot:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        return ""
    return NO_DISPLAY.format(why=why)


class _StopSignals:
    """SIGTERM, SIGHUP, SIGQUIT and Ctrl-C close the window as the user would: running
    commands are terminated with their process groups and the run stays resumable.

    Installed before the engine starts, so no signal finds the default handler (which
    would kill us and orphan the commands); one that comes before the event loop runs
    is remembered. Python runs handlers only between bytecodes, and Qt's loop waits in
    C: the signal's byte on a wakeup socket (``signal.set_wakeup_fd``) wakes the loop
    only when a signal comes, where a timer woke the window five times a second."""

    NAMES = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")

    def __init__(self, app):
        self.app = app
        self.requested = False
        self._previous: dict = {}
        self._wakeup = None  # (our socket end, the notifier, the wakeup fd it replaced)

    def install(self) -> None:
        import signal
        import socket

        from PySide6.QtCore import QSocketNotifier

        for name in self.NAMES:
            number = getattr(signal, name, None)
            if number is not None:
                self._previous[number] = signal.signal(number, self._stop)
        ours, theirs = socket.socketpair()
        for end in (ours, theirs):
            end.setblocking(False)
        try:
            previous = signal.set_wakeup_fd(theirs.fileno(), warn_on_full_buffer=False)
        except ValueError:  # not the main thread: handlers run when the thread next runs
            ours.close()
            theirs.close()
            return
        notifier = QSocketNotifier(ours.fileno(), QSocketNotifier.Type.Read, self.app)
        notifier.setObjectName("signal_waker")
        notifier.activated.connect(lambda *_: self._drain(ours))  # Python runs the handler
        self._wakeup = (ours, theirs, notifier, previous)

    @staticmethod
    def _drain(sock) -> None:
        try:
            while sock.recv(512):
                pass
        except OSError:  # nothing more to read
            pass

    def _stop(self, signum, frame) -> None:
        # Python runs this between two bytecodes of whatever the GUI thread was doing,
        # maybe inside the engine's lock (a bridge read in a timer's slot): quitting
        # here closes the windows, whose close takes that lock again (a deadlock).
        # Quit from the event loop instead (a posted call also runs when the loop has
        # not started yet); before it runs, ``requested`` says it.
        from PySide6.QtCore import QTimer

        self.requested = True
        QTimer.singleShot(0, self._quit)

    def _quit(self) -> None:
        _close_without_asking(self.app)
        # Posted, not called: a signal handled just before app.exec() starts its loop
        # would otherwise quit nothing (quit() outside a loop is a no-op) and the
        # window would run on. The loop runs posted calls as soon as it starts.
        from PySide6.QtCore import QTimer

        QTimer.singleShot(0, self.app.quit)

    def restore(self) -> None:
        """Put back the handlers we replaced (the window may run inside a test)."""
        import signal

        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()
        if self._wakeup is not None:
            ours, theirs, notifier, previous = self._wakeup
            self._wakeup = None
            signal.set_wakeup_fd(previous)
            notifier.setEnabled(False)
            notifier.deleteLater()
            ours.close()
            theirs.close()


def _close_without_asking(app) -> None:
    """Quitting closes every window (Qt 6): a signal or a screenshot asks no one."""
    for widget in app.topLevelWidgets():
        question = getattr(widget, "close_question", None)
        if question is not None:
            question.enabled = False


GRAPH_WAIT_S = 30.0  # longest a screenshot waits for the graph to be drawn


def _graph_drawn(sessions, then) -> bool:
    """Whether the window's graph is drawn; if not, call ``then`` again shortly (a big
    graph is laid out off the GUI thread: a picture taken before shows an empty pane)."""
    import time

    from PySide6.QtCore import QTimer

    opening = getattr(sessions, "loading", None) is not None  # a big file, off the GUI thread
    if sessions.current is None and not opening:  # the start page: no graph to wait for
        return True
    waited = getattr(then, "waited_since", None)
    if waited is None:
        waited = then.waited_since = time.monotonic()
    drawn = sessions.current is not None and sessions.current.window.scene.is_drawn()
    if (drawn and not opening) or time.monotonic() - waited > GRAPH_WAIT_S:
        return True
    QTimer.singleShot(50, then)
    return False


def run_window(
    path: str | Path | None,
    screenshot: str | None = None,
    quit_after: float | None = None,
    db: str | Path | None = None,
    fresh: bool = False,
    theme: str | None = None,
    select: str | None = None,
    start: bool = False,
    settings=None,
) -> int:
    """Show the window for the workflow at ``path``; without one, the start page.

    The run lives in ``db`` (default: the workflow file's store in
    ``<user data dir>/taskloom/runs``):
    an unfinished run is resumed unless ``fresh``. It waits for the window's Start
    unless ``start`` (``--start``). With ``screenshot``, save a
    picture of the window after ``quit_after`` seconds (default 3) and exit 0; a
    screenshot of a workflow starts it, always as a fresh run, in a throwaway store
    unless ``db`` is given, so it shows work happening and leaves the user's history
    alone. ``theme`` ("light", "dark" or "system"; default: $TASKLOOM_THEME, else
    system) is applied before the window is built. ``select`` pre-selects a task
    (for pictures that show the inspector with its attempts). ``settings`` (a
    QSettings) replaces the person's own (tests).
    Returns the process exit code; 2 at once when there is no display to show it on.
    """
    problem = _ensure_platform(screenshot)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from taskloom.gui.app_settings import APP_NAME, DISPLAY_NAME, user_settings

    app = cast(QApplication, QApplication.instance() or QApplication(sys.argv[:1]))
    from taskloom.gui.collector import COLLECTOR

    COLLECTOR.install(app)  # collections on the GUI thread only (a worker's freed Qt objects)
    app.setApplicationName(APP_NAME)
    app.setOrganizationName(APP_NAME)
    app.setApplicationDisplayName(DISPLAY_NAME)
    app.setDesktopFileName(DESKTOP_ID)  # the launcher entry `taskloom install-desktop` writes
    from taskloom.gui.style import apply_theme

    try:
        apply_theme(app, theme or os.environ.get("TASKLOOM_THEME"))
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    data_dir = None
    scratch = None
    if screenshot:  # a reproducible picture: default geometry, not the user's saved one
        scratch = tempfile.TemporaryDirectory(prefix="taskloom-")
        settings = QSettings(str(Path(scratch.name) / "screenshot.ini"), QSettings.Format.IniFormat)
        data_dir = Path(scratch.name)
        fresh = True
        start = path is not None  # a picture of a workflow at work
    if settings is None:
        settings = user_settings()
    stop_signals = _StopSignals(app)
    stop_signals.install()
    try:
        return _open_and_run(
            app,
            stop_signals,
            path,
            screenshot,
            quit_after,
            settings,
            db,
            fresh,
            data_dir,
            select,
            start,
        )
    finally:
        stop_signals.restore()
        if scratch is not None:  # the throwaway store, its logs and settings
            settings.sync()  # written now, not when Qt destroys it (into a removed folder)
            scratch.cleanup()


def _open_and_run(
    app, stop_signals, path, screenshot, quit_after, settings, db, fresh, data_dir, select, start
) -> int:
    from PySide6.QtCore import QTimer

    from taskloom.engine.workflow import WorkflowError

    from .launcher import Launcher

    launcher = Launcher(settings, db=db, fresh=fresh, data_dir=data_dir)
    sessions = launcher.sessions
    if app.platformName() == "offscreen":
        # Nobody to ask (a headless box, a CI job): resume, as ``taskloom run`` does.
        sessions.choose_run = resume_without_asking
    try:
        if path is None:
            launcher.show_start_page()
        else:
            sessions.open(path)
    except WorkflowError as exc:
        print(exc, file=sys.stderr)  # and the window lists them (open_broken)
        if sessions.current is None or screenshot:
            launcher.close()
            return 2
    except OpenAbandoned:  # the person closed the loading window: nothing to say
        return 0
    except StoreBusy as exc:
        print(f"taskloom: {exc}; not opening a second run of it", file=sys.stderr)
        if not screenshot and app.platformName() != "offscreen":
            _show_busy(None, exc, Path(path).name, modal=True)
        return EXIT_BUSY
    except OPEN_ERRORS as exc:
        print(f"{path}: {exc}", file=sys.stderr)
        return 2
    code = {"value": 0}

    def opened(current) -> None:  # --start and --select, once the workflow's window shows
        if start and hasattr(current, "start") and not current.start():
            print(f"{path}: {current.window.statusBar().currentMessage()}", file=sys.stderr)
        if select:
            window = current.window
            if select not in window.bridge.tasks:
                print(f"--select: no task {select!r} in the workflow", file=sys.stderr)
            else:
                window.select_tasks([select])

    if sessions.loading is not None:  # a big file opens off the GUI thread
        sessions.when_shown.append(opened)
    elif sessions.current is not None:
        opened(sessions.current)

    def finish() -> None:
        if screenshot and not _graph_drawn(sessions, finish):
            return  # asked again once the graph is drawn
        if screenshot:
            shown: QWidget | None = (
                launcher.page if sessions.current is None else sessions.current.window
            )
            if sessions.current is None and sessions.loading is not None:
                shown = sessions.loading.window  # still opening after GRAPH_WAIT_S
            if shown is None or not shown.grab().save(str(screenshot)):
                print(f"cannot write screenshot {screenshot}", file=sys.stderr)
                code["value"] = 1
        _close_without_asking(app)
        app.exit(code["value"])

    if screenshot or quit_after is not None:
        QTimer.singleShot(int(1000 * (3.0 if quit_after is None else quit_after)), finish)
    try:
        result = 0 if stop_signals.requested else app.exec()
    finally:
        launcher.close()
    return code["value"] if screenshot else result
