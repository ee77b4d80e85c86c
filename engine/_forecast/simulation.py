"""One pass of the forecast: the real scheduler on a ``ManualClock`` with a
``SimExecutor``, driven from one due time to the next (see ``engine/forecast.py``)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from heapq import heappop, heappush
from itertools import count
from typing import Any, NamedTuple

from .._core.scheduler import Scheduler
from .._jobs.context import current_run
from ..clock import ManualClock
from ..definitions import TaskDefinition
from ..durations_model import DurationModel
from ..executors import SyncExecutor
from ..options import Overlap
from .plan import DONE, DROPPED, FAILED, RELEASED, RUNNING, Plan, _repeating

# Replays of settled tasks go first at time 0, then attempts that were running:
# both took their worker before anything that is only ready now.
_REPLAY_PRIORITY = 2**62
_RUNNING_PRIORITY = 2**61
DEFAULT_HORIZON = 7 * 86400.0  # a pass without one stops a week ahead
MIN_QUEUE_WAIT = 1.0  # a wait for a worker shorter than this is not worth a warning


class ReplayedFailure(Exception):
    """The outcome a task that already failed is replayed with."""


class SampledFailure(Exception):
    """A sampled attempt that fails, as often as the task's history says."""


def _sim_action():
    """What every simulated task runs: it only tells the executor whose attempt it is."""
    return current_run()


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
