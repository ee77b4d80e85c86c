"""Sessions: one workflow's run and its window (``WorkflowSession``), and the open one that
File > Open replaces (``Sessions``).

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
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from taskloom.engine.store import StoreBusy
from taskloom.gui.collector import COLLECTOR
from taskloom.gui.run_choice import ask_resume_or_new

from .closing import CLOSE_STOP, _CloseWatcher, ask_keep_schedule

if TYPE_CHECKING:
    from taskloom.engine.feed import FeedWriter
    from taskloom.gui.history_reader import HistoryReader

    from .hooks import HookRunner
    from .runs import AttemptPruner

log = logging.getLogger(__name__)

READER_JOIN_TIMEOUT = 10.0  # seconds the store waits for a history read still running

# Errors opening a run: a store that cannot be used, or a task the engine refuses.
OPEN_ERRORS = (RuntimeError, ValueError, KeyError, TypeError, OSError)
# A workflow file at least this big (about 2,000 tasks) is read, checked and scheduled
# off the GUI thread, behind a window that says how far it got; smaller ones open at once.
BACKGROUND_OPEN_BYTES = 100_000
# The longest the garbage collector stays paused for a big file's open (gui/collector.py).
COLLECTOR_PAUSE_MAX_MS = 180_000
# Errors of Scheduler.start(): a task depending on an unknown one, no threads to be had.
START_ERRORS = (RuntimeError, KeyError, ValueError)


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


class WorkflowSession:
    """One loaded workflow: its run (engine and store) and its window.

    Without ``db_path`` the engine has no store (nothing is kept after closing).
    """

    watching = False  # a WatchSession (taskloom/watching.py) says True

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
        self._prepare(workflow, db_path, fresh, log_dir, decide)
        self.make_window(settings, start)

    @classmethod
    def without_window(
        cls, workflow, *, db_path, fresh=False, log_dir=None, decide=None, listeners=()
    ) -> WorkflowSession:
        """The run of a session, opened on any thread (a big file: off the GUI thread);
        ``make_window`` follows on the GUI thread. ``listeners`` hear the run's events
        from its first (the progress of its tasks being added)."""
        session = cls.__new__(cls)
        session._prepare(workflow, db_path, fresh, log_dir, decide, listeners)
        return session

    def _prepare(self, workflow, db_path, fresh, log_dir, decide, listeners=()) -> None:
        self.workflow = workflow
        self.db_path = None if db_path is None else Path(db_path)
        self.log_dir = None if log_dir is None else Path(log_dir)
        if log_dir is not None:
            from taskloom.engine.store import private_folder

            private_folder(log_dir, "log folder")  # 0700, ours (UnsafeFile, an OSError)
        self.feed: FeedWriter | None = None  # publishes the run for windows that watch it
        self.pruner: AttemptPruner | None = None  # keeps a long run's store bounded
        self.hooks: HookRunner | None = None  # the workflow's hooks and notify sinks
        self.deadline = None  # its [workflow] timeout, once started (engine/deadline.py)
        self.hand_off = False  # on stop, a headless ``taskloom run`` takes the run over
        self.quiet = False  # stopping without asking (Quit from a signal, a replaced window)
        self.background_owner: subprocess.Popen | None = None  # that headless owner
        from taskloom.gui.bridge import EarlyEvents

        # The run's first events (its tasks being added) come before the window
        # exists: recorded from the start, so that its event log has them.
        self._early = EarlyEvents()
        # decide(differences): resume a stored run that differs from the file? (runs.open_run)
        self.scheduler, self.store = self._open_run(fresh, log_dir, decide, listeners)
        # Commands an earlier owner left running (read here: a big file's session is
        # prepared off the GUI thread, and this walks every task).
        self.adopted = bool(self.scheduler.adopted_tasks())
        self._stopper: threading.Thread | None = None
        # the window's history reader: joined before the store closes
        self._reader: HistoryReader | None = None

    def make_window(self, settings=None, start: bool = True) -> None:
        """The session's window (GUI thread); with ``start``, the run starts."""
        from taskloom.gui.main_window import MainWindow

        workflow = self.workflow
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
            start = start or self.adopted
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

    def _open_run(self, fresh: bool, log_dir, decide=None, listeners=()):
        from taskloom.hooks import attach_hooks
        from taskloom.runs import take_secrets

        from .owner import build_executor, open_owned_run

        problem = take_secrets(self.workflow)  # secret_env: masked in output, never stored
        if problem is not None:
            raise ValueError(problem)
        workers = self.workflow.workers
        # The workflow's executor: threads, a process pool or a Dask cluster. One that
        # cannot be had (a cluster that does not answer) must not keep the window shut.
        self.executor_problem = ""
        try:
            self.executor = build_executor(self.workflow.executor, workers)
        except (ValueError, OSError) as exc:
            self.executor = None
            self.executor_problem = f"⚠ {exc}: running tasks on threads instead"
        from taskloom.imports import use_workflow_folder

        use_workflow_folder(self.workflow, self.executor)  # calls import from beside the file
        # The early recorder listens from the constructor on: a resumed run's restore too.
        options = dict(workers=workers, executor=self.executor)
        options["listeners"] = [self._early.listener, *listeners]
        if self.db_path is None:
            options["pools"] = self.workflow.pools
            from taskloom.engine import Scheduler

            scheduler = Scheduler(**options, log_dir=None if log_dir is None else str(log_dir))
            self._early.adopt(scheduler)
            self.workflow.schedule_into(scheduler)
            self.resumed, self.note = False, ""
            self.hooks = attach_hooks(scheduler, self.workflow, log_dir=log_dir)
            return scheduler, None
        from taskloom.places import retention

        keep = retention()  # as taskloom run: the last runs, their logs, each task's attempts
        owned = open_owned_run(
            self.workflow,
            self.db_path,
            log_dir=log_dir,
            fresh=fresh,
            decide=decide,
            before_tasks=self._early.adopt,
            **options,
        )
        self.resumed, self.note = owned.resumed, owned.note
        owned.attach()  # the feed for watchers, the workflow's hooks
        owned.settle(keep)  # the feed's thread, old runs pruned, the attempt pruner
        self.feed, self.hooks, self.pruner = owned.feed, owned.hooks, owned.pruner
        return owned.scheduler, owned.store

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

        if self.deadline is None:
            self.deadline = start_deadline(self.workflow, self.scheduler, self.store, self.hooks)
            if self.deadline is not None:
                self.window.set_deadline(time.time() + self.deadline.remaining())

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
        deadline = self.deadline  # None: not started, or none to keep
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
            COLLECTOR.thaw()  # a big file's objects, frozen after its open, can go now

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
        self.background_open_bytes = BACKGROUND_OPEN_BYTES
        self.loading: _BackgroundOpen | None = None  # the window shown while a big file opens
        self.when_shown: list = []  # called once with the next session shown (then cleared)
        # A watched run being attached (watching.attach_off_gui_thread turns a nested
        # event loop meanwhile): another open waits until it is over.
        self.attaching = False

    def open(self, path) -> bool:
        """Open the workflow file at ``path`` in a new window (the old one closes). A big
        file opens off the GUI thread: True then means it is being opened, behind a
        window that shows how far it got (``loading``), and ``when_shown`` is called
        with the session once its window shows."""
        from taskloom.engine.workflow import WorkflowError, load

        if self.attaching:
            return False  # one file at a time
        if self._is_big(path):
            return self._open_in_background(path)
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
        db_path, log_dir = store_paths(workflow, self._db_for(path, first), self.data_dir)
        return self._open(workflow, path, db_path, log_dir, fresh=self.fresh and first)

    def _db_for(self, path, first: bool) -> Path | None:
        """The store to open ``path`` on: ``--db`` for the first file; the file this
        window runs, opened again: its run's store (a --db one too; on the default
        store its own lock made it watch this very run, "Take over"); else the default."""
        if first:
            return self.db
        current = self.current
        if (
            current is not None
            and not current.watching
            and current.db_path is not None
            and current.workflow.path is not None
            and Path(current.workflow.path).resolve() == Path(path).resolve()
        ):
            return current.db_path
        return None

    def new_run(self) -> bool:
        """Run again as a new run (Airflow's Trigger): the workflow file as it is now,
        from the start, as the next run in the same store; the old run and its attempts
        stay there (history). The new run gets a window of its own, as File > Open."""
        from taskloom.engine.workflow import WorkflowError, load

        current = self.current
        if current is None or current.watching or current.db_path is None:
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
        if current is None or not current.watching or self.attaching:
            return False
        workflow, db_path = current.workflow, current.db_path
        path = workflow.path
        _, log_dir = store_paths(workflow, db_path)
        self._free_store(db_path)
        from .watching import OpenAbandoned

        try:
            session = self._own_off_gui_thread(workflow, db_path, log_dir, current.window)
        except OpenAbandoned:
            return False
        except StoreBusy:  # another process took it first: watch that one
            # The person asked to take the run over: it goes on at once.
            return self._open(workflow, path, db_path, log_dir, False, start=True)
        except OPEN_ERRORS as exc:
            current.window.statusBar().showMessage(f"⚠ Cannot open {path}: {exc}", 10000)
            return False
        self._show(session, current)
        for listener in self.opened:
            listener(path)
        return True

    def _own_off_gui_thread(self, workflow, db_path, log_dir, parent) -> WorkflowSession:
        """The run on ``db_path`` opened as its owner off the GUI thread (its store and
        feed are opened there; the resume question is asked here), then its window
        made here; the run goes on at once. ``StoreBusy``: another process owns it."""
        from .watching import GuiThread, off_gui_thread

        def own(gui: GuiThread) -> WorkflowSession:
            def decide(differences) -> bool:  # asked on the GUI thread; the worker waits
                answer: dict = {}
                done = threading.Event()

                def ask() -> None:
                    try:
                        answer["resume"] = self.choose_run(parent, workflow.name, differences)
                    finally:
                        done.set()

                gui.post(ask)
                while not done.wait(0.2):
                    if gui.abandoned():
                        return True  # nobody to ask: the run is closed again (undo)
                return answer.get("resume", True)

            return WorkflowSession.without_window(
                workflow, db_path=db_path, log_dir=log_dir, decide=decide
            )

        self.attaching = True  # another open waits (a nested event loop turns meanwhile)
        try:
            session = off_gui_thread(
                own,
                workflow.name,
                self.settings,
                "Taking the run over: opening its store…",
                undo=lambda session: session._shut_down(),
            )
        finally:
            self.attaching = False
        session.make_window(self.settings, True)  # an error: it shut the run down
        return session

    def _open(self, workflow, path, db_path, log_dir, fresh: bool, start=None) -> bool:
        old = self.current
        self._free_store(db_path)
        start = self.start if start is None else start
        from .watching import OpenAbandoned

        try:
            session = self._session(workflow, db_path, log_dir, fresh, start)
        except OpenAbandoned:
            if old is None:
                raise  # no window left: the caller ends (taskloom FILE says so, exit 2)
            return False  # closed by the person (or closing all): nothing to say
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

    def _free_store(self, db_path) -> None:
        """Sessions on ``db_path`` have stopped and written their last state."""
        old = self.current
        if (
            old is not None
            and old.db_path is not None
            and old.db_path.resolve() == db_path.resolve()
            and not old.watching
        ):
            # The same store: the old engine must have written its last state (its
            # interrupted tasks READY) before the new run reads it.
            old.quiet = True
            old.stop()
            old.join()
        for closing in self.closing:  # A, then B, then A again (Open recent): A's
            if closing.db_path is not None and closing.db_path.resolve() == db_path.resolve():
                closing.join()  # old engine still holds A's store until it has stopped

    def new(self) -> bool:
        """A new, empty workflow without a file (Save asks where) and without a store."""
        from taskloom.engine.workflow import Workflow

        old = self.current
        if self.attaching or (old is not None and not old.window.close_question.may_close()):
            return False
        self._show(WorkflowSession(Workflow(name="untitled"), self.settings, start=self.start), old)
        return True

    def _is_big(self, path) -> bool:
        try:
            return Path(path).stat().st_size >= self.background_open_bytes
        except OSError:  # not there: the usual path says so
            return False

    def _open_in_background(self, path) -> bool:
        current = self.current
        first = current is None
        if self.loading is not None:
            return False  # one file at a time
        if current is not None and not current.window.close_question.may_close():
            return False  # unsaved edits or running tasks the person keeps
        _BackgroundOpen(self, path, first).start()
        return True

    def _show(self, session, old) -> None:
        self.current = session
        session.window.openRequested.connect(self.open)
        watching = session.watching
        if not watching and session.db_path is not None and session.workflow.path is not None:
            session.window.new_run_possible = True
            session.window.newRunRequested.connect(self.new_run)
        session.window.newRequested.connect(self.new)
        if session.watching:
            session.status.takeOverRequested.connect(self.take_over)
        session.window.show()
        if self.loading is not None:  # after the new window shows, so the app never has none
            self.loading.finish()
        if old is not None:
            old.close(wait=False)
            self.closing.append(old)
        callbacks, self.when_shown = self.when_shown, []
        for callback in callbacks:
            callback(session)

    def _session(self, workflow, db_path, log_dir, fresh: bool, start: bool = True):
        """Own the workflow's run; if another live process owns it, watch that one."""
        from taskloom.engine.watched_run import OwnerGone

        from .watching import WatchSession

        parent = None if self.current is None else self.current.window

        def decide(differences) -> bool:
            return self.choose_run(parent, workflow.name, differences)

        def own() -> WorkflowSession:
            return WorkflowSession(
                workflow,
                self.settings,
                db_path=db_path,
                fresh=fresh,
                log_dir=log_dir,
                decide=decide,
                start=start,
            )

        for attempt in range(5):  # an owner may stop (or start) between the two tries
            if attempt:
                # A starting owner takes its lock a moment before it writes who it is
                # (OwnerGone from the watcher in between): wait a little, events served.
                _wait_serving_events(0.05 * 2**attempt)
            try:
                return own()
            except StoreBusy as busy:
                # The workflow's owner may run it on another store (another --db, a
                # cron job's data folder): its lock says which; watch that one.
                store = getattr(busy.owner, "store", "") or db_path
                self.attaching = True  # attached off the GUI thread, behind a nested loop
                try:
                    return WatchSession(workflow, self.settings, db_path=Path(store))
                except OwnerGone:
                    continue
                finally:
                    self.attaching = False
        return own()

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
        from .watching import abandon_opening

        abandon_opening()  # a watched run being attached, a run being taken over
        if self.loading is not None:  # a big file still opening: its run is closed
            self.loading.abandon()
        if self.current is not None:
            self.current.close(wait=True)
            self.current = None
        for session in self.closing:
            session.join()
        self.closing.clear()


