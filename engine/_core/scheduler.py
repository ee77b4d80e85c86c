"""The scheduler: the engine's public API, a facade over the parts that do the work.

``Scheduler`` checks arguments and delegates. The parts, each owning its state:

- ``TaskGraph`` (graph.py): the tasks, their edges, trigger rules, cycle checks;
- ``TimerQueue`` (_schedule/timers.py): timers not yet due, cron cursors, the timer thread;
- ``Dispatcher`` (dispatch.py): the ready heap, worker threads or executor
  submission, attempts starting and their slots freed;
- ``Lifecycle`` (lifecycle.py): every state change and what it sets off (retries,
  recurrence, dependents, cancel, pause);
- ``Events`` (events.py) numbers events, ``EventDelivery`` (delivery.py) hands
  them to listeners;
- ``Journal`` (_store/journal.py): rows for the optional store, and ``restore``.

Concurrency (the whole contract is in docs/concurrency.md):
one core lock (``Core.lock``, with three conditions on it) guards the graph, the
queues, every ``Task`` and ``Run`` record and the run flags, so a transition that
touches several parts is atomic. Other locks guard their own small state (event
listeners, the store's connections, a command's process, the clock) and are never
held while taking the core lock. Task code, listeners and cancel callbacks never
run under the core lock: the parts collect such work with ``Core.defer`` and the
caller runs it after releasing it (``Dispatcher.after``). Events are queued under
the lock, so they are in ``seq`` order, and delivered outside it.

No engine thread dies of an engine error: each loop (worker, timer, done-callback,
delivery) logs it once and fails the attempt it was handling
(``Lifecycle.engine_error``). The store is never flushed under the lock; when
writing fails, its writer thread (which never holds it) calls
``Dispatcher.on_store_failure``, which takes the lock, stops the engine and fails
runs waiting for a commit; ``wait()``, ``shutdown()`` and scheduling calls then
raise ``StoreError``. ``wait()``/``shutdown(wait=True)`` from task code, and
``wait()`` from a listener, raise ``RuntimeError``.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Executor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from .._schedule.recurrence import MISFIRES, MODES, OVERLAPS, CronRecurrence, IntervalRecurrence
from .._schedule.timers import TimerQueue
from .._store.journal import Journal
from ..actions import Call
from ..clock import Clock, ManualClock, SystemClock
from ..definitions import TaskDefinition, defined_by_call, definition_of_task, row_of_call
from ..errors import InvalidArgument
from ..executors import SyncExecutor
from ..models import MAX_TIMER_SECONDS, Action, Attempt, Entry, RetryPolicy, TaskInfo
from ..options import Misfire, Mode, Overlap, TriggerRule, values
from ..states import TaskState
from ..store import SQLiteStore, StoreError
from .core import Core
from .delivery import EventDelivery
from .dispatch import Dispatcher
from .events import Events
from .graph import TaskGraph
from .lifecycle import Lifecycle
from .slots import checked_limits
from .task import Task
from .task import task_info as _info

TRIGGER_RULES = values(TriggerRule)
_TRIGGER_RULE_OF = {rule.value: rule for rule in TriggerRule}  # a StrEnum hashes as its str
EVENT_KINDS = frozenset(s.value for s in TaskState) | {
    "dependency_added",
    "dependency_removed",
    "paused",
    "resumed",
    "removed",
    "edited",
    "restored",
}


def _check_seconds(what: str, value: object, *, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {value!r}")
    try:
        seconds = float(value)
    except OverflowError:  # an int too large for a float
        seconds = math.inf
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise InvalidArgument(f"{what} must be a finite number {bound}, got {_short(value)}", what)
    if seconds > MAX_TIMER_SECONDS and what != "run_at":  # run_at: see _normalise_run_at
        _too_far(what, value)
    return seconds


def _too_far(what: str, value: object) -> None:
    raise InvalidArgument(
        f"{what} must be at most {MAX_TIMER_SECONDS:.4g} s (250 years) from now, "
        f"got {_short(value)}",
        what,
    )


def _short(value: object) -> str:
    text = repr(value)  # 10**400 need not fill the screen
    return text if len(text) <= 40 else text[:40] + "..."


def _check_wait_timeout(timeout: object) -> float | None:
    """None, or seconds >= 0; anything beyond what a lock can wait (inf) is None."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be None or a number of seconds, got {timeout!r}")
    try:
        seconds = float(timeout)
    except OverflowError:
        return None
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(f"timeout must be None or a number >= 0, got {timeout!r}")
    return None if seconds > threading.TIMEOUT_MAX else seconds


class _Replacing(threading.local):
    """The task this thread's ``update()`` replaces, or None (a class default: a thread
    that never updated reads it in ~35 ns; a missing thread-local attribute costs ~500)."""

    task_id: str | None = None
    restoring: Task | None = None  # restore(): the removed task put back in place


REMOVED_KEPT = 64  # removed tasks restore() can put back (the newest ones)


