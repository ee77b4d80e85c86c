"""A past run shown read-only in the window (from the Runs view), and Back to the live run."""

from __future__ import annotations

from taskloom.engine import TaskState

from .past_run import PastRun
from .window_parts import WindowParts

S = TaskState


class WindowPastRun(WindowParts):
    """Part of ``MainWindow`` (a mixin, see ``window_parts``): this module's job."""

    def open_past_run(self, run: int) -> None:
        """Show stored run ``run`` read-only (read off the GUI thread); the live run's
        number goes back to the live run."""
        if run == self.live_run_id():
            self.back_to_live()
            return
        if self.history_reader is None:
            return
        title = self.document.workflow.name if self.document.workflow is not None else ""
        title = title or self._title
        # a backfill's run says so: "Run 4 of etl, backfill 2026-11-01 to 2026-11-07"
        grid = self.runs_view.grid if self.runs_view is not None else None
        label = grid.labels.get(run) if grid is not None else None
        if label:
            title = f"{title}, {label}" if title else label
        self._past_request = self.history_reader.request_run(run, title)

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
        self.run_header.refresh()  # "Live run 3 · …": the header is not the run shown
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
        self.run_header.refresh()
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
