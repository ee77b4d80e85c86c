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

Runs under the scheduler's lock, before ``start()``. It emits no events: the
restored state is what ``snapshot()`` shows first.
"""

from __future__ import annotations

from datetime import UTC, datetime

from .definitions import TaskDefinition
from .models import Attempt
from .options import Outcome
from .recurrence import CronRecurrence
from .states import SETTLED, TaskState
from .task import MAX_ATTEMPTS_KEPT, Task

S = TaskState
LOST = "lost: Taskloom stopped while this attempt was running"
LOST_LIMIT = 3


def lost_too_often(count: int) -> str:
    return f"lost {count} times: it may be what brings Taskloom down"


def restore(scheduler, store) -> None:
    records = store.load_tasks()
    scheduler._seq = store.max_seq()
    clock = scheduler._clock
    offset = clock.wall().timestamp() - clock.now()  # wall = mono + offset
    tasks = scheduler._tasks
    max_order = -1
    for rec in records:
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
        max_order = max(max_order, rec["ord"])
        task.recurrence = definition.recurrence()
        if task.recurrence is not None:
            task.overlap = definition.overlap
            task.misfire = definition.misfire
            task.misfire_grace = definition.misfire_grace
            if isinstance(task.recurrence, CronRecurrence):
                scheduler._cron_tasks += 1
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
        tasks[task.id] = task
        rec["task"] = task
    scheduler._order = iter(range(max_order + 1, 1 << 62))

    for task in tasks.values():
        for dep in task.deps:
            if dep in tasks:
                tasks[dep].add_dependent(task.id)
            else:
                scheduler._orphans.setdefault(dep, {})[task.id] = None
    _mark_repeats(tasks)
    for task in tasks.values():
        if not task.repeats and not task.state.settled:
            scheduler._unsettled += 1

    scheduler._attempt_floor = {
        task_id: number
        for task_id, number in store.last_attempt_numbers().items()
        if task_id not in tasks
    }
    for task_id, stored in store.recent_attempts(MAX_ATTEMPTS_KEPT).items():
        task = tasks.get(task_id)
        if task is not None:
            task.history = [Attempt.from_row(row, offset) for row in stored]
            # An attempt row can reach the disk in a commit before its task's row does:
            # never number a new attempt like one already recorded.
            task.attempt = max(task.attempt, stored[-1]["number"])

    pending = []
    for rec in records:
        task = rec["task"]
        _restore_state(scheduler, task, rec["last_attempt"], pending)
    scheduler._evaluate_many(pending)
    store.flush()


def _mark_repeats(tasks: dict) -> None:
    """Recurring tasks and all downstream of them repeat: one pass down from the
    recurring ones, without recursion (a stored graph may be any depth)."""
    stack = [task for task in tasks.values() if task.recurrence is not None]
    for task in stack:
        task.repeats = True
    while stack:
        for dependent_id in stack.pop().dependents:
            dependent = tasks[dependent_id]
            if not dependent.repeats:
                dependent.repeats = True
                stack.append(dependent)


def _restore_state(scheduler, task: Task, last_attempt, pending: list) -> None:
    state = task.state
    interrupted = last_attempt is not None and last_attempt[1] == Outcome.RUNNING
    if interrupted or state is S.RUNNING:
        if last_attempt is not None and last_attempt[1] == Outcome.SUCCEEDED:
            _set(scheduler, task, S.SUCCEEDED)
            task.successes = max(task.successes, 1)
            task.error = None
            if task.recurrence is not None:
                _resume_cadence(scheduler, task)
            return
        _record_lost_attempt(scheduler, task, last_attempt)
        lost = _lost_in_a_row(task)
        if lost >= LOST_LIMIT:
            task.error = lost_too_often(lost)
            _set(scheduler, task, S.FAILED)
            if task.recurrence is not None:
                _resume_cadence(scheduler, task)
            return  # its pending dependents are evaluated with the rest, below
        task.budget_base += 1  # a lost attempt is not the task's failure
        if task.recurrence is not None:  # the lost occurrence runs again, then the cadence
            _resume_cadence(scheduler, task)
        _make_ready(scheduler, task)
        return
    if task.recurrence is not None:
        if state is S.PENDING:
            pending.append(task.id)
        elif state is not S.CANCELLED:
            _resume_cadence(scheduler, task)
        return
    if state in SETTLED:
        return
    if state is S.PENDING:
        pending.append(task.id)
    elif state is S.SCHEDULED and task.run_at is not None:
        task.timer = scheduler._timers.add(task.run_at, task, "scheduled")
    elif state is S.RETRY_WAIT and task.run_at is not None:
        task.retry_timer = scheduler._timers.add(task.run_at, task, "retry")
    else:  # READY, or a time we cannot trust: run as soon as a worker is free
        _make_ready(scheduler, task)


def _make_ready(scheduler, task: Task) -> None:
    task.waiting_runs = 1
    now = scheduler._clock.now()
    task.ready = scheduler._ready.add(task.priority, now, task.order, task, "run")
    _set(scheduler, task, S.READY)


def _lost_in_a_row(task: Task) -> int:
    count = 0
    for record in reversed(task.history or ()):
        if record.outcome != Outcome.LOST:
            break
        count += 1
    return count


def _resume_cadence(scheduler, task: Task) -> None:
    """Back on the timer heap at its stored next occurrence (overdue ones misfire)."""
    due = task.run_at
    if isinstance(task.recurrence, CronRecurrence):
        due = scheduler._cron_due(task)  # from the stored wall-clock cursor
    elif due is None:
        due = task.recurrence.first_due(scheduler._clock)
    task.timer = scheduler._timers.add(due, task, "recurring")
    task.run_at = due
    if task.state is not S.SCHEDULED:
        _set(scheduler, task, S.SCHEDULED)


def _set(scheduler, task: Task, state: TaskState) -> None:
    """Restore a state without the transition table: the stored one may be any."""
    was_settled = task.state.settled
    task.state = state
    if not task.repeats and was_settled != state.settled:
        scheduler._unsettled += 1 if was_settled else -1
    scheduler._store.update_task(scheduler._state_row(task).update_row(task.id), None)


def _record_lost_attempt(scheduler, task: Task, last_attempt) -> None:
    """The attempt that was running is lost. In-process code starts without waiting for
    its row to reach the disk, so the task's row may say RUNNING while the last stored
    attempt is an earlier, finished one: then the lost attempt is a new record, and the
    finished one keeps its outcome."""
    now = scheduler._clock.now()
    previous = task.history[-1] if task.history else None
    running_on_disk = last_attempt is not None and last_attempt[1] == Outcome.RUNNING
    if running_on_disk and previous is not None and previous.number == last_attempt[0]:
        record = previous._replace(ended=now, outcome=Outcome.LOST, error=LOST)
        task.history[-1] = record
    else:
        stored = last_attempt[0] if last_attempt is not None else 0
        number = last_attempt[0] if running_on_disk else max(task.attempt, stored + 1)
        task.attempt = max(task.attempt, number)
        record = Attempt(number, now, now, Outcome.LOST, LOST, None, None, None, None)
        task.history.append(record)
    task.error = LOST
    scheduler._store.put_attempt(scheduler._attempt_row(task, record))
