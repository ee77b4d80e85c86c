"""The store's rows, next to the columns they fill.

The tables themselves are created by ``store.MIGRATIONS``; these lists name their
columns in table order, and the conversions below build the tuples the store's
writes take (``put_task``, ``update_task``, ``put_attempt``). An attempt's own
conversion is on ``Attempt`` (``to_row``/``from_row``, in models.py), whose
fields are checked here against ``ATTEMPT_COLUMNS``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from ..models import Attempt

if TYPE_CHECKING:
    from .._core.task import Task

TASK_COLUMNS = (
    "id, ord, spec, state, attempt, budget_base, next_wall, successes, consumed, error, paused"
)

ATTEMPT_COLUMNS = (
    "run",
    "task_id",
    "number",
    "started",
    "ended",
    "outcome",
    "error",
    "traceback",
    "output",
    "log_path",
    "exit_code",
    "worker",
    "pid",
    "pgid",
    "proc_started",
)
# An attempt row as the engine writes it (``Attempt.to_row``, after the store's
# ``run``): everything but the process columns, which ``put_process`` fills in and
# a later update of the row must keep.
ATTEMPT_WRITE = ATTEMPT_COLUMNS[:12]


class StateRow(NamedTuple):
    """What a task's state change rewrites: the tasks table's columns after id, ord
    and spec, in table order (``TASK_COLUMNS``)."""

    state: str
    attempt: int
    budget_base: int
    next_wall: float | None  # wall-clock epoch seconds
    successes: int
    consumed: str | None  # JSON of Task.consumed; None when it is empty
    error: str | None
    paused: int  # 0 or 1

    @classmethod
    def of(cls, task: Task, to_wall: Callable[[float | None], float | None]) -> StateRow:
        """``task``'s row; ``to_wall`` turns a scheduler-clock time to wall-clock seconds."""
        consumed = json.dumps(task.consumed) if task.consumed else None
        # a cron task's cursor is a wall time: stored exactly, not via the monotonic clock
        cursor = task.cron_next
        next_wall = to_wall(task.run_at) if cursor is None else cursor.timestamp()
        return cls(
            task.state.kind,  # .value, as a plain attribute (states.py)
            task.attempt,
            task.budget_base,
            next_wall,
            task.successes,
            consumed,
            task.error,
            int(task.paused),
        )

    def update_row(self, task_id: str) -> tuple:
        """The row ``SQLiteStore.update_task`` takes: these columns, then the id."""
        return (*self, task_id)

    def task_row(self, task_id: str, order: int, spec: dict) -> tuple:
        """The row ``SQLiteStore.put_task`` takes: every column of ``TASK_COLUMNS``."""
        return (task_id, order, json.dumps(spec), *self)


def _check() -> None:
    """The records and the column lists name the same columns in the same order."""
    if TASK_COLUMNS.split(", ")[3:] != list(StateRow._fields):
        raise RuntimeError(f"StateRow {StateRow._fields} does not match {TASK_COLUMNS!r}")
    stored = Attempt._fields[: len(ATTEMPT_WRITE) - 2]  # task_id and run come first
    if ATTEMPT_WRITE[1:] != ("task_id", *stored) or Attempt._fields[len(stored) :] != (
        "task_id",
        "run",
    ):
        raise RuntimeError(f"Attempt {Attempt._fields} does not match {ATTEMPT_WRITE}")


_check()
