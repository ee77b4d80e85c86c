"""Mirroring engine state into the optional store (see ``store.py``).

A mixin of ``Scheduler``. Rows are queued under the engine lock (no I/O there);
the store's writer commits them in batches.
"""

from __future__ import annotations

from .models import Attempt
from .options import Outcome
from .records import StateRow
from .task import Run, Task


class StoreSync:
    def _to_wall(self, mono: float | None) -> float | None:
        if mono is None:
            return None
        return mono + self._clock.wall().timestamp() - self._clock.now()

    def _state_row(self, task: Task) -> StateRow:
        return StateRow.of(task, self._to_wall)

    def _task_row(self, task: Task, spec: dict) -> tuple:
        return self._state_row(task).task_row(task.id, task.order, spec)

    def _persist_state(self, task: Task, kind: str, error: str | None) -> None:
        if kind == "removed":
            self._store.delete_task(task.id)
            return
        at = self._clock.wall().timestamp()
        event = (self._seq, task.id, kind, task.state.value, at, task.attempt, error)
        self._store.update_task(self._state_row(task).update_row(task.id), event)

    def _attempt_row(self, task: Task, record: Attempt) -> tuple:
        return record.to_row(task.id, self._to_wall)

    def _record_processes(self, run: Run) -> None:
        """Let the attempt's command record its process in the store.

        Queued, not flushed: the writer commits it with its next batch, within a few
        milliseconds. A synchronous commit here cost 18% of the throughput of short
        commands, and it is the second line of defence only: every process a command
        starts carries its owner's mark, which is on disk before any command runs
        (``owner_token``), so recovery finds survivors even without this row."""
        store, task_id, number = self._store, run.task.id, run.attempt

        def record(pid: int, pgid: int) -> None:
            store.put_process(task_id, number, pid, pgid)

        run.ctx.on_process = record

    def _finish_when_durable(self, run: Run) -> None:
        """Under the lock, for a run whose code returned in time: report its success only
        once it is on disk. Its timeout no longer applies, so the row queued here is the
        engine's outcome (a later cancel queues "cancelled" after it). The store's writer
        finishes the run after its commit, so no worker waits on I/O. With
        ``SyncExecutor`` the caller commits and finishes it at once (deterministic)."""
        if self._store_error is not None:  # nothing commits any more: the run fails
            self._finish(run, self._store_error, None)
            return
        self._timers.discard(run.timeout_entry)
        run.timeout_entry = None
        ctx = run.ctx
        record = Attempt(
            run.attempt,
            run.started,
            self._clock.now(),
            Outcome.SUCCEEDED,
            None,
            None,
            ctx.output,
            ctx.log_path,
            ctx.exit_code,
            ctx.worker,
        )
        row = self._attempt_row(run.task, record)
        self._durable.add(run)  # finished by _durable_done, or failed by _on_store_failure
        if self._sync:
            self._store.put_attempt(row)
        else:
            self._store.put_attempt(row, on_commit=lambda: self._durable_done(run))
