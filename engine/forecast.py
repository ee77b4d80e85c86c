"""The forecast: the real scheduler, run ahead on a virtual clock.

Nothing here decides when a task runs. A pass builds a ``Scheduler`` on a
``ManualClock`` with ``SimExecutor``, which "runs" each attempt for a duration
from the ``DurationModel`` instead of running its code, and a driver moves the
clock to whatever comes next: the earliest timer the engine holds
(``Scheduler.next_due``: a scheduled run, a retry, an occurrence, a timeout) or
the end of a simulated attempt. Workers, priorities, dependencies, trigger
rules, cron and intervals, overlap and misfire are the engine's own code.
Everything runs on the calling thread (``SimExecutor`` is a ``SyncExecutor``, so
the engine starts no thread and delivers events inline): a pass is deterministic
for a given seed.

What a pass starts from is a ``Plan``: a workflow file as it would start
(``Plan.from_workflow``), or a copy of a live scheduler's tasks and states
(``Plan.from_scheduler``): settled tasks are replayed at time 0 in no time,
running attempts go on for what remains of them, timers keep their due times.

``forecast()`` makes one pass with each task's point estimate (the schedule,
the critical path and the collisions), then passes with sampled durations, as
many as ``passes`` and ``budget`` allow, for the p50/p90 of the finish.
Times in the results are seconds from the forecast's start (``Forecast.wall``).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from heapq import heappop, heappush
from itertools import count
from typing import Any, NamedTuple

from ._core.scheduler import Scheduler
from ._jobs.context import current_run
from .clock import ManualClock
from .definitions import TaskDefinition
from .durations_model import DurationModel, percentile
from .executors import SyncExecutor
from .options import Overlap
from .states import TaskState

# Replays of settled tasks go first at time 0, then attempts that were running:
# both took their worker before anything that is only ready now.
_REPLAY_PRIORITY = 2**62
_RUNNING_PRIORITY = 2**61
DEFAULT_HORIZON = 7 * 86400.0  # a pass without one stops a week ahead
MIN_QUEUE_WAIT = 1.0  # a wait for a worker shorter than this is not worth a warning

# Plan kinds: how a task enters the simulation.
NEW, DONE, FAILED, DROPPED, RUNNING, RELEASED = (
    "new",  # as defined (a file, or a live task still waiting)
    "done",  # succeeded: replayed in no time
    "failed",  # failed for good: replayed as a failure in no time
    "dropped",  # skipped or cancelled: cancelled at once
    "running",  # an attempt in flight: goes on for what remains
    "released",  # its dependencies were met: only its time (if any) is left
)


class ReplayedFailure(Exception):
    """The outcome a task that already failed is replayed with."""


class SampledFailure(Exception):
    """A sampled attempt that fails, as often as the task's history says."""


def _sim_action():
    """What every simulated task runs: it only tells the executor whose attempt it is."""
    return current_run()


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


# ---------------------------------------------------------------------- results
class SimRun(NamedTuple):
    """One simulated attempt: seconds from the forecast's start. ``ready`` is when it
    became due (it waited for a worker from then to ``start``); ``end`` may lie
    past the horizon (it is still running there); ``replay`` marks a settled task
    replayed at time 0, and ``started_before`` a running attempt's real start."""

    task_id: str
    attempt: int
    ready: float
    start: float
    end: float
    replay: bool = False
    started_before: float | None = None


class Collision(NamedTuple):
    """Something a person should know about: ``kind`` is ``dropped`` (an occurrence
    overlap=skip drops: the previous run still goes), ``overrun`` (a task still
    running when its next occurrence is due: it queues or runs alongside), ``pool``
    (a task waited for a slot of its pool, ``[pools]``, while workers were free) or
    ``queued`` (a task with a time of its own was due, but every worker was busy
    for ``seconds``; tasks released by dependencies wait for workers as a rule)."""

    kind: str
    task_id: str
    at: float
    seconds: float
    detail: str


@dataclass
class PassResult:
    runs: list[SimRun]
    collisions: list[Collision]
    finish: float | None  # when the last task that is not recurring settled
    settled: bool  # every task that is not recurring settled within the horizon
    end: float  # where the clock stopped


