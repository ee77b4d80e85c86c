"""A past run opened read-only (a click on a run's column header in the Runs view).

``read_run`` reads one stored run's attempts off the GUI thread (the window's
``HistoryReader.request_run``) into a ``PastRun``: each task's attempts in that run
and how its last one ended. The window then shows that run instead of the live one:
the graph coloured by those outcomes, the timeline with those attempts, every
editing and steering action disabled, and ``PastRunBar`` above the graph ("Run 2 of
etl (finished 21:17, 1 failed) — read-only", Back to the live run). The live run
goes on underneath; Back shows it again as it is by then.
"""

from __future__ import annotations

import time
from typing import NamedTuple

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton

from taskloom.engine import TaskState

S = TaskState
ROWS_READ = 20_000  # attempts of one run read at most
# A stored attempt's outcome as the state its card shows. An attempt a dead owner
# left (lost, or still "running" in a run that is not going on) failed for the run.
STATES = {
    "succeeded": S.SUCCEEDED,
    "failed": S.FAILED,
    "cancelled": S.CANCELLED,
    "interrupted": S.CANCELLED,
    "lost": S.FAILED,
    "running": S.FAILED,
}


class PastAttempt(NamedTuple):
    started: float  # wall clock (epoch seconds)
    ended: float | None
    outcome: str
    number: int
    error: str | None


class PastRun(NamedTuple):
    run: int
    title: str  # the workflow's name, for the banner
    attempts: dict[str, list[PastAttempt]]  # task -> its attempts in the run, oldest first
    started: float | None  # the run's first start and last end (wall clock)
    ended: float | None

    def last(self, tid: str) -> PastAttempt | None:
        found = self.attempts.get(tid)
        return found[-1] if found else None

    def state_of(self, tid: str) -> TaskState:
        """The state the task's card shows: how its last attempt in the run ended
        (PENDING: it did not run in that run)."""
        last = self.last(tid)
        return S.PENDING if last is None else STATES.get(last.outcome, S.FAILED)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for tid in self.attempts:
            outcome = self.state_of(tid).value
            counts[outcome] = counts.get(outcome, 0) + 1
        return counts

    def banner(self) -> str:
        """ "Run 2 of etl (finished 21:17, 1 failed) — read-only"."""
        of = f" of {self.title}" if self.title else ""
        parts = []
        if self.ended is not None:
            local = time.localtime(self.ended)
            same_day = time.localtime().tm_yday == local.tm_yday
            shape = "%H:%M" if same_day else "%a %d %b %H:%M"
            parts.append("finished " + time.strftime(shape, local))
        counts = self.counts()
        for state, word in ((S.FAILED, "failed"), (S.CANCELLED, "cancelled")):
            if counts.get(state.value):
                parts.append(f"{counts[state.value]} {word}")
        if len(parts) == (self.ended is not None):  # nothing failed: say what succeeded
            parts.append(f"{counts.get(S.SUCCEEDED.value, 0)} succeeded")
        return f"Run {self.run}{of} ({', '.join(parts)}) — read-only"


def past_run_of(rows: list[dict], run: int, title: str = "") -> PastRun:
    """Rows of ``SQLiteStore.attempts(run=...)`` (newest first) as a ``PastRun``."""
    attempts: dict[str, list[PastAttempt]] = {}
    first = last = None
    for r in reversed(rows):  # oldest first
        if r["run"] != run:
            continue
        started, ended = r["started"], r["ended"]
        attempts.setdefault(r["task_id"], []).append(
            PastAttempt(started, ended, str(r["outcome"]), r["number"], r["error"])
        )
        first = started if first is None else min(first, started)
        end = ended if ended is not None else started
        last = end if last is None else max(last, end)
    return PastRun(run, title, attempts, first, last)


def read_run(store, run: int, title: str = "") -> PastRun:
    """Reads the store: not on the GUI thread."""
    return past_run_of(store.attempts(run=run, limit=ROWS_READ), run, title)


class PastRunBar(QFrame):
    """Over the graph while a past run is shown: what it is, and Back to the live run."""

    def __init__(self, back, parent=None):
        super().__init__(parent)
        self.setObjectName("pastRunBar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAccessibleName("Past run")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 4, 10, 4)
        self.label = QLabel()
        self.label.setObjectName("pastRunText")
        self.label.setWordWrap(True)
        self.button = QPushButton("&Back to the live run")
        self.button.setObjectName("backToLiveRun")
        self.button.setAccessibleName("Back to the live run")
        self.button.clicked.connect(back)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.button)
        self.hide()

    def set_run(self, past: PastRun) -> None:
        text = past.banner()
        self.label.setText(f"<b>{text}</b> · editing and steering are off")
        self.setAccessibleDescription(text)
        self.text = text
