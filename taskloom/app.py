"""Opening the window for a workflow file: ``taskloom FILE`` ends up here.

Each workflow runs on its run store (SQLite, in the user's data directory and
keyed by the workflow file's path, or ``--db``): opening it resumes an unfinished run
(finished tasks stay finished) or starts a new one, and earlier runs' attempts
stay there for the inspector and the timeline. Command output goes to a log
folder beside the store.

Closing the window, quitting, or opening another workflow stops the engine with
``shutdown(cancel_running=True)``: running commands are terminated, their tasks
are left READY in the store (the next open runs them again), and the store is
closed once the engine has written its last state. A person closing a window
whose run has recurring tasks is first asked whether to hand the schedule to a
headless ``taskloom run`` instead: then the engine stops with
``shutdown(hand_over=True)``, running commands go on under their supervisor, and
the headless owner adopts them. A window killed without warning leaves its
commands running too; the next window or ``taskloom run`` on the store adopts them.

A workflow whose store another live process owns is not run a second time: the
window watches that run (``watching.py``) and can take it over once it stops.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import cast

from PySide6.QtCore import QEvent, QObject

from taskloom import example_path
from taskloom.desktop import DESKTOP_ID  # the .desktop entry's and AppStream's id
from taskloom.engine.store import StoreBusy
from taskloom.gui.run_choice import ask_resume_or_new

log = logging.getLogger(__name__)

EXIT_BUSY = 75  # as ``taskloom run`` (EX_TEMPFAIL): another live process owns the workflow's run

DEFAULT_WORKFLOW = example_path("etl")
READER_JOIN_TIMEOUT = 10.0  # seconds the store waits for a history read still running
# Errors opening a run: a store that cannot be used, or a task the engine refuses.
OPEN_ERRORS = (RuntimeError, ValueError, KeyError, TypeError, OSError)
# Errors of Scheduler.start(): a task depending on an unknown one, no threads to be had.
START_ERRORS = (RuntimeError, KeyError, ValueError)


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


def store_paths(workflow, db: Path | None = None, data_dir: Path | None = None):
    """(store file, log folder) for a workflow: ``db`` if given, else its default store
    (keyed by the file's path) in ``data_dir`` (default: the user's data directory);
    logs in ``logs/<store name>`` beside it."""
    from taskloom.runs import default_db_path

    if db is None:
        default = default_db_path(workflow)
        db = default if data_dir is None else Path(data_dir) / default.name
    from taskloom.places import log_dir_for

    db = Path(db).expanduser()
    return db, log_dir_for(db)


class _CloseWatcher(QObject):
    """Stops the session's engine when its window closes (the title bar's X, Quit).

    A person closing a window whose run has recurring tasks is asked whether the
    schedule should go on in the background (a headless ``taskloom run`` takes the
    run over) or stop; "cancel" keeps the window open."""

    def __init__(self, session):
        super().__init__(session.window)
        self.session = session

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Close:
            question = self.session.window.close_question
            hands_off = getattr(self.session, "asks_on_close", lambda: False)()
            # Running tasks are asked about once: by the hand-off question when there is
            # one, and never for a watcher (closing it stops nothing).
            question.counts_running = not hands_off and not getattr(self.session, "watching", False)
            if not question.may_close():
                event.ignore()  # the person chose to keep it open
                return True
            if hands_off:
                choice = self.session.ask_on_close()
                if choice == CLOSE_CANCEL:
                    event.ignore()
                    return True
                self.session.hand_off = choice == CLOSE_BACKGROUND
            self.session.stop()
        return False


CLOSE_BACKGROUND, CLOSE_STOP, CLOSE_CANCEL = "background", "stop", "cancel"


def ask_keep_schedule(window, name: str) -> str:
    """Ask whether closing the window should leave the schedule running."""
    from PySide6.QtWidgets import QMessageBox

    box = QMessageBox(window)
    box.setObjectName("keep_schedule")
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Taskloom: keep the schedule running?")
    box.setText(f"{name} has recurring tasks. Keep running them after this window closes?")
    box.setInformativeText(
        "In the background, a headless 'taskloom run' takes the run over: commands "
        "running now go on and it records their ends. Open the workflow again to "
        "watch it."
    )
    keep = box.addButton("Keep running in the background", QMessageBox.ButtonRole.AcceptRole)
    stop = box.addButton("Stop the schedule", QMessageBox.ButtonRole.DestructiveRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(keep)
    box.exec()
    clicked = box.clickedButton()
    return CLOSE_BACKGROUND if clicked is keep else CLOSE_STOP if clicked is stop else CLOSE_CANCEL


class WorkflowSession:
    """One loaded workflow: its run (engine and store) and its window.

    Without ``db_path`` the engine has no store (nothing is kept after closing).
    """

    def __init__(
        self,
        workflow,
        settings=None,
        *,
        db_path=None,
        fresh=False,
        log_dir=None,
        decide=None,
        start=True,
    ):
        from taskloom.gui.main_window import MainWindow

        self.workflow = workflow
        self.db_path = None if db_path is None else Path(db_path)
        self.log_dir = None if log_dir is None else Path(log_dir)
        if log_dir is not None:
            from taskloom.engine.store import private_folder

            private_folder(log_dir, "log folder")  # 0700, ours (UnsafeFile, an OSError)
        self.feed = None  # publishes the run for windows that watch it
        self.pruner = None  # keeps a long run's store bounded (runs.AttemptPruner)
        self.hooks = None  # the workflow's hooks and notify sinks (taskloom/hooks.py)
        self.deadline = None  # its [workflow] timeout, once started (engine/deadline.py)
        self.hand_off = False  # on stop, a headless ``taskloom run`` takes the run over
        self.quiet = False  # stopping without asking (Quit from a signal, a replaced window)
        self.background_owner = None  # the Popen of that headless owner
        from taskloom.gui.bridge import EarlyEvents

        # The run's first events (its tasks being added) come before the window
        # exists: recorded from the start, so that its event log has them.
        self._early = EarlyEvents()
        # decide(differences): resume a stored run that differs from the file? (runs.open_run)
        self.scheduler, self.store = self._open_run(fresh, log_dir, decide)
        self._stopper: threading.Thread | None = None
        self._reader = None  # the window's history reader: joined before the store closes
        try:
            # The window subscribes before the engine starts, so its log has every run.
            self.window = MainWindow(
                self.scheduler,
                settings=settings,
                title=workflow.name,
                workflow=workflow,
                early_events=self._early,
                started=False,
            )
            self._reader = self.window.history_reader
            # Commands an earlier owner left running are running: the run goes on at
            # once, so their ends are recorded (nothing else waits for Start then).
            start = start or bool(self.scheduler.adopted_tasks())
            if start:  # refusals go to the caller, who opens nothing
                self.scheduler.start()
                self._arm_deadline()
                self.window.set_started(True)
            else:
                self.window.set_started(False, resumed=self.resumed)
        except BaseException:
            self._shut_down()
            raise
        # Without ``start`` the run (a resumed one too) waits for the window's Start.
        self.window.startRequested.connect(self.start)
        self.window.installEventFilter(_CloseWatcher(self))
        if type(self.executor).__name__ == "DaskExecutor":  # a cluster: show its workers
            self.window.timeline.set_by_worker(True)
        message = self.executor_problem or self.note
        if message:
            self.window.statusBar().showMessage(message, 15000 if self.executor_problem else 8000)

    def _open_run(self, fresh: bool, log_dir, decide=None):
        from taskloom.engine.pools import make_executor
        from taskloom.hooks import attach_hooks
        from taskloom.runs import take_secrets

        problem = take_secrets(self.workflow)  # secret_env: masked in output, never stored
        if problem is not None:
            raise ValueError(problem)
        log_dir = None if log_dir is None else str(log_dir)
        workers = self.workflow.workers
        # The workflow's executor: threads, a process pool or a Dask cluster. One that
        # cannot be had (a cluster that does not answer) must not keep the window shut.
        self.executor_problem = ""
        try:
            self.executor = make_executor(self.workflow.executor, workers)
        except (ValueError, OSError) as exc:
            self.executor = None
            self.executor_problem = f"⚠ {exc}: running tasks on threads instead"
        from taskloom.imports import use_workflow_folder

        use_workflow_folder(self.workflow, self.executor)  # calls import from beside the file
        # The early recorder listens from the constructor on: a resumed run's restore too.
        options = dict(workers=workers, log_dir=log_dir, executor=self.executor)
        options["listeners"] = [self._early.listener]
        if self.db_path is None:
            options["pools"] = self.workflow.pools
            from taskloom.engine import Scheduler

            scheduler = Scheduler(**options)
            self._early.adopt(scheduler)
            self.workflow.schedule_into(scheduler)
            self.resumed, self.note = False, ""
            self.hooks = attach_hooks(scheduler, self.workflow, log_dir=log_dir)
            return scheduler, None
        from taskloom.engine.feed import FeedWriter
        from taskloom.places import retention
        from taskloom.runs import AttemptPruner, open_run

        keep = retention()  # as taskloom run: the last runs, their logs, each task's attempts
        opened = open_run(
            self.workflow,
            self.db_path,
            fresh=fresh,
            decide=decide,
            before_tasks=self._early.adopt,
            retention=keep,
            **options,
        )
        self.resumed, self.note = opened.resumed, opened.note
        self.feed = FeedWriter(opened.scheduler, opened.store).start()  # for watchers
        self.pruner = AttemptPruner(opened.store, keep.attempts, log_dir).start()
        self.hooks = attach_hooks(
            opened.scheduler, self.workflow, opened.store, log_dir=log_dir, env=opened.env
        )
        return opened.scheduler, opened.store

    def start(self) -> bool:
        """Start the run's schedule (the window's Start, or ``--start``); True once it
        runs. Idempotent; nothing starts once the session is stopping. A refusal (a task
        depending on an unknown one, no threads to be had) is shown in the status bar."""
        if self._stopper is not None:
            return False
        if not self._take_params():
            return False
        try:
            self.scheduler.start()
        except START_ERRORS as exc:
            self.window.statusBar().showMessage(f"⚠ Cannot start: {exc}", 15000)
            return False
        self._arm_deadline()
        self.window.set_started(True)
        return True

    def _arm_deadline(self) -> None:
        """The workflow's ``[workflow] timeout``, counted from the run's first start."""
        from taskloom.runs import start_deadline

        if getattr(self, "deadline", None) is None:
            self.deadline = start_deadline(self.workflow, self.scheduler, self.store, self.hooks)

    def _take_params(self) -> bool:
        """The Start bar's params for a new run: recorded with it and given to its
        commands and hooks. False (said in the status bar) when they do not parse."""
        if self.resumed or self.window.started:  # a resumed run keeps its own
            return True
        bar = self.window.start_bar
        from taskloom.params import parse_line
        from taskloom.runs import record_params

        try:
            params = parse_line(bar.params.text())
        except ValueError as exc:
            self.window.statusBar().showMessage(f"⚠ Params: {exc}", 15000)
            return False
        env = record_params(self.scheduler, self.store, params)
        if self.hooks is not None:
            self.hooks.env = env
        return True

    @property
    def started(self) -> bool:
        return self.window.started

    @property
    def stopped(self) -> bool:
        return self._stopper is not None and not self._stopper.is_alive()

    def asks_on_close(self) -> bool:
        """Whether closing the window asks about the schedule: a person closes a
        window whose stored run has recurring tasks (a headless owner can take it)."""
        if self.quiet or self._stopper is not None or self.db_path is None:
            return False
        if not self.started:  # never started here: handing it off would start it
            return False
        if self.workflow.path is None:
            return False
        return any(info.recurring for info in self.scheduler.tasks())

    def ask_on_close(self) -> str:
        """CLOSE_BACKGROUND, CLOSE_STOP or CLOSE_CANCEL; nobody is asked offscreen."""
        from PySide6.QtGui import QGuiApplication

        if QGuiApplication.platformName() == "offscreen":
            return CLOSE_STOP
        return ask_keep_schedule(self.window, self.workflow.name)

    def _start_background_owner(self) -> None:
        """A headless ``taskloom run`` on the same store, in its own session, so that
        it outlives this process. It must not carry our owner mark: the reaper ends
        every process with it once we exit (see reaper.py)."""
        import subprocess

        env = dict(os.environ)
        env.pop("TASKLOOM_OWNER", None)
        if self.db_path is None:
            raise RuntimeError("a run without a store cannot be handed to another process")
        log_dir = self.log_dir or self.db_path.parent
        log_dir.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "taskloom", "run", str(self.workflow.path)]
        argv += ["--db", str(self.db_path), "--log-dir", str(log_dir)]
        with open(log_dir / "background.log", "ab") as out:
            self.background_owner = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        log.info("handed %s to a background owner, pid %d", self.db_path, self.background_owner.pid)

    def stop(self) -> None:
        """Stop the engine without blocking the GUI: running programs are terminated
        (their tasks stay READY), or, when the run is handed to a background owner,
        left running for it to adopt; then the store is closed. Idempotent."""
        if self._stopper is not None:
            return
        self.window.stop_history()  # no new store reads; one running is joined below
        # At once: nothing new starts and running programs get their SIGTERM (or are
        # handed over); the thread then waits for that and for the store's last writes.
        self.scheduler.shutdown(wait=False, **self._stop_mode())
        self._stopper = threading.Thread(
            target=self._shut_down, name="taskloom-session-stop", daemon=True
        )
        self._stopper.start()

    def _stop_mode(self) -> dict:
        return {"hand_over": True} if self.hand_off else {"cancel_running": True}

    def _shut_down(self) -> None:
        deadline = getattr(self, "deadline", None)  # None: not started, or none to keep
        if deadline is not None:
            deadline.stop()
        try:
            self.scheduler.shutdown(wait=True, **self._stop_mode())
        finally:
            if self.executor is not None:
                self.executor.shutdown(wait=True, cancel_futures=True)
            if self.hooks is not None:
                window = getattr(self, "window", None)  # None: it failed to open
                # Not for a run that never started, nor one a headless owner takes over.
                if window is not None and window.started and not self.hand_off:
                    self.hooks.finish("stopped")  # a no-op once the run has finished
            if self._reader is not None and not self._reader.join(READER_JOIN_TIMEOUT):
                log.warning("a run-history read is still running; closing the store anyway")
            if self.feed is not None:
                self.feed.close()
            if self.pruner is not None:
                self.pruner.stop()
            if self.store is not None:
                self.store.close()
            if self.hand_off:
                self._start_background_owner()
            if self.hooks is not None:  # last: a slow on_finish holds neither store nor owner
                self.hooks.close()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for ``stop()`` to finish; True once the engine and the store are closed."""
        if self._stopper is not None:
            self._stopper.join(timeout)
        return self.stopped

    def close(self, wait: bool = True) -> None:
        """Close the window and stop the engine; with ``wait``, until both are done."""
        self.quiet = True  # closed by the program: nobody to ask
        self.window.close_question.enabled = False  # the caller decided (quit, a signal)
        self.window.close()  # the close watcher calls stop()
        self.stop()
        self.window.deleteLater()
        if wait:
            self.join()


