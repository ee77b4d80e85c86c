"""The main window: graph in the middle, inspector right, timeline and event log below.

Panels only show state and emit what the user wants; the Controller calls the
engine. State arrives only through the EngineBridge.
"""

from __future__ import annotations

import time

import shiboken6
from PySide6.QtCore import QSettings, QSignalBlocker, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import QBoxLayout, QMainWindow, QMessageBox, QVBoxLayout, QWidget

from taskloom.engine import Action, Outcome, TaskState
from taskloom.engine.run_api import RunInterface

from .accessibility import GraphDescription, label_window
from .app_settings import user_settings
from .bridge import EngineBridge
from .clear import ClearQuestion, why_not
from .close_question import CloseQuestion
from .controller import Controller, pairs_text
from .document import WorkflowDocument
from .event_log import EventLog
from .forecast_view import ForecastView
from .graph.filter_bar import FilterBar
from .graph.scene import GraphScene
from .graph.view import GraphView
from .history_reader import HistoryReader
from .icons import icon
from .inspector import Inspector
from .legend import Legend
from .notifications import RunNotices
from .occurrences import later_occurrences
from .past_run import PastRun, PastRunBar
from .run_history import store_of
from .start_bar import PauseBar, StartBar
from .status import StatusPanel
from .status_message import ElidingStatusBar
from .structure import StructureDelta
from .task_list import TaskList
from .timeline import Timeline, short_duration
from .window_actions import WindowActions
from .window_dialogs import WindowDialogs
from .window_files import WindowFiles
from .window_layout import WindowLayout
from .window_past_run import WindowPastRun

S = TaskState


