"""The status bar: tasks per state, finished runs per second, busy workers."""

from __future__ import annotations

from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QStatusBar

from taskloom.engine import TaskState

from .style import (
    OWNER_GONE_GLYPH,
    PAUSED_GLYPH,
    STATE_GLYPHS,
    STATE_LABELS,
    owner_gone,
    state_text_colour,
)


class StatusPanel:
    """Permanent widgets on the right of a QStatusBar; ``update()`` re-reads the bridge."""

    def __init__(self, status_bar: QStatusBar, bridge):
        self.bridge = bridge
        self.counts = QLabel()
        self.counts.setObjectName("stateCounts")
        self.rate = QLabel()
        self.rate.setObjectName("throughput")
        self.busy = QLabel()
        self.busy.setObjectName("workersBusy")
        self.paused = QLabel()
        self.paused.setObjectName("pausedBadge")
        for label in (self.paused, self.counts, self.rate, self.busy):
            status_bar.addPermanentWidget(label)
        self._colours: tuple[str, dict[TaskState, str]] = ("", {})  # per window colour

    def _state_colours(self, window) -> dict[TaskState, str]:
        """State colours readable on ``window`` (worked out once per palette: they
        were most of an update, which runs with every batch of a busy run)."""
        if self._colours[0] != window.name():
            colours = {s: state_text_colour(s, [window]).name() for s in TaskState}
            self._colours = (window.name(), colours)
        return self._colours[1]

    def update(self, dispatcher_paused: bool) -> None:
        counts = self.bridge.state_counts()
        running = counts[TaskState.RUNNING]
        busy, _recording = self.bridge.running_split()
        parts = []
        colours = self._state_colours(self.counts.palette().color(QPalette.ColorRole.Window))
        gone = 0
        if not self.bridge.scheduler.owner_alive:  # a watched run, orphaned
            gone = sum(1 for info in self.bridge.tasks.values() if owner_gone(info))
        for state in TaskState:
            n = busy if state is TaskState.RUNNING else counts[state]
            if state is TaskState.READY:
                n -= gone
            if n or (state is TaskState.RUNNING and running):
                colour = colours[state]
                parts.append(
                    f'<span style="color:{colour}">{STATE_GLYPHS[state]}</span> '
                    f"{n} {STATE_LABELS[state]}"
                )
            if state is TaskState.RUNNING and running > busy:
                parts.append(f"{running - busy} recording")
        if gone:
            parts.append(f"{OWNER_GONE_GLYPH} {gone} owner gone")
        self.counts.setText("&nbsp;&nbsp;".join(parts) or "no tasks")
        self.counts.setToolTip(
            "recording: the task's code has ended and its outcome is being written to the"
            " run's store"
            if running > busy
            else ""
        )
        self.rate.setText(f"{self.bridge.throughput():.1f} runs/s")
        workers = self.bridge.scheduler.workers
        self.busy.setText(
            f"workers {min(busy, workers)}/{workers} busy" if workers else f"{busy} running"
        )
        self.paused.setText(f"{PAUSED_GLYPH} <b>paused</b>" if dispatcher_paused else "")
        self.paused.setVisible(dispatcher_paused)
