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
from operator import attrgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..models import TaskInfo
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

MAX_ATTEMPTS_KEPT = 50  # per task, in memory; a store keeps more (prune_attempts)


# A task's fields that most tasks never change from these defaults: they live on a
# side record (``_Cold``) that every task still at the defaults shares, and a task
# gets its own copy on its first change (``_cold_field``). Reads stay C-level
# (``attrgetter``), so the hot path pays ~30 ns a read and never allocates; a
# pending task drops 21 slots (with the timer entry that borrows the task's order,
# heaps.py).
COLD_DEFAULTS: dict[str, Any] = {
    "deps": NO_DEPS,  # a list once it has one
    "dependents": NO_DEPENDENTS,  # a dict used as an ordered set once it has one
    "priority": 0,
    "retry": None,  # RetryPolicy
    "timeout": None,  # seconds per attempt
    "trigger_rule": TriggerRule.ALL_SUCCESS,
    "recurrence": None,
    "overlap": Overlap.SKIP,
    "misfire": Misfire.RUN_ONCE,
    "misfire_grace": 30.0,
    "cron_next": None,  # a cron task's queued occurrence: an aware UTC datetime
    "consumed": None,  # upstream successes already used: dict[str, int]
    "budget_base": 0,  # attempt count when the current retry budget began
    "paused": False,
    "error": None,
    "retry_timer": None,  # heap entry: end of a retry backoff
    "retry_pending": False,  # the next start is a retry of the last attempt
    "cancel_requested": False,
    # Runs whose outcome a timeout recorded but whose code has not returned yet.
    # A start refused while a run is in flight or lingering sets ``held``; the
    # run's end makes the task ready again (see ``start_held``).
    "lingering": 0,
    "held": False,
    # Recurring, or downstream of a recurring task: such a task has a copy of its own
    # already (its recurrence, or its deps), so keeping the flag here costs nothing.
    "repeats": False,
    # Nominal times (wall clock, epoch seconds) of a recurring task's occurrences
    # queued to run, oldest first, and of the occurrence running now (a recurring
    # task's, or a retried one-shot's: a one-shot's is read from its run_at), what
    # its attempts are told as scheduled_at.
    "dues": None,  # list[float]
    "occurrence_at": None,
    # Shared limits and jitter (workflow keys ``pool`` and ``jitter``, slots.py): the
    # pool's name; the most random delay before an occurrence starts, seconds; the
    # timer that ends the delay drawn; that delay, once waited (the next run has it).
    "pool": None,
    "jitter": None,
    "jitter_timer": None,
    "jittered": None,
    "jitters": None,  # dict[int, float]: attempt number -> the delay it waited
    "outputs": None,  # what its latest success gave its dependents (engine/outputs.py)
}


class _Cold:
    """The rarely changed fields of one task (or of every task still at the defaults:
    ``SHARED_COLD``). Guarded by the core lock, as the task is."""

    __slots__ = tuple(COLD_DEFAULTS)

    def __init__(self) -> None:
        self.deps: list[str] | tuple[str, ...] = NO_DEPS
        self.dependents: dict[str, None] | MappingProxyType[str, None] = NO_DEPENDENTS
        self.priority = 0
        self.retry: RetryPolicy | None = None
        self.timeout: float | None = None
        self.trigger_rule = TriggerRule.ALL_SUCCESS
        self.recurrence: Recurrence | None = None
        self.overlap = Overlap.SKIP
        self.misfire = Misfire.RUN_ONCE
        self.misfire_grace = 30.0
        self.cron_next: datetime | None = None
        self.consumed: dict[str, int] | None = None
        self.budget_base = 0
        self.paused = False
        self.error: str | None = None
        self.retry_timer: list | None = None
        self.retry_pending = False
        self.cancel_requested = False
        self.lingering = 0
        self.held = False
        self.repeats = False
        self.dues: list[float] | None = None
        self.occurrence_at: float | None = None
        self.pool: str | None = None
        self.jitter: float | None = None
        self.jitter_timer: list | None = None
        self.jittered: float | None = None
        self.jitters: dict[int, float] | None = None
        self.outputs: dict[str, Any] | None = None


SHARED_COLD = _Cold()  # never written: a task writes its own copy
if {name: getattr(SHARED_COLD, name) for name in COLD_DEFAULTS} != COLD_DEFAULTS:
    raise RuntimeError("_Cold.__init__ does not set COLD_DEFAULTS")


if TYPE_CHECKING:
    _T = TypeVar("_T")

    class _Field(Generic[_T]):
        """What mypy sees of a ``_cold_field`` property: a field of type ``_T``."""

        def __get__(self, task: Task, owner: type | None = None) -> _T: ...

        def __set__(self, task: Task, value: _T) -> None: ...


def _cold_field(name: str, default: object) -> property:
    def fset(task: Task, value: object) -> None:
        cold = task._cold
        if cold is SHARED_COLD:
            if value is default or (type(value) is type(default) and value == default):
                return  # still the default: keep sharing
            cold = task._cold = _Cold()
        setattr(cold, name, value)

    return property(attrgetter(f"_cold.{name}"), fset)


