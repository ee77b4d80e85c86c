"""One fold of a run's events into task snapshots, for everyone who follows a run.

Events in (``apply``), task snapshots out (``info``, ``state``, ``brief``), with a
cursor (the newest ``seq`` applied) and a floor (events at or below it are already
in the snapshot the fold started from, and ignored). Qt-free and lock-free: the
caller owns the thread. Its users: the window's bridge (``gui/bridge.py``), the
watcher (``engine/watched_run.py``, for what its listeners were told) and the command
line's run monitor (``taskloom/cli.py``). The same events give each of them the
same snapshots (``tests/engine/test_fold.py``).

The rules, as the engine emits its events:

- an event with a state (every task event but ``paused``/``resumed`` and
  ``removed``) sets the task's ``state``, ``attempt``, ``run_at`` and ``error``;
- ``paused``/``resumed`` set the task's ``paused`` only (kept apart, so that a
  later state event cannot hide it: applying only each task's latest state event
  and latest pause event gives the same snapshot as applying all of them);
- ``removed`` forgets the task;
- an event with no task (``task_id`` "") is about the whole run: ``paused``
  follows pause/resume all;
- the other fields of a task (deps, dependents, priority, recurring, name) come
  only from a reading (``put``, ``rebase``): ``apply`` answers ``UNKNOWN`` for a
  task it has no reading of and ``STRUCTURAL`` for an edge change, and the caller
  reads it whole if it needs those fields.

``apply`` makes nothing (no tuple, no list): it runs for every event of a busy
run, on the owner's threads too. A snapshot (``info``) is made when asked for,
and folded into the reading then: every method, reads included, belongs to the
thread that applies the events.
"""

from __future__ import annotations

from collections.abc import Iterable

from .models import Event, TaskInfo
from .states import TaskState

# What ``apply`` did with an event, for callers that do more than fold.
IGNORED = 0  # at or below the floor: the snapshot holds it already
ENGINE = 1  # about the whole run (pause/resume all)
STATE = 2  # a known task's state fields changed
PAUSE = 3  # a known task was paused or resumed
REMOVED = 4  # the task left the run
STRUCTURAL = 5  # a known task's edges or definition changed: read it (and its neighbours)
UNKNOWN = 6  # a task the fold has no reading of: read it whole

STRUCTURAL_KINDS = frozenset({"dependency_added", "dependency_removed", "edited"})
PAUSE_KINDS = frozenset({"paused", "resumed"})


class TaskFold:
    """Task snapshots folded from events; see the module's docstring."""

    __slots__ = ("readings", "latest", "pauses", "states", "floor", "cursor", "paused")

    def __init__(self, tasks: Iterable[TaskInfo] = (), floor: int = 0):
        # Read only, for callers on a hot path (the feed reads them per row); the
        # methods below are the interface.
        self.readings: dict[str, TaskInfo] = {}  # each task's last reading (or snapshot)
        self.latest: dict[str, Event] = {}  # its newest state event not in the reading
        self.pauses: dict[str, bool] = {}  # its pause, when an event changed it since
        self.states: dict[str, TaskState] = {}  # every task's state now (read, do not write)
        self.floor = floor
        self.cursor = floor  # the newest seq applied
        self.paused: bool | None = None  # the whole run, once an event said
        for info in tasks:
            self.put(info)

    # -- events ------------------------------------------------------------------
    def apply(self, event: Event) -> int:
        """Fold one event in; what it did (``IGNORED`` ... ``UNKNOWN``)."""
        seq = event.seq
        if seq <= self.floor:
            return IGNORED
        if seq > self.cursor:
            self.cursor = seq
        tid, kind = event.task_id, event.kind
        if not tid:
            if kind in PAUSE_KINDS:
                self.paused = kind == "paused"
            return ENGINE
        if kind == "removed":
            self.remove(tid)
            return REMOVED
        if kind in PAUSE_KINDS:
            self.pauses[tid] = kind == "paused"
            return PAUSE if tid in self.readings else UNKNOWN
        if event.state is not None:
            self.latest[tid] = event
            self.states[tid] = event.state
        if tid not in self.readings:
            return UNKNOWN
        return STRUCTURAL if kind in STRUCTURAL_KINDS else STATE

    # -- readings ----------------------------------------------------------------
    def put(self, info: TaskInfo) -> None:
        """A reading of the task, taken whole (newer than every event applied)."""
        tid = info.id
        self.readings[tid] = info
        self.latest.pop(tid, None)
        self.pauses.pop(tid, None)
        self.states[tid] = info.state

    def rebase(self, info: TaskInfo) -> None:
        """A reading for the task's other fields only: its state fields and pause stay
        what the fold had (the events applied; a reading may be ahead of them), or
        the reading's for a task the fold knew nothing of."""
        tid = info.id
        old = self.readings.get(tid)
        if old is None and tid not in self.latest:
            if tid in self.pauses:
                info = info._replace(paused=self.pauses.pop(tid))
            self.put(info)
            return
        if old is not None:
            if tid not in self.latest:
                info = info._replace(
                    state=old.state, attempt=old.attempt, run_at=old.run_at, error=old.error
                )
            if tid not in self.pauses:
                info = info._replace(paused=old.paused)
        self.readings[tid] = info

    def remove(self, tid: str) -> None:
        self.readings.pop(tid, None)
        self.latest.pop(tid, None)
        self.pauses.pop(tid, None)
        self.states.pop(tid, None)

    def reset(self, tasks: Iterable[TaskInfo], floor: int) -> None:
        """Start again from a snapshot (``tasks`` as of ``floor``)."""
        self.readings, self.latest, self.pauses, self.states = {}, {}, {}, {}
        self.floor = self.cursor = floor
        for info in tasks:
            self.put(info)

    # -- snapshots ---------------------------------------------------------------
    def __contains__(self, tid: object) -> bool:
        return tid in self.readings

    def __len__(self) -> int:
        return len(self.readings)

    def known(self, tid: str) -> bool:
        """Whether the fold has a reading of the task (``info`` is not None)."""
        return tid in self.readings

    def info(self, tid: str) -> TaskInfo | None:
        """The task as its reading and the events since say; None without a reading."""
        base = self.readings.get(tid)
        if base is None:
            return None
        last = self.latest.pop(tid, None)
        paused = self.pauses.pop(tid, None)
        if last is None and paused is None:
            return base
        if last is not None:
            assert last.state is not None  # only events with a state are kept
            base = base._replace(
                state=last.state, attempt=last.attempt, run_at=last.run_at, error=last.error
            )
        if paused is not None and paused != base.paused:
            base = base._replace(paused=paused)
        self.readings[tid] = base
        return base

    @property
    def tasks(self) -> dict[str, TaskInfo]:
        """Every task with a reading, as a snapshot (a new dict)."""
        return {tid: info for tid in list(self.readings) if (info := self.info(tid)) is not None}

    def brief(self, tid: str) -> tuple[TaskState | None, int, bool] | None:
        """(state, attempt, paused) as far as the fold knows, or None if it knows
        nothing of the task. (Dict reads only: the watcher asks for every task a
        busy round changed.)"""
        last = self.latest.get(tid)
        base = self.readings.get(tid)
        paused = self.pauses.get(tid)
        if paused is None:
            paused = False if base is None else base.paused
        if last is not None:
            return (last.state, last.attempt, paused)
        if base is not None:
            return (base.state, base.attempt, paused)
        return (None, 0, paused) if tid in self.pauses else None
