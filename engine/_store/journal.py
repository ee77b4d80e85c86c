"""The journal: the engine's side of the optional store (see ``store.py``).

It turns task and attempt records into the store's rows and queues them; the
store's writer thread commits them in batches, never under the core lock. After
a restart the scheduler's ``Recovery`` (``_core/recovery.py``) rebuilds the tasks from
those rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..clock import Clock
from ..models import Attempt
from .records import StateRow

if TYPE_CHECKING:
    from .._core.task import Run, Task
    from .sqlite_store import SQLiteStore


class Journal:
    """Queues the rows that mirror tasks and attempts into ``store``.

    Not thread-safe: every method is called with the core lock held (recovery's
    too, before ``start()``). No method does I/O but queueing; the store flushes."""

    def __init__(self, store: SQLiteStore, clock: Clock) -> None:
        self.store = store
        self._clock = clock
        # Epoch seconds for every row: ``wall_seconds`` where the clock has it (time.time
        # for the real one, no datetime per row); any other Clock still works.
        self._wall_seconds: Callable[[], float] = getattr(
            clock, "wall_seconds", lambda: clock.wall().timestamp()
        )
        # Attempt numbers already used by tasks that left the engine (removed, or
        # redefined by their workflow file): a task added again under the same name
        # numbers on from there, so its stored attempts are never overwritten.
        self.attempt_floor: dict[str, int] = {}
        # The one-shot task whose start row was just held back (``put_attempt``,
        # deferred): its "running" update is held with it (``persist_state``).
        self._held_start: Task | None = None
        self._put_process = store.put_process  # bound once (see record_processes)

    def to_wall(self, mono: float | None) -> float | None:
        if mono is None:
            return None
        return mono + self._wall_seconds() - self._clock.now()

    def state_row(self, task: Task) -> StateRow:
        return StateRow.of(task, self.to_wall)

    def put_task(self, task: Task, spec: dict) -> None:
        self.store.put_task(self.state_row(task).task_row(task.id, task.order, spec))

    def persist_state(self, seq: int, task: Task, kind: str, error: str | None) -> None:
        """The task's row after event ``seq`` (and the event itself). The row is
        ``state_row(task).update_row(task.id)``, built here in one go (it is queued
        twice per task run); a one-shot task's "running" row whose start row is
        held back is held with it (``SQLiteStore.update_task(hold=True)``)."""
        held, self._held_start = self._held_start, None
        task_id = task.id
        if kind == "removed":
            self.store.delete_task(task_id)
            return
        at = self._wall_seconds()
        state = task.state.kind
        attempt = task.attempt
        cursor = task.cron_next
        next_wall: float | None
        if cursor is not None:  # a cron task's cursor is a wall time, stored exactly
            next_wall = cursor.timestamp()
        else:
            run_at = task.run_at
            next_wall = None if run_at is None else run_at + at - self._clock.now()
        consumed = task.consumed
        row = (
            state,
            attempt,
            task.budget_base,
            next_wall,
            task.successes,
            json.dumps(consumed) if consumed else None,
            task.error,
            int(task.paused),
            task_id,
        )
        event = (seq, task_id, kind, state, at, attempt, error)
        self.store.update_task(row, event, held is task and kind == "running")

    def update_state(self, task: Task) -> None:
        """The task's row, without an event (a restored state)."""
        self.store.update_task(self.state_row(task).update_row(task.id), None)

    def attempt_row(self, task: Task, record: Attempt) -> tuple:
        """``record.to_row(task.id, self.to_wall)``, with the clocks read once."""
        offset = self._wall_seconds() - self._clock.now()
        started, ended = record.started, record.ended
        return (
            task.id,
            record.number,
            None if started is None else started + offset,
            None if ended is None else ended + offset,
            str(record.outcome),  # plain text: the column is TEXT
            record.error,
            record.traceback,
            record.output,
            record.log_path,
            record.exit_code,
            record.worker,
        )

    def put_attempt(self, task: Task, record: Attempt, deferred: bool = False) -> tuple:
        """Queue the attempt's row; ``deferred`` for a start row its end may replace
        (a one-shot task's "running" update that follows is then held with it)."""
        row = self.attempt_row(task, record)
        self.store.put_attempt(row, deferred=deferred)
        if deferred and not task.repeats:
            self._held_start = task
        return row

    def forget(self, task: Task) -> None:
        """The task leaves the engine: a task added again under its id numbers on."""
        self.attempt_floor[task.id] = task.attempt

    def first_attempt(self, task_id: str) -> int:
        """The attempt count a new task with this id starts from."""
        return self.attempt_floor.pop(task_id, 0)

    def record_processes(self, run: Run) -> None:
        """Let the attempt's command record its process in the store.

        Queued, not flushed: the writer commits it with its next batch, within a few
        milliseconds. A synchronous commit here cost 18% of the throughput of short
        commands, and it is the second line of defence only: every process a command
        starts carries its owner's mark, which is on disk before any command runs
        (``owner_token``), so recovery finds survivors even without this row."""
        # One bound method for every run (the context passes its task and attempt):
        # nothing made per run waits with it for its commit.
        run.ctx.on_process = self._put_process

    def supervise(self, run: Run) -> bool:
        """A command's attempt: its supervisor records it in the store's folder under
        (run, task, attempt), and starts it only while this owner owns the store, so
        that the next owner adopts it if this one dies (``_jobs/supervision.py``)."""
        store, task = self.store, run.task
        if store.supervised_folder is None:
            return False  # a store whose folder cannot be written: nothing to hand on
        run.ctx.supervision = {
            "folder": str(store.supervised_folder),
            "key": [store.run, task.id, run.attempt],
            "owner": store.owner_token,
            "timeout": task.timeout,
        }
        return True
