"""The engine's mutable record of one task, and of one running attempt.

These never leave the engine lock: callers get frozen ``TaskInfo`` snapshots.
"""

from __future__ import annotations

from types import MappingProxyType

from .options import Misfire, Overlap
from .states import TaskState

# Most tasks have no dependents, no dependencies or no run in flight: they share
# these empty values until their first edge or run (about a quarter of a task's
# memory with 100,000 pending).
NO_DEPS: tuple = ()
NO_DEPENDENTS = MappingProxyType({})
NO_RUNS: tuple = ()

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

    def __init__(self, task_id, fn, *, order, priority, retry, timeout, trigger_rule, run_at):
        self.id = task_id
        self.fn = fn
        self.state = TaskState.PENDING
        self.deps: list[str] | tuple = NO_DEPS
        self.dependents: dict[str, None] | MappingProxyType = NO_DEPENDENTS  # an ordered set
        self.priority = priority
        self.retry = retry
        self.timeout = timeout
        self.trigger_rule = trigger_rule
        self.run_at = run_at  # next due time on the scheduler clock, if any
        self.cron_next = None  # a cron task's queued occurrence: an aware UTC datetime
        self.order = order  # scheduling order, the last tie-breaker
        self.attempt = 0  # attempts started, ever
        self.budget_base = 0  # attempt count when the current retry budget began
        self.recurrence = None
        self.overlap = Overlap.SKIP
        self.misfire = Misfire.RUN_ONCE
        self.misfire_grace = 30.0
        self.paused = False
        self.error: str | None = None
        self.timer = None  # heap entry: scheduled run or next recurring occurrence
        self.retry_timer = None  # heap entry: end of a retry backoff
        self.ready = None  # ready-heap entry, at most one per task
        self.runs: list[Run] | tuple = NO_RUNS
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
        self.history: list | None = None  # Attempt records, newest last
        # Its TaskDefinition (deps as given then), or just its one-shot time (an aware
        # datetime, or a float on the scheduler clock) or None when the fields here
        # say the rest: Scheduler.definition builds it then (see Scheduler._create).
        self.definition = None

    def add_dep(self, dep_id: str) -> None:
        if self.deps is NO_DEPS:
            self.deps = []
        self.deps.append(dep_id)

    def add_dependent(self, task_id: str) -> None:
        if self.dependents is NO_DEPENDENTS:
            self.dependents = {}
        self.dependents[task_id] = None

    def drop_dependent(self, task_id: str) -> None:
        if task_id in self.dependents:
            del self.dependents[task_id]

    def add_run(self, run) -> None:
        if self.runs is NO_RUNS:
            self.runs = []
        self.runs.append(run)

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

    def __init__(self, task, attempt, ctx, started):
        self.task = task
        self.attempt = attempt
        self.ctx = ctx
        self.started = started
        self.done = False  # outcome recorded (a timeout records it before the code returns)
        self.future = None
        self.timeout_entry = None
        # Cancel, timeout or shutdown asked it to stop: a future attached later is cancelled.
        self.stop_requested = False
        self.released = False  # its code returned and its worker slot was freed (_finish)
        self.lingers = False  # counted in task.lingering: timed out, code still running
