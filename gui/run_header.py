"""The run as a whole, above the graph: "Run 3 · running · 12/17 done · 1 failed ·
deadline 23:16 · ETA 21:17 · started 21:16" (the deadline: its ``[workflow] timeout``),
and once it is over its outcome and how long it took
("Run 3 · finished in 2 min 10 s · 16 succeeded · 1 failed").

A run is over when every one-shot task has settled (recurring tasks never settle:
a run with them is "running" for as long as it is started).
"""

from __future__ import annotations

import time

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy

from taskloom.engine import TaskState

from .style import PAUSED_GLYPH, owner_gone

S = TaskState


def duration_text(seconds: float) -> str:
    """ "0.4 s", "45 s", "2 min 10 s", "1 h 05 min"."""
    if seconds < 10:
        return f"{max(0.0, seconds):.1f} s"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def clock_text(at: float, now: float | None = None) -> str:
    """ "05:29" today, "Thu 05:29" on another day (local time)."""
    when = time.localtime(at)
    today = time.localtime(time.time() if now is None else now)
    same_day = when[:3] == today[:3]
    return time.strftime("%H:%M" if same_day else "%a %H:%M", when)


def header_text(
    run: int | None,
    tasks: dict,
    *,
    started: bool,
    paused: bool,
    started_at: float | None,
    finished_at: float | None,
    eta: str = "",
    owner_alive: bool = True,
    deadline: float | None = None,
    tally: tuple[dict, int] | None = None,
    reading: bool = False,
) -> str:
    """The header's text (see the module doc); times are epoch seconds. ``tally``:
    (one-shot tasks per state, recurring tasks) kept by the bridge, else counted here."""
    name = f"Run {run}" if run is not None else "This run"
    recurring = done = failed = skipped = succeeded = gone = 0
    if tally is not None and owner_alive:  # kept by the bridge: no pass per batch
        by_state, recurring = tally
        done = sum(n for state, n in by_state.items() if state.settled)
        failed, skipped = by_state[S.FAILED], by_state[S.SKIPPED]
        succeeded = by_state[S.SUCCEEDED]
        one_shot = sum(by_state.values())
    else:
        for info in tasks.values():  # one pass: a big run has tens of thousands
            if info.recurring:
                recurring += 1
                continue
            state = info.state
            if state.settled:
                done += 1
                if state is S.FAILED:
                    failed += 1
                elif state is S.SKIPPED:
                    skipped += 1
                elif state is S.SUCCEEDED:
                    succeeded += 1
            elif not owner_alive and owner_gone(info):
                gone += 1
        one_shot = len(tasks) - recurring
    parts = [name]
    # Tasks heard of and not read yet (a flood being caught up with): not over.
    over = started and one_shot and done == one_shot and not recurring and not reading
    if not started:
        parts.append("not started")
    elif not owner_alive:
        parts.append("its owner stopped")
    elif over:
        took = ""
        if started_at is not None and finished_at is not None:
            took = f" in {duration_text(finished_at - started_at)}"
        parts.append(("failed" if failed else "finished") + took)
    else:
        parts.append(f"{PAUSED_GLYPH} paused" if paused else "running")
    if one_shot:
        if over:
            parts.append(f"{succeeded} succeeded")
        else:
            parts.append(f"{done}/{one_shot} done")
    if reading:
        parts.append("reading new tasks…")
    if recurring:
        parts.append(f"{recurring} recurring")
    if failed:
        parts.append(f"{failed} failed")
    if skipped:
        parts.append(f"{skipped} skipped")
    if gone:
        parts.append(f"{gone} owner gone")
    if deadline is not None and started and owner_alive:
        if not over:
            parts.append("deadline " + clock_text(deadline))  # a fact: before the ETA, a guess
        elif failed and finished_at is not None and finished_at >= deadline:
            parts.append("deadline passed")
    if eta and started and not over and owner_alive:
        parts.append(eta.split(" (")[0])  # "ETA 21:17:04"
    if started_at is not None and started:
        parts.append("started " + time.strftime("%H:%M", time.localtime(started_at)))
    return " · ".join(parts)


class RunHeader(QLabel):
    """The header label; ``refresh()`` reads the window (called with the status bar)."""

    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.setObjectName("runHeader")
        self.setAccessibleName("Run")
        self.setContentsMargins(8, 3, 8, 3)
        self.window_ = window
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self.full_text = ""
        self._key: tuple | None = None  # what the text was made from
        font = self.font()
        font.setBold(True)
        self.setFont(font)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)

    def refresh(self) -> None:
        w = self.window_
        started = bool(getattr(w, "started", True))
        if started and self.started_at is None:
            self.started_at = time.time()
        tasks = w.bridge.tasks
        counts = w.bridge.state_counts()  # kept per batch by the bridge
        paused = bool(w.dispatcher_paused)
        eta = w.forecast_view.eta.text() if w.forecast_view.eta.isVisible() else ""
        owner_alive = w.scheduler.owner_alive
        past = w.past_run is not None  # the graph shows a past run: this line is the live one
        deadline = w.deadline_at  # when the run's [workflow] timeout passes, if it has one
        counted = tuple(counts.values())
        reading = w.bridge.reading()
        key = (counted, len(tasks), started, paused, eta, owner_alive, past, deadline, reading)
        if key == self._key:
            return  # nothing the text says has changed
        self._key = key
        unsettled = sum(n for state, n in counts.items() if not state.settled)
        tally = w.bridge.one_shot_counts()
        over = bool(tasks) and unsettled == 0 and not tally[1] and not reading
        if over:
            if self.finished_at is None:
                self.finished_at = time.time()
        else:
            self.finished_at = None
        run = w.scheduler.run
        text = header_text(
            run,
            tasks,
            started=started,
            paused=paused,
            started_at=self.started_at,
            finished_at=self.finished_at,
            eta=eta,
            owner_alive=owner_alive,
            deadline=deadline,
            tally=tally,
            reading=reading,
        )
        if past and text.startswith("Run "):
            text = "Live run " + text[len("Run ") :]
        if text != self.full_text:
            self.full_text = text
            self.setToolTip(text)
            self.setAccessibleDescription(text)
            self._fit()

    def _fit(self) -> None:
        """The whole text if it fits; else without its last parts (started, then ETA...),
        never fewer than the run and its state; else cut with an ellipsis."""
        parts = self.full_text.split(" · ")
        metrics = self.fontMetrics()
        room = self.contentsRect().width()
        while len(parts) > 2 and metrics.horizontalAdvance(" · ".join(parts)) > room:
            parts.pop()
        text = metrics.elidedText(" · ".join(parts), Qt.TextElideMode.ElideRight, room)
        if text != self.text():
            self.setText(text)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()

    def minimumSizeHint(self) -> QSize:
        return QSize(60, super().minimumSizeHint().height())  # it shortens itself

    def sizeHint(self) -> QSize:
        width = self.fontMetrics().horizontalAdvance(self.full_text) + 20
        return QSize(width, super().sizeHint().height())