@dataclass
class Forecast:
    """The answer. ``runs``, ``collisions``, ``critical_path`` and the expected
    starts and finishes come from the point-estimate pass; ``finish_p50`` and
    ``finish_p90`` from the sampled passes (``passes`` of them)."""

    wall: datetime
    horizon: float | None
    workers: int
    runs: list[SimRun]
    collisions: list[Collision]
    finish: float | None
    finish_p50: float | None
    finish_p90: float | None
    passes: int
    critical_path: list[str]
    starts: dict[str, float]
    finishes: dict[str, float]
    seconds_per_pass: float
    origin: float = 0.0  # the live scheduler's clock at t = 0 (Plan.origin)
    reached: float = 0.0  # where the point pass stopped (the horizon, or max_runs sooner)

    def at(self, seconds: float) -> datetime:
        """The wall time ``seconds`` after the forecast's start."""
        return self.wall + timedelta(seconds=seconds)

    def to_json(self) -> dict[str, Any]:
        def when(seconds: float | None) -> str | None:
            return None if seconds is None else self.at(seconds).isoformat(timespec="seconds")

        return {
            "start": self.wall.isoformat(timespec="seconds"),
            "horizon_seconds": self.horizon,
            "workers": self.workers,
            "finish": when(self.finish),
            "finish_p50": when(self.finish_p50),
            "finish_p90": when(self.finish_p90),
            "passes": self.passes,
            "critical_path": self.critical_path,
            "runs": [
                {
                    "task": r.task_id,
                    "ready": when(r.ready),
                    "start": when(r.start),
                    "end": when(r.end),
                    "seconds": round(r.end - r.start, 3),
                }
                for r in self.runs
                if not r.replay
            ],
            "collisions": [
                {
                    "kind": c.kind,
                    "task": c.task_id,
                    "at": when(c.at),
                    "seconds": round(c.seconds, 3),
                    "detail": c.detail,
                }
                for c in self.collisions
            ],
        }


# ---------------------------------------------------------------------- one pass
class _SimFuture:
    """The future of a simulated attempt: what the engine asks of one, without the
    lock and condition a ``concurrent.futures.Future`` builds (a third of a pass's
    time went there). Everything happens on the driver's thread."""

    __slots__ = ("_callbacks", "_error", "_done")

    def __init__(self) -> None:
        self._callbacks: list[Callable[[Any], object]] = []
        self._error: BaseException | None = None
        self._done = False

    def cancel(self) -> bool:
        return False  # a started attempt runs on; a timeout ends it through the engine

    def cancelled(self) -> bool:
        return False

    def done(self) -> bool:
        return self._done

    def add_done_callback(self, fn: Callable[[Any], object]) -> None:
        if self._done:
            fn(self)
        else:
            self._callbacks.append(fn)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._error

    def result(self, timeout: float | None = None) -> None:
        if self._error is not None:
            raise self._error

    def finish(self, error: BaseException | None = None) -> None:
        self._error, self._done = error, True
        callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn(self)


class SimExecutor(SyncExecutor):
    """Starts each attempt on the virtual clock and leaves its future pending until
    the driver reaches its end. A ``SyncExecutor``, so the engine runs everything,
    done-callbacks and event delivery included, on the driver's thread."""

    def __init__(self, driver: _Pass) -> None:
        self._driver = driver

    def submit(self, fn, /, *args, **kwargs):
        future = _SimFuture()
        ctx = fn()  # the engine's invoke(): _sim_action, with the run's context set
        replayed = self._driver.started(ctx.task_id, ctx.attempt, future)
        if replayed == DONE:  # a replay takes no time
            future.finish()
        elif replayed == FAILED:
            future.finish(ReplayedFailure("failed before the forecast"))
        return future