class Sessions:
    """The open workflow; File > Open replaces it (new run, new window).

    ``db`` and ``fresh`` apply to the first workflow opened (the command line's);
    later ones use their own store in ``data_dir`` (default: the user's data dir).
    ``start``: a workflow opened starts its schedule at once; the window passes False,
    so that nothing runs until the person presses Start (or ``--start``).
    """

    def __init__(
        self, settings=None, *, db=None, fresh: bool = False, data_dir=None, start: bool = True
    ):
        self.settings = settings
        self.db = None if db is None else Path(db)
        self.fresh = fresh
        self.start = start
        # called with each workflow file opened (recent files)
        self.opened: list[Callable[[Path], object]] = []
        self.data_dir = data_dir
        self.current: WorkflowSession | None = None
        self.closing: list[WorkflowSession] = []  # replaced sessions still stopping
        # Asked (parent, name, differences) before resuming a stored run the file differs from.
        self.choose_run = ask_resume_or_new

    def open(self, path) -> bool:
        from taskloom.engine.workflow import WorkflowError, load

        try:
            workflow = load(path)
        except WorkflowError as exc:
            if self.current is None:
                self.open_broken(path, exc)
                raise
            self.current.window.show_problems(path, exc.problems)
            return False
        current = self.current
        first = current is None
        if current is not None and not current.window.close_question.may_close():
            return False  # unsaved edits or running tasks the person keeps
        db_path, log_dir = store_paths(workflow, self.db if first else None, self.data_dir)
        return self._open(workflow, path, db_path, log_dir, fresh=self.fresh and first)

    def new_run(self) -> bool:
        """Run again as a new run (Airflow's Trigger): the workflow file as it is now,
        from the start, as the next run in the same store; the old run and its attempts
        stay there (history). The new run gets a window of its own, as File > Open."""
        from taskloom.engine.workflow import WorkflowError, load

        current = self.current
        if current is None or getattr(current, "watching", False) or current.db_path is None:
            return False
        path = current.workflow.path
        if path is None:
            return False
        question = current.window.close_question
        if not question.may_close():  # first: Save there is what the new run reads
            return False  # unsaved edits or running tasks the person keeps
        try:
            workflow = load(path)
        except WorkflowError as exc:
            question.answered = False  # nothing closes: a later close asks again
            current.window.show_problems(path, exc.problems)
            return False
        _, log_dir = store_paths(workflow, current.db_path)
        return self._open(workflow, path, current.db_path, log_dir, fresh=True)

    def take_over(self) -> bool:
        """The watched run's owner stopped: resume the run here, as its owner."""
        current = self.current
        if current is None or not getattr(current, "watching", False):
            return False
        path = current.workflow.path
        _, log_dir = store_paths(current.workflow, current.db_path)
        # The person asked to take the run over: it goes on at once.
        return self._open(current.workflow, path, current.db_path, log_dir, False, start=True)

    def _open(self, workflow, path, db_path, log_dir, fresh: bool, start=None) -> bool:
        old = self.current
        if (
            old is not None
            and old.db_path is not None
            and old.db_path.resolve() == db_path.resolve()
            and not getattr(old, "watching", False)
        ):
            # The same store: the old engine must have written its last state (its
            # interrupted tasks READY) before the new run reads it.
            old.quiet = True
            old.stop()
            old.join()
        for closing in self.closing:  # A, then B, then A again (Open recent): A's
            if closing.db_path is not None and closing.db_path.resolve() == db_path.resolve():
                closing.join()  # old engine still holds A's store until it has stopped
        start = self.start if start is None else start
        try:
            session = self._session(workflow, db_path, log_dir, fresh, start)
        except OPEN_ERRORS as exc:
            if old is None:
                raise
            old.window.statusBar().showMessage(f"⚠ Cannot open {path}: {exc}", 10000)
            if isinstance(exc, StoreBusy):  # a person must see why nothing opened
                _show_busy(old.window, exc, workflow.name)
            return False
        self._show(session, old)
        for listener in self.opened:
            listener(path)
        return True

    def new(self) -> bool:
        """A new, empty workflow without a file (Save asks where) and without a store."""
        from taskloom.engine.workflow import Workflow

        old = self.current
        if old is not None and not old.window.close_question.may_close():
            return False
        self._show(WorkflowSession(Workflow(name="untitled"), self.settings, start=self.start), old)
        return True

    def _show(self, session, old) -> None:
        self.current = session
        session.window.openRequested.connect(self.open)
        watching = getattr(session, "watching", False)
        if not watching and session.db_path is not None and session.workflow.path is not None:
            session.window.new_run_possible = True
            session.window.newRunRequested.connect(self.new_run)
        session.window.newRequested.connect(self.new)
        if getattr(session, "watching", False):
            session.status.takeOverRequested.connect(self.take_over)
        session.window.show()
        if old is not None:  # after the new window shows, so the app never has none
            old.close(wait=False)
            self.closing.append(old)

    def _session(self, workflow, db_path, log_dir, fresh: bool, start: bool = True):
        """Own the workflow's run; if another live process owns it, watch that one."""
        from taskloom.engine.watched_run import OwnerGone

        from .watching import WatchSession

        parent = None if self.current is None else self.current.window

        def decide(differences) -> bool:
            return self.choose_run(parent, workflow.name, differences)

        for _ in range(3):  # an owner may stop (or start) between the two tries
            try:
                return WorkflowSession(
                    workflow,
                    self.settings,
                    db_path=db_path,
                    fresh=fresh,
                    log_dir=log_dir,
                    decide=decide,
                    start=start,
                )
            except StoreBusy as busy:
                # The workflow's owner may run it on another store (another --db, a
                # cron job's data folder): its lock says which; watch that one.
                store = getattr(busy.owner, "store", "") or db_path
                try:
                    return WatchSession(workflow, self.settings, db_path=Path(store))
                except OwnerGone:
                    continue
        return WorkflowSession(
            workflow,
            self.settings,
            db_path=db_path,
            fresh=fresh,
            log_dir=log_dir,
            decide=decide,
            start=start,
        )

    def open_broken(self, path, error) -> None:
        """A window for a file that cannot be run: no tasks, its problems listed, Reload.
        Nothing is started and no store is touched."""
        from taskloom.engine.workflow import Workflow

        session = WorkflowSession(Workflow(name=Path(path).name), self.settings)
        session.window.show_problems(path, error.problems)
        self.current = session
        session.window.openRequested.connect(self.open)
        session.window.show()

    def close(self) -> None:
        """Close the open workflow and wait until every engine has stopped."""
        if self.current is not None:
            self.current.close(wait=True)
            self.current = None
        for session in self.closing:
            session.join()
        self.closing.clear()


