"""The Runs view (Airflow's grid): the store's runs by the workflow's tasks, each cell
the outcome and duration of that task's last attempt in that run; a click selects the
task, and the inspector lists that attempt (its run's attempts are in the store).

The store is read off the GUI thread (``HistoryReader.request_grid``), while the
panel is shown, at most every ``REFRESH_MS``; ``grid_of`` turns the rows into
``RunsGrid`` (a plain value, built on the reader's thread).
"""

from __future__ import annotations

import time
from typing import NamedTuple

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QTableWidget, QTableWidgetItem

from taskloom.engine import Outcome

from .pacing import paced_ms
from .run_header import duration_text
from .style import outcome_colour, text_colour_on

REFRESH_MS = 2000  # while shown: a run's cells fill as it goes
RUNS_SHOWN = 25  # the newest runs
ROWS_READ = 20_000  # attempts read for them at most
OUTCOME_GLYPHS = {
    "succeeded": "✓",
    "failed": "✗",
    "cancelled": "⊘",
    "running": "▶",
    "interrupted": "‖",
    "lost": "?",
}


class Cell(NamedTuple):
    outcome: str
    seconds: float | None  # None while it runs
    number: int  # the attempt's number
    attempts: int  # attempts of the task in that run
    error: str | None


class RunsGrid(NamedTuple):
    runs: list[int]  # oldest first
    cells: dict[tuple[str, int], Cell]  # (task, run) -> its last attempt there
    took: dict[int, float]  # run -> first start to last end (seconds)
    failed: dict[int, int]  # run -> tasks whose last attempt failed
    labels: dict[int, str] = {}  # run -> what it is when not the workflow's own (a backfill)


def grid_of(rows: list[dict], runs_shown: int = RUNS_SHOWN) -> RunsGrid:
    """Rows of ``SQLiteStore.attempts`` (newest first) as a grid of the newest runs."""
    runs = sorted({r["run"] for r in rows})[-runs_shown:]
    keep = set(runs)
    cells: dict[tuple[str, int], Cell] = {}
    counts: dict[tuple[str, int], int] = {}
    spans: dict[int, list[float]] = {}
    for r in reversed(rows):  # oldest first: the last attempt wins
        run = r["run"]
        if run not in keep:
            continue
        key = (r["task_id"], run)
        counts[key] = counts.get(key, 0) + 1
        ended = r["ended"]
        seconds = None if ended is None else max(0.0, ended - r["started"])
        cells[key] = Cell(str(r["outcome"]), seconds, r["number"], counts[key], r["error"])
        span = spans.setdefault(run, [r["started"], ended or r["started"]])
        span[0] = min(span[0], r["started"])
        span[1] = max(span[1], ended or r["started"])
    took = {run: span[1] - span[0] for run, span in spans.items()}
    failed = {run: 0 for run in runs}
    for (_tid, run), cell in cells.items():
        if cell.outcome == Outcome.FAILED.value:
            failed[run] += 1
    return RunsGrid(runs, cells, took, failed)


def read_grid(store, runs_shown: int = RUNS_SHOWN) -> RunsGrid:
    """Reads the store: not on the GUI thread."""
    grid = grid_of(store.attempts(limit=ROWS_READ), runs_shown)
    return grid._replace(labels=store.run_labels())