class MainWindow(
    WindowActions, WindowFiles, WindowPastRun, WindowDialogs, WindowLayout, QMainWindow
):
    openRequested = Signal(str)  # a workflow file the user wants to open
    saveRequested = Signal(str)
    newRunRequested = Signal()  # Run again as a new run: the session starts it
    newRequested = Signal()  # File > New: an empty workflow
    startRequested = Signal()  # Start: the owner of the run starts its schedule
    # Made in __init__ after the lambdas that use them (for the checker):
    timeline: Timeline
    act_pause_all: QAction

    def __init__(
        self,
        scheduler: RunInterface,
        parent=None,
        settings: QSettings | None = None,
        title: str = "",
        workflow=None,
        early_events=None,
        started: bool = True,
    ):
        super().__init__(parent)
        self.setObjectName("mainWindow")
        self.scheduler = scheduler
        self.settings = settings if settings is not None else user_settings()
        self.setWindowTitle(f"{title} — Taskloom" if title else "Taskloom")
        self.setWindowIcon(icon("app"))
        # early_events (bridge.EarlyEvents): what the engine said before this window existed.
        self.bridge = EngineBridge(scheduler, self, early=early_events)
        self.controller = Controller(scheduler, self)
        self._title = title
        self.dispatcher_paused = False
        self.selected: list[str] = []
        self.new_run_possible = False  # the session sets it when it can start a new run
        self.deadline_at: float | None = None  # when [workflow] timeout passes (the session says)

        self.scene = GraphScene(self)
        self.scene.scheduler = scheduler  # asked about edges while one is dragged
        self.scene.elapsed_source = self._running_for
        # The file being edited: its undo stack is the controller's, its positions the scene's.
        self.document = WorkflowDocument(
            scheduler, self.controller.undo_stack, lambda: dict(self.scene.pins), self
        )
        self.controller.keep_edges = self.document.keep_edges
        self.document.follow(self.bridge.tasks)  # the scene's structure comes from it
        self.scene.group_source = self.document.file_group  # the file's ``group`` keys
        # The timeline folds each group collapsed in the graph into one lane.
        self.scene.layoutApplied.connect(
            lambda: self.timeline.set_lane_groups(
                self.scene.lane_group if self.scene.collapsed else None
            )
        )
        self.document.dirtyChanged.connect(self.setWindowModified)
        self.document.pathChanged.connect(lambda _path: self._update_title())
        self.close_question = CloseQuestion(self)
        self.clear_question = ClearQuestion(self)
        self.remove_question: QMessageBox | None = None  # open while Remove asks
        self.started = started
        self.act_start = self._action(
            "startRun",
            "Start",
            "start-run",
            "F5",
            lambda: self.startRequested.emit(),
            "Start the workflow's schedule: nothing runs until then",
        )
        self.graph_view = GraphView(self.scene)
        self.legend = Legend()
        central = QWidget()
        central_layout = QVBoxLayout(central)
        central_layout.setContentsMargins(0, 0, 0, 0)
        central_layout.setSpacing(0)
        self.start_bar = StartBar(self.act_start)
        central_layout.addWidget(self.start_bar)
        self.pause_bar = PauseBar(lambda: self.act_pause_all.setChecked(False))
        central_layout.addWidget(self.pause_bar)
        # A past run opened read-only from the Runs view (past_run.py).
        self.past_run: PastRun | None = None
        self._past_request = 0
        self._past_actions: dict = {}  # action -> (enabled, tip, status tip) before
        self.past_run_bar = PastRunBar(self.back_to_live)
        central_layout.addWidget(self.past_run_bar)
        central_layout.addWidget(self.legend)
        self.filter_bar = FilterBar(lambda: list(self.selected))  # filters, groups (8.7)
        self.filter_bar.filterChanged.connect(self.scene.set_filter)
        self.filter_bar.expandAll.connect(self.scene.expand_all)
        self.filter_bar.collapseAll.connect(self.scene.collapse_all)
        central_layout.addWidget(self.filter_bar)
        # The run as a whole, in the filter row's spare room (a row of its own would
        # take a small window's graph height).
        from .run_header import RunHeader

        self.run_header = RunHeader(self)
        row = self.filter_bar.layout()
        assert isinstance(row, QBoxLayout)  # FilterBar's row
        row.addWidget(self.run_header, 2)
        central_layout.addWidget(self.graph_view, 1)
        self.setCentralWidget(central)

        # Past runs from the store, if it has one, read off the GUI thread.
        store = store_of(scheduler)
        self.history_reader = None if store is None else HistoryReader(store, self)
        self.inspector = Inspector(self.bridge, reader=self.history_reader)
        self.inspector.setMinimumWidth(200)  # a small window leaves the graph room
        self.inspector.dispatcher_paused = lambda: self.dispatcher_paused
        self.inspector.file_definition = self._file_definition
        self.inspector.past_info = self._past_info
        self.timeline = Timeline(self.bridge.clock_now, self.bridge.attempts)
        self.timeline.attach_history(scheduler, self.history_reader)
        self.timeline.later_occurrences = lambda entries: later_occurrences(scheduler, entries)
        self.timeline.recurrence_text = self._recurrence_text
        self.timeline.jitter_of = self._jitter_of
        self.event_log = EventLog(self._clock_text)
        self.inspector_dock = self._dock(
            "Inspector", self.inspector, Qt.DockWidgetArea.RightDockWidgetArea
        )
        self.timeline_dock = self._dock(
            "Timeline", self.timeline, Qt.DockWidgetArea.BottomDockWidgetArea
        )
        self.event_dock = self._dock(
            "Events", self.event_log, Qt.DockWidgetArea.BottomDockWidgetArea
        )
        self.splitDockWidget(self.timeline_dock, self.event_dock, Qt.Orientation.Horizontal)
        # The graph's tasks for assistive technology and the keyboard: a tab beside Events.
        self.task_list = TaskList()
        self.task_dock = self._dock("Tasks", self.task_list, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.tabifyDockWidget(self.event_dock, self.task_dock)
        # Runs by tasks (Airflow's grid), from the store: a window without one has none.
        self.runs_view = None
        if self.history_reader is not None:
            from .runs_view import RunsView

            self.runs_view = RunsView(self, self.history_reader)
            self.runs_view.attemptChosen.connect(self._choose_attempt)
            self.runs_view.runChosen.connect(self.open_past_run)
            self.history_reader.runRead.connect(self._past_run_read)
            self.runs_dock = self._dock(
                "Runs", self.runs_view, Qt.DockWidgetArea.BottomDockWidgetArea
            )
            self.tabifyDockWidget(self.task_dock, self.runs_dock)
        self.event_dock.raise_()
        # The inspector runs the full height on the right: attempts and output need room.
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.resizeDocks([self.inspector_dock], [340], Qt.Orientation.Horizontal)
        self.resizeDocks(
            [self.timeline_dock, self.event_dock], [620, 420], Qt.Orientation.Horizontal
        )
        self.resizeDocks([self.timeline_dock], [260], Qt.Orientation.Vertical)

        self._pending_recolour: dict = {}
        self._recolour_timer = QTimer(self)
        self._recolour_timer.setSingleShot(True)
        self._recolour_timer.timeout.connect(self._apply_recolour)
        self._structure_delta: StructureDelta | None = None  # None: rebuild all
        self._structure_timer = QTimer(self)
        self._structure_timer.setSingleShot(True)
        self._structure_timer.timeout.connect(self._on_structure)
        self._make_actions()
        self._make_toolbar_and_menus()
        self.setStatusBar(ElidingStatusBar())  # a long message stops short of the counts
        self.status_panel = StatusPanel(self.statusBar(), self.bridge)
        self._wire()
        self.forecast_view = ForecastView(self)  # ETA, critical path, ghost bars
        self.owns_run = True  # False while watching another process's run
        self.notices = RunNotices(self, self.settings)
        self.notices.taskChosen.connect(lambda tid: self.select_tasks([tid], centre=True))
        self.notices.showRequested.connect(self.bring_to_front)
        label_window(self)
        self.graph_description = GraphDescription(self.graph_view, lambda: self.bridge.tasks)

        if workflow is not None:
            self.attach_workflow(workflow)
        self._update_title()
        # First picture from the snapshot the bridge took.
        self._on_structure()
        self.timeline.set_upcoming(self.bridge.upcoming)
        # Timers that run only while time alone changes what they show (a window at
        # rest is not woken): the status bar's runs/s while runs finish or tasks run,
        # the inspector's countdowns at the rate their text changes (_pace).
        self._status_timer = QTimer(self)
        self._status_timer.setInterval(250)
        self._status_timer.timeout.connect(self._refresh_status)
        self._inspector_timer = QTimer(self)
        self._inspector_timer.setSingleShot(True)
        self._inspector_timer.timeout.connect(self._tick_inspector)
        self.bridge.upcomingChanged.connect(lambda _entries: self._pace_inspector())
        self._refresh_status()
        self._pace_inspector()
        self._update_actions()
        self._restore_settings()
        self.set_started(started)

    # -- construction ----------------------------------------------------------------

    def _wire(self) -> None:
        b = self.bridge
        self.event_log.model.adoptions = b.scheduler.adoptions()
        b.tasksChanged.connect(self._on_tasks_changed)
        b.tasksRemoved.connect(self.timeline.remove_tasks)
        # Structure: bridge -> document -> scene (states still recolour from the bridge).
        b.tasksChanged.connect(self.document.engine_changed)
        b.tasksRemoved.connect(self.document.engine_removed)
        b.eventsArrived.connect(self.document.engine_events)
        self.document.structureChanged.connect(self._schedule_structure)
        b.eventsArrived.connect(self.event_log.add_events)
        b.eventsArrived.connect(self.timeline.add_events)
        b.upcomingChanged.connect(self.timeline.set_upcoming)
        # A task redefined (here or by its owner): its band's label is read again.
        self.document.structureChanged.connect(self._relabel_recurring)
        v = self.graph_view
        v.selectionChanged.connect(self._on_selection)
        v.connectRequested.connect(self.controller.connect_tasks)
        v.deleteEdgeRequested.connect(self.controller.disconnect_tasks)
        v.deleteTasksRequested.connect(self.remove_tasks)
        v.nodesMoved.connect(lambda moves: self.controller.move_nodes(self.scene, moves))
        v.edgeSelected.connect(lambda _edge: self._update_actions())
        v.activated.connect(lambda tid: self.inspector_dock.show())
        v.menuRequested.connect(self._task_menu)
        v.connectHint.connect(self._show_connect_hint)
        self.timeline.taskClicked.connect(lambda tid: self.select_tasks([tid]))
        self.task_list.taskSelected.connect(lambda tid: self.select_tasks([tid], centre=True))
        self.task_list.taskActivated.connect(lambda tid: self.inspector_dock.show())
        b.tasksChanged.connect(self.task_list.update_tasks)
        self.inspector.taskActivated.connect(lambda tid: self.select_tasks([tid], centre=True))
        b.pausedChanged.connect(self._on_paused_changed)
        c = self.controller
        c.message.connect(self._show_message)
        # The stack enables Undo and Redo itself: a watching window, or one showing a
        # past run, disables them again.
        c.undo_stack.canUndoChanged.connect(self._refuse_undo)
        c.undo_stack.canRedoChanged.connect(self._refuse_undo)
        c.cycleRefused.connect(self.graph_view.flash_cycle)
        c.edited.connect(self.event_log.model.note_edit)
        QGuiApplication.styleHints().colorSchemeChanged.connect(lambda _s: self._apply_theme())

    # -- bridge -> views -----------------------------------------------------------
    def _on_tasks_changed(self, changed: dict) -> None:
        # A big graph repaints slowly; recolour it less often so the GUI thread (and
        # the GIL the workers need) stays free. Small graphs recolour every batch.
        self._pending_recolour.update(changed)
        nodes = len(self.scene.nodes)
        if nodes < 500:  # in this batch, as the status bar and inspector: a grab right
            self._recolour_timer.stop()  # after a success showed the card "running"
            self._apply_recolour()
        elif not self._recolour_timer.isActive():
            self._recolour_timer.start(min(250, nodes // 20))
        # The selection's panels are cheap: keep them in step with every batch.
        self.timeline.set_tasks(changed)
        if self.inspector.task_id in changed or self.inspector.task_id is None:
            self.inspector.refresh()  # the task's page, or the run summary's counts
            self._pace_inspector()
        # The status bar counts from the same batch: on its 250 ms timer alone it said
        # "7 running" while the run summary beside it said 5.
        self._refresh_status()
        if any(t in changed for t in self.selected):
            self._update_actions()
        elif self.act_retry_failed.isEnabled() or any(
            i.state is S.FAILED for i in changed.values()
        ):
            self._update_retry_failed()

    def _apply_recolour(self) -> None:
        if self.past_run is not None:
            return  # the graph shows a past run: the live states wait for Back
        changed, self._pending_recolour = self._pending_recolour, {}
        if self.scene.update_tasks(changed):  # new tasks and edges come from the document
            self.scene.refilter()  # but a state filter's view follows the states

    def _schedule_structure(self, change=None) -> None:
        # Tasks added one by one to a big graph would re-lay it out every batch;
        # gather them for a moment instead. Small graphs update at once.
        if change is None:
            self._structure_delta = None  # no delta known: rebuild everything
        elif self._structure_delta is not None:
            self._structure_delta.take(change)
        if not self._structure_timer.isActive():
            self._structure_timer.start(0 if len(self.scene.nodes) < 500 else 300)

    def _on_structure(self) -> None:
        """The batches gathered since the last call: each view applies the tasks
        added, removed and redefined (work per task changed); a full rebuild only
        when no delta is known (the first picture, a reset)."""
        tasks = self.document.tasks
        delta, self._structure_delta = self._structure_delta, StructureDelta()
        self.search_names.follow(tasks)
        self.scene.set_tasks(tasks)
        if delta is None:
            self.timeline.set_tasks(tasks)
            self.task_list.set_tasks(tasks)
        else:
            self.timeline.set_tasks({t: tasks[t] for t in delta.touched() if t in tasks})
            self.task_list.apply_change(tasks, delta.added, delta.removed)
            # States come with the bridge's batches; definitions edited, from here.
            self.task_list.update_tasks({t: tasks[t] for t in delta.changed if t in tasks})
        self.selected = [t for t in self.selected if t in tasks]
        if self.past_run is not None:
            self._colour_past_run()
        if self.inspector.task_id is not None and self.inspector.task_id not in tasks:
            self.inspector.show_task(None)  # removed: not shown as it was (the run summary)
        self.inspector.refresh()
        self._update_actions()

    # -- a past run, read-only ----------------------------------------------------------
    def live_run_id(self) -> int | None:
        return self.scheduler.run

    def _choose_attempt(self, tid: str, run: int, number: int) -> None:
        """A cell of the Runs view: the task selected, that attempt in the inspector."""
        if tid in self.scene.nodes:
            self.select_tasks([tid], centre=True)
        self.inspector_dock.show()
        self.inspector.choose_attempt(tid, run, number)

    def _relabel_recurring(self, change) -> None:
        if change is not None and change.changed:
            self.timeline.forget_recurrence(change.changed)

    def _jitter_of(self, tid: str) -> float | None:
        """A task's jitter (seconds), for its window on the timeline; None without."""
        try:
            return self.scheduler.definition(tid).jitter
        except (KeyError, RuntimeError):
            return None

    def _recurrence_text(self, tid: str) -> str | None:
        """ "every 10 s" or the cron expression: a recurring task's band on the timeline."""
        try:
            definition = self.scheduler.definition(tid)
        except (KeyError, RuntimeError):
            return None
        kind = definition.schedule_kind
        if kind == "every" and definition.every is not None:
            mode = " after each end" if str(definition.mode) == "fixed_delay" else ""
            return f"every {short_duration(definition.every)}{mode}"
        if kind == "cron":
            return f"cron “{definition.cron}” {definition.timezone or 'UTC'}"
        return None

    def _file_definition(self, tid: str):
        """(the workflow file's definition of ``tid``, its folder), or None."""
        workflow = self.document.workflow
        if workflow is None or workflow.path is None:
            return None
        definition = workflow.tasks.get(tid)
        return None if definition is None else (definition, workflow.base_dir)

    def _refresh_status(self) -> None:
        self.status_panel.update(self.dispatcher_paused)
        self.run_header.refresh()
        # Again in 250 ms only while the counts can change without an event: runs/s
        # falls as finished runs age, and running tasks finish their code.
        if not hasattr(self, "_status_timer"):
            return  # still being built
        moving = self.bridge.throughput() > 0 or self.bridge.state_counts()[S.RUNNING] > 0
        if moving and self.seen():
            if not self._status_timer.isActive():
                self._status_timer.start()
        else:
            self._status_timer.stop()

    def set_started(self, started: bool, resumed: bool = False) -> None:
        """Whether the run's schedule runs; until it does, a banner offers Start."""
        self.started = started
        self.act_start.setEnabled(not started)
        self.act_start.setVisible(not started)
        self._apply_past_run()
        self.start_bar.set_text(self._title, resumed)
        self.start_bar.setVisible(not started)
        self.notices.update_tray()

    def set_deadline(self, at: float | None) -> None:
        """When the run's ``[workflow] timeout`` passes (epoch seconds; its owner counts
        it from the run's first start): the header above the graph shows it."""
        self.deadline_at = at
        self.run_header.refresh()

    # -- selection and actions --------------------------------------------------------
    def select_tasks(self, ids: list[str], centre: bool = False) -> None:
        self.graph_view.select(ids, centre=centre)

    def _on_selection(self, ids: list) -> None:
        self.selected = list(ids)
        past = self.past_run
        last = past.last(ids[0]) if past is not None and ids else None
        if past is not None and last is not None:  # that run's attempt, from the store
            self.inspector.choose_attempt(ids[0], past.run, last.number)
        else:
            self.inspector.show_task(ids[0] if ids else None)
        self._pace_inspector()
        self.timeline.select(ids[0] if ids else None)
        self.task_list.select(ids[0] if ids else None)
        self.graph_description.update(self.selected)
        self._update_actions()

    def _update_actions(self) -> None:
        """Enable what the engine says can be done to at least one selected task now."""
        tasks = self.document.tasks  # the scene's tasks: a node may come before the bridge hears
        infos = [tasks[t] for t in self.selected if t in tasks]
        allowed = self.controller.allowed_actions([info.id for info in infos])
        self.act_cancel.setEnabled(Action.CANCEL in allowed)
        self.act_retry.setEnabled(Action.RETRY in allowed)
        self.act_run_now.setEnabled(Action.RUN_NOW in allowed)
        self.act_pause_task.setEnabled(bool({Action.PAUSE, Action.RESUME} & allowed))
        self._update_retry_failed()
        why = self.controller.can_edit(infos[0].id) if len(infos) == 1 else None
        self.act_edit.setEnabled(len(infos) == 1 and why is None)
        self.act_edit.setStatusTip(
            (why or "Change the selected task") if len(infos) == 1 else "Select one task to edit it"
        )
        self.act_remove.setEnabled(Action.REMOVE in allowed)
        self._update_run_again([info.id for info in infos], allowed)
        self.act_delete_edge.setEnabled(self.scene.selected_edge is not None or bool(infos))
        self._apply_refusal()
        self._apply_past_run()

    def _refuse_undo(self, _can: bool = False) -> None:
        # The stack may still signal while the window's actions are being deleted.
        if shiboken6.isValid(self.act_undo) and shiboken6.isValid(self.act_redo):
            self._apply_refusal()
            self._apply_past_run()

    def _apply_refusal(self) -> None:
        """A window that only watches a run (another process owns it) disables what it
        would refuse: adding tasks, removing them, saving the file, undo and redo; the
        tip says why."""
        refusal = self.controller.edit_refusal()
        if not refusal:
            return
        for action in (
            self.act_add,
            self.act_remove,
            self.act_save,
            self.act_save_as,
            self.act_undo,
            self.act_redo,
        ):
            action.setEnabled(False)
            action.setStatusTip(refusal)
            action.setToolTip(refusal)

    def _update_run_again(self, ids, allowed) -> None:
        """Run again, Retry and Run now follow the engine's answer, and each says why
        (the engine's words) when it cannot act."""
        why = why_not(self.scheduler, ids)
        for action, tip in (
            (self.act_clear, "Run the selected finished tasks again in this run (Clear)"),
            (self.act_clear_downstream, "Run them and everything after them again (Clear)"),
        ):
            action.setEnabled(why is None)
            action.setStatusTip(why or tip)
            action.setToolTip(why or tip)
        # Only a settled task can be cleared: the bridge's counts (kept per batch) say
        # whether there is one, so a run with none settled (a big file just opened) scans
        # nothing here on every selection; with some, the scan stops at the first.
        counts = self.bridge.state_counts()
        tasks = self.bridge.tasks
        self.act_clear_all.setEnabled(
            any(n for state, n in counts.items() if state.settled)
            and any(why_not(self.scheduler, [t]) is None for t in tasks if tasks[t].state.settled)
        )
        for action, kind, tip in (
            (self.act_retry, Action.RETRY, "Run the selected failed, skipped or cancelled tasks"),
            (self.act_run_now, Action.RUN_NOW, "Run the selected tasks now"),
        ):
            reason = None if kind in allowed else self._why_not_action(ids, kind)
            action.setStatusTip(reason or tip)
            action.setToolTip(reason or tip)

    def _why_not_action(self, ids, kind) -> str:
        if not ids:
            return "Select a task first"
        try:
            return self.scheduler.why_not(ids[0], kind) or ""
        except KeyError:  # gone since the window last heard of it
            return f"{ids[0]} is gone"

    def _update_retry_failed(self) -> None:
        self.act_retry_failed.setEnabled(self.bridge.state_counts()[S.FAILED] > 0)
        self._apply_past_run()

    def _pause_all(self, paused: bool) -> None:
        self.dispatcher_paused = paused
        self.controller.pause_all(paused)
        self.act_pause_all.setText("Resume all" if paused else "Pause all")
        self._show_paused(paused)
        self._refresh_status()

    def _show_paused(self, paused: bool) -> None:
        """The graph says when nothing starts: a banner, and ready cards read "paused"."""
        self.pause_bar.setVisible(paused and self.past_run is None)
        self.scene.set_dispatcher_paused(paused)

    def _on_paused_changed(self, paused: bool) -> None:
        """The engine's dispatcher was paused or resumed (here, or by whoever owns it)."""
        self.dispatcher_paused = paused
        blocker = QSignalBlocker(self.act_pause_all)
        self.act_pause_all.setChecked(paused)
        del blocker
        self.act_pause_all.setText("Resume all" if paused else "Pause all")
        self._show_paused(paused)
        self._refresh_status()

    def refresh_actions(self) -> None:
        """Enable actions anew (what the engine allows may have changed without an event)."""
        self._update_actions()

    def _delete_selection(self) -> None:
        """Delete: the selected edge if there is one, else the selected tasks."""
        if self.scene.selected_edge is not None:
            self.controller.disconnect_tasks(*self.scene.selected_edge)
        elif self.selected:
            self.remove_tasks(list(self.selected))

    def remove_tasks(self, ids) -> None:
        """Remove tasks; finished ones (their outcome is shown, and would go from the graph)
        only once the person agrees: a window-modal question, not blocking
        (``remove_question``). A task between others (its downstream would wait for
        nothing and start first) is asked about too: the default connects its upstream
        to its downstream, in the same undo step. Undo puts them back as they were."""
        ids = list(ids)
        tasks = self.document.tasks
        finished = [t for t in ids if t in tasks and tasks[t].state.settled]
        pairs = self.controller.bridging_edges(ids)
        if not finished and not pairs:
            self.controller.remove_tasks(ids)
            return
        box = QMessageBox(self)
        box.setObjectName("remove_question")
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle("Remove tasks")
        count = len(ids)
        names = ", ".join(ids) if count <= 3 else f"{count} tasks"
        box.setText(f"Remove {names}?")
        info = []
        if finished:
            states = ", ".join(f"{t} ({tasks[t].state.name.lower()})" for t in finished)
            info.append(
                f"{states} finished in this run: the task and its edges leave the graph (and"
                " the file at the next Save)."
            )
        if pairs:
            waiting = ", ".join(dict.fromkeys(d for _, d in pairs))
            info.append(
                f"Without its edges {waiting} would wait for nothing and start first on the"
                f" next run; connecting keeps the order ({pairs_text(pairs)})."
            )
        info.append("Undo (Ctrl+Z) puts everything back as it was, nothing runs.")
        box.setInformativeText(" ".join(info))
        box.setStandardButtons(QMessageBox.StandardButton.Cancel)
        connect = None
        if pairs:
            connect = box.addButton(
                f"Remove {names} and connect {pairs_text(pairs)}", QMessageBox.ButtonRole.AcceptRole
            )
            connect.setObjectName("removeAndConnect")
        remove = box.addButton("Remove", QMessageBox.ButtonRole.DestructiveRole)
        if connect is not None:
            box.setDefaultButton(connect)
        else:
            box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

        def answered(_result=None) -> None:
            clicked = box.clickedButton()
            if clicked is not None and clicked is connect:
                self.controller.remove_tasks(ids, connect=True)
            elif clicked is remove:
                self.controller.remove_tasks(ids)
            self.remove_question = None

        box.finished.connect(answered)
        self.remove_question = box
        box.open()

    def relayout(self) -> None:
        """Every node back to the layout's place: dragged ones too (one undo step)."""
        moves = {tid: (pin, None) for tid, pin in self.scene.pins.items()}
        self.scene.pin_many(dict.fromkeys(moves))
        self.controller.move_nodes(self.scene, moves)  # already shown: recorded for undo
        self.scene.relayout()

    def _focus_search(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def _find(self) -> None:
        found = self.graph_view.find(self.search.text())
        if found is None:
            self._show_message(f"No task matches “{self.search.text()}”", True)

    def _show_connect_hint(self, text: str) -> None:
        """A drag's hint stays exactly while it holds: no timeout (it said "Release to
        connect" for 2 s after the drag ended, and vanished while still true); an empty
        hint takes it away, but never another message shown since."""
        bar = self.statusBar()
        if text:
            self._connect_hint = text
            bar.showMessage(text)
        elif getattr(self, "_connect_hint", "") and bar.currentMessage() == self._connect_hint:
            bar.clearMessage()
            self._connect_hint = ""

    def _show_message(self, text: str, error: bool) -> None:
        self.statusBar().showMessage(("⚠ " if error else "") + text, 6000 if error else 3000)

    def _clock_text(self, at: float) -> str:
        wall = self.bridge.clock_to_wall(at)
        return time.strftime("%H:%M:%S", time.localtime(wall)) + f".{int(wall * 1000) % 1000:03d}"

    # -- dialogs ---------------------------------------------------------------------

    def _running_for(self, tid: str) -> float | None:
        """Seconds the task's running attempt has taken (for its node), if it runs."""
        attempts = self.bridge.attempts(tid)
        if not attempts or attempts[-1].outcome != Outcome.RUNNING:
            return None
        return max(0.0, self.bridge.clock_now() - attempts[-1].started)

    # -- the workflow file ---------------------------------------------------------------

    # -- problems of a workflow file ------------------------------------------------------

    # -- theme and settings -------------------------------------------------------------