class _Progress:
    """How many of the file's tasks the run being opened has (a listener: the engine's
    delivery thread adds, the loading window's timer reads)."""

    def __init__(self) -> None:
        self.total = 0
        self._seen: set[str] = set()

    def on_event(self, event) -> None:
        if event.task_id:
            self._seen.add(event.task_id)

    def __call__(self) -> tuple[int, int]:
        return len(self._seen), self.total


class _BackgroundOpen:
    """A big workflow file opened off the GUI thread: a window with progress at once,
    the file read and checked, then its run opened and its tasks scheduled, on a
    worker; what needs the GUI thread (the resume question, stopping a session on the
    same store, the workflow's window) is posted to it. Closing the progress window (or
    the app) abandons the open: a run opened meanwhile is closed again."""

    def __init__(self, sessions: Sessions, path, first: bool) -> None:
        from taskloom.gui.loading import LoadingWindow

        self.sessions = sessions
        self.path = path
        self.first = first
        self.abandoned = False
        self.done = False
        self._lock = threading.Lock()
        self.session: WorkflowSession | None = None  # opened by the worker, not yet shown
        self.progress = _Progress()
        self.window = LoadingWindow(Path(path).name, sessions.settings)
        self.window.follow(self.progress)
        self.window.closed.connect(self._closed)
        self.thread: threading.Thread | None = None
        self._collector_paused = False
        sessions.loading = self

    def start(self) -> None:
        self.window.show()
        COLLECTOR.pause()  # until the graph is drawn (or the open ends otherwise)
        self._collector_paused = True
        self._work(self._read)

    def _resume_collector(self) -> None:
        if self._collector_paused:
            self._collector_paused = False
            COLLECTOR.resume()

    def _resume_collector_when_drawn(self, scene) -> None:
        """The collector stays paused while the window's graph is worked out and drawn
        (its threads make the groups and the layout of every task)."""
        if scene.is_drawn():
            self._resume_collector()
            return

        def drawn() -> None:
            if scene.is_drawn():
                scene.layoutApplied.disconnect(drawn)
                self._resume_collector()

        scene.layoutApplied.connect(drawn)
        scene.destroyed.connect(lambda *_: self._resume_collector())
        # Whatever happens to the graph, not paused for ever.
        from PySide6.QtCore import QTimer

        QTimer.singleShot(COLLECTOR_PAUSE_MAX_MS, scene, self._resume_collector)

    def _work(self, function, *args) -> None:
        self.thread = threading.Thread(
            target=function, args=args, name="taskloom-open", daemon=True
        )
        self.thread.start()

    def _gui(self, function, *args) -> None:
        """From the worker: ``function(*args)`` on the GUI thread (not once abandoned)."""
        from taskloom.gui import relay

        if not self.abandoned:
            relay.post(self.window, "call", function, args)

    # -- on the worker ----------------------------------------------------------------
    def _read(self) -> None:
        from taskloom.engine.workflow import WorkflowError, load

        try:
            workflow = load(self.path)
        except WorkflowError as exc:
            self._gui(self._broken, exc)
            return
        self.progress.total = len(workflow.tasks)
        import taskloom.gui.main_window  # noqa: F401  (loaded here, not on the GUI thread)

        self._gui(self._file_read, workflow)

    def _open_run(self, workflow, db_path, log_dir, fresh: bool, parent) -> None:
        def decide(differences) -> bool:  # asked on the GUI thread; the worker waits
            answer: dict = {}
            done = threading.Event()

            def ask() -> None:
                try:
                    answer["resume"] = self.sessions.choose_run(parent, workflow.name, differences)
                finally:
                    done.set()

            self._gui(ask)
            while not done.wait(0.2):
                if self.abandoned:
                    return True  # nobody to ask: the run is closed again below
            return answer.get("resume", True)

        try:
            session = WorkflowSession.without_window(
                workflow,
                db_path=db_path,
                fresh=fresh,
                log_dir=log_dir,
                decide=decide,
                listeners=[self.progress.on_event],
            )
        except StoreBusy as busy:
            self._gui(self._busy, workflow, db_path, log_dir, fresh, busy)
            return
        except OPEN_ERRORS as exc:
            self._gui(self._failed, exc)
            return
        session._early.prepare(session.scheduler)  # the window's snapshot, made here
        with self._lock:
            if not self.abandoned:
                self.session = session
                self._gui(self._ready)
                return
        session._shut_down()

    # -- on the GUI thread -----------------------------------------------------------
    def _file_read(self, workflow) -> None:
        if self.abandoned:
            return
        sessions = self.sessions
        db = sessions._db_for(workflow.path, self.first) if workflow.path else None
        db = sessions.db if self.first else db
        db_path, log_dir = store_paths(workflow, db, sessions.data_dir)
        sessions._free_store(db_path)
        count = len(workflow.tasks)
        self.window.set_stage(f"Opening its run and scheduling {count:,} tasks…")
        parent = None if sessions.current is None else sessions.current.window
        fresh = sessions.fresh and self.first
        self._work(self._open_run, workflow, db_path, log_dir, fresh, parent)

    def _ready(self) -> None:
        with self._lock:
            session, self.session = self.session, None
        if session is None:
            return  # abandoned meanwhile: closed there
        sessions = self.sessions
        try:
            session.make_window(sessions.settings, sessions.start)
        except OPEN_ERRORS as exc:
            self._failed(exc)
            return
        self._resume_collector_when_drawn(session.window.scene)
        sessions._show(session, sessions.current)  # finishes this window
        for listener in sessions.opened:
            listener(self.path)

    def _busy(self, workflow, db_path, log_dir, fresh: bool, busy) -> None:
        """Another live process owns the run: open it as a small file is (watch it)."""
        self._resume_collector()
        if self.abandoned:
            return
        sessions = self.sessions
        try:
            session = sessions._session(workflow, db_path, log_dir, fresh, sessions.start)
        except OPEN_ERRORS as exc:
            self._failed(exc)
            return
        sessions._show(session, sessions.current)
        for listener in sessions.opened:
            listener(self.path)

    def _broken(self, error) -> None:
        self._resume_collector()
        if self.abandoned:
            return
        sessions = self.sessions
        print(error, file=sys.stderr)
        if sessions.current is None:
            sessions.open_broken(self.path, error)  # its own window lists the problems
        else:
            sessions.current.window.show_problems(self.path, error.problems)
        self.finish()

    def _failed(self, exc) -> None:
        self._resume_collector()
        if self.abandoned:
            return
        sessions = self.sessions
        text = f"Cannot open {self.path}: {exc}"
        print(f"{self.path}: {exc}", file=sys.stderr)
        if sessions.current is None:
            self.window.fail(text)  # the person reads it and closes the window
            sessions.loading = None
            return
        sessions.current.window.statusBar().showMessage(f"⚠ {text}", 10000)
        if isinstance(exc, StoreBusy):
            _show_busy(sessions.current.window, exc, Path(self.path).name)
        self.finish()

    def finish(self) -> None:
        """The open is over (a window shows the workflow, or its problems)."""
        self.done = True
        if self.sessions.loading is self:
            self.sessions.loading = None
        self.window.close()
        self.window.deleteLater()

    def _closed(self) -> None:
        if not self.done:  # the person closed it: nothing opens
            self.abandon()

    def abandon(self) -> None:
        """Closed before it finished: the worker stops at its next step, and a run it
        opened is closed (before this returns)."""
        with self._lock:
            self.abandoned = True
            session, self.session = self.session, None
        if self.sessions.loading is self:
            self.sessions.loading = None
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        if session is not None:
            session._shut_down()
        self._resume_collector()


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


def resume_without_asking(parent, name: str, differences) -> bool:
    """The choice ``taskloom run`` makes: resume the stored run (see runs.open_run)."""
    log.info("%s: the file differs from its unfinished run; resuming it", name)
    return True


def _wait_serving_events(seconds: float) -> None:
    """``seconds`` pass while the GUI thread goes on serving its events."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()
