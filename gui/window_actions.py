"""The window's actions, toolbar, menus and the task context menu (built once; their slots live
where their job is)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QCompleter, QLineEdit, QMenu, QSizePolicy, QToolButton, QWidget

from .icons import icon
from .search_names import SearchNames
from .timeline import LOOK_AHEAD
from .window_parts import WindowParts


class WindowActions(WindowParts):
    """Part of ``MainWindow`` (a mixin, see ``window_parts``): this module's job."""

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
        self.search_names = SearchNames(self.search, self)  # read when Find has the focus
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


def _icon_only(button: QWidget | None) -> None:
    if isinstance(button, QToolButton):  # a toolbar's button for an action
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
