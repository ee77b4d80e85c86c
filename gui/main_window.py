"""The main window: graph in the middle, inspector right, timeline and event log below.

Panels only show state and emit what the user wants; the Controller calls the
engine. State arrives only through the EngineBridge.
"""

from __future__ import annotations

import time
from pathlib import Path

import shiboken6
from PySide6.QtCore import (
    QByteArray,
    QSettings,
    QSignalBlocker,
    QStringListModel,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QBoxLayout,
    QCompleter,
    QDockWidget,
    QFileDialog,
    QLineEdit,
    QMainWindow,
    QMenu,
    QMessageBox,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from taskloom.engine import Action, Outcome, TaskState
from taskloom.engine.run_api import RunInterface

from .accessibility import GraphDescription, label_window
from .app_settings import user_settings
from .bridge import EngineBridge
from .clear import ClearQuestion, why_not
from .close_question import CloseQuestion
from .controller import Controller
from .document import WorkflowDocument
from .event_log import EventLog
from .fix_task import offers_run_again
from .forecast_view import ForecastView
from .graph.export import export_graph
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
from .task_list import TaskList
from .timeline import LOOK_AHEAD, Timeline, short_duration

S = TaskState


class MainWindow(QMainWindow):
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
        self._structure_timer = QTimer(self)
        self._structure_timer.setSingleShot(True)
        self._structure_timer.timeout.connect(self._on_structure)
        self._make_actions()
        self._make_toolbar_and_menus()
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
    def _dock(self, title: str, widget: QWidget, area) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"{widget.objectName()}Dock")
        dock.setWidget(widget)
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        )
        self.addDockWidget(area, dock)
        return dock

    def _action(self, name, text, icon_name, shortcut, slot, tip="", checkable=False) -> QAction:
        action = QAction(icon(icon_name), text, self)
        action.setObjectName(name)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        shortcut_text = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
        action.setToolTip(f"{tip or text} ({shortcut_text})" if shortcut_text else tip or text)
        action.setStatusTip(tip or text)
        action.setCheckable(checkable)
        (action.toggled if checkable else action.triggered).connect(slot)
        self.addAction(action)
        return action

    def _make_actions(self) -> None:
        a = self._action
        self.act_add = a(
            "addTask",
            "Add task…",
            "add-task",
            "Ctrl+N",
            self.add_task_dialog,
            "Add a task: command or callable, schedule, retries, dependencies",
        )
        self.act_cancel = a(
            "cancelTask",
            "Cancel",
            "cancel-task",
            "Ctrl+K",
            lambda: self.controller.cancel(self.selected),
            "Cancel the selected tasks",
        )
        self.act_retry = a(
            "retryTask",
            "Retry",
            "retry-task",
            "Ctrl+R",
            lambda: self.controller.retry(self.selected),
            "Run the selected failed, skipped or cancelled tasks again",
        )
        self.act_retry_failed = a(
            "retryFailed",
            "Retry failed",
            "retry-failed",
            "Ctrl+Shift+R",
            lambda: self.controller.retry_failed(self.selected),
            "Retry the failed tasks upstream of the selection (or all), and so what they skipped",
        )
        self.act_clear = a(
            "clearTask",
            "Run again",
            "retry-task",
            "F5",
            lambda: self.clear_question.ask(self.selected, False, "task"),
            "Run the selected finished tasks again in this run (Clear)",
        )
        self.act_clear_downstream = a(
            "clearDownstream",
            "Run again with downstream",
            "retry-failed",
            "Shift+F5",
            lambda: self.clear_question.ask(self.selected, True, "task and downstream"),
            "Run the selected finished tasks and everything after them again (Clear)",
        )
        self.act_clear_all = a(
            "clearWorkflow",
            "Run whole workflow again",
            "retry-failed",
            "",
            lambda: self.clear_question.ask(list(self.bridge.tasks), False, "workflow"),
            "Run every finished task of the workflow again in this run (Clear)",
        )
        self.act_edit = a(
            "editTask",
            "Edit task…",
            "edit-task",
            "Ctrl+E",
            self.edit_task_dialog,
            "Change the selected task (before it starts, or once it has settled)",
        )
        self.act_remove = a(
            "removeTask",
            "Remove task",
            "remove-task",
            "Ctrl+Del",
            lambda: self.remove_tasks(list(self.selected)),
            "Take the selected tasks out of the engine (Delete)",
        )
        self.act_export = a(
            "exportGraph",
            "Export graph…",
            "export-graph",
            "",
            self._export_graph,
            "Save a picture of the whole graph (PNG or SVG)",
        )
        self.act_run_now = a(
            "runNow",
            "Run now",
            "run-now",
            "Ctrl+Return",
            lambda: self.controller.run_now(self.selected),
            "Run the selected tasks now instead of at their time",
        )
        self.act_pause_task = a(
            "pauseTask",
            "Pause/resume task",
            "pause-task",
            "Ctrl+Shift+P",
            lambda: self.controller.toggle_pause(self.selected),
            "Hold the selected tasks, or let them go again",
        )
        self.act_pause_all = a(
            "pauseAll",
            "Pause all",
            "pause-all",
            "Ctrl+P",
            self._pause_all,
            "Pause or resume the whole dispatcher",
            checkable=True,
        )
        self.act_open = a(
            "openWorkflow",
            "Open workflow…",
            "open-workflow",
            "Ctrl+O",
            self._open_workflow,
            "Open a workflow file (TOML)",
        )
        self.act_save = a(
            "saveWorkflow",
            "Save",
            "save-workflow",
            "Ctrl+S",
            self._save_workflow,
            "Save the workflow to its file (TOML); asks where when it has none",
        )
        self.act_save_as = a(
            "saveWorkflowAs",
            "Save as…",
            "save-workflow",
            "Ctrl+Shift+S",
            self._save_workflow_as,
            "Save the workflow to another file (paths are rebased to its folder)",
        )
        self.act_undo = self.controller.undo_stack.createUndoAction(self, "Undo")
        self.act_undo.setObjectName("undo")
        self.act_undo.setIcon(icon("undo"))
        self.act_undo.setShortcut(QKeySequence("Ctrl+Z"))
        self.act_redo = self.controller.undo_stack.createRedoAction(self, "Redo")
        self.act_redo.setObjectName("redo")
        self.act_redo.setIcon(icon("redo"))
        self.act_redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        for action in (self.act_undo, self.act_redo):
            self.addAction(action)
        self.act_delete_edge = a(
            "deleteEdge",
            "Delete",
            "delete-edge",
            "Delete",
            self._delete_selection,
            "Remove the selected dependency, or else the selected tasks",
        )
        self.act_zoom_in = a("zoomIn", "Zoom in", "zoom-in", "Ctrl+=", self.graph_view.zoom_in)
        self.act_zoom_in.setShortcuts([QKeySequence("Ctrl+="), QKeySequence("Ctrl++")])
        self.act_zoom_out = a("zoomOut", "Zoom out", "zoom-out", "Ctrl+-", self.graph_view.zoom_out)
        self.act_fit = a(
            "fitView", "Fit graph", "zoom-fit", "Ctrl+0", lambda: self.graph_view.fit(False)
        )
        self.act_find = a("findTask", "Find task", "find", "Ctrl+F", self._focus_search)
        self.act_relayout = a(
            "relayout",
            "Re-layout",
            "relayout",
            "Ctrl+L",
            self.relayout,
            "Lay the whole graph out again (nodes stay put after edits until then)",
        )

    def _make_toolbar_and_menus(self) -> None:
        bar = self.addToolBar("Main")
        bar.setObjectName("mainToolbar")
        bar.setMovable(False)
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        for action in (
            self.act_start,
            None,
            self.act_open,
            self.act_save,
            None,
            self.act_add,
            self.act_run_now,
            self.act_cancel,
            self.act_retry,
            self.act_pause_task,
            None,
            self.act_pause_all,
            None,
            self.act_undo,
            self.act_redo,
        ):
            bar.addSeparator() if action is None else bar.addAction(action)
        for action in (
            self.act_open,
            self.act_save,
            self.act_pause_task,
            self.act_undo,
            self.act_redo,
        ):
            _icon_only(bar.widgetForAction(action))
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        bar.addWidget(spacer)
        for action in (self.act_relayout, self.act_zoom_out, self.act_zoom_in, self.act_fit):
            bar.addAction(action)
            _icon_only(bar.widgetForAction(action))
        self.search = QLineEdit()
        self.search.setObjectName("search")
        self.search.setPlaceholderText("Find task (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self.search.setFixedWidth(200)
        self.search.addAction(icon("find"), QLineEdit.ActionPosition.LeadingPosition)
        self.search.returnPressed.connect(self._find)
        self.search_names = QStringListModel(self)
        completer = QCompleter(self.search_names, self.search)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.search.setCompleter(completer)
        bar.addWidget(self.search)

        menus = self.menuBar()
        file_menu = menus.addMenu("&File")
        new_action = file_menu.addAction("New workflow")
        new_action.setObjectName("newWorkflow")
        new_action.setShortcut(QKeySequence("Ctrl+Shift+N"))  # Ctrl+N adds a task
        new_action.triggered.connect(lambda: self.newRequested.emit())
        file_menu.addAction(self.act_open)
        # Filled by the app layer (set_recent): the workflows opened lately.
        self.recent_menu = file_menu.addMenu("Open &recent")
        self.recent_menu.setObjectName("recentMenu")
        self.recent_menu.setEnabled(False)
        file_menu.addActions([self.act_save, self.act_save_as, self.act_export])
        file_menu.addSeparator()
        preferences = file_menu.addAction("Preferences…", self.show_preferences)
        preferences.setObjectName("preferences")
        file_menu.addSeparator()
        quit_action = file_menu.addAction("Quit")
        quit_action.setObjectName("quit")
        # Ctrl+Q everywhere (the platform's Quit key is empty on some desktops).
        quit_action.setShortcuts(
            list(
                dict.fromkeys(
                    [
                        QKeySequence("Ctrl+Q"),
                        *QKeySequence.keyBindings(QKeySequence.StandardKey.Quit),
                    ]
                )
            )
        )
        quit_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        quit_action.triggered.connect(self.close)
        self.act_quit = quit_action
        edit = menus.addMenu("&Edit")
        edit.addActions([self.act_undo, self.act_redo, self.act_delete_edge, self.act_find])
        task = menus.addMenu("&Task")
        task.addAction(self.act_start)
        task.addSeparator()
        task.addActions([self.act_add, self.act_edit, self.act_remove])
        task.addSeparator()
        task.addActions(
            [
                self.act_run_now,
                self.act_cancel,
                self.act_retry,
                self.act_retry_failed,
                self.act_pause_task,
            ]
        )
        task.addSeparator()
        task.addActions([self.act_clear, self.act_clear_downstream, self.act_clear_all])
        task.addSeparator()
        task.addAction(self.act_pause_all)
        view = menus.addMenu("&View")
        view.addActions([self.act_zoom_in, self.act_zoom_out, self.act_fit, self.act_relayout])
        view.addSeparator()
        docks = [self.inspector_dock, self.timeline_dock, self.event_dock, self.task_dock]
        if self.runs_view is not None:
            docks.append(self.runs_dock)
        for dock in docks:
            view.addAction(dock.toggleViewAction())
        view.addSeparator()
        view.addAction(self.timeline.by_worker_action)
        ahead = view.addMenu("Timeline &looks ahead")
        ahead.setObjectName("lookAheadMenu")
        for name in LOOK_AHEAD:  # hour, day, week
            action = ahead.addAction(f"the next &{name}")
            action.setObjectName(f"lookAhead_{name}")
            seconds = LOOK_AHEAD[name]
            action.triggered.connect(lambda _c=False, s=seconds: self.timeline.look_ahead(s))

    def _wire(self) -> None:
        b = self.bridge
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
        if not self._recolour_timer.isActive():
            nodes = len(self.scene.nodes)
            self._recolour_timer.start(0 if nodes < 500 else min(250, nodes // 20))
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
        self.scene.update_tasks(changed)  # new tasks and edges come from the document

    def _schedule_structure(self, _change=None) -> None:
        # Tasks added one by one to a big graph would re-lay it out every batch;
        # gather them for a moment instead. Small graphs update at once.
        if not self._structure_timer.isActive():
            self._structure_timer.start(0 if len(self.scene.nodes) < 500 else 300)

    def _on_structure(self) -> None:
        tasks = self.document.tasks
        self.search_names.setStringList(sorted(tasks))
        self.scene.set_tasks(tasks)
        self.timeline.set_tasks(tasks)
        self.task_list.set_tasks(tasks)
        self.selected = [t for t in self.selected if t in tasks]
        if self.past_run is not None:
            self._colour_past_run()
        self.inspector.refresh()
        self._update_actions()

    # -- a past run, read-only ----------------------------------------------------------
    def live_run_id(self) -> int | None:
        return self.scheduler.run

    def open_past_run(self, run: int) -> None:
        """Show stored run ``run`` read-only (read off the GUI thread); the live run's
        number goes back to the live run."""
        if run == self.live_run_id():
            self.back_to_live()
            return
        if self.history_reader is None:
            return
        title = self.document.workflow.name if self.document.workflow is not None else ""
        self._past_request = self.history_reader.request_run(run, title or self._title)

    def _past_run_read(self, rid: int, past) -> None:
        if rid != self._past_request:
            return  # another run was asked for since
        if past is None:
            self._show_message("The run history is unavailable: the run was not opened", True)
            return
        self._show_past_run(past)

    def _show_past_run(self, past: PastRun) -> None:
        self.past_run = past
        self._colour_past_run()
        self.forecast_view.set_hidden(True)
        self.timeline.show_past_run(past, self.timeline.canvas.wall_offset())
        self.past_run_bar.set_run(past)
        self.past_run_bar.show()
        self.pause_bar.setVisible(False)
        self.graph_view.read_only = True
        self._update_actions()
        if self.selected:
            self._on_selection(self.selected)

    def _colour_past_run(self) -> None:
        """The graph's cards as the past run left them (its last attempts)."""
        past = self.past_run
        if past is None:
            return
        tasks = self.document.tasks
        states = {tid: past.state_of(tid) for tid in tasks}
        # A task that did not run after an upstream that failed was skipped.
        stopped = (S.FAILED, S.SKIPPED, S.CANCELLED)
        changed = True
        while changed:
            changed = False
            for tid, info in tasks.items():
                if states[tid] is S.PENDING and any(states.get(d) in stopped for d in info.deps):
                    states[tid] = S.SKIPPED
                    changed = True
        infos = {}
        for tid, info in tasks.items():
            last = past.last(tid)
            infos[tid] = info._replace(
                state=states[tid],
                attempt=0 if last is None else last.number,
                error=None if last is None else last.error,
                run_at=None,
                paused=False,
            )
        self.scene.update_tasks(infos)

    def _past_info(self, info):
        """The inspector's task as the past run shown left it (None: the live run)."""
        if self.past_run is None:
            return None
        shown = self.scene.tasks.get(info.id)
        return None if shown is None else (shown, self.past_run.run)

    def back_to_live(self) -> None:
        """Leave the past run: the live run as it is now, editing and steering back."""
        if self.past_run is None:
            return
        self.past_run = None
        self.past_run_bar.hide()
        self.graph_view.read_only = False
        live = self.bridge.tasks
        self._pending_recolour = {}
        self.scene.update_tasks({t: live.get(t, i) for t, i in self.document.tasks.items()})
        self.forecast_view.set_hidden(False)
        self.timeline.show_live()
        self.pause_bar.setVisible(self.dispatcher_paused)
        for action, (enabled, tip, status) in self._past_actions.items():
            action.setEnabled(enabled)
            action.setToolTip(tip)
            action.setStatusTip(status)
        self._past_actions = {}
        self._update_actions()
        if self.selected:
            self._on_selection(self.selected)

    def _steering_actions(self) -> list:
        return [
            self.act_start,
            self.act_add,
            self.act_cancel,
            self.act_retry,
            self.act_retry_failed,
            self.act_clear,
            self.act_clear_downstream,
            self.act_clear_all,
            self.act_edit,
            self.act_remove,
            self.act_run_now,
            self.act_pause_task,
            self.act_pause_all,
            self.act_undo,
            self.act_redo,
            self.act_delete_edge,
            self.act_relayout,
        ]

    def _apply_past_run(self) -> None:
        """While a past run is shown, every editing and steering action is off and says
        why (what they were is put back by Back to the live run)."""
        past = self.past_run
        if past is None or not hasattr(self, "act_relayout"):
            return
        why = f"Run {past.run} is shown read-only: Back to the live run to change anything"
        for action in self._steering_actions():
            if action not in self._past_actions:
                self._past_actions[action] = (
                    action.isEnabled(),
                    action.toolTip(),
                    action.statusTip(),
                )
            action.setEnabled(False)
            action.setToolTip(why)
            action.setStatusTip(why)

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

    def seen(self) -> bool:
        """Whether a person can see the window (shown, not minimised): timers that
        only redraw stop while it is not."""
        return self.isVisible() and not self.isMinimized()

    def _tick_inspector(self) -> None:
        self.inspector.tick()
        self._pace_inspector()

    def _pace_inspector(self) -> None:
        """Tick the inspector when its countdown or a running attempt's duration next
        changes, not every second; not at all while the window is not seen."""
        if not hasattr(self, "_inspector_timer"):
            return  # still being built
        seconds = self.inspector.changes_in() if self.seen() else None
        if seconds is None:
            self._inspector_timer.stop()
        else:
            self._inspector_timer.start(int(min(seconds, 86400.0) * 1000))

    def _seen_changed(self) -> None:
        """Shown, hidden, minimised or restored: timers start or stop (and what they
        would have redrawn meanwhile is drawn now)."""
        if not hasattr(self, "_inspector_timer"):
            return
        if self.seen():
            self.inspector.tick()
        self._refresh_status()
        self._pace_inspector()
        self.timeline.wake()

    def set_started(self, started: bool, resumed: bool = False) -> None:
        """Whether the run's schedule runs; until it does, a banner offers Start."""
        self.started = started
        self.act_start.setEnabled(not started)
        self.act_start.setVisible(not started)
        self._apply_past_run()
        self.start_bar.set_text(self._title, resumed)
        self.start_bar.setVisible(not started)
        self.notices.update_tray()

    def set_recent(self, paths) -> None:
        """File > Open recent lists ``paths`` (newest first); choosing one opens it."""
        self.recent_menu.clear()
        for path in paths:
            action = self.recent_menu.addAction(f"{Path(path).stem}  ({path})")
            action.setData(str(path))
            action.triggered.connect(lambda _on=False, p=str(path): self.openRequested.emit(p))
        self.recent_menu.setEnabled(bool(paths))

    def bring_to_front(self) -> None:
        """A click on the tray or a notification: the window, as it was, in front."""
        if self.isMinimized() or not self.isVisible():
            self.showNormal()
        self.raise_()
        self.activateWindow()

    def show_preferences(self):
        from .preferences import PreferencesDialog

        dialog = PreferencesDialog(self.settings, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.accepted.connect(self.notices.update_tray)
        dialog.open()
        self.preferences_dialog = dialog
        return dialog

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
        tasks = self.bridge.tasks  # only a settled task can be cleared: ask about those
        self.act_clear_all.setEnabled(
            any(why_not(self.scheduler, [t]) is None for t in tasks if tasks[t].state.settled)
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
        self.act_retry_failed.setEnabled(
            any(i.state is S.FAILED for i in self.bridge.tasks.values())
        )
        self._apply_past_run()

    def _task_menu(self, global_pos) -> None:
        menu = QMenu(self)
        menu.addActions(
            [
                self.act_run_now,
                self.act_cancel,
                self.act_retry,
                self.act_retry_failed,
                self.act_pause_task,
            ]
        )
        menu.addSeparator()
        menu.addActions([self.act_clear, self.act_clear_downstream])
        menu.addSeparator()
        menu.addActions([self.act_edit, self.act_remove])
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(global_pos)
        self.task_menu = menu

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
        (``remove_question``). Undo puts them back as they were."""
        ids = list(ids)
        tasks = self.document.tasks
        finished = [t for t in ids if t in tasks and tasks[t].state.settled]
        if not finished:
            self.controller.remove_tasks(ids)
            return
        box = QMessageBox(self)
        box.setObjectName("remove_question")
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle("Remove tasks")
        count = len(ids)
        box.setText(f"Remove {', '.join(ids) if count <= 3 else f'{count} tasks'}?")
        states = ", ".join(f"{t} ({tasks[t].state.name.lower()})" for t in finished)
        box.setInformativeText(
            f"{states} finished in this run: the task and its edges leave the graph (and the "
            "file at the next Save). Undo (Ctrl+Z) puts them back as they were, nothing runs."
        )
        box.setStandardButtons(QMessageBox.StandardButton.Cancel)
        remove = box.addButton("Remove", QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

        def answered(_result=None) -> None:
            if box.clickedButton() is remove:
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
    def add_task_dialog(self) -> None:
        from .add_task import AddTaskDialog  # the dialog is big; load it on first use

        refusal = self.controller.edit_refusal()
        if refusal:  # say so before the form is filled in, not after
            self._show_message(f"Cannot add a task: {refusal}", True)
            return
        dialog = AddTaskDialog(list(self.document.tasks), self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.specReady.connect(lambda spec: self.controller.add_task(self._in_file_folder(spec)))
        dialog.open()
        self.add_dialog = dialog

    def _in_file_folder(self, definition):
        """A command added here runs in the workflow file's folder, as the file's own
        tasks do (not wherever the app was started)."""
        from dataclasses import replace

        from taskloom.engine.command import Command

        action = definition.action
        if self.document.path is None or not isinstance(action, Command) or action.cwd:
            return definition
        folder = str(self.document.base_dir)
        command = Command(action.argv, shell=action.shell, cwd=folder, env=action.env)
        return replace(definition, action=command)

    def edit_task_dialog(self) -> None:
        from .add_task import AddTaskDialog

        if len(self.selected) != 1:
            return
        tid = self.selected[0]
        why = self.controller.can_edit(tid)
        if why is not None:
            self._show_message(f"Cannot edit: {why}", True)
            return
        try:
            spec = self.scheduler.definition(tid)
        except KeyError as exc:  # removed since it was selected
            self._show_message(f"Cannot edit: {exc.args[0]}", True)
            return
        dialog = AddTaskDialog(
            list(self.document.tasks),
            self,
            spec=spec,
            task_id=tid,
            submit=lambda new: self._submit_edit(tid, new),
        )
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.edit_dialog = dialog

    def _submit_edit(self, tid: str, new):
        """The edit dialog's OK: a FAILED task fixed is offered to run again (once the
        dialog has closed)."""
        before = self.document.tasks.get(tid)
        refused = self.controller.edit_task(tid, new)
        if refused is None and before is not None and offers_run_again(before.state):
            QTimer.singleShot(0, self, lambda: self.clear_question.ask_fixed(tid))
        return refused

    def _export_graph(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Export graph", "graph.png", "PNG image (*.png);;SVG drawing (*.svg)"
        )
        if path:
            self.export_graph(path)

    def export_graph(self, path) -> bool:
        try:
            export_graph(self.scene, path)
        except (OSError, ValueError) as exc:
            self._show_message(f"Cannot export: {exc}", True)
            return False
        self._show_message(f"Exported the graph to {path}", False)
        return True

    def _running_for(self, tid: str) -> float | None:
        """Seconds the task's running attempt has taken (for its node), if it runs."""
        attempts = self.bridge.attempts(tid)
        if not attempts or attempts[-1].outcome != Outcome.RUNNING:
            return None
        return max(0.0, self.bridge.clock_now() - attempts[-1].started)

    def _open_workflow(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open workflow", "", "Workflows (*.toml)")
        if path:
            self.openRequested.emit(path)

    def _save_workflow(self) -> None:
        """Save writes the open file; a workflow without one asks where (Save As)."""
        if self.document.path is None:
            self._save_workflow_as()
        else:
            self.save_workflow()

    def _save_workflow_as(self) -> None:
        # The dialog opens in the file's folder with a new name, never on the file
        # itself: Enter must not overwrite what Save As was chosen to keep.
        path = self.document.path
        folder = path.resolve().parent if path is not None else Path.cwd()
        stem = path.stem if path is not None else self.document.name
        start = str(folder / f"{stem}-copy.toml")
        chosen, _ = QFileDialog.getSaveFileName(
            self, "Save workflow as", start, "Workflows (*.toml)"
        )
        if chosen:
            self.save_workflow(chosen)

    # -- the workflow file ---------------------------------------------------------------
    @property
    def workflow(self):
        """The engine.workflow.Workflow shown, if it came from (or went to) a file."""
        return self.document.workflow

    @workflow.setter
    def workflow(self, value) -> None:
        if value is not None:
            self.document.attach(value)

    def attach_workflow(self, workflow) -> None:
        """Show ``workflow`` (already scheduled on the engine): its ``pos`` keys place
        nodes, and Save writes it."""
        self.scene.pin_many(dict(workflow.positions))
        self.document.attach(workflow)

    def sync_workflow(self, workflow) -> list[str]:
        """Make the document's workflow what the window shows; returns the tasks left
        out (those that run a Python object)."""
        return self.document.sync()

    def save_workflow(self, path=None) -> bool:
        """Write the workflow as shown (atomically, keeping the file's comments and
        formatting); explains a failure in the status bar."""
        try:
            saved, left_out = self.document.save(path)
        except (OSError, ValueError) as exc:
            self._show_message(f"Cannot save: {exc}", True)
            return False
        note = f" (left out {', '.join(left_out)}: Python objects)" if left_out else ""
        self._show_message(f"Saved {saved}{note}", bool(left_out))
        return True

    def _update_title(self) -> None:
        """ "name — /path/to/file.toml[*] — Taskloom": which file is open, and (*) unsaved."""
        path = self.document.path
        name = self._title or (self.document.name if self.document.workflow else "")
        parts = [part for part in (name, str(path) if path is not None else "") if part]
        if not parts:
            self.setWindowTitle("Taskloom[*]")
            return
        self.setWindowTitle(" — ".join([*parts[:-1], f"{parts[-1]}[*]", "Taskloom"]))

    # -- problems of a workflow file ------------------------------------------------------
    def show_problems(self, path, problems) -> None:
        """List every problem of the file at ``path`` in a panel (not the status bar)."""
        from .problems import ProblemsPanel

        if getattr(self, "problems_dock", None) is None:
            self.problems = ProblemsPanel()
            self.problems.taskActivated.connect(self._jump_to_problem)
            self.problems.reloadRequested.connect(self.openRequested)
            self.problems_dock = self._dock(
                "Problems", self.problems, Qt.DockWidgetArea.BottomDockWidgetArea
            )
            self.tabifyDockWidget(self.event_dock, self.problems_dock)
        self.problems.show_problems(path, problems)
        self.problems_dock.show()
        self.problems_dock.raise_()
        self.resizeDocks([self.problems_dock], [720], Qt.Orientation.Horizontal)
        self.resizeDocks([self.problems_dock], [300], Qt.Orientation.Vertical)
        self._show_message(f"{Path(path).name} has {len(problems)} problem(s): see Problems", True)

    def _jump_to_problem(self, task: str) -> None:
        path, shown = self.document.path, self.problems.path
        same_file = (
            path is not None and shown is not None and Path(shown).resolve() == path.resolve()
        )
        if same_file and task in self.bridge.tasks:
            self.select_tasks([task], centre=True)
            return
        self._show_message(f"{task} is in {self.problems.path}", False)

    # -- theme and settings -------------------------------------------------------------
    def _apply_theme(self) -> None:
        self.scene.apply_palette(QGuiApplication.palette())
        self.timeline.update()

    def changeEvent(self, event) -> None:
        if event.type() == event.Type.PaletteChange:
            self._apply_theme()
        super().changeEvent(event)
        if event.type() == event.Type.WindowStateChange:
            self._seen_changed()

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self._seen_changed()

    def _restore_settings(self) -> None:
        geometry = self.settings.value("window/geometry")
        state = self.settings.value("window/state")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        else:
            self.resize(1400, 900)
        if isinstance(state, QByteArray) and not state.isEmpty():
            self.restoreState(state)
            self._fit_docks_on_show = False
        else:
            self._fit_docks_on_show = True

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._seen_changed()
        if getattr(self, "_fit_docks_on_show", False):
            # The default dock sizes suit 1400x900; in a small window they left the
            # graph a sliver. Proportions on the first show, unless a layout was saved.
            self._fit_docks_on_show = False
            width, height = self.width(), self.height()
            self.resizeDocks(
                [self.inspector_dock], [min(340, width // 4)], Qt.Orientation.Horizontal
            )
            # Below 700 px the bottom docks get a fifth: the graph keeps half the height.
            share = height // 3 if height >= 700 else height // 5
            self.resizeDocks([self.timeline_dock], [min(260, share)], Qt.Orientation.Vertical)
            if width < 1000:  # the event log's time, task and event columns in view
                self.resizeDocks([self.event_dock], [width * 2 // 5], Qt.Orientation.Horizontal)

    def save_settings(self) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.sync()

    def closeEvent(self, event) -> None:
        if not self.close_question.may_close():
            event.ignore()
            return
        self.save_settings()
        self.shutdown_views()
        super().closeEvent(event)

    def shutdown_views(self) -> None:
        """Stop listening to the engine; the caller owns the scheduler."""
        self.stop_history()
        self.notices.close()
        self.bridge.close()
        self._status_timer.stop()
        self._inspector_timer.stop()

    def stop_history(self) -> None:
        """The store is about to close: no new reads, no more answers. Does not block;
        ``history_reader.join()`` waits for a read still running. Idempotent."""
        self.timeline.detach_history()
        if self.runs_view is not None:
            self.runs_view.close_view()
        self.forecast_view.close()  # it reads the store's durations too
        if self.history_reader is not None:
            self.history_reader.close()


def _icon_only(button: QWidget | None) -> None:
    if isinstance(button, QToolButton):  # a toolbar's button for an action
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
