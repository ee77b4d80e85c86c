"""The engine's mutable record of one task, and of one running attempt.

Every field of both is guarded by the core lock (see core.py); they never leave
it: callers get frozen ``TaskInfo`` and ``Attempt`` snapshots. The one exception
is ``Run.ctx``, the attempt's ``RunContext``, which task code uses on its own
thread (it has a lock of its own).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..options import Misfire, Overlap, TriggerRule
from ..states import TaskState

if TYPE_CHECKING:
    from .._jobs.context import RunContext
    from .._schedule.recurrence import Recurrence
    from ..definitions import TaskDefinition
    from ..models import Attempt, RetryPolicy

# Most tasks have no dependents, no dependencies or no run in flight: they share
# these empty values until their first edge or run (about a quarter of a task's
# memory with 100,000 pending).
NO_DEPS: tuple[str, ...] = ()
NO_DEPENDENTS: MappingProxyType[str, None] = MappingProxyType({})
NO_RUNS: tuple[Run, ...] = ()

MAX_ATTEMPTS_KEPT = 50  # per task, in memory; the store keeps them all


class Task:
    __slots__ = (
        "id",
        "fn",
        "state",
        "deps",
        "dependents",
        "priority",
        "retry",
        "timeout",
        "trigger_rule",
        "run_at",
        "cron_next",
        "order",
        "attempt",
        "budget_base",
        "recurrence",
        "overlap",
        "misfire",
        "misfire_grace",
        "paused",
        "error",
        "timer",
        "retry_timer",
        "ready",
        "runs",
        "cancel_requested",
        "waiting_runs",
        "retry_pending",
        "lingering",
        "held",
        "successes",
        "consumed",
        "repeats",
        "history",
        "definition",
    )

    def __init__(
        self,
        task_id: str,
        fn: Callable[[], Any],
        *,
        order: int,
        priority: int,
        retry: RetryPolicy | None,
        timeout: float | None,
        trigger_rule: TriggerRule,
        run_at: float | None,
    ) -> None:
        self.id = task_id
        self.fn = fn
        self.state = TaskState.PENDING
        self.deps: list[str] | tuple[str, ...] = NO_DEPS
        self.dependents: dict[str, None] | MappingProxyType[str, None] = NO_DEPENDENTS  # a set
        self.priority = priority
        self.retry = retry
        self.timeout = timeout
        self.trigger_rule = trigger_rule
        self.run_at = run_at  # next due time on the scheduler clock, if any
        self.cron_next: datetime | None = None  # a cron task's queued occurrence (aware, UTC)
        self.order = order  # scheduling order, the last tie-breaker
        self.attempt = 0  # attempts started, ever
        self.budget_base = 0  # attempt count when the current retry budget began
        self.recurrence: Recurrence | None = None
        self.overlap = Overlap.SKIP
        self.misfire = Misfire.RUN_ONCE
        self.misfire_grace = 30.0
        self.paused = False
        self.error: str | None = None
        self.timer: list | None = None  # heap entry: scheduled run or next recurring occurrence
        self.retry_timer: list | None = None  # heap entry: end of a retry backoff
        self.ready: list | None = None  # ready-heap entry, at most one per task
        self.runs: list[Run] | tuple[Run, ...] = NO_RUNS
        self.cancel_requested = False
        self.waiting_runs = 0  # occurrences (or the one-shot run) waiting for a worker
        self.retry_pending = False  # the next start is a retry of the last attempt
        # Runs whose outcome a timeout recorded but whose code has not returned yet.
        # A start refused while a run is in flight or lingering sets ``held``; the
        # run's end makes the task ready again (see ``start_held``).
        self.lingering = 0
        self.held = False
        self.successes = 0
        self.consumed: dict[str, int] | None = None  # upstream successes already used
        self.repeats = False  # recurring, or downstream of a recurring task
        self.history: list[Attempt] | None = None  # Attempt records, newest last
        # Its TaskDefinition (deps as given then), or just its one-shot time (an aware
        # datetime, or a float on the scheduler clock) or None when the fields here
        # say the rest: Scheduler.definition builds it then (see Scheduler._create).
        self.definition: TaskDefinition | datetime | float | None = None

    def add_dep(self, dep_id: str) -> None:
        if isinstance(self.deps, list):
            self.deps.append(dep_id)
        else:
            self.deps = [dep_id]

    def drop_dep(self, dep_id: str) -> None:
        if isinstance(self.deps, list):
            self.deps.remove(dep_id)

    def add_dependent(self, task_id: str) -> None:
        if isinstance(self.dependents, dict):
            self.dependents[task_id] = None
        else:
            self.dependents = {task_id: None}

    def drop_dependent(self, task_id: str) -> None:
        if isinstance(self.dependents, dict) and task_id in self.dependents:
            del self.dependents[task_id]

    def add_run(self, run: Run) -> None:
        if isinstance(self.runs, list):
            self.runs.append(run)
        else:
            self.runs = [run]

    def drop_run(self, run: Run) -> None:
        if isinstance(self.runs, list):
            self.runs.remove(run)

    @property
    def busy(self) -> bool:
        return bool(self.runs) or self.lingering > 0 or self.state is TaskState.RETRY_WAIT

    @property
    def start_held(self) -> bool:
        """A start must wait for a run (timed out or not) to end: one attempt at a time.
        Occurrences of a parallel task may overlap; a retry waits for lingering runs."""
        if self.overlap == Overlap.PARALLEL:
            return self.lingering > 0 and self.retry_pending
        return self.lingering > 0 or bool(self.runs)


class Run:
    """One attempt in flight."""

    __slots__ = (
        "task",
        "attempt",
        "ctx",
        "started",
        "done",
        "future",
        "timeout_entry",
        "stop_requested",
        "released",
        "lingers",
    )

    def __init__(self, task: Task, attempt: int, ctx: RunContext, started: float) -> None:
        self.task = task
        self.attempt = attempt
        self.ctx = ctx
        self.started = started
        self.done = False  # outcome recorded (a timeout records it before the code returns)
        self.future: Future | None = None
        self.timeout_entry: list | None = None
        # Cancel, timeout or shutdown asked it to stop: a future attached later is cancelled.
        self.stop_requested = False
        self.released = False  # its code returned and its worker slot was freed (_finish)
        self.lingers = False  # counted in task.lingering: timed out, code still running
