"""The engine's mutable record of one task, and of one running attempt.

These never leave the engine lock: callers get frozen ``TaskInfo`` snapshots.
"""

from __future__ import annotations

from operator import attrgetter
from types import MappingProxyType

from .options import Misfire, Overlap, TriggerRule
from .states import TaskState

# Most tasks have no dependents, no dependencies or no run in flight: they share
# these empty values until their first edge or run (about a quarter of a task's
# memory with 100,000 pending).
NO_DEPS: tuple = ()
NO_DEPENDENTS = MappingProxyType({})
NO_RUNS: tuple = ()

MAX_ATTEMPTS_KEPT = 50  # per task, in memory; the store keeps them all


OPTION_DEFAULTS = {
    "priority": 0,
    "retry": None,
    "timeout": None,  # seconds per attempt
    "trigger_rule": TriggerRule.ALL_SUCCESS,
    "paused": False,
    "repeats": False,  # recurring, or downstream of a recurring task
    "recurrence": None,
    "overlap": Overlap.SKIP,
    "misfire": Misfire.RUN_ONCE,
    "misfire_grace": 30.0,
}

PROGRESS_DEFAULTS = {
    "attempt": 0,  # attempts started, ever
    "budget_base": 0,  # attempt count when the current retry budget began
    "error": None,
    "cron_next": None,  # a cron task's queued occurrence: an aware UTC datetime
    "successes": 0,
    "consumed": None,  # upstream successes already used: dict[str, int]
    "history": None,  # Attempt records, newest last
    "activity": None,  # an _Activity while work is queued or in flight
}

# Only a task with work queued or in flight needs these; a settled one drops them.
ACTIVITY_DEFAULTS = {
    "ready": None,  # ready-heap entry, at most one per task
    "retry_timer": None,  # heap entry: end of a retry backoff
    "runs": NO_RUNS,  # Runs in flight
    "cancel_requested": False,
    "waiting_runs": 0,  # occurrences (or the one-shot run) waiting for a worker
    "retry_pending": False,  # the next start is a retry of the last attempt
    # Runs whose outcome a timeout recorded but whose code has not returned yet.
    # A start refused while a run is in flight or lingering sets ``held``; the
    # run's end makes the task ready again (see ``start_held``).
    "lingering": 0,
    "held": False,
}


class _Options:
    """How a task runs, when any of it differs from the defaults (``OPTION_DEFAULTS``)."""

    __slots__ = tuple(OPTION_DEFAULTS)

    def __init__(self):
        for name, value in OPTION_DEFAULTS.items():
            setattr(self, name, value)


class _Progress:
    """What a task has done beyond being scheduled: attempts and their outcomes."""

    __slots__ = tuple(PROGRESS_DEFAULTS)

    def __init__(self):
        for name, value in PROGRESS_DEFAULTS.items():
            setattr(self, name, value)


class _Activity:
    """A task's queued and running work: ready entry, retry backoff, runs in flight."""

    __slots__ = tuple(ACTIVITY_DEFAULTS)

    def __init__(self):
        for name, value in ACTIVITY_DEFAULTS.items():
            setattr(self, name, value)


def _side_field(slot: str, side_type: type, name: str, default) -> property:
    """``task.<name>``, kept on the side object in ``slot``: reads give ``default``
    while there is none, and only a value other than the default creates it."""
    get_side = attrgetter(slot)
    get_value = attrgetter(name)

    def fget(task):
        side = get_side(task)
        return default if side is None else get_value(side)

    def fset(task, value):
        side = get_side(task)
        if side is None:
            if value is default or (type(value) is type(default) and value == default):
                return
            side = side_type()
            setattr(task, slot, side)
        setattr(side, name, value)

    return property(fget, fset)


def _activity_field(name: str, default) -> property:
    """``task.<name>``, kept on the activity record (itself on the progress record)."""
    get_value = attrgetter(name)

    def fget(task):
        activity = task.activity
        return default if activity is None else get_value(activity)

    def fset(task, value):
        activity = task.activity
        if activity is None:
            if value is default or (type(value) is type(default) and value == default):
                return
            activity = task.activity = _Activity()
        setattr(activity, name, value)

    return property(fget, fset)


class Task:
    # A pending task holds only these; options that differ from the defaults and
    # everything past scheduling live on side objects made when first needed
    # (100,000 pending tasks: under 400 bytes each, the id and the heap entry included).
    __slots__ = (
        "id",
        "fn",
        "state",
        "deps",
        "dependents",
        "run_at",
        "order",
        "timer",
        "_options",
        "_progress",
    )

    def __init__(self, task_id, fn, *, order, priority, retry, timeout, trigger_rule, run_at):
        self.id = task_id
        self.fn = fn
        self.state = TaskState.PENDING
        self.deps: list[str] | tuple = NO_DEPS
        self.dependents: dict[str, None] | MappingProxyType = NO_DEPENDENTS  # an ordered set
        self.run_at = run_at  # next due time on the scheduler clock, if any
        self.order = order  # scheduling order, the last tie-breaker
        self.timer = None  # heap entry: scheduled run or next recurring occurrence
        self._options: _Options | None = None
        self._progress: _Progress | None = None
        self.priority = priority
        self.retry = retry
        self.timeout = timeout
        self.trigger_rule = trigger_rule

    for _name, _default in OPTION_DEFAULTS.items():
        locals()[_name] = _side_field("_options", _Options, _name, _default)
    for _name, _default in PROGRESS_DEFAULTS.items():
        locals()[_name] = _side_field("_progress", _Progress, _name, _default)
    for _name, _default in ACTIVITY_DEFAULTS.items():
        locals()[_name] = _activity_field(_name, _default)
    del _name, _default

    def drop_idle_activity(self) -> None:
        """Forget the activity record once nothing is queued or in flight (it then reads
        as the defaults): a settled task keeps only what snapshots and attempts need."""
        a = self.activity
        if (
            a is not None
            and a.ready is None
            and a.retry_timer is None
            and not a.runs
            and not a.cancel_requested
            and a.waiting_runs == 0
            and not a.retry_pending
            and a.lingering == 0
            and not a.held
        ):
            self.activity = None

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