class _Pass:
    """One simulation: builds the scheduler, drives the clock, records what ran."""

    def __init__(
        self,
        plan: Plan,
        model: DurationModel,
        rng: random.Random | None,
        horizon: float | None,
        until_settled: bool,
        max_runs: int | None = None,
    ) -> None:
        self.plan = plan
        self.max_runs = max_runs
        self.model = model
        self.rng = rng  # None: point estimates
        self.horizon = horizon
        self.until_settled = until_settled
        # However long settling takes, a pass never looks further than this.
        self.cap = (
            horizon
            if horizon is not None and not until_settled
            else max(horizon or 0.0, DEFAULT_HORIZON)
        )
        self.clock = ManualClock(0.0, plan.wall)
        self.scheduler = Scheduler(
            plan.workers, clock=self.clock, executor=SimExecutor(self), pools=plan.pools
        )
        self.pool_of: dict[str, str] = {}  # task id -> its pool, for the pool waits
        # (end, order, future, run index, error it ends with or None)
        self.ends: list[tuple[float, int, _SimFuture, int, BaseException | None]] = []
        self._order = count()
        self.runs: list[SimRun] = []
        self.collisions: list[Collision] = []
        self.ready_at: dict[str, float] = {}
        self.in_flight: dict[str, int] = {}
        self.last_end = -math.inf  # when the driver last ended a simulated attempt
        self.first: dict[str, tuple[str, float]] = {}  # task id -> (kind, elapsed), first run
        self.timeouts: dict[str, float | None] = {}
        # Tasks with a time of their own: only their waits for a worker are news (in a
        # DAG wider than the workers, waiting is the normal case, not a collision).
        self.timed: set[str] = set()
        self.overlap: dict[str, Overlap] = {}

    # -- building ---------------------------------------------------------------
    def build(self) -> None:
        s = self.scheduler
        s.on("ready", self._on_ready)
        cancel_after, run_now, pause = [], [], []
        for planned in self.plan.tasks:
            d = planned.definition
            tid = d.id
            self.timeouts[tid] = d.timeout
            if d.schedule_kind != "deps":
                self.timed.add(tid)
            self.overlap[tid] = d.overlap
            if d.pool in self.plan.pools:
                self.pool_of[tid] = d.pool
            kind = planned.kind
            # Jitter is left out: the pass starts each occurrence at the earliest it can.
            pool = d.pool if d.pool in self.plan.pools else None  # pools not told: no limit
            sim = replace(d, action=_sim_action, jitter=None, pool=pool)
            if d.recurring:
                sim_id = self._submit_recurring(sim, planned.delay)
                if kind in (RUNNING, RELEASED):
                    self.first[tid] = (kind, planned.elapsed)
                    run_now.append(sim_id)
            elif kind in (DONE, FAILED, DROPPED):
                replay = replace(
                    sim, at=None, after=None, deps=(), retry=None, priority=_REPLAY_PRIORITY
                )
                replay.submit(s)
                if kind == DROPPED:
                    cancel_after.append(tid)
                else:
                    self.first[tid] = (kind, 0.0)
            elif kind == RUNNING:
                self.first[tid] = (RUNNING, planned.elapsed)
                replace(sim, at=None, after=None, deps=(), priority=_RUNNING_PRIORITY).submit(s)
            elif kind == RELEASED:
                replace(sim, at=None, after=planned.delay, deps=()).submit(s)
            else:
                if planned.delay is not None:
                    sim = replace(sim, at=None, after=planned.delay)
                sim.submit(s)
            if planned.paused:
                pause.append(tid)
        for tid in cancel_after:
            s.cancel(tid)
        for tid in run_now:
            s.run_now(tid)
        for tid in pause:
            s.pause(tid)

    def _submit_recurring(self, sim: TaskDefinition, delay: float | None) -> str:
        s = self.scheduler
        if sim.every is not None and delay is not None:
            return s.schedule_every(
                sim.action,
                sim.every,
                mode=sim.mode,
                overlap=sim.overlap,
                misfire=sim.misfire,
                misfire_grace=sim.misfire_grace,
                run_at=delay,
                name=sim.id,
                deps=sim.deps,
                priority=sim.priority,
                retry=sim.retry,
                timeout=sim.timeout,
                trigger_rule=sim.trigger_rule,
            )
        return sim.submit(s)  # cron follows the wall clock, which starts where the live one is

    # -- the engine's side ----------------------------------------------------------
    def _on_ready(self, event) -> None:
        self.ready_at[event.task_id] = event.at

    def started(self, task_id: str, attempt: int, future: _SimFuture) -> str | None:
        """An attempt started (``SimExecutor``): note it and when it ends. For a replay
        (no time), the outcome to give it at once: ``DONE`` or ``FAILED``."""
        now = self.clock.now()
        first = self.first.pop(task_id, None)
        started_before = None
        if first is not None and first[0] in (DONE, FAILED):
            self.runs.append(SimRun(task_id, attempt, now, now, now, True))
            return first[0]
        if first is not None and first[0] == RUNNING:
            elapsed = first[1]
            seconds = self.model.remaining(task_id, elapsed, self.rng)
            started_before = now - elapsed
            ready = started_before
        else:
            seconds = (
                self.model.estimate(task_id)
                if self.rng is None
                else self.model.sample(task_id, self.rng)
            )
            ready = self.ready_at.get(task_id, now)
            if ready > now:  # a stale mark from an earlier occurrence
                ready = now
        timeout = self.timeouts.get(task_id)
        if timeout is not None and seconds > timeout:
            seconds = timeout  # the engine's timeout ends it there (a command is stopped)
        end = now + seconds
        index = len(self.runs)
        self.runs.append(SimRun(task_id, attempt, ready, now, end, False, started_before))
        self.in_flight[task_id] = self.in_flight.get(task_id, 0) + 1
        error = None
        if self.rng is not None and started_before is None and self.model.fails(task_id, self.rng):
            error = SampledFailure(f"{task_id} failed (sampled from its history)")
        heappush(self.ends, (end, next(self._order), future, index, error))
        wait = now - ready
        # A wait for a worker ends when a run ends: a start at another moment waited
        # for something else (a pause, its own earlier run).
        freed = self.last_end == now
        pool = self.pool_of.get(task_id)
        if pool is not None and wait >= MIN_QUEUE_WAIT and freed and started_before is None:
            busy = sum(n for t, n in self.in_flight.items() if self.pool_of.get(t) == pool)
            limit = self.plan.pools.get(pool)
            if (
                limit is not None
                and busy >= limit
                and sum(self.in_flight.values()) <= self.plan.workers
            ):
                self.collisions.append(
                    Collision(
                        "pool",
                        task_id,
                        ready,
                        wait,
                        f"waits {_human(wait)} for pool {pool}: {limit} of {limit} busy",
                    )
                )
                return None
        if wait >= MIN_QUEUE_WAIT and freed and started_before is None and task_id in self.timed:
            self.collisions.append(
                Collision(
                    "queued",
                    task_id,
                    ready,
                    wait,
                    f"waits {_human(wait)} for a worker: all {self.plan.workers} are busy",
                )
            )
        return None

    # -- the driver ---------------------------------------------------------------
    def run(self) -> PassResult:
        s, clock, ends = self.scheduler, self.clock, self.ends
        horizon, cap = self.horizon, self.cap
        finish: float | None = None
        settled = False
        try:
            self.build()
            s.start()
            while True:
                if not settled and s.wait(0):
                    settled = True
                    finish = self._finish_time()
                done_looking = horizon is None or clock.now() >= horizon
                if settled and self.until_settled and done_looking:
                    break
                due = s.next_due()
                next_end = ends[0][0] if ends else math.inf
                t = min(math.inf if due is None else due, next_end)
                if t == math.inf or t > cap:
                    break
                past_settling = settled or not self.until_settled
                if horizon is not None and t > horizon and past_settling:
                    break
                if self.max_runs is not None and len(self.runs) >= self.max_runs and past_settling:
                    break  # enough to draw: a task every 3 s makes 28,800 runs a day
                now = clock.now()
                if t <= now and not (ends and ends[0][0] <= t):
                    break  # a timer the clock cannot promote: shut down from outside
                if due is not None and due <= t:
                    self._note_occurrences(t)
                if t > now:
                    clock.advance(t - now)
                while ends and ends[0][0] <= t:
                    self.last_end = t
                    _, _, future, index, error = heappop(ends)
                    task_id = self.runs[index].task_id
                    self.in_flight[task_id] -= 1
                    future.finish(error)
        finally:
            s.shutdown(wait=False)
            while ends:  # attempts past the horizon: ended, so nothing is left in flight
                heappop(ends)[2].finish()
        return PassResult(self.runs, self.collisions, finish, settled, clock.now())

    def _finish_time(self) -> float | None:
        """When the last run of a task that does not repeat ended (None: none ran)."""
        repeating = _repeating(self.plan)
        ends = [r.end for r in self.runs if not r.replay and r.task_id not in repeating]
        return max(ends) if ends else None

    def _note_occurrences(self, t: float) -> None:
        """Before the clock reaches ``t``: occurrences due then whose task still runs."""
        for entry in self.scheduler.due_by(t):
            if entry.kind != "recurring" or not self.in_flight.get(entry.task_id):
                continue
            tid = entry.task_id
            since = max(r.start for r in self.runs if r.task_id == tid)
            overlap = self.overlap.get(tid, Overlap.SKIP)
            if overlap == Overlap.SKIP:
                kind, what = "dropped", "overlap=skip drops this occurrence"
            elif overlap == Overlap.QUEUE:
                kind, what = "overrun", "the occurrence waits for it (overlap=queue)"
            else:
                kind, what = "overrun", "the occurrence runs alongside it (overlap=parallel)"
            self.collisions.append(
                Collision(
                    kind,
                    tid,
                    entry.run_at,
                    entry.run_at - since,
                    f"its run that started {_human(entry.run_at - since)} earlier "
                    f"still goes: {what}",
                )
            )


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


