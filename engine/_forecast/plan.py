"""The forecast's starting point: a ``Plan`` of ``PlannedTask``s, made from a
workflow file as it would start or copied from a live scheduler's tasks and
states (see ``engine/forecast.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from .._core.scheduler import Scheduler
from ..definitions import TaskDefinition
from ..states import TaskState

# Plan kinds: how a task enters the simulation.
NEW, DONE, FAILED, DROPPED, RUNNING, RELEASED = (
    "new",  # as defined (a file, or a live task still waiting)
    "done",  # succeeded: replayed in no time
    "failed",  # failed for good: replayed as a failure in no time
    "dropped",  # skipped or cancelled: cancelled at once
    "running",  # an attempt in flight: goes on for what remains
    "released",  # its dependencies were met: only its time (if any) is left
)


@dataclass(frozen=True, slots=True)
class PlannedTask:
    """One task as a pass starts it. ``definition`` keeps the task's real
    dependencies (the critical path follows them); ``delay`` is seconds until its
    time for a ``new`` or ``released`` one-shot task (None: no time left), or until
    a recurring task's next occurrence; ``elapsed`` is how long a ``running``
    attempt has run; ``paused`` whether the task is held."""

    definition: TaskDefinition
    kind: str = NEW
    delay: float | None = None
    elapsed: float = 0.0
    paused: bool = False


@dataclass
class Plan:
    """What a pass starts from: the tasks, the workers, the wall time of t = 0 and,
    for a copy of a live scheduler, the time on its clock (``origin``)."""

    tasks: list[PlannedTask]
    workers: int = 4
    wall: datetime = field(default_factory=lambda: datetime.now().astimezone())
    origin: float = 0.0
    pools: dict[str, int] = field(default_factory=dict)  # shared limits ([pools])

    @property
    def deps(self) -> dict[str, tuple[str, ...]]:
        return {p.definition.id: p.definition.deps for p in self.tasks}

    @property
    def expected(self) -> dict[str, float | None]:
        """The workflow's ``expected`` seconds per task (for ``DurationModel``)."""
        return {p.definition.id: p.definition.expected for p in self.tasks}

    def without_actions(self) -> Plan:
        """A copy whose tasks run nothing (a pass replaces every action anyway): it
        pickles whatever the tasks ran, so a pass can run in another process."""
        tasks = [replace(p, definition=replace(p.definition, action=None)) for p in self.tasks]
        return replace(self, tasks=tasks)

    @classmethod
    def from_workflow(cls, workflow, wall: datetime | None = None) -> Plan:
        """A workflow file as a fresh run of it would start at ``wall`` (default: now)."""
        tasks = [PlannedTask(workflow.tasks[tid]) for tid in workflow.order()]
        wall = wall or datetime.now().astimezone()
        return cls(tasks, workflow.workers, wall, pools=dict(getattr(workflow, "pools", {})))

    @classmethod
    def from_scheduler(
        cls,
        scheduler: Scheduler,
        expected: Mapping[str, float | None] | None = None,
        cache: dict[str, TaskDefinition] | None = None,
    ) -> Plan:
        """A copy of a live scheduler's tasks as they stand now. ``expected`` adds the
        workflow's ``expected`` seconds (the engine does not keep them). ``cache``, a
        dict the caller keeps between copies, holds each task's definition without its
        action (so the plan pickles): a definition is asked of the scheduler only when
        missing; the caller empties it when tasks are edited."""
        clock = scheduler.clock
        now, wall = clock.now(), clock.wall()
        infos = scheduler.tasks()
        next_occurrence = {
            e.task_id: e.run_at for e in scheduler.upcoming(len(infos) + 1) if e.kind == "recurring"
        }
        expected = expected or {}
        tasks = []
        for info in infos:
            definition = None if cache is None else cache.get(info.id)
            if definition is None:
                try:
                    definition = scheduler.definition(info.id)
                except KeyError:  # removed since tasks() answered
                    continue
                if cache is not None:
                    definition = cache[info.id] = replace(definition, action=None)
            if definition.deps != info.deps:
                definition = replace(definition, deps=tuple(info.deps))
            seconds = expected.get(info.id)
            if seconds is not None and definition.expected != seconds:
                definition = replace(definition, expected=seconds)
            tasks.append(_planned(scheduler, info, definition, now, next_occurrence.get(info.id)))
        # A watched run tells no pools ({}).
        pools = {name: limits[1] for name, limits in scheduler.pool_usage().items()}
        return cls(tasks, scheduler.workers, wall, now, pools)


def _planned(scheduler, info, definition, now: float, occurrence: float | None) -> PlannedTask:
    state = info.state
    in_seconds = None if info.run_at is None else max(0.0, info.run_at - now)
    if info.recurring:
        elapsed = 0.0
        kind = NEW
        if state is TaskState.RUNNING:
            kind, elapsed = RUNNING, _elapsed(scheduler, info.id, now)
        elif state is TaskState.READY:
            kind = RELEASED
        delay = None if occurrence is None else max(0.0, occurrence - now)
        return PlannedTask(definition, kind, delay, elapsed, info.paused)
    if state is TaskState.SUCCEEDED:
        return PlannedTask(definition, DONE)
    if state is TaskState.FAILED:
        return PlannedTask(definition, FAILED)
    if state in (TaskState.SKIPPED, TaskState.CANCELLED):
        return PlannedTask(definition, DROPPED)
    if state is TaskState.RUNNING:
        return PlannedTask(definition, RUNNING, None, _elapsed(scheduler, info.id, now))
    if state is TaskState.PENDING:
        return PlannedTask(definition, NEW, in_seconds, 0.0, info.paused)
    # scheduled, ready or waiting for a retry: released, only its time is left
    return PlannedTask(definition, RELEASED, in_seconds, 0.0, info.paused)


def _elapsed(scheduler, task_id: str, now: float) -> float:
    attempts = scheduler.attempts(task_id)
    running = [a for a in attempts if a.ended is None]
    return max(0.0, now - running[-1].started) if running else 0.0


def _repeating(plan: Plan) -> set[str]:
    """Recurring tasks and everything downstream of one (they never settle for good)."""
    dependents: dict[str, list[str]] = {}
    for p in plan.tasks:
        for dep in p.definition.deps:
            dependents.setdefault(dep, []).append(p.definition.id)
    stack = [p.definition.id for p in plan.tasks if p.definition.recurring]
    found = set(stack)
    while stack:
        for child in dependents.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found
