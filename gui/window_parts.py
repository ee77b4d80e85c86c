"""What the window's parts (the ``window_*`` mixins of ``MainWindow``) may use of each other.

``MainWindow`` is one QMainWindow split by job into mixins: ``window_actions`` (actions,
toolbar, menus), ``window_files`` (the workflow file), ``window_past_run`` (a past run shown
read-only), ``window_dialogs`` (add/edit a task, preferences), ``window_layout`` (docks,
settings, shown/hidden/closed); ``main_window`` keeps construction, the bridge's updates,
selection and the run-action slots. Each mixin derives from ``WindowParts``, which names (for
the type checker only; at run time it is a plain ``object``) the attributes and methods the
parts share, so that each part is checked on its own against what it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtCore import QSettings, QTimer, SignalInstance
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QDockWidget, QMainWindow, QMenu, QWidget

    from .bridge import EngineBridge
    from .clear import ClearQuestion
    from .close_question import CloseQuestion
    from .controller import Controller
    from .document import WorkflowDocument
    from .forecast_view import ForecastView
    from .graph.scene import GraphScene
    from .graph.view import GraphView
    from .history_reader import HistoryReader
    from .inspector import Inspector
    from .notifications import RunNotices
    from .past_run import PastRun, PastRunBar
    from .run_header import RunHeader
    from .runs_view import RunsView
    from .start_bar import PauseBar
    from .timeline import Timeline

    _Base = QMainWindow
else:
    _Base = object


class WindowParts(_Base):
    """The window's shared attributes and methods, declared for the type checker."""

    if TYPE_CHECKING:
        scheduler: Any
        settings: QSettings
        bridge: EngineBridge
        controller: Controller
        document: WorkflowDocument
        scene: GraphScene
        graph_view: GraphView
        timeline: Timeline
        inspector: Inspector
        forecast_view: ForecastView
        notices: RunNotices
        history_reader: HistoryReader | None
        runs_view: RunsView | None
        close_question: CloseQuestion
        clear_question: ClearQuestion
        past_run: PastRun | None
        past_run_bar: PastRunBar
        pause_bar: PauseBar
        run_header: RunHeader
        recent_menu: QMenu
        inspector_dock: QDockWidget
        timeline_dock: QDockWidget
        event_dock: QDockWidget
        task_dock: QDockWidget
        runs_dock: QDockWidget
        selected: list[str]
        dispatcher_paused: bool
        _title: str
        _pending_recolour: dict
        _past_actions: dict
        _status_timer: QTimer
        _inspector_timer: QTimer
        openRequested: SignalInstance
        newRequested: SignalInstance
        act_start: QAction
        act_add: QAction
        act_cancel: QAction
        act_retry: QAction
        act_retry_failed: QAction
        act_clear: QAction
        act_clear_downstream: QAction
        act_clear_all: QAction
        act_edit: QAction
        act_remove: QAction
        act_run_now: QAction
        act_pause_task: QAction
        act_pause_all: QAction
        act_undo: QAction
        act_redo: QAction
        act_delete_edge: QAction
        act_relayout: QAction

        # main_window
        def live_run_id(self) -> int | None: ...
        def select_tasks(self, ids: list[str], centre: bool = False) -> None: ...
        def _on_selection(self, ids: list) -> None: ...
        def _update_actions(self) -> None: ...
        def _refresh_status(self) -> None: ...
        def _pause_all(self, paused: bool) -> None: ...
        def _delete_selection(self) -> None: ...
        def remove_tasks(self, ids) -> None: ...
        def relayout(self) -> None: ...
        def _focus_search(self) -> None: ...
        def _find(self) -> None: ...
        def _show_message(self, text: str, error: bool) -> None: ...

        # window_files
        def _open_workflow(self) -> None: ...
        def _save_workflow(self) -> None: ...
        def _save_workflow_as(self) -> None: ...
        def _export_graph(self) -> None: ...

        # window_dialogs
        def add_task_dialog(self) -> None: ...
        def edit_task_dialog(self) -> None: ...
        def show_preferences(self) -> Any: ...

        # window_layout
        def _dock(self, title: str, widget: QWidget, area) -> QDockWidget: ...