class RunsView(QTableWidget):
    """Rows: the window's tasks; columns: runs, oldest to newest (the current last)."""

    attemptChosen = Signal(str, int, int)  # (task, run, attempt number)
    runChosen = Signal(int)  # a run's column header: open that run (read-only if past)

    def __init__(self, window, reader, parent=None):
        super().__init__(parent)
        self.setObjectName("runsView")
        self.setAccessibleName("Runs by tasks")
        self.window_ = window
        self.reader = reader
        self.grid: RunsGrid | None = None
        self._rows: list[str] = []  # the row labels shown
        self._asked = 0
        self._asked_at = 0.0  # when the newest read was asked (monotonic)
        self.last_cost = 0.0  # seconds from asking the last grid to its cells shown
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setTabKeyNavigation(False)
        self.verticalHeader().setDefaultSectionSize(20)
        self.horizontalHeader().setDefaultSectionSize(74)
        self.cellClicked.connect(self._clicked)
        self.cellActivated.connect(self._clicked)
        self.horizontalHeader().sectionClicked.connect(self._header_clicked)
        if reader is not None:
            reader.gridRead.connect(self._answered)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.request)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.request()
        self._timer.start()

    def hideEvent(self, event) -> None:
        self._timer.stop()
        super().hideEvent(event)

    def request(self) -> None:
        if self.reader is not None and not self.reader.closed:
            self._asked_at = time.monotonic()
            self._asked = self.reader.request_grid()

    def _answered(self, rid: int, grid) -> None:
        if rid != self._asked or grid is None:
            return
        self.show_grid(grid)
        # The next read waits longer if this one was costly (a busy run's big grid):
        # its read on the history thread and its cells made here, from asked to shown.
        self.last_cost = time.monotonic() - self._asked_at
        self._timer.setInterval(paced_ms(REFRESH_MS, self.last_cost))

    def show_grid(self, grid: RunsGrid) -> None:
        # No run yet (a file just opened): no rows either. A label per task made a
        # 100,000-task window wait 1.5 s for an empty table.
        tasks = list(self.window_.document.tasks) if grid.runs else []
        known = set(tasks)
        tasks += sorted({tid for tid, _run in grid.cells if tid not in known})
        if grid == self.grid and tasks == self._rows:
            return  # read again every 2 s: 10,000 rows made afresh each time held the window
        # The same rows and runs: only the cells whose attempt changed are made again
        # (a busy run's grid, read every 2 s, made 2,000 items each time: 145 ms).
        before = self.grid.cells if self.grid is not None and tasks == self._rows else None
        if before is not None and self.grid is not None and grid.runs != self.grid.runs:
            before = None
        self.grid = grid
        self.setRowCount(len(tasks))
        self.setColumnCount(len(grid.runs))
        if tasks != self._rows:  # a row label per task: made when the tasks change
            self.setVerticalHeaderLabels(tasks)
            self._rows = tasks
        for column, run in enumerate(grid.runs):
            failed = grid.failed.get(run, 0)
            label = grid.labels.get(run)
            kind = f" · {label.split(' ', 1)[0]}" if label else ""  # "Run 4 · backfill"
            head = QTableWidgetItem(f"Run {run}{kind}" + (f" ✗{failed}" if failed else ""))
            head.setToolTip(
                f"run {run}"
                + (f" ({label})" if label else "")
                + f": {duration_text(grid.took.get(run, 0.0))} from first start to last end"
                + (f", {failed} failed" if failed else "")
                + "\nClick (or Ctrl+Enter on its cells) to open this run in the graph and"
                " the timeline, read-only"
            )
            self.setHorizontalHeaderItem(column, head)
        for row, tid in enumerate(tasks):
            for column, run in enumerate(grid.runs):
                cell = grid.cells.get((tid, run))
                if before is not None and before.get((tid, run)) == cell:
                    continue
                self.setItem(row, column, self._item(tid, run, cell))

    def _item(self, tid: str, run: int, cell: Cell | None) -> QTableWidgetItem:
        if cell is None:
            item = QTableWidgetItem("")
            item.setToolTip(f"{tid} did not run in run {run}")
            return item
        glyph = OUTCOME_GLYPHS.get(cell.outcome, "•")
        took = "…" if cell.seconds is None else duration_text(cell.seconds)
        item = QTableWidgetItem(f"{glyph} {took}")
        fill = QColor(outcome_colour(cell.outcome))
        item.setBackground(QBrush(fill))
        item.setForeground(QBrush(text_colour_on(fill)))
        tries = f", attempt {cell.number} ({cell.attempts} in this run)"
        error = f"\n{cell.error}" if cell.error else ""
        item.setToolTip(f"{tid} · run {run}: {cell.outcome}{tries}, {took}{error}")
        return item

    def _clicked(self, row: int, column: int) -> None:
        if self.grid is None or column >= len(self.grid.runs):
            return
        tid = self.verticalHeaderItem(row).text()
        run = self.grid.runs[column]
        cell = self.grid.cells.get((tid, run))
        if cell is not None:
            self.attemptChosen.emit(tid, run, cell.number)

    def keyPressEvent(self, event) -> None:
        """Ctrl+Enter opens the current cell's run (its header from the keyboard)."""
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self._header_clicked(self.currentColumn())
            event.accept()
            return
        super().keyPressEvent(event)

    def _header_clicked(self, column: int) -> None:
        if self.grid is not None and 0 <= column < len(self.grid.runs):
            self.runChosen.emit(self.grid.runs[column])

    def close_view(self) -> None:
        self._timer.stop()
