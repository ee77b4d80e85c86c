"""Frozen values that cross threads: events, task snapshots, heap entries.

NamedTuples rather than frozen dataclasses: the engine makes several per task
run, and a tuple is built without per-field ``object.__setattr__`` calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple

from .options import Outcome
from .states import TaskState


class Event(NamedTuple):
    seq: int  # grows by one per event across the whole engine
    kind: str  # new state's lowercase name, or dependency_added, paused, ...
    task_id: str  # "" for an event about the whole engine (pause/resume all)
    state: TaskState | None  # the task's state after the event; None for engine events
    at: float  # scheduler clock (monotonic seconds)
    attempt: int
    run_at: float | None
    error: str | None
    # On the event emitted when an attempt ends: how it ended, as its Attempt record
    # says (an Outcome: SUCCEEDED, FAILED, CANCELLED, INTERRUPTED; a timeout FAILED).
    # None on every other event. A run cancelled or interrupted while another run of
    # its task is still in flight emits no event: its outcome is only in attempts().
    outcome: Outcome | None = None

    @property
    def made_up(self) -> bool:
        """False: the owner's engine emitted it. True on a ``MadeUpEvent``."""
        return False


class MadeUpEvent(Event):
    """An event a watcher (``WatchedRun``) made for a change the owner's feed gave
    without its event (a busy round's rows, a new owner, the owner gone): it says
    what the task's row says, ``at`` the time of the owner's write. Equal, as a
    tuple, to an ``Event`` with the same fields; ``made_up`` tells them apart."""

    __slots__ = ()

    @property
    def made_up(self) -> bool:
        return True


class Action(Enum):
    """What can be done to a task; ``Scheduler.allowed_actions`` says which, now."""

    CANCEL = "cancel"
    RETRY = "retry"
    RUN_NOW = "run_now"
    PAUSE = "pause"
    RESUME = "resume"
    EDIT = "edit"  # redefine it: remove it and add it again under its id
    REMOVE = "remove"
    ADD_DEPENDENCY = "add_dependency"  # make it wait for another task
    CLEAR = "clear"  # run a settled one-shot task again within this run

    def __repr__(self) -> str:
        return f"Action.{self.name}"


class TaskInfo(NamedTuple):
    id: str
    name: str
    state: TaskState
    deps: tuple[str, ...]
    dependents: tuple[str, ...]
    priority: int
    attempt: int
    run_at: float | None
    recurring: bool
    paused: bool
    error: str | None


class Entry(NamedTuple):
    run_at: float
    priority: int
    task_id: str
    kind: str  # "scheduled", "retry" or "recurring"


class Attempt(NamedTuple):
    """One finished or running attempt of a task (kept in memory, newest last).

    Stored as one row of the store's ``attempts`` table: its columns after ``run``
    are ``task_id`` and the fields up to ``worker``, in this order
    (``records.ATTEMPT_COLUMNS``, checked when ``records`` is imported).
    ``to_row``/``from_row`` convert. ``task_id`` and ``run`` say whose attempt it is
    when that is not known from where it came: set on attempts read from the store
    (from_row), None on the engine's own records (``Scheduler.attempts(task_id)``).
    """

    number: int
    started: float  # scheduler clock (monotonic); wall-clock epoch seconds in the store
    ended: float | None  # likewise
    outcome: Outcome | str  # an Outcome; a str only if read from a row no Outcome names
    error: str | None
    traceback: str | None
    output: str | None  # tail of captured output, when the task captured any
    log_path: str | None
    exit_code: int | None
    worker: str | None = None  # thread, process or cluster worker that ran it
    task_id: str | None = None
    run: int | None = None  # the store's run number

    def to_row(self, task_id: str, to_wall: Callable[[float | None], float | None]) -> tuple:
        """The row ``SQLiteStore.put_attempt`` takes: ``task_id``, then the fields,
        times turned to wall-clock seconds by ``to_wall`` (which maps None to None)."""
        return (
            task_id,
            self.number,
            to_wall(self.started),
            to_wall(self.ended),
            str(self.outcome),  # plain text: the column is TEXT
            self.error,
            self.traceback,
            self.output,
            self.log_path,
            self.exit_code,
            self.worker,
        )

    @classmethod
    def from_row(cls, row: Mapping[str, Any], offset: float) -> Attempt:
        """An attempt read back from the store: ``row`` by column name (as
        ``SQLiteStore.attempts``/``recent_attempts`` give it); ``offset`` is wall
        minus scheduler clock, taken off the stored times (0: keep wall-clock times)."""
        ended = row["ended"]
        outcome = row["outcome"]
        return cls(
            row["number"],
            row["started"] - offset,
            None if ended is None else ended - offset,
            _OUTCOMES.get(outcome, outcome),
            row["error"],
            row["traceback"],
            row["output"],
            row["log_path"],
            row["exit_code"],
            row["worker"],
            row.get("task_id"),
            row.get("run"),
        )


_OUTCOMES: dict[str, Outcome] = {o.value: o for o in Outcome}


# The longest delay a timer may have (about 250 years): a lock cannot wait much longer
# (``threading.TIMEOUT_MAX`` is about 292 years), and its wall time must stay a datetime.
MAX_TIMER_SECONDS = 250 * 365.25 * 86400.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retries with exponential backoff: delay = min(max_delay, base*factor**(n-1)) +-jitter."""

    max_attempts: int = 1
    base: float = 1.0
    factor: float = 2.0
    max_delay: float = 300.0
    jitter: float = 0.1

    def __post_init__(self):
        attempts = self.max_attempts  # a bool is an int, but True attempts is a mistake
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be an int >= 1, got {attempts!r}")
        for name in ("base", "factor", "max_delay", "jitter"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not _finite(value)
                or value < 0
            ):
                raise ValueError(f"RetryPolicy.{name} must be a finite number >= 0, got {value!r}")
        if self.max_delay > MAX_TIMER_SECONDS:
            raise ValueError(
                f"RetryPolicy.max_delay must be at most {MAX_TIMER_SECONDS:.4g} s "
                f"(250 years), got {self.max_delay!r}"
            )
        if self.jitter > 1:
            raise ValueError(f"RetryPolicy.jitter is a fraction in [0, 1], got {self.jitter!r}")

    def delay(self, failed_attempts: int, rand: float = 0.5) -> float:
        """Backoff after the ``failed_attempts``-th failure; ``rand`` in [0, 1)."""
        raw = min(self.max_delay, self._grown(failed_attempts - 1))
        return max(0.0, raw * (1.0 + self.jitter * (2.0 * rand - 1.0)))

    def _grown(self, n: int) -> float:
        """base * factor**n, without overflowing: the engine calls this under its lock."""
        if self.base == 0 or self.factor == 1:
            return float(self.base)
        try:
            return self.base * self.factor**n
        except OverflowError:  # factor**n (or n itself) is beyond a float
            return math.inf if self.factor > 1 else 0.0


def _finite(value) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False
