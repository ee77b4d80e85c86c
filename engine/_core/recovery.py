"""Rebuilding a scheduler's tasks from its store after a restart (or a crash).

Rules:
- finished one-shot tasks stay finished and never run again;
- an attempt that was running when its owner died is recorded as ``lost``: not
  the task's failure, so the task runs again without using its retry budget,
  unless its success had already been written (then it is SUCCEEDED) or it was
  lost ``LOST_LIMIT`` times in a row (then it FAILED: it may be what brings
  Taskloom down). Whatever the lost attempt left running was ended when the
  store was opened (see ``survivors.py``);
- a SCHEDULED task whose time passed runs at once; a recurring task resumes its
  cadence, and occurrences missed while the process was down follow its misfire
  policy (the overdue timer is handled like one after a stall);
- dependencies, SKIPPED states and retry budgets are restored as they were.

``Scheduler`` runs it under the core lock, before ``start()``, on the
scheduler's empty parts, through their own methods. The event numbering goes on
from the store's. Only when listeners were given to the constructor (who else
could hear them) does it emit one ``restored`` event per task, with its state as
restored, before the events of tasks it releases; otherwise the restored state is
what ``snapshot()`` shows first, and a resume writes no event rows for it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .._jobs.supervision import SUPERVISED_WORKER
from .._schedule.recurrence import CronRecurrence
from ..command import Command, adopted_command
from ..definitions import TaskDefinition
from ..models import Attempt
from ..options import Outcome
from ..states import SETTLED, TaskState
from .task import MAX_ATTEMPTS_KEPT, Task

if TYPE_CHECKING:
    from .._schedule.timers import TimerQueue
    from .._store.journal import Journal
    from .core import Core
    from .dispatch import Dispatcher
    from .events import Events
    from .graph import TaskGraph
    from .lifecycle import Lifecycle

S = TaskState
LOST = "lost: Taskloom stopped while this attempt was running"
NOT_STARTED = "interrupted: its owner stopped before the command started"
LOST_LIMIT = 3
STILL_RUNNING = "adopted: still running under its supervisor"
ENDED_UNOWNED = "adopted: ended while no owner ran"


def lost_too_often(count: int) -> str:
    return f"lost {count} times: it may be what brings Taskloom down"


class Recovery:
    """One restore: the journal's store read back into the scheduler's parts."""

    def __init__(
        self,
        journal: Journal,
        core: Core,
        graph: TaskGraph,
        timers: TimerQueue,
        dispatcher: Dispatcher,
        events: Events,
        lifecycle: Lifecycle,
    ) -> None:
        self.journal = journal
        self.store = journal.store
        self.core = core
        self.graph = graph
        self.timers = timers
        self.dispatcher = dispatcher
        self.events = events
        self.lifecycle = lifecycle
        self.clock = timers.clock
        # What recovery adopted: {task: (attempt number, what it found)}.
        self.adopted: dict[str, tuple[int, str]] = {}

    def run(self) -> None:
        store, graph = self.store, self.graph
        records = store.load_tasks()
        self.events.continue_after(store.max_seq())
        offset = self.clock.wall().timestamp() - self.clock.now()  # wall = mono + offset
        max_order = -1
        for rec in records:
            task = self._task_of(rec, offset)
            max_order = max(max_order, rec["ord"])
            graph.add_restored(task)
            rec["task"] = task
        graph.continue_order_after(max_order)
        graph.relink()
        graph.mark_repeats()
        tasks = graph.tasks
        for task in tasks.values():
            if not task.repeats and not task.state.settled:
                self.core.unsettled += 1

        self.journal.attempt_floor = {
            task_id: number
            for task_id, number in store.last_attempt_numbers().items()
            if task_id not in tasks
        }
        for task_id, stored in store.recent_attempts(MAX_ATTEMPTS_KEPT).items():
            restored = tasks.get(task_id)
            if restored is not None:
                restored.history = [Attempt.from_row(row, offset) for row in stored]
                # An attempt row can reach the disk in a commit before its task's row
                # does: never number a new attempt like one already recorded.
                restored.attempt = max(restored.attempt, stored[-1]["number"])

        for task_id, delays in store.jitter_delays().items():
            restored = tasks.get(task_id)
            if restored is not None:
                restored.jitters = delays
        for task_id, kept in store.outputs().items():  # a resumed run keeps its outputs
            restored = tasks.get(task_id)
            if restored is not None and restored.successes:
                restored.outputs = json.loads(kept[max(kept)])  # its latest success's

        pending: list[str] = []
        for rec in records:
            self._restore_state(rec["task"], rec["last_attempt"], pending, rec["attempt"])
        if self.events.listened:
            for task in tasks.values():
                self.events.emit(task, "restored", task.error)
        self.lifecycle.evaluate_many(pending)
        store.flush()

    def _task_of(self, rec: dict[str, Any], offset: float) -> Task:
        definition = TaskDefinition.from_row(rec["id"], rec["spec"])
        task = Task(
            rec["id"],
            definition.action,
            order=rec["ord"],
            priority=definition.priority,
            retry=definition.retry,
            timeout=definition.timeout,
            trigger_rule=definition.trigger_rule,
            run_at=None if rec["next_wall"] is None else rec["next_wall"] - offset,
        )
        task.definition = definition
        if definition.pool is not None or definition.jitter is not None:
            task.pool, task.jitter = definition.pool, definition.jitter
        task.recurrence = definition.recurrence()
        if task.recurrence is not None:
            task.overlap = definition.overlap
            task.misfire = definition.misfire
            task.misfire_grace = definition.misfire_grace
            if isinstance(task.recurrence, CronRecurrence):
                self.timers.add_cron(task)
                if rec["next_wall"] is not None:  # the cursor is a wall time, stored exactly
                    task.cron_next = datetime.fromtimestamp(rec["next_wall"], UTC)
        for dep in definition.deps:
            task.add_dep(dep)
        task.attempt = rec["attempt"]
        task.budget_base = rec["budget_base"]
        task.successes = rec["successes"]
        task.consumed = rec["consumed"]
        task.error = rec["error"]
        task.paused = bool(rec["paused"])
        task.state = S(rec["state"])
        task.history = []
        return task

    def _restore_state(
        self, task: Task, last_attempt: Any, pending: list[str], row_attempt: int = 0
    ) -> None:
        state = task.state
        interrupted = last_attempt is not None and last_attempt[1] == Outcome.RUNNING
        # A one-shot task's row written before its last attempt began: the row that
        # said it runs was held back with that attempt's start row and dropped when
        # its end row came (SQLiteStore.update_task(hold=True)), and the row of its
        # outcome was not committed yet. The attempt's row is the truth: as RUNNING.
        stale = (
            last_attempt is not None
            and last_attempt[0] > row_attempt
            and not task.repeats
            and state is not S.RUNNING
        )
        if interrupted or state is S.RUNNING or stale:
            if interrupted and self._supervised(task, last_attempt[0]):
                return  # adopted, or known never to have started
            if last_attempt is not None and last_attempt[1] == Outcome.SUCCEEDED:
                self._set(task, S.SUCCEEDED)
                task.successes = max(task.successes, 1)
                task.error = None
                if task.recurrence is not None:
                    self._resume_cadence(task)
                return
            self._record_lost_attempt(task, last_attempt)
            lost = _lost_in_a_row(task)
            if lost >= LOST_LIMIT:
                task.error = lost_too_often(lost)
                self._set(task, S.FAILED)
                if task.recurrence is not None:
                    self._resume_cadence(task)
                return  # its pending dependents are evaluated with the rest, in run()
            task.budget_base += 1  # a lost attempt is not the task's failure
            if task.recurrence is not None:  # the lost occurrence runs again, then the cadence
                self._resume_cadence(task)
            self._make_ready(task)
            return
        if task.recurrence is not None:
            if state is S.PENDING:
                pending.append(task.id)
            elif state is not S.CANCELLED:
                self._resume_cadence(task)
            return
        if state in SETTLED:
            return
        if state is S.PENDING:
            pending.append(task.id)
        elif state is S.SCHEDULED and task.run_at is not None:
            task.timer = self.timers.add(task.run_at, task, "scheduled")
        elif state is S.RETRY_WAIT and task.run_at is not None:
            task.retry_timer = self.timers.add(task.run_at, task, "retry")
        else:  # READY, or a time we cannot trust: run as soon as a worker is free
            self._make_ready(task)

    def _supervised(self, task: Task, number: int) -> bool:
        """The running attempt ``number`` of ``task`` was a command given to a supervisor
        (its start row says so): adopt it when its supervisor still runs it or recorded
        its end; run it again, not lost, when it never started. False when it is lost
        (its supervisor died with it) or was no supervised command."""
        history = task.history or []
        record = history[-1] if history and history[-1].number == number else None
        if record is None or not (record.worker or "").startswith(SUPERVISED_WORKER):
            return False
        attempt = self.store.supervised.get((self.store.run, task.id, number))
        end = None if attempt is None else attempt.end
        if attempt is None or (end is not None and end.get("error", "") or "").startswith(
            "not started"
        ):
            self._not_started(task, record)
            return True
        if not attempt.alive and end is None:
            return False  # its supervisor was killed too: lost
        if task.recurrence is not None:
            self._resume_cadence(task)
        name = task.fn.__name__ if isinstance(task.fn, Command) else task.id
        self.dispatcher.adopt(task, record, adopted_command(attempt, name), attempt.log_path)
        self.adopted[task.id] = (number, STILL_RUNNING if end is None else ENDED_UNOWNED)
        task.error = None
        self._set(task, S.RUNNING)
        return True

    def _not_started(self, task: Task, record: Attempt) -> None:
        """Its owner stopped after writing the attempt's start but before its supervisor
        started the command: nothing ran, so it runs again (not ``lost``, no budget)."""
        now = self.clock.now()
        history = task.history
        assert history is not None
        history[-1] = record._replace(ended=now, outcome=Outcome.INTERRUPTED, error=NOT_STARTED)
        self.journal.put_attempt(task, history[-1])
        task.budget_base += 1
        if task.recurrence is not None:
            self._resume_cadence(task)
        self._make_ready(task)

    def _make_ready(self, task: Task) -> None:
        task.waiting_runs = 1
        self.dispatcher.enqueue_restored(task)
        self._set(task, S.READY)

    def _resume_cadence(self, task: Task) -> None:
        """Back on the timer heap at its stored next occurrence (overdue ones misfire)."""
        due = task.run_at
        if isinstance(task.recurrence, CronRecurrence):
            due = self.timers.cron_due(task)  # from the stored wall-clock cursor
        elif due is None:
            assert task.recurrence is not None
            due = task.recurrence.first_due(self.clock)
        task.timer = self.timers.add(due, task, "recurring")
        task.run_at = due
        if task.state is not S.SCHEDULED:
            self._set(task, S.SCHEDULED)

    def _set(self, task: Task, state: TaskState) -> None:
        """Restore a state without the transition table: the stored one may be any."""
        was_settled = task.state.settled
        task.state = state
        if not task.repeats and was_settled != state.settled:
            self.core.unsettled += 1 if was_settled else -1
        self.journal.update_state(task)

    def _record_lost_attempt(self, task: Task, last_attempt: Any) -> None:
        """The attempt that was running is lost. In-process code starts without waiting
        for its row to reach the disk, so the task's row may say RUNNING while the last
        stored attempt is an earlier, finished one: then the lost attempt is a new
        record, and the finished one keeps its outcome."""
        now = self.clock.now()
        history = task.history if task.history is not None else []
        task.history = history
        previous = history[-1] if history else None
        running_on_disk = last_attempt is not None and last_attempt[1] == Outcome.RUNNING
        if running_on_disk and previous is not None and previous.number == last_attempt[0]:
            record = previous._replace(ended=now, outcome=Outcome.LOST, error=LOST)
            history[-1] = record
        else:
            stored = last_attempt[0] if last_attempt is not None else 0
            number = last_attempt[0] if running_on_disk else max(task.attempt, stored + 1)
            task.attempt = max(task.attempt, number)
            record = Attempt(number, now, now, Outcome.LOST, LOST, None, None, None, None)
            history.append(record)
        task.error = LOST
        self.journal.put_attempt(task, record)


def _lost_in_a_row(task: Task) -> int:
    count = 0
    for record in reversed(task.history or ()):
        if record.outcome != Outcome.LOST:
            break
        count += 1
    return count