class Task:
    __slots__ = (
        "id",
        "fn",
        "state",
        "run_at",
        "order",
        "attempt",
        "timer",
        "ready",
        "runs",
        "waiting_runs",
        "successes",
        "history",
        "definition",
        "rank",
        "_cold",
    )

    if TYPE_CHECKING:  # properties onto _cold (made below), typed as the fields they read
        deps: _Field[list[str] | tuple[str, ...]] = _Field()
        dependents: _Field[dict[str, None] | MappingProxyType[str, None]] = _Field()  # a set
        priority: _Field[int] = _Field()
        retry: _Field[RetryPolicy | None] = _Field()
        timeout: _Field[float | None] = _Field()
        trigger_rule: _Field[TriggerRule] = _Field()
        recurrence: _Field[Recurrence | None] = _Field()
        overlap: _Field[Overlap] = _Field()
        misfire: _Field[Misfire] = _Field()
        misfire_grace: _Field[float] = _Field()
        cron_next: _Field[datetime | None] = _Field()
        consumed: _Field[dict[str, int] | None] = _Field()
        budget_base: _Field[int] = _Field()
        paused: _Field[bool] = _Field()
        error: _Field[str | None] = _Field()
        retry_timer: _Field[list | None] = _Field()
        retry_pending: _Field[bool] = _Field()
        cancel_requested: _Field[bool] = _Field()
        lingering: _Field[int] = _Field()
        held: _Field[bool] = _Field()
        repeats: _Field[bool] = _Field()
        dues: _Field[list[float] | None] = _Field()
        occurrence_at: _Field[float | None] = _Field()
        pool: _Field[str | None] = _Field()
        jitter: _Field[float | None] = _Field()
        jitter_timer: _Field[list | None] = _Field()
        jittered: _Field[float | None] = _Field()
        jitters: _Field[dict[int, float] | None] = _Field()
        outputs: _Field[dict[str, Any] | None] = _Field()
    else:
        for _name, _default in COLD_DEFAULTS.items():
            locals()[_name] = _cold_field(_name, _default)
        del _name, _default

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
        self.run_at = run_at  # next due time on the scheduler clock, if any
        self.order = order  # scheduling order, the last tie-breaker
        self.attempt = 0  # attempts started, ever
        self.timer: list | None = None  # heap entry: scheduled run or next recurring occurrence
        self.ready: list | None = None  # ready-heap entry, at most one per task
        self.runs: list[Run] | tuple[Run, ...] = NO_RUNS
        self.waiting_runs = 0  # occurrences (or the one-shot run) waiting for a worker
        self.successes = 0
        self.history: list[Attempt] | None = None  # Attempt records, newest last
        # Its TaskDefinition (deps as given then), or just its one-shot time (an aware
        # datetime, or a float on the scheduler clock) or None when the fields here
        # say the rest: Scheduler.definition builds it then (see Scheduler._create).
        self.definition: TaskDefinition | datetime | float | None = None
        # Its place in a topological order of the graph (graph.py): every dependency
        # ranks below its dependents, so most cycle checks are one comparison.
        self.rank: float = order  # graph.py ranks it when it is added
        self._cold = SHARED_COLD  # the fields in COLD_DEFAULTS
        if priority or retry is not None or timeout is not None:
            self.priority = priority
            self.retry = retry
            self.timeout = timeout
        if trigger_rule is not TriggerRule.ALL_SUCCESS:
            self.trigger_rule = trigger_rule

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
        return bool(self.runs) or self._cold.lingering > 0 or self.state is TaskState.RETRY_WAIT

    @property
    def start_held(self) -> bool:
        """A start must wait for a run (timed out or not) to end: one attempt at a time.
        Occurrences of a parallel task may overlap; a retry waits for lingering runs."""
        cold = self._cold  # read once
        if cold.overlap == Overlap.PARALLEL:
            return cold.lingering > 0 and cold.retry_pending
        return cold.lingering > 0 or bool(self.runs)


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
        "start_row",
        "adopted",
        "pool",
        "jitter",
        "durable",
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
        # The start row queued for the store, for in-process code (``Dispatcher.invoke``
        # notes it where a crash cannot erase it); None for commands and without a store.
        self.start_row: tuple | None = None
        # A command started by an earlier owner of the store, adopted by recovery:
        # what waits for its end (instead of the task's code); None for our own runs.
        self.adopted: Callable[[], Any] | None = None
        self.pool: str | None = None  # the pool whose slot it holds until its code returns
        self.jitter: float | None = None  # the random delay its start waited (jitter)
        # Its success as queued for the store before it is reported (finish_when_durable):
        # the attempt's final record, already written; None until then.
        self.durable: Attempt | None = None


def task_info(t: Task) -> TaskInfo:
    """The task as a frozen ``TaskInfo`` (what ``Scheduler.task`` answers)."""
    return TaskInfo(
        t.id,
        t.id,
        t.state,
        tuple(t.deps),
        tuple(t.dependents),
        t.priority,
        t.attempt,
        t.run_at,
        t.recurrence is not None,
        t.paused,
        t.error,
    )