def _human(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def simulate(
    plan: Plan,
    model: DurationModel,
    *,
    rng: random.Random | None = None,
    horizon: float | None = None,
    until_settled: bool = False,
    max_runs: int | None = None,
) -> PassResult:
    """One pass: point estimates, or durations sampled with ``rng``. It stops when
    nothing is left to happen, else at ``horizon`` seconds (None: a week); with
    ``until_settled``, not before every task that is not recurring settled (and
    then at once if there is no horizon; never later than a week either way).
    ``max_runs`` stops it sooner once it simulated that many runs (settled first,
    with ``until_settled``): ``PassResult.end`` says how far it got."""
    return _Pass(plan, model, rng, horizon, until_settled, max_runs).run()


# ---------------------------------------------------------------------- the answer
def critical_path(runs: Iterable[SimRun], deps: Mapping[str, Iterable[str]]) -> list[str]:
    """The chain of remaining work that decides the finish, first task first. From the
    run that ends last, each step goes back to what made the run start when it did:
    the dependency that ended last, when the run started as it ended; else, when the
    run waited for a worker after it was ready, the run that freed the worker (so a
    chain bound by too few workers shows as one). A run that started at its own time
    (or was running already) ends the chain. Replays (work done) are not on it."""
    done = [r for r in runs if not r.replay]
    if not done:
        return []
    last: dict[str, SimRun] = {}
    ending_at: dict[float, list[SimRun]] = {}
    for run in done:
        if run.task_id not in last or run.end > last[run.task_id].end:
            last[run.task_id] = run
        ending_at.setdefault(run.end, []).append(run)
    current = max(last.values(), key=lambda r: (r.end, r.start))
    path = [current.task_id]
    while current.started_before is None:
        before = [
            last[d]
            for d in deps.get(current.task_id, ())
            if d in last and last[d].end <= current.start + 1e-9
        ]
        dep = max(before, key=lambda r: r.end) if before else None
        step: SimRun | None = None
        if dep is not None and dep.end >= current.start - 1e-9:
            step = dep  # released by it
        elif current.start > current.ready + 1e-9:  # ready, but every worker was busy
            freed = [r for r in ending_at.get(current.start, ()) if r.task_id not in path]
            step = min(freed, key=lambda r: r.start) if freed else dep
        if step is None or step.task_id in path:
            break
        current = step
        path.append(current.task_id)
    path.reverse()
    return path


def _check_forecast_arguments(horizon: object, passes: object, budget: object) -> None:
    """A refused forecast says which argument and why (nothing has run yet)."""

    def seconds(value: object) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    if horizon is not None and not (seconds(horizon) and 0 < horizon < math.inf):  # type: ignore[operator]
        raise ValueError(f"forecast: horizon must be None or seconds > 0, got {horizon!r}")
    if isinstance(passes, bool) or not isinstance(passes, int) or passes < 0:
        raise ValueError(f"forecast: passes must be an int >= 0, got {passes!r}")
    if budget is not None and not (seconds(budget) and budget >= 0):  # type: ignore[operator]
        raise ValueError(f"forecast: budget must be None or seconds >= 0, got {budget!r}")


def forecast(
    plan: Plan,
    model: DurationModel | None = None,
    *,
    horizon: float | None = None,
    until_settled: bool = False,
    passes: int = 100,
    budget: float | None = 1.0,
    seed: int = 0,
    max_runs: int | None = None,
) -> Forecast:
    """The point-estimate pass, then up to ``passes`` sampled ones within ``budget``
    seconds of CPU time (None: no limit; the count is then deterministic for a seed).
    ``max_runs`` bounds the point pass as in ``simulate`` (``Forecast.reached``)."""
    _check_forecast_arguments(horizon, passes, budget)
    model = model or DurationModel(expected=plan.expected)
    began = time.perf_counter()
    point = simulate(plan, model, horizon=horizon, until_settled=until_settled, max_runs=max_runs)
    per_pass = time.perf_counter() - began
    finishes = []
    rng = random.Random(seed)
    done = 0
    for _ in range(passes if point.finish is not None else 0):  # nothing to finish: no ETA
        if budget is not None and time.perf_counter() - began + per_pass > budget:
            break
        sampled = simulate(
            plan,
            model,
            rng=random.Random(rng.getrandbits(64)),
            until_settled=True,  # only the finish matters: no need to go past it
        )
        done += 1
        if sampled.finish is not None:
            finishes.append(sampled.finish)
    finishes.sort()
    deciding = [r for r in point.runs if point.finish is None or r.end <= point.finish + 1e-9]
    repeating = _repeating(plan)
    path = critical_path([r for r in deciding if r.task_id not in repeating], plan.deps)
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    for r in point.runs:
        if r.replay:
            continue
        starts.setdefault(r.task_id, r.start)
        ends[r.task_id] = r.end
    return Forecast(
        wall=plan.wall,
        horizon=horizon,
        workers=plan.workers,
        runs=point.runs,
        collisions=sorted(point.collisions, key=lambda c: (c.at, c.task_id)),
        finish=point.finish,
        finish_p50=percentile(finishes, 0.5) if finishes else point.finish,
        finish_p90=percentile(finishes, 0.9) if finishes else point.finish,
        passes=done,
        critical_path=path,
        starts=starts,
        finishes=ends,
        seconds_per_pass=per_pass,
        origin=plan.origin,
        reached=point.end,
    )


# ---------------------------------------------------------------------- in another process
def serve(source=None, sink=None) -> None:
    """Answer forecast requests on a pipe, one at a time, until it closes: what the
    window's forecast process runs (``gui/forecaster.py``), so the passes never take
    the GIL from the window or the engine's workers. A request is a pickled
    ``(plan, model, keyword arguments of forecast())``, an answer a pickled
    ``("ok", Forecast)`` or ``("error", text)``; each is prefixed with its length
    (8 bytes, big-endian). Only its parent writes to it: pickle is no risk here."""
    import pickle
    import struct
    import sys

    source = source or sys.stdin.buffer
    sink = sink or sys.stdout.buffer
    while True:
        head = source.read(8)
        if len(head) < 8:
            return  # the parent closed the pipe (or died): nothing more to answer
        body = source.read(struct.unpack("!Q", head)[0])
        try:
            plan, model, arguments = pickle.loads(body)
            answer: tuple = ("ok", forecast(plan, model, **arguments))
        except Exception as exc:  # told to the parent, which shows no forecast
            answer = ("error", f"{type(exc).__name__}: {exc}")
        data = pickle.dumps(answer)
        sink.write(struct.pack("!Q", len(data)) + data)
        sink.flush()
