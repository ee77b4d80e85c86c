"""The status bar: tasks per state, finished runs per second, busy workers."""

from __future__ import annotations

from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QStatusBar

from taskloom.engine import TaskState

from .style import STATE_GLYPHS, STATE_LABELS, state_text_colour


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

    def update(self, dispatcher_paused: bool) -> None:
        counts = self.bridge.state_counts()
        parts = []
        window = self.counts.palette().color(QPalette.ColorRole.Window)
        for state in TaskState:
            n = counts[state]
            if n:
                colour = state_text_colour(state, [window]).name()
                parts.append(
                    f'<span style="color:{colour}">{STATE_GLYPHS[state]}</span> '
                    f"{n} {STATE_LABELS[state]}"
                )
        self.counts.setText("&nbsp;&nbsp;".join(parts) or "no tasks")
        self.rate.setText(f"{self.bridge.throughput():.1f} runs/s")
        workers = getattr(self.bridge.scheduler, "workers", None)
        running = counts[TaskState.RUNNING]
        self.busy.setText(
            f"workers {min(running, workers)}/{workers} busy" if workers else f"{running} running"
        )
        self.paused.setText("⏸ <b>paused</b>" if dispatcher_paused else "")
        self.paused.setVisible(dispatcher_paused)