def _show_busy(parent, exc, what: str, modal: bool = False) -> None:
    """Say that another process runs this workflow, and that nothing was started."""
    from PySide6.QtWidgets import QMessageBox

    owner = exc.owner.describe() if getattr(exc, "owner", None) else "another process"
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Information)
    box.setWindowTitle("Taskloom: already running")
    box.setText(f"{what} is already running in {owner}.")
    box.setInformativeText(
        "Taskloom does not start a second run of a workflow: two runs at once would "
        "run its tasks twice. Stop the other run first, or watch it there."
    )
    box.setDetailedText(str(exc))
    box.setObjectName("busy_message")
    if modal:
        box.exec()
    else:
        box.open()  # window-modal, without blocking the event loop


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


def resume_without_asking(parent, name: str, differences) -> bool:
    """The choice ``taskloom run`` makes: resume the stored run (see runs.open_run)."""
    log.info("%s: the file differs from its unfinished run; resuming it", name)
    return True


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

    if sessions.current is None:  # the start page: no graph to wait for
        return True
    scene = sessions.current.window.scene
    waited = getattr(then, "waited_since", None)
    if waited is None:
        waited = then.waited_since = time.monotonic()
    if scene.is_drawn() or time.monotonic() - waited > GRAPH_WAIT_S:
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
    except StoreBusy as exc:
        print(f"taskloom: {exc}; not opening a second run of it", file=sys.stderr)
        if not screenshot and app.platformName() != "offscreen":
            _show_busy(None, exc, Path(path).name, modal=True)
        return EXIT_BUSY
    except OPEN_ERRORS as exc:
        print(f"{path}: {exc}", file=sys.stderr)
        return 2
    code = {"value": 0}
    current = sessions.current
    if start and current is not None and hasattr(current, "start") and not current.start():
        print(f"{path}: {current.window.statusBar().currentMessage()}", file=sys.stderr)
    if select and current is not None:
        window = current.window
        if select not in window.bridge.tasks:
            print(f"--select: no task {select!r} in the workflow", file=sys.stderr)
        else:
            window.select_tasks([select])

    def finish() -> None:
        if screenshot and not _graph_drawn(sessions, finish):
            return  # asked again once the graph is drawn
        if screenshot:
            shown = launcher.page if sessions.current is None else sessions.current.window
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