class Scheduler:
    """Runs callables when they are due: at a time, after a delay, on an interval or a
    cron schedule, and once their dependencies allow, with priorities, retries,
    cancellation and events. The public API of the engine; see docs/engine.md.

    ``workers`` attempts run at once, on engine-owned threads or on ``executor``
    (any ``concurrent.futures.Executor``; ``SyncExecutor`` runs everything on the
    calling thread). ``clock`` defaults to the real one (``ManualClock`` in tests).
    ``store`` (a ``SQLiteStore``) keeps every task and attempt so that a run can be
    resumed after a crash; ``log_dir`` is where commands write their output.
    ``listeners`` are subscribed (as ``subscribe``) before the store is restored:
    they hear one ``restored`` event per restored task, and all that follows.
    ``env`` is added to every command's environment (a run's number and params).
    Nothing runs before ``start()``."""

    def __init__(
        self,
        workers: int = 4,
        clock: Clock | None = None,
        executor: Executor | None = None,
        store: SQLiteStore | None = None,
        log_dir: str | None = None,
        listeners: Iterable[Callable[[Any], object]] = (),
        env: Mapping[str, str] | None = None,
        pools: Mapping[str, int] | None = None,
        seed: int | None = None,
    ):
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise InvalidArgument(f"workers must be an int >= 1, got {workers!r}", "workers")
        self._clock: Clock = clock or SystemClock()
        self._store = store
        limits = checked_limits(pools)
        self._store_error_reported = False  # by shutdown(): a store failure is raised once
        # update() goes through the scheduling calls (definition.submit), which check
        # every argument; this thread's call then replaces the task named here.
        self._replacing = _Replacing()
        # Tasks remove() took out, newest last: {id: (definition, task, dependents)}.
        self._removed: dict[str, tuple[TaskDefinition, Task, tuple[str, ...]]] = {}
        # The parts; each is guarded by the core lock (see core.py).
        core = self._core = Core()
        self._adoptions: dict[str, tuple[int, str]] = {}  # set by _restore
        self._delivery = EventDelivery(threaded=not isinstance(executor, SyncExecutor))
        self._journal = None if store is None else Journal(store, self._clock)
        self._graph = TaskGraph(core)
        self._timers = TimerQueue(core, self._clock)
        self._events = Events(self._clock, self._delivery, self._journal)
        self._lifecycle = Lifecycle(
            core, self._clock, self._graph, self._timers, self._events, self._journal
        )
        self._dispatcher = Dispatcher(
            core,
            self._clock,
            self._graph,
            self._timers,
            self._events,
            self._delivery,
            self._journal,
            self._lifecycle,
            workers=workers,
            executor=executor,
            log_dir=log_dir,
            pools=limits,
            seed=seed,
        )
        self._lifecycle.connect(self._dispatcher)
        if env:
            self.set_env(env)
        self._timers.connect(
            self._lifecycle.on_timer, self._lifecycle.engine_error, self._dispatcher.after
        )
        # Subscribed before the store is restored, so they hear the restore's events.
        for listener in listeners:
            if not callable(listener):
                raise TypeError(f"a listener must be callable, got {listener!r}")
            self._delivery.add(None, listener)
        if store is not None:
            self._restore(store)
        if self._clock.manual:
            cast(ManualClock, self._clock).attach(self._timers.on_clock_moved)

    def _restore(self, store: SQLiteStore) -> None:
        from .recovery import Recovery  # only a scheduler with a store needs it

        assert self._journal is not None
        with self._core.lock:
            try:
                recovery = Recovery(
                    self._journal,
                    self._core,
                    self._graph,
                    self._timers,
                    self._dispatcher,
                    self._events,
                    self._lifecycle,
                )
                recovery.run()
                self._adoptions = recovery.adopted
            except (KeyError, ValueError, TypeError) as exc:  # a row we cannot read
                from ..store import damaged

                what = f"{type(exc).__name__}: {exc}"
                raise damaged(Path(store.path), what) from exc
        store.add_failure_listener(self._dispatcher.on_store_failure)
        store.add_commit_listener(self._dispatcher.durable_batch_done)
        self._dispatcher.after(self._core.take_deferred())  # deliver the restore's events

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Scheduler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown(wait=True)

    def start(self) -> None:
        """Start dispatching: due work begins to run. Calling it again does nothing.
        ``RuntimeError`` if the OS cannot start the threads (nothing is left half-started)."""
        core = self._core
        with self._edit():
            if core.started:
                return
            orphan = self._graph.first_orphan()
            if orphan is not None:
                raise KeyError(f"task {orphan[0]!r} depends on unknown task {orphan[1]!r}")
            core.started = True
            self._timers.start()
            try:
                self._dispatcher.start_threads()
            except RuntimeError as exc:  # the OS has no more threads to give
                error = exc
                # The threads we got wait for this lock: they see stopping and end
                # without taking work (nothing was promoted yet).
                core.stopping = True
                core.work_cond.notify_all()
                core.timer_cond.notify_all()
            else:
                self._timers.promote_due()
                return
        self._undo_start(error)

    def _undo_start(self, error: RuntimeError) -> None:
        """All or nothing: end the threads a failed start() got, leave it not started."""
        core, dispatcher = self._core, self._dispatcher
        threads = dispatcher.threads
        for thread in threads:
            thread.join()
        with core.lock:
            dispatcher.forget_threads()
            core.started = False
            self._timers.stop()
            core.stopping = core.closed  # a shutdown() meanwhile keeps it stopped
        raise RuntimeError(
            f"workers={dispatcher.workers}: could start only {len(threads)} of the "
            f"{dispatcher.threads_needed()} threads the scheduler needs ({error}); "
            "use fewer workers"
        ) from error

    def shutdown(
        self, wait: bool = True, *, cancel_running: bool = False, hand_over: bool = False
    ) -> None:
        """Stop starting work; with ``wait``, let running tasks finish and deliver events.

        ``cancel_running`` asks running tasks to stop (a command is terminated). Such
        an interrupted attempt does not count against the retry budget and leaves its
        task READY, so a run resumed from the store runs it again (Ctrl-C, closing
        the window).

        ``hand_over`` (with a store) leaves running commands running under their
        supervisor, their attempts running in the store, for the store's next owner
        to adopt ("keep running in the background"); code that cannot be handed over
        (in-process calls) is interrupted as with ``cancel_running``.
        """
        if wait:
            self._refuse_reentry("shutdown")
        core, dispatcher = self._core, self._dispatcher
        with core.lock:
            core.closed = True
            core.stopping = True
            if not core.started:  # adopted commands nobody waits for here go on as they are
                dispatcher.forget_unstarted_adopted()
            if cancel_running or hand_over:
                core.interrupting = True
                for task in self._graph.tasks.values():
                    for run in task.runs:
                        if hand_over and (run.ctx.supervision is not None or run.adopted):
                            core.defer(run.ctx.request_detach)
                        else:
                            dispatcher.stop_run(run)
            core.wake_all()
            deferred = core.take_deferred()
        # The stop requests, here: after a store failure no idle worker is left to run them.
        dispatcher.after(deferred)
        if wait:
            with core.lock:
                core.wait_settled(lambda: dispatcher.running == 0)
                deferred = core.take_deferred()
            dispatcher.after(deferred)
        if self._clock.manual:
            cast(ManualClock, self._clock).detach(self._timers.on_clock_moved)
        if wait:
            current = threading.current_thread()
            for thread in dispatcher.threads:
                if thread is not current:
                    thread.join()
        self._delivery.close(wait=wait)
        if self._store is not None:
            try:
                self._store.flush()
            except StoreError as exc:
                dispatcher.on_store_failure(exc)
        if core.store_error is not None and not self._store_error_reported:
            self._store_error_reported = True  # once: a later shutdown() has nothing new
            self._raise_store_error()

    def _raise_store_error(self) -> None:
        error = self._core.store_error
        assert error is not None
        raise StoreError(str(error)) from error.__cause__

    def _refuse_reentry(self, call: str) -> None:
        """Like ``Thread.join()`` on itself: waiting here could never end."""
        if self._dispatcher.in_task_code():
            raise RuntimeError(f"{call}() called from task code would wait for itself")
        if call == "wait" and self._delivery.in_listener():
            raise RuntimeError(f"{call}() called from a listener would wait for its own delivery")

    def wait(self, timeout: float | None = None) -> bool:
        """True once every task that is not recurring (nor downstream of one) settled.

        ``timeout`` is None or seconds >= 0; ``math.inf`` also means no timeout.
        Raises ``StoreError`` once the store failed (the engine stopped), and
        ``RuntimeError`` from task code or a listener (it would wait for itself).
        """
        timeout = _check_wait_timeout(timeout)
        self._refuse_reentry("wait")
        core = self._core
        if not core.started:
            self.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        with core.lock:
            # After a store failure, also for the runs still in flight to end (they fail).
            core.wait_settled(
                lambda: (
                    core.unsettled == 0
                    or core.stopping
                    and (core.store_error is None or self._dispatcher.running == 0)
                ),
                timeout,
            )
            settled = core.unsettled == 0
            seq = self._events.seq
        if core.store_error is not None:
            self._raise_store_error()
        if not settled:
            return False
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        return self._delivery.wait_delivered(seq, remaining)

    # ------------------------------------------------------------------ scheduling
    def schedule(
        self,
        fn: Any,
        run_at: float | datetime | None = None,
        *,
        name: str | None = None,
        deps: Iterable[str] = (),
        priority: int = 0,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        trigger_rule: str = "all_success",
        pool: str | None = None,
        jitter: float | None = None,
    ) -> str:
        """Add a one-shot task; returns its id. ``run_at`` is a time on the scheduler's
        clock (seconds) or an aware ``datetime``; None means as soon as ``deps`` allow.
        ``name`` is the task id (generated if None); ``priority`` orders ready work
        (higher first); ``retry`` a ``RetryPolicy``; ``timeout`` seconds per attempt;
        ``trigger_rule`` one of ``TRIGGER_RULES``. A refused call changes nothing."""
        return self._create(
            fn, run_at, name, deps, priority, retry, timeout, trigger_rule, None,
            _extras({}, pool, jitter),
        )  # fmt: skip

    def schedule_after(
        self,
        fn: Any,
        delay: float,
        *,
        name: str | None = None,
        deps: Iterable[str] = (),
        priority: int = 0,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        trigger_rule: str = "all_success",
        pool: str | None = None,
        jitter: float | None = None,
    ) -> str:
        """Like ``schedule``, due ``delay`` seconds from now."""
        delay = _check_seconds("delay", delay)
        run_at = self._clock.now() + delay
        return self._create(
            fn, run_at, name, deps, priority, retry, timeout, trigger_rule, None,
            _extras({}, pool, jitter), after=delay,
        )  # fmt: skip

    def add(self, fn: Any, deps: Iterable[str] = (), **kw: Any) -> str:
        """Like ``schedule``, run as soon as ``deps`` allow (the usual way to build a graph)."""
        return self.schedule(fn, None, deps=deps, **kw)

    def schedule_every(
        self,
        fn: Any,
        interval: float,
        *,
        mode: str = "fixed_rate",
        overlap: str = "skip",
        misfire: str = "run_once",
        misfire_grace: float = 30.0,
        run_at: float | datetime | None = None,
        name: str | None = None,
        deps: Iterable[str] = (),
        priority: int = 0,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        trigger_rule: str = "all_success",
        pool: str | None = None,
        jitter: float | None = None,
        skip: Any = None,
    ) -> str:
        """Add a recurring task every ``interval`` seconds; returns its id. ``mode`` is
        fixed_rate (a cadence) or fixed_delay (interval after each run ends);
        ``overlap`` (skip, queue, parallel) says what an occurrence due while a run is
        going does; ``misfire`` (run_once, skip, run_all) what occurrences more than
        ``misfire_grace`` seconds late do; ``skip`` (a ``calendars.SkipDays``): the days
        whose occurrences are left out. Other arguments as in ``schedule``."""
        interval = _check_seconds("interval", interval, allow_zero=False)
        if mode not in MODES:
            raise InvalidArgument(f"mode must be one of {', '.join(MODES)}, got {mode!r}", "mode")
        recurrence = IntervalRecurrence(interval, Mode(mode), skip)
        options = _extras(self._recurring_options(overlap, misfire, misfire_grace), pool, jitter)
        if recurrence.skip is not None:  # its days are read in a zone: the definition's
            options["timezone"] = None if skip.tz == "UTC" else skip.tz
        return self._create(
            fn, run_at, name, deps, priority, retry, timeout, trigger_rule, recurrence, options
        )

    def schedule_cron(
        self,
        fn: Any,
        expr: str,
        tz: str | None = None,
        *,
        overlap: str = "skip",
        misfire: str = "run_once",
        misfire_grace: float = 30.0,
        name: str | None = None,
        deps: Iterable[str] = (),
        priority: int = 0,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        trigger_rule: str = "all_success",
        pool: str | None = None,
        jitter: float | None = None,
        skip: Any = None,
    ) -> str:
        """Add a task at the times of a cron expression (5 fields, or 6 with seconds)
        in time zone ``tz`` (None: UTC); returns its id. Each occurrence runs once, at
        its wall-clock time; daylight-saving days follow docs/engine.md (3.8 Cron).
        ``overlap``, ``misfire`` and ``skip`` as in ``schedule_every``."""
        from ..cron import CronTrigger  # the cron library loads only when used

        zone_name = "UTC" if tz is None else tz
        recurrence = CronRecurrence(CronTrigger(expr, zone_name), expr, zone_name, skip)
        options = self._recurring_options(overlap, misfire, misfire_grace)
        options["timezone"] = tz  # as given, for the definition
        _extras(options, pool, jitter)
        return self._create(
            fn, None, name, deps, priority, retry, timeout, trigger_rule, recurrence, options
        )

    @staticmethod
    def _recurring_options(overlap: object, misfire: object, misfire_grace: object) -> dict:
        if overlap not in OVERLAPS:
            raise InvalidArgument(
                f"overlap must be one of {', '.join(OVERLAPS)}, got {overlap!r}", "overlap"
            )
        if misfire not in MISFIRES:
            raise InvalidArgument(
                f"misfire must be one of {', '.join(MISFIRES)}, got {misfire!r}", "misfire"
            )
        grace = _check_seconds("misfire_grace", misfire_grace)
        return {"overlap": Overlap(overlap), "misfire": Misfire(misfire), "misfire_grace": grace}

    def _create(
        self,
        fn: Any,
        run_at: object,
        name: object,
        deps: Iterable[object],
        priority: object,
        retry: object,
        timeout: object,
        trigger_rule: object,
        recurrence: IntervalRecurrence | CronRecurrence | None,
        options: dict[str, Any],
        after: float | None = None,
    ) -> str:
        """Check the arguments, then add the task under the lock (``Lifecycle.add_task``).
        ``after``: the delay given to ``schedule_after``, kept for ``definition()``."""
        self._check_open()  # before the checks below: after shutdown, always RuntimeError
        if "pool" in options:
            self._check_pool(options["pool"])
        fn = self._normalise_fn(fn)
        at = None if run_at is None else self._normalise_run_at(run_at)
        name, deps, priority, retry, timeout, rule = _checked_options(
            name, deps, priority, retry, timeout, trigger_rule
        )
        # What definition() answers. Most tasks keep only their one-shot time (an aware
        # datetime as given, or a float on this clock): the rest is in the task's
        # fields. A full TaskDefinition (3 us) only when the fields do not say it all
        # (a delay, a cron zone as given).
        given = run_at if isinstance(run_at, datetime) else None
        definition: TaskDefinition | datetime | float | None = None
        if recurrence is None and after is None:
            definition = at if given is None else given
        elif after is not None or "timezone" in options or getattr(recurrence, "skip", None):
            definition = defined_by_call(
                name or "", fn, None, after, deps, priority, retry, timeout, rule,
                recurrence, options,
            )  # fmt: skip
        spec = None
        if self._journal is not None:  # refuses what could not run again after a restart
            spec = row_of_call(
                fn, given if recurrence is None else None, after, deps, priority, retry,
                timeout, rule, recurrence, options,
            )  # fmt: skip
            self._check_storable(fn, spec, at)
        # _edit(), spelled out: a generator-based context manager costs ~1 us a call.
        # A refused call raises before take_deferred: nothing deferred runs.
        core = self._core
        replacing = self._replacing.task_id
        with core.lock:
            self._check_open()
            fields: dict[str, Any] = dict(
                definition=definition,
                run_at=at,
                priority=priority,
                retry=retry,
                timeout=timeout,
                trigger_rule=rule,
                recurrence=recurrence,
                options=options,
            )
            restoring = self._replacing.restoring
            if restoring is not None:  # Scheduler.restore: the same task, put back
                task_id = self._lifecycle.put_back(restoring, deps, spec, **fields)
            elif replacing is None:
                task_id = self._lifecycle.add_task(name, fn, deps, spec, **fields)
            else:  # Scheduler.update: the same checked arguments, in place
                self._lifecycle.replace(self._graph.get(replacing), fn, deps, spec, **fields)
                task_id = replacing
            deferred = core.take_deferred()
        self._dispatcher.after(deferred)
        return task_id

    def _check_pool(self, pool: object) -> None:
        limits = self._dispatcher.slots.limits
        if not isinstance(pool, str) or pool not in limits:
            known = ", ".join(sorted(limits)) or "none"
            raise InvalidArgument(
                f"pool must be one of the scheduler's pools ({known}), got {pool!r}", "pool"
            )

    def _normalise_fn(self, fn: object) -> Any:
        if isinstance(fn, str):
            return Call(fn)
        if not callable(fn):
            raise TypeError(
                f"a task must be a callable or a 'module:function' string, got {type(fn).__name__}"
            )
        return fn

    def _normalise_run_at(self, run_at: object) -> float | None:
        if run_at is None:
            return None
        if isinstance(run_at, datetime):
            if run_at.tzinfo is None or run_at.utcoffset() is None:
                raise InvalidArgument(
                    f"run_at {run_at.isoformat()} has no time zone; give an aware one", "run_at"
                )
            ahead = (run_at - self._clock.wall()).total_seconds()
            if ahead > MAX_TIMER_SECONDS:
                _too_far("run_at", run_at)
            return self._clock.now() + ahead
        seconds = _check_seconds("run_at", run_at)
        if seconds - self._clock.now() > MAX_TIMER_SECONDS:
            _too_far("run_at", run_at)
        return seconds

    def _check_storable(self, fn: object, spec: dict[str, Any], run_at: float | None) -> None:
        """Complete the stored spec and refuse it now if it cannot be written: once the
        task is in the engine, a row that cannot be written is too late."""
        assert self._journal is not None
        spec["run_at_wall"] = self._journal.to_wall(run_at)
        try:
            json.dumps(spec)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{fn!r} cannot be stored: its arguments must be plain data ({exc})"
            ) from None

    # ------------------------------------------------------------------ graph edits
    def add_dependency(self, task_id: str, dep_id: str) -> None:
        """Make ``task_id`` wait for ``dep_id``. ``CycleError`` (with the path) if the edge
        would close a cycle; ``ValueError`` if ``task_id`` has already started (a
        recurring task may gain one any time); ``KeyError`` for an unknown ``dep_id``
        once the scheduler runs (before ``start()`` it may be added later)."""
        with self._edit():
            self._lifecycle.add_dependency(self._graph.get(task_id), dep_id)

    def remove_dependency(self, task_id: str, dep_id: str) -> None:
        """Drop the edge; the task is evaluated again (it may run now). ``KeyError`` if
        there is no such edge."""
        with self._edit():
            self._lifecycle.remove_dependency(self._graph.get(task_id), dep_id)

    def remove(self, task_id: str) -> bool:
        """Take a task that is not running out of the engine; dependents lose the edge.
        ``restore`` can put it back as it was."""
        with self._edit():
            task = self._graph.get(task_id)
            if task.runs:
                return False
            definition = self._definition_of(task)
            dependents = tuple(task.dependents)
            removed = self._lifecycle.remove(task)
            if removed:
                kept = self._removed
                kept.pop(task_id, None)
                kept[task_id] = (definition, task, dependents)
                while len(kept) > REMOVED_KEPT:
                    del kept[next(iter(kept))]
            return removed

    def restore(self, task_id: str) -> list[str]:
        """Put back a task ``remove`` took out, as it was: its definition, state, error,
        attempts (and their numbering), pause and edges. Nothing runs because of it: a
        settled task stays settled; one that had not settled is judged again, as a new
        one would be. Dependents that lost the edge wait for it again if they have not
        started or have settled (the edge is drawn again, nothing re-runs); returns the
        dependents that could not take the edge back (they run now, or are gone).
        ``KeyError`` if no removed task of that id is kept; ``ValueError`` if a task of
        that id exists again; a dependency that is gone: ``KeyError``, as for a new task."""
        with self._core.lock:
            self._check_open()
            kept = self._removed.get(task_id)
            if kept is None:
                raise KeyError(f"no removed task {task_id!r} to restore")
            if task_id in self._graph.tasks:
                raise ValueError(f"a task named {task_id!r} exists again")
        definition, task, dependents = kept
        self._replacing.restoring = task
        try:
            definition.submit(self)
        finally:
            self._replacing.restoring = None
        self._removed.pop(task_id, None)
        with self._edit():
            return self._lifecycle.relink_dependents(task, dependents)

    def update(self, task_id: str, definition: TaskDefinition) -> None:
        """Replace ``task_id``'s definition with ``definition`` (a ``TaskDefinition``;
        its id, if any, must be ``task_id``), keeping what the task did: its attempts
        and their numbering, its state if it has settled (a fixed FAILED task stays
        FAILED until it is cleared or retried), its pause and its dependents' edges.
        A task that has not started is judged again, as a new one would be. Emits
        ``edited``. Allowed while ``Action.EDIT`` is (not started, or settled, with
        nothing in flight); otherwise ``ValueError``. Every argument is checked as
        the scheduling call the definition makes checks it (same errors); a refused
        update changes nothing. ``KeyError`` for an unknown task."""
        if not isinstance(definition, TaskDefinition):
            raise TypeError(f"update: a TaskDefinition is needed, got {type(definition).__name__}")
        with self._core.lock:
            self._graph.get(task_id)  # KeyError first, whatever the definition
        if definition.id and definition.id != task_id:
            raise InvalidArgument(
                f"update: the definition is named {definition.id!r}, not {task_id!r}", "name"
            )
        self._replacing.task_id = task_id
        try:
            definition.with_deps(definition.deps, task_id).submit(self)
        finally:
            self._replacing.task_id = None

    # ------------------------------------------------------------------ control
    def cancel(self, task_id: str) -> bool:
        """Cancel a task that has not settled: queued work is dropped, running attempts are
        asked to stop (a command's process group is terminated); dependents see
        CANCELLED. Returns False if there was nothing to cancel."""
        with self._edit():
            return self._lifecycle.cancel(self._graph.get(task_id))

    def retry(self, task_id: str) -> bool:
        """Run a FAILED, SKIPPED or CANCELLED task again, with a fresh retry budget."""
        with self._edit():
            return self._lifecycle.retry(self._graph.get(task_id))

    def clear(self, task_ids: str | Iterable[str], downstream: bool = False) -> list[str]:
        """Run settled one-shot tasks again within this run (Airflow's "Clear").

        ``task_ids`` is one id or several. Each must be settled (SUCCEEDED, FAILED,
        SKIPPED or CANCELLED), have no attempt in flight and not be recurring;
        otherwise ``ValueError`` naming it, and nothing changes. With
        ``downstream``, every settled one-shot task downstream of them is cleared too
        and waits for them again. A cleared task is PENDING with a fresh retry
        budget, runs as soon as its dependencies allow (its old time is ignored, as
        ``retry`` does) and keeps its attempt history (numbers go on). Returns the
        ids cleared, upstream first. ``KeyError`` for an unknown id.
        """
        with self._edit():
            return self._lifecycle.clear(self._clear_roots(task_ids), downstream)

    def clear_plan(self, task_ids: str | Iterable[str], downstream: bool = False) -> list[str]:
        """What ``clear(task_ids, downstream)`` would reset now, in the same order,
        without changing anything (a dry run: what a window shows before it asks);
        the same errors as ``clear``."""
        with self._core.lock:
            return self._lifecycle.clear_plan(self._clear_roots(task_ids), downstream)

    def _clear_roots(self, task_ids: str | Iterable[str]) -> list[Task]:
        """``clear``'s tasks, checked (with the core lock held)."""
        ids = [task_ids] if isinstance(task_ids, str) else list(task_ids)
        roots = [self._graph.get(tid) for tid in ids]
        for task in roots:
            if not self._lifecycle.clearable(task):
                what = "recurring" if task.recurrence is not None else task.state.name
                raise ValueError(
                    f"task {task.id!r} is {what}: only a settled one-shot task can be cleared"
                )
        return roots

    def run_now(self, task_id: str) -> bool:
        """Run a task that waits for its time now; a recurring task gets an extra run."""
        with self._edit():
            return self._lifecycle.run_now(self._graph.get(task_id))

    def pause(self, task_id: str | None = None) -> None:
        """Hold a task (``task_id``) or the whole dispatcher (None): nothing new starts,
        running attempts go on, due occurrences fold into one run."""
        with self._edit():
            self._lifecycle.pause(None if task_id is None else self._graph.get(task_id))

    def resume(self, task_id: str | None = None) -> None:
        """Undo ``pause`` for a task (``task_id``) or the whole dispatcher (None)."""
        with self._edit():
            self._lifecycle.resume(None if task_id is None else self._graph.get(task_id))

    # ------------------------------------------------------------------ listeners
    def on(self, kind: str, callback: Callable[[Any], object]) -> Callable[[], None]:
        """Call ``callback(event)`` for each event of ``kind`` (a state's lowercase name, or
        one of ``EVENT_KINDS``), outside the engine lock, in ``seq`` order. Returns a
        function that unsubscribes."""
        if kind not in EVENT_KINDS:
            kinds = ", ".join(sorted(EVENT_KINDS))
            raise ValueError(f"unknown event kind {kind!r}; one of: {kinds}")
        self._delivery.add(kind, callback)
        return lambda: self._delivery.remove(kind, callback)

    def subscribe(self, callback: Callable[[Any], object]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event, as ``on`` does. Returns a function that
        unsubscribes."""
        self._delivery.add(None, callback)
        return lambda: self._delivery.remove(None, callback)

    def unsubscribe(self, callback: Callable[[Any], object]) -> None:
        """Stop calling ``callback`` for every event (one given as ``listeners`` to the
        constructor, or to ``subscribe``). Nothing happens if it is not subscribed."""
        self._delivery.remove(None, callback)

    # ------------------------------------------------------------------ queries
    def task(self, task_id: str) -> TaskInfo:
        """A frozen ``TaskInfo`` snapshot of one task; ``KeyError`` if unknown."""
        with self._core.lock:
            return _info(self._graph.get(task_id))

    def definition(self, task_id: str) -> TaskDefinition:
        """How ``task_id`` was defined (``definitions.TaskDefinition``), with the
        dependencies it has now: what re-creates it (``submit``), stores it and writes
        it to a workflow file. A task restored from a store has the definition its
        row keeps. ``KeyError`` if unknown."""
        with self._core.lock:
            return self._definition_of(self._graph.get(task_id))

    def _definition_of(self, task: Task) -> TaskDefinition:
        """``definition()`` of a task (with the core lock held)."""
        definition, deps = task.definition, tuple(task.deps)
        if not isinstance(definition, TaskDefinition):  # see _create
            at = self._wall_time(definition) if isinstance(definition, float) else definition
            definition = definition_of_task(task, at)
        return definition.with_deps(deps, task.id)

    def _wall_time(self, at: float) -> datetime:
        """A scheduler-clock time as an aware UTC datetime."""
        clock = self._clock
        seconds = at + clock.wall().timestamp() - clock.now()
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, ValueError, OSError):  # a ManualClock started far from now
            return (
                datetime.max.replace(tzinfo=UTC)
                if seconds > 0
                else datetime.min.replace(tzinfo=UTC)
            )

    def tasks(self) -> list[TaskInfo]:
        """Frozen ``TaskInfo`` snapshots of every task, in the order they were added."""
        with self._core.lock:
            return [_info(t) for t in self._graph.tasks.values()]

    def upcoming(self, limit: int = 100) -> list[Entry]:
        """The next ``limit`` timer entries (scheduled runs, retry backoffs, recurring
        occurrences), earliest first, as frozen ``Entry`` records."""
        with self._core.lock:
            return self._timers.upcoming(limit)

    def next_due(self) -> float | None:
        """When the earliest timer of any kind comes due (a scheduled run, a retry, a
        recurring occurrence or an attempt's timeout), on the scheduler clock; None if
        there is none. What a driver of a ``ManualClock`` advances to (the forecast)."""
        with self._core.lock:
            return self._timers.next_due()

    def due_by(self, until: float) -> list[Entry]:
        """The timer entries due at or before ``until`` (as ``upcoming`` lists them, never
        timeouts), earliest first; costs what it finds, not the number of timers."""
        with self._core.lock:
            return self._timers.due_by(until)

    def snapshot(self) -> tuple[int, list[TaskInfo], list[Entry]]:
        """(seq, tasks, upcoming) as one consistent view; later events have seq > seq."""
        with self._core.lock:
            return (
                self._events.seq,
                [_info(t) for t in self._graph.tasks.values()],
                self._timers.upcoming(100),
            )

    def set_env(self, env: Mapping[str, str]) -> None:
        """Replace ``env`` (the constructor's): what the commands of attempts started
        from now on add to their environment. ``TypeError`` unless str to str."""
        if not isinstance(env, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise TypeError(f"env must map str to str, got {env!r}")
        with self._core.lock:
            self._dispatcher.env = dict(env) or None

    def scheduled_at(self, task_id: str) -> datetime | None:
        """The nominal time of the task's occurrence running now, or of its last one
        (what its commands see as ``TASKLOOM_SCHEDULED_AT``), as an aware UTC datetime;
        None for a task with no time of its own, whose attempts use their start.
        ``KeyError`` if unknown."""
        with self._core.lock:
            at = self._lifecycle.occurrence_of(self._graph.get(task_id))
        return None if at is None else datetime.fromtimestamp(at, UTC)

    def pool_wait(self, task_id: str) -> str | None:
        """What a ready task waits for when every slot of its pool is taken ("waiting
        for pool db: 3 of 3 busy"), else None. ``KeyError`` if unknown."""
        with self._core.lock:
            return self._dispatcher.pool_wait(self._graph.get(task_id))

    def pool_usage(self) -> dict[str, tuple[int, int, list[str]]]:
        """Each pool's runs in flight, its limit and the tasks waiting for a slot (best
        first): ``{"db": (3, 3, ["load"])}``."""
        with self._core.lock:
            slots = self._dispatcher.slots
            return {
                name: (slots.busy[name], limit, slots.waiting(name))
                for name, limit in slots.limits.items()
            }

    def outputs(self, task_id: str) -> dict[str, Any] | None:
        """What the task's latest success gave its dependents (``TASKLOOM_OUTPUT``, a
        call's return value; engine/outputs.py), or None. ``KeyError`` if unknown."""
        with self._core.lock:
            outputs = self._graph.get(task_id).outputs
            return None if outputs is None else dict(outputs)

    def jitter_delays(self, task_id: str) -> dict[int, float]:
        """The random delay (seconds) each recent attempt's occurrence waited before it
        started (``jitter``), by attempt number; retries wait none. ``KeyError`` if
        unknown."""
        with self._core.lock:
            return dict(self._graph.get(task_id).jitters or {})

    def attempts(self, task_id: str) -> list[Attempt]:
        """The task's recent attempts (this run, in memory), oldest first, as frozen
        ``Attempt`` records; the store keeps them all."""
        with self._core.lock:
            return list(self._graph.get(task_id).history or ())

    def adopted_tasks(self) -> list[str]:
        """Tasks whose command an earlier owner of the store started and that still ran
        (or ended unrecorded) when this scheduler opened it: they are RUNNING here and
        their ends are recorded once the scheduler starts (``shutdown`` hands them on)."""
        with self._core.lock:
            return [
                task.id for task in self._graph.tasks.values()
                if any(run.adopted is not None for run in task.runs)
            ]  # fmt: skip

    def adoptions(self) -> dict[str, tuple[int, str]]:
        """What opening the store adopted, kept for the scheduler's life: {task: (the
        attempt's number, "adopted: still running under its supervisor" or "adopted:
        ended while no owner ran")} (the supervisor had recorded its end)."""
        return dict(self._adoptions)

    def live_log(self, task_id: str) -> str | None:
        """The log file the task's newest attempt in flight is writing (a command
        writes its output there as it goes), or None: not running, not a command yet,
        or run in another process. The finished attempt's record keeps the path
        (``Attempt.log_path``). ``KeyError`` if unknown."""
        with self._core.lock:
            runs = self._graph.get(task_id).runs
            paths = [run.ctx.log_path for run in runs if run.ctx.log_path]
            return paths[-1] if paths else None

    def would_close_cycle(self, task_id: str, dep_id: str) -> list[str] | None:
        """The cycle ``add_dependency(task_id, dep_id)`` would close, or None.

        Read-only. The path is in ``CycleError.path``'s form: ``task_id``, the tasks
        downstream of it that lead to ``dep_id``, ``dep_id``, and ``task_id`` again
        (``[t, t]`` for a task made to wait for itself); it is the path the refusal
        would name. Only the graph is asked: ``add_dependency`` may still refuse the
        edge for another reason (see ``Action.ADD_DEPENDENCY``). A ``dep_id`` the
        engine does not know closes no cycle; an unknown ``task_id`` is a KeyError.
        """
        with self._core.lock:
            return self._graph.cycle_closed_by(self._graph.get(task_id), dep_id)

    def allowed_actions(self, task_id: str) -> frozenset[Action]:
        """What can usefully be done to the task now, by the rules the calls apply.

        - ``CANCEL``: it has not settled and no cancel is pending (``cancel`` acts).
        - ``RETRY``: it is FAILED, SKIPPED or CANCELLED with no run in flight, and it
          would run again: a one-shot task whose dependencies still rule it out (an
          upstream failed, was skipped or cancelled) would only be skipped again, so
          retry is not offered; retry that upstream, which re-arms its skipped
          downstream. (``retry`` itself still accepts such a task.)
        - ``RUN_NOW``: ``run_now`` acts: a task waiting for its time (SCHEDULED) or
          its retry backoff (RETRY_WAIT), or a recurring task not PENDING whose
          overlap policy lets an extra run in. It makes the task due now; a paused
          task, or a paused dispatcher, holds it until resumed (still allowed).
        - ``PAUSE`` / ``RESUME``: the task is not paused / is paused.
        - ``REMOVE``: no attempt of it is in flight (``remove`` acts).
        - ``EDIT``: it may be redefined (removed and added again under its id): no
          attempt in flight, and it has not started or has settled. A task waiting
          out its retry backoff is between attempts of one run: not editable.
        - ``ADD_DEPENDENCY``: it can gain a dependency: it has not started
          (PENDING, SCHEDULED, READY) or it is recurring (see ``would_close_cycle``
          for the edge itself).

        After ``shutdown`` nothing is allowed (every call raises RuntimeError).
        KeyError if the task is unknown.
        """
        with self._core.lock:
            task = self._graph.get(task_id)
            if self._core.closed:
                return frozenset()
            return self._lifecycle.allowed_actions(task)

    def why_not(self, task_id: str, action: Action) -> str | None:
        """Why ``action`` cannot be done to the task now, in a sentence a window shows
        (it names the task), or None when ``allowed_actions`` has it. KeyError if the
        task is unknown."""
        with self._core.lock:
            task = self._graph.get(task_id)
            if self._core.closed:
                return "the run has ended: nothing can be done to its tasks"
            return self._lifecycle.why_not(task, action)

    def on_attempts(self, callback: Callable[[str], object]) -> Callable[[], None]:
        """For the run interface: a watched run calls ``callback(task_id)`` when it
        has read attempts ``attempts`` answered without; this scheduler holds its
        attempts in memory and never calls it. Returns a function that forgets it."""
        return lambda: None

    @property
    def paused(self) -> bool:
        """Whether the whole dispatcher is paused."""
        return self._core.paused_all

    @property
    def clock(self) -> Clock:
        """The clock the scheduler runs on."""
        return self._clock

    @property
    def workers(self) -> int:
        """How many attempts may run at once."""
        return self._dispatcher.workers

    @property
    def busy(self) -> int:
        """Attempts whose code runs now, each holding a worker. A task whose code has
        returned stays RUNNING until its success is on disk, so more tasks than
        workers can be RUNNING for a moment (read without the lock: a glance)."""
        dispatcher = self._dispatcher
        # ``running`` frees a slot only when the run is finished, after its commit.
        return max(0, dispatcher.running - len(dispatcher.durable))

    @property
    def store(self) -> SQLiteStore | None:
        """The store the scheduler writes to, or None."""
        return self._store

    @property
    def run(self) -> int | None:
        """The run's number in its store, or None without a store."""
        return None if self._store is None else self._store.run

    @property
    def owner_alive(self) -> bool:
        """Always True: this process owns the run (a watched run may lose its owner)."""
        return True

    @property
    def edit_refusal(self) -> str | None:
        """Why no graph edit is possible at all: None, this scheduler takes them."""
        return None

    @contextmanager
    def _edit(self) -> Iterator[None]:
        """Hold the lock for a scheduling or editing call; afterwards, outside the lock,
        run deferred callbacks, deliver events and dispatch. A call refused with an
        exception changes nothing, so there is nothing to deliver."""
        core = self._core
        with core.lock:
            self._check_open()
            yield
            deferred = core.take_deferred()
        self._dispatcher.after(deferred)

    def _check_open(self) -> None:
        if self._core.store_error is not None:
            self._raise_store_error()
        store = self._store
        if store is not None and store.failed:  # its listener tells the engine a moment later
            raise store.failure_error()
        if self._core.closed:
            raise RuntimeError("the scheduler has been shut down")


def _extras(options: dict[str, Any], pool: object, jitter: object) -> dict[str, Any]:
    """``options`` with a task's pool and jitter, when given (jitter checked here)."""
    if pool is not None:
        options["pool"] = pool
    if jitter is not None:
        options["jitter"] = _check_seconds("jitter", jitter)
    return options


def _checked_options(
    name: object,
    deps: Iterable[object],
    priority: object,
    retry: object,
    timeout: object,
    trigger_rule: object,
) -> tuple[str | None, list[str], int, RetryPolicy | None, float | None, TriggerRule]:
    """A new task's name, deps, priority, retry, timeout and trigger rule, checked
    (in the order the errors were always raised: priority first, deps last)."""
    if type(priority) is not int and (  # the common case costs one test
        isinstance(priority, bool) or not isinstance(priority, int)
    ):
        raise TypeError(f"priority must be an int, got {priority!r}")
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise TypeError(f"retry must be a RetryPolicy or None, got {retry!r}")
    if timeout is not None:
        timeout = _check_seconds("timeout", timeout, allow_zero=False)
    rule = _TRIGGER_RULE_OF.get(trigger_rule) if isinstance(trigger_rule, str) else None
    if rule is None:  # one dict look-up, not 'in' a tuple and then TriggerRule(...)
        raise InvalidArgument(
            f"trigger_rule must be one of {', '.join(TRIGGER_RULES)}, got {trigger_rule!r}",
            "trigger_rule",
        )
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise InvalidArgument(  # as in files
            f"name must be a non-empty string, got {name!r}", "name"
        )
    if isinstance(deps, str):
        deps = (deps,)
    checked: list[str] = []
    if deps != ():  # the default: no dict.fromkeys for a task without deps
        for dep in dict.fromkeys(deps):  # in order, each once
            if not isinstance(dep, str):
                raise TypeError(f"a dependency is a task id (str), got {dep!r}")
            checked.append(dep)
    return name, checked, priority, retry, timeout, rule
