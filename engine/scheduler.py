"""The scheduler: timers, a dependency graph, priorities, retries, events.

Concurrency design (after CPython's ``concurrent.futures``): one lock guards all
engine state. Task code, listeners and cancel callbacks never run under it:
methods that hold the lock collect such work in ``_deferred`` and run it after
releasing (``_after``). Events are queued under the lock, so they are in ``seq``
order, and delivered by ``EventDelivery`` outside it.

Work flows through two heaps (see ``heaps.py``): timers not yet due, and ready
work ordered by priority. By default ``workers`` engine-owned threads take work
straight off the ready heap; with an ``Executor`` the engine submits at most
``workers`` callables at a time and learns outcomes from done-callbacks.

No engine thread dies of an engine error: each loop (worker, timer, done-callback,
delivery) logs it once and fails the attempt it was handling (``_engine_error``).
The store is never flushed under the lock; when writing fails, its writer thread
(which never holds it) calls ``_on_store_failure``, which takes the lock, stops
the engine and fails runs waiting for a commit; ``wait()``, ``shutdown()`` and
scheduling calls then raise ``StoreError``. ``wait()``/``shutdown(wait=True)``
from task code, and ``wait()`` from a listener, raise ``RuntimeError``.
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import count
from pathlib import Path

from .actions import Call
from .clock import SystemClock
from .definitions import TaskDefinition, defined_by_call, definition_of_task, row_of_call
from .delivery import EventDelivery
from .errors import CycleError, InvalidArgument
from .executors import SyncExecutor
from .graph import find_path, find_path_downstream
from .heaps import ReadyHeap, TimerHeap
from .models import Action, Attempt, Entry, Event, RetryPolicy, TaskInfo
from .options import Misfire, Mode, Overlap, TriggerRule, values
from .persisting import StoreSync
from .recurrence import MISFIRES, MODES, OVERLAPS, CronRecurrence, IntervalRecurrence
from .rules import RELEASE, SKIP, DependencyRules
from .running import RunLogic
from .states import NOT_STARTED, TaskState, check_transition
from .store import StoreError
from .task import Task
from .timing import TimerLogic
from .workers import WorkerLoop

log = logging.getLogger("taskloom.engine")

S = TaskState
TRIGGER_RULES = values(TriggerRule)
EVENT_KINDS = frozenset(s.value for s in TaskState) | {
    "dependency_added",
    "dependency_removed",
    "paused",
    "resumed",
    "removed",
}
_TIMER_KINDS = ("scheduled", "retry", "recurring")


def _check_seconds(what: str, value, *, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {value!r}")
    try:
        seconds = float(value)
    except OverflowError:  # an int too large for a float
        seconds = math.inf
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise InvalidArgument(f"{what} must be a finite number {bound}, got {_short(value)}", what)
    return seconds


def _short(value) -> str:
    text = repr(value)  # 10**400 need not fill the screen
    return text if len(text) <= 40 else text[:40] + "..."


def _check_wait_timeout(timeout) -> float | None:
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


class Scheduler(DependencyRules, TimerLogic, RunLogic, WorkerLoop, StoreSync):
    """Runs callables when they are due: at a time, after a delay, on an interval or a
    cron schedule, and once their dependencies allow, with priorities, retries,
    cancellation and events. The public API of the engine; see docs/design.md.

    ``workers`` attempts run at once, on engine-owned threads or on ``executor``
    (any ``concurrent.futures.Executor``; ``SyncExecutor`` runs everything on the
    calling thread). ``clock`` defaults to the real one (``ManualClock`` in tests).
    ``store`` (a ``SQLiteStore``) keeps every task and attempt so that a run can be
    resumed after a crash; ``log_dir`` is where commands write their output.
    Nothing runs before ``start()``."""

    def __init__(
        self,
        workers: int = 4,
        clock=None,
        executor: Executor | None = None,
        store=None,
        log_dir: str | None = None,
    ):
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise InvalidArgument(f"workers must be an int >= 1, got {workers!r}", "workers")
        self._workers = workers
        self._clock = clock or SystemClock()
        self._executor = executor
        self._log_dir = log_dir
        # Code submitted to these runs in this process, so it can see its RunContext.
        self._local_executor = executor is None or isinstance(
            executor, (SyncExecutor, ThreadPoolExecutor)
        )
        # Guards every field here and on Task and Run, including Task.lingering and
        # Task.held (a timed-out run still running holds the task's next start) and
        # Run.stop_requested and Run.future (a cancel racing a submission).
        self._lock = threading.Lock()
        self._work_cond = threading.Condition(self._lock)  # own workers wait for ready work
        self._timer_cond = threading.Condition(self._lock)  # the timer thread sleeps here
        self._settled_cond = threading.Condition(self._lock)  # wait() and shutdown() sleep here
        self._tasks: dict[str, Task] = {}
        self._orphans: dict[str, dict[str, None]] = {}  # missing id -> tasks that depend on it
        self._timers = TimerHeap()
        self._ready = ReadyHeap()
        self._order = count()
        self._names = count(1)
        self._seq = 0
        self._unsettled = 0  # tasks wait() waits for that have not settled
        self._running = 0  # runs whose code has not returned yet
        self._deferred: list[Callable[[], None]] = []
        self._started = False
        self._closed = False  # shutdown() was called: no more scheduling calls
        self._stopping = False  # no new runs start
        self._interrupting = False  # shutdown(cancel_running=True): runs are being stopped
        self._paused_all = False
        self._timer_wait: float | None = None  # deadline the timer thread sleeps to
        self._wall_offset: float | None = None  # wall - monotonic, to notice wall jumps
        self._cron_tasks = 0
        self._pumping = False
        self._pump_again = False
        self._rng = random.Random()
        self._threads: list[threading.Thread] = []
        self._sync = isinstance(executor, SyncExecutor)  # everything on the calling thread
        self._delivery = EventDelivery(threaded=not self._sync)
        self._store = store
        # Attempt numbers already used by tasks that left the engine (removed, or
        # redefined by their workflow file): a task added again under the same name
        # numbers on from there, so its stored attempts are never overwritten.
        self._attempt_floor: dict[str, int] = {}
        self._ending: tuple[Task, str] | None = None  # see _record_attempt
        self._local = threading.local()  # .run: the attempt whose code this thread runs
        self._durable: set = set()  # runs whose success waits for its commit
        self._store_error: StoreError | None = None  # writing failed: the engine stopped
        self._store_error_reported = False
        if store is not None:
            from .recovery import restore

            with self._lock:
                try:
                    restore(self, store)
                except (KeyError, ValueError, TypeError) as exc:  # a row we cannot read
                    from .store import damaged

                    what = f"{type(exc).__name__}: {exc}"
                    raise damaged(Path(store.path), what) from exc
            store.add_failure_listener(self._on_store_failure)
        if self._clock.manual:
            self._clock.attach(self._on_clock_moved)

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.shutdown(wait=True)

    def start(self) -> None:
        """Start dispatching: due work begins to run. Calling it again does nothing.
        ``RuntimeError`` if the OS cannot start the threads (nothing is left half-started)."""
        with self._edit():
            if self._started:
                return
            for missing, waiting in self._orphans.items():
                task_id = next(iter(waiting))
                raise KeyError(f"task {task_id!r} depends on unknown task {missing!r}")
            self._started = True
            self._wall_offset = self._current_wall_offset()
            try:
                if self._executor is None:
                    for i in range(self._workers):
                        self._spawn(self._worker_loop, f"taskloom-worker-{i}")
                if not self._clock.manual:
                    self._spawn(self._timer_loop, "taskloom-timers")
            except RuntimeError as exc:  # the OS has no more threads to give
                error = exc
                # The threads we got wait for this lock: they see _stopping and end
                # without taking work (nothing was promoted yet).
                self._stopping = True
                self._work_cond.notify_all()
                self._timer_cond.notify_all()
            else:
                self._promote_due()
                return
        self._undo_start(error)

    def _spawn(self, target, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _undo_start(self, error: RuntimeError) -> None:
        """All or nothing: end the threads a failed start() got, leave it not started."""
        threads = self._threads
        for thread in threads:
            thread.join()
        with self._lock:
            self._threads = []
            self._started = False
            self._wall_offset = None
            self._stopping = self._closed  # a shutdown() meanwhile keeps it stopped
        needed = (self._workers if self._executor is None else 0) + (not self._clock.manual)
        raise RuntimeError(
            f"workers={self._workers}: could start only {len(threads)} of the {needed} "
            f"threads the scheduler needs ({error}); use fewer workers"
        ) from error

    def shutdown(self, wait: bool = True, *, cancel_running: bool = False) -> None:
        """Stop starting work; with ``wait``, let running tasks finish and deliver events.

        ``cancel_running`` asks running tasks to stop (a command is terminated). Such
        an interrupted attempt does not count against the retry budget and leaves its
        task READY, so a run resumed from the store runs it again (Ctrl-C, closing
        the window).
        """
        if wait:
            self._refuse_reentry("shutdown")
        with self._lock:
            self._closed = True
            self._stopping = True
            if cancel_running:
                self._interrupting = True
                for task in self._tasks.values():
                    for run in task.runs:
                        self._stop_run(run)
            self._work_cond.notify_all()
            self._timer_cond.notify_all()
            self._settled_cond.notify_all()
            deferred = self._take_deferred()
        # The stop requests, here: after a store failure no idle worker is left to run them.
        self._after(deferred)
        if wait:
            with self._lock:
                self._settled_cond.wait_for(lambda: self._running == 0)
                deferred = self._take_deferred()
            self._after(deferred)
        if self._clock.manual:
            self._clock.detach(self._on_clock_moved)
        if wait:
            current = threading.current_thread()
            for thread in self._threads:
                if thread is not current:
                    thread.join()
        self._delivery.close(wait=wait)
        if self._store is not None:
            try:
                self._store.flush()
            except StoreError as exc:
                self._on_store_failure(exc)
        if self._store_error is not None and not self._store_error_reported:
            self._store_error_reported = True  # once: a later shutdown() has nothing new
            self._raise_store_error()

    def _raise_store_error(self) -> None:
        error = self._store_error
        raise StoreError(str(error)) from error.__cause__

    def _refuse_reentry(self, call: str) -> None:
        """Like ``Thread.join()`` on itself: waiting here could never end."""
        if getattr(self._local, "run", None) is not None:
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
        if not self._started:
            self.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            # After a store failure, also for the runs still in flight to end (they fail).
            self._settled_cond.wait_for(
                lambda: (
                    self._unsettled == 0
                    or self._stopping
                    and (self._store_error is None or self._running == 0)
                ),
                timeout,
            )
            settled = self._unsettled == 0
            seq = self._seq
        if self._store_error is not None:
            self._raise_store_error()
        if not settled:
            return False
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        return self._delivery.wait_delivered(seq, remaining)

    # ------------------------------------------------------------------ scheduling
    def schedule(
        self,
        fn,
        run_at=None,
        *,
        name: str | None = None,
        deps: Iterable[str] = (),
        priority: int = 0,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        trigger_rule: str = "all_success",
    ) -> str:
        """Add a one-shot task; returns its id. ``run_at`` is a time on the scheduler's
        clock (seconds) or an aware ``datetime``; None means as soon as ``deps`` allow.
        ``name`` is the task id (generated if None); ``priority`` orders ready work
        (higher first); ``retry`` a ``RetryPolicy``; ``timeout`` seconds per attempt;
        ``trigger_rule`` one of ``TRIGGER_RULES``. A refused call changes nothing."""
        return self._create(
            fn, run_at, name, deps, priority, retry, timeout, trigger_rule, None, {}
        )

    def schedule_after(
        self,
        fn,
        delay,
        *,
        name: str | None = None,
        deps: Iterable[str] = (),
        priority: int = 0,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        trigger_rule: str = "all_success",
    ) -> str:
        """Like ``schedule``, due ``delay`` seconds from now."""
        delay = _check_seconds("delay", delay)
        run_at = self._clock.now() + delay
        return self._create(
            fn, run_at, name, deps, priority, retry, timeout, trigger_rule, None, {}, after=delay
        )

    def add(self, fn, deps: Iterable[str] = (), **kw) -> str:
        """Like ``schedule``, run as soon as ``deps`` allow (the usual way to build a graph)."""
        return self.schedule(fn, None, deps=deps, **kw)

    def schedule_every(
        self,
        fn,
        interval,
        *,
        mode: str = "fixed_rate",
        overlap: str = "skip",
        misfire: str = "run_once",
        misfire_grace: float = 30.0,
        run_at=None,
        name: str | None = None,
        deps: Iterable[str] = (),
        priority: int = 0,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        trigger_rule: str = "all_success",
    ) -> str:
        """Add a recurring task every ``interval`` seconds; returns its id. ``mode`` is
        fixed_rate (a cadence) or fixed_delay (interval after each run ends);
        ``overlap`` (skip, queue, parallel) says what an occurrence due while a run is
        going does; ``misfire`` (run_once, skip, run_all) what occurrences more than
        ``misfire_grace`` seconds late do. Other arguments as in ``schedule``."""
        interval = _check_seconds("interval", interval, allow_zero=False)
        if mode not in MODES:
            raise InvalidArgument(f"mode must be one of {', '.join(MODES)}, got {mode!r}", "mode")
        recurrence = IntervalRecurrence(interval, Mode(mode))
        options = self._recurring_options(overlap, misfire, misfire_grace)
        return self._create(
            fn, run_at, name, deps, priority, retry, timeout, trigger_rule, recurrence, options
        )

    def schedule_cron(
        self,
        fn,
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
    ) -> str:
        """Add a task at the times of a cron expression (5 fields, or 6 with seconds)
        in time zone ``tz`` (None: UTC); returns its id. Each occurrence runs once, at
        its wall-clock time; daylight-saving days follow docs/design.md (Cron).
        ``overlap`` and ``misfire`` as in ``schedule_every``."""
        from .cron import CronTrigger  # the cron library loads only when used

        zone_name = "UTC" if tz is None else tz
        recurrence = CronRecurrence(CronTrigger(expr, zone_name), expr, zone_name)
        options = self._recurring_options(overlap, misfire, misfire_grace)
        options["timezone"] = tz  # as given, for the definition
        return self._create(
            fn, None, name, deps, priority, retry, timeout, trigger_rule, recurrence, options
        )

    @staticmethod
    def _recurring_options(overlap, misfire, misfire_grace) -> dict:
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

    def _normalise_fn(self, fn):
        if isinstance(fn, str):
            return Call(fn)
        if not callable(fn):
            raise TypeError(
                f"a task must be a callable or a 'module:function' string, got {type(fn).__name__}"
            )
        return fn

    def _normalise_run_at(self, run_at) -> float | None:
        if run_at is None:
            return None
        if isinstance(run_at, datetime):
            if run_at.tzinfo is None or run_at.utcoffset() is None:
                raise InvalidArgument(
                    f"run_at {run_at.isoformat()} has no time zone; give an aware one", "run_at"
                )
            return self._clock.now() + (run_at - self._clock.wall()).total_seconds()
        return _check_seconds("run_at", run_at)

    def _create(
        self,
        fn,
        run_at,
        name,
        deps,
        priority,
        retry,
        timeout,
        trigger_rule,
        recurrence,
        options,
        after=None,
    ) -> str:
        self._check_open()  # before the checks below: after shutdown, always RuntimeError
        fn = self._normalise_fn(fn)
        given_at = run_at
        run_at = self._normalise_run_at(run_at)
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(f"priority must be an int, got {priority!r}")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry must be a RetryPolicy or None, got {retry!r}")
        if timeout is not None:
            timeout = _check_seconds("timeout", timeout, allow_zero=False)
        if trigger_rule not in TRIGGER_RULES:
            raise InvalidArgument(
                f"trigger_rule must be one of {', '.join(TRIGGER_RULES)}, got {trigger_rule!r}",
                "trigger_rule",
            )
        trigger_rule = TriggerRule(trigger_rule)
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise InvalidArgument(  # as in files
                f"name must be a non-empty string, got {name!r}", "name"
            )
        if isinstance(deps, str):
            deps = (deps,)
        deps = list(dict.fromkeys(deps))
        for dep in deps:
            if not isinstance(dep, str):
                raise TypeError(f"a dependency is a task id (str), got {dep!r}")
        # What definition() answers. Most tasks keep only their one-shot time (an aware
        # datetime as given, or a float on this clock): the rest is in the task's
        # fields. A full TaskDefinition (3 us) only when the fields do not say it all
        # (a delay, a cron zone as given).
        definition = None
        if recurrence is None and after is None:
            definition = given_at if isinstance(given_at, datetime) else run_at
        elif after is not None or "timezone" in options:
            definition = defined_by_call(
                name or "", fn, None, after, deps, priority, retry, timeout, trigger_rule,
                recurrence, options,
            )  # fmt: skip
        spec = None
        if self._store is not None:  # refuses what cannot run again after a restart
            at = given_at if isinstance(given_at, datetime) and recurrence is None else None
            spec = row_of_call(
                fn, at, after, deps, priority, retry, timeout, trigger_rule, recurrence, options
            )
            spec["run_at_wall"] = None if run_at is None else self._to_wall(run_at)
            try:  # refuse now: once in the engine, a row that cannot be written is too late
                json.dumps(spec)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"{fn!r} cannot be stored: its arguments must be plain data ({exc})"
                ) from None

        with self._edit():
            if name is None:
                name = self._generate_id(fn)
            elif name in self._tasks:
                raise InvalidArgument(f"a task named {name!r} already exists", "name")
            if name in deps:
                raise CycleError([name, name])
            if self._started:
                for dep in deps:
                    if dep not in self._tasks:
                        raise KeyError(f"task {name!r} depends on unknown task {dep!r}")
            waiting = self._orphans.get(name)
            if waiting:  # only a task others already wait for can close a cycle
                # One search for all waiters and deps; a dep not added yet reaches nothing.
                present = [dep for dep in deps if dep in self._tasks]
                path = present and find_path(self._tasks, waiting, present)
                if path:
                    raise CycleError([name, *path, name])

            task = Task(
                name,
                fn,
                order=next(self._order),
                priority=priority,
                retry=retry,
                timeout=timeout,
                trigger_rule=trigger_rule,
                run_at=run_at,
            )
            task.attempt = task.budget_base = self._attempt_floor.pop(name, 0)
            task.definition = definition
            if recurrence is not None:
                task.recurrence = recurrence
                task.overlap = options["overlap"]
                task.misfire = options["misfire"]
                task.misfire_grace = options["misfire_grace"]
                task.repeats = True
                if isinstance(recurrence, CronRecurrence):
                    self._cron_tasks += 1
            self._tasks[name] = task
            if waiting:
                for dependent in self._orphans.pop(name):
                    task.add_dependent(dependent)
            for dep in deps:
                task.add_dep(dep)
                upstream = self._tasks.get(dep)
                if upstream is None:
                    self._orphans.setdefault(dep, {})[name] = None
                else:
                    upstream.add_dependent(name)
            if not task.repeats:
                task.repeats = any(self._tasks[d].repeats for d in deps if d in self._tasks)
            if not task.repeats:
                self._unsettled += 1
            if spec is not None:
                self._store.put_task(self._task_row(task, spec))
            if waiting:
                for dependent in list(task.dependents):
                    self._refresh_repeats(self._tasks[dependent])
            self._arm_new(task)
            if waiting:
                self._evaluate_many(task.dependents)
        return name

    def _generate_id(self, fn) -> str:
        base = getattr(fn, "__name__", None) or type(fn).__name__
        if not base.isidentifier():
            base = "task"
        while True:
            candidate = f"{base}-{next(self._names)}"
            if candidate not in self._tasks and candidate not in self._orphans:
                return candidate

    def _arm_new(self, task: Task) -> None:
        """Give a new task its first state (one event)."""
        decision = self._decide(task)
        if decision == RELEASE:
            self._release(task, first=True)
        elif decision == SKIP:
            self._set_state(task, S.SKIPPED)
            self._evaluate_many(task.dependents)
        else:
            self._emit(task, "pending")

    # ------------------------------------------------------------------ graph edits
    def add_dependency(self, task_id: str, dep_id: str) -> None:
        """Make ``task_id`` wait for ``dep_id``. ``CycleError`` (with the path) if the edge
        would close a cycle; ``ValueError`` if ``task_id`` has already started (a
        recurring task may gain one any time); ``KeyError`` for an unknown ``dep_id``
        once the scheduler runs (before ``start()`` it may be added later)."""
        with self._edit():
            task = self._get(task_id)
            if dep_id not in self._tasks and self._started:
                raise KeyError(f"task {task_id!r} cannot depend on unknown task {dep_id!r}")
            if task.state not in NOT_STARTED and task.recurrence is None:
                raise ValueError(
                    f"task {task_id!r} is {task.state.name}: only a task that has not started "
                    "(or a recurring one) can gain a dependency"
                )
            if dep_id == task_id:
                raise CycleError([task_id, task_id])
            if dep_id in task.deps:
                return
            cycle = self._cycle_closed_by(task, dep_id)
            if cycle is not None:
                raise CycleError(cycle)
            task.add_dep(dep_id)
            upstream = self._tasks.get(dep_id)
            if upstream is None:
                self._orphans.setdefault(dep_id, {})[task_id] = None
            else:
                upstream.add_dependent(task_id)
            self._refresh_repeats(task)
            self._emit(task, "dependency_added")
            if task.state in NOT_STARTED and task.recurrence is None:
                self._reconsider_not_started(task)

    def remove_dependency(self, task_id: str, dep_id: str) -> None:
        """Drop the edge; the task is evaluated again (it may run now). ``KeyError`` if
        there is no such edge."""
        with self._edit():
            task = self._get(task_id)
            if dep_id not in task.deps:
                raise KeyError(f"task {task_id!r} does not depend on {dep_id!r}")
            decidable = self._unlink(task, dep_id)
            self._emit(task, "dependency_removed")
            pending = [task_id] if task.state is S.PENDING else []
            self._evaluate_many([*pending, *decidable])

    def _unlink(self, task: Task, dep_id: str) -> list[str]:
        """Drop the edge; returns the tasks it made one-shot again (no longer downstream
        of a recurring task), which the caller re-evaluates: a dependent waiting for
        a new success of theirs may now be decided."""
        task.deps.remove(dep_id)
        if task.consumed:
            task.consumed.pop(dep_id, None)
        upstream = self._tasks.get(dep_id)
        if upstream is not None:
            upstream.drop_dependent(task.id)
        else:
            waiting = self._orphans.get(dep_id)
            if waiting is not None:
                waiting.pop(task.id, None)
                if not waiting:
                    del self._orphans[dep_id]
        repeated = task.repeats
        self._refresh_repeats(task)
        if not repeated or task.repeats:
            return []
        flipped, stack = [], [task]  # downstream of task, all of it repeated before
        while stack:
            current = stack.pop()
            flipped.append(current.id)
            stack.extend(self._tasks[d] for d in current.dependents if not self._tasks[d].repeats)
        return flipped

    def _reconsider_not_started(self, task: Task) -> None:
        """A not-started task gained an edge: it may have to wait, or be skipped."""
        decision = self._decide(task)
        if decision == RELEASE:
            return
        self._drop_queued(task)  # a retry that came due too: it waits for the deps now
        if decision == SKIP:
            self._set_state(task, S.SKIPPED)
            self._evaluate_many(task.dependents)
        elif task.state is not S.PENDING:
            self._set_state(task, S.PENDING)

    def remove(self, task_id: str) -> bool:
        """Take a task that is not running out of the engine; dependents lose the edge."""
        with self._edit():
            task = self._get(task_id)
            if task.runs:
                return False
            self._drop_queued(task)
            decidable = []
            for dep_id in list(task.deps):
                decidable += self._unlink(task, dep_id)
            dependents = list(task.dependents)
            for dependent_id in dependents:
                decidable += self._unlink(self._tasks[dependent_id], task_id)
            if not task.repeats and not task.state.settled:
                self._unsettled -= 1
                self._notify_if_settled()
            if isinstance(task.recurrence, CronRecurrence):
                self._cron_tasks -= 1
            del self._tasks[task_id]
            if self._store is not None:
                self._attempt_floor[task_id] = task.attempt
            self._emit(task, "removed")
            self._evaluate_many([*dependents, *decidable])
        return True

    # ------------------------------------------------------------------ control
    def cancel(self, task_id: str) -> bool:
        """Cancel a task that has not settled: queued work is dropped, running attempts are
        asked to stop (a command's process group is terminated); dependents see
        CANCELLED. Returns False if there was nothing to cancel."""
        with self._edit():
            task = self._get(task_id)
            if task.state.settled or task.cancel_requested:
                return False
            self._drop_queued(task)
            if task.runs:
                task.cancel_requested = True
                for run in task.runs:
                    self._stop_run(run)
            else:
                self._set_state(task, S.CANCELLED)
                self._after_settled(task)
        return True

    def retry(self, task_id: str) -> bool:
        """Run a FAILED, SKIPPED or CANCELLED task again, with a fresh retry budget."""
        with self._edit():
            task = self._get(task_id)
            if task.state not in (S.FAILED, S.SKIPPED, S.CANCELLED) or task.runs:
                return False
            task.cancel_requested = False
            task.budget_base = task.attempt
            task.retry_pending = False
            task.run_at = None  # the old time is ignored: run as soon as deps allow
            rearmed = self._rearm_skipped_downstream(task)
            if task.recurrence is not None:
                self._start_cadence(task)
                task.waiting_runs = 1
                self._make_ready(task)
            else:
                decision = self._decide(task)
                if decision == RELEASE:
                    self._release(task)
                else:
                    self._set_state(task, S.PENDING)
                    if decision == SKIP:
                        self._set_state(task, S.SKIPPED)
            self._evaluate_many(rearmed)
        return True

    def clear(self, task_ids, downstream: bool = False) -> list[str]:
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
        ids = [task_ids] if isinstance(task_ids, str) else list(task_ids)
        with self._edit():
            roots = [self._get(tid) for tid in ids]
            for task in roots:
                if not task.state.settled or task.runs or task.recurrence is not None:
                    what = "recurring" if task.recurrence is not None else task.state.name
                    raise ValueError(
                        f"task {task.id!r} is {what}: only a settled one-shot task can be cleared"
                    )
            chosen = {task.id: task for task in roots}
            if downstream:
                stack = [d for task in roots for d in task.dependents]
                while stack:
                    dependent = self._tasks[stack.pop()]
                    if dependent.id in chosen or dependent.recurrence is not None:
                        continue
                    if dependent.state.settled and not dependent.runs:
                        chosen[dependent.id] = dependent
                    stack.extend(dependent.dependents)
            order = {tid: n for n, tid in enumerate(self._tasks)}
            cleared = sorted(chosen, key=order.__getitem__)
            for tid in cleared:
                task = chosen[tid]
                task.cancel_requested = False
                task.budget_base = task.attempt
                task.retry_pending = False
                task.run_at = None
                self._set_state(task, S.PENDING)
            self._evaluate_many(reversed(cleared))  # a stack: upstream decided first
        return cleared

    def _rearm_skipped_downstream(self, task: Task) -> list[str]:
        rearmed, stack = [], list(task.dependents)
        while stack:
            dependent = self._tasks[stack.pop()]
            if dependent.state is S.SKIPPED:
                self._set_state(dependent, S.PENDING)
                rearmed.append(dependent.id)
                stack.extend(dependent.dependents)
        return rearmed

    def run_now(self, task_id: str) -> bool:
        """Run a task that waits for its time now; a recurring task gets an extra run."""
        with self._edit():
            task = self._get(task_id)
            if not self._run_now_acts(task):
                return False
            if task.recurrence is not None and task.state is S.RETRY_WAIT and not task.runs:
                # the retry, now: its timer must not start another run later
                self._timers.discard(task.retry_timer)
                task.retry_timer = None
                task.retry_pending = True
                self._make_ready(task)
            elif task.recurrence is not None and task.state is not S.PENDING:
                task.waiting_runs = max(task.waiting_runs, 0) + 1
                if task.overlap == Overlap.QUEUE and task.runs:
                    task.waiting_runs = 1
                else:
                    self._make_ready(task)
            elif task.state is S.SCHEDULED:
                self._timers.discard(task.timer)
                task.timer = None
                task.waiting_runs = 1
                self._make_ready(task)
            else:  # RETRY_WAIT
                self._timers.discard(task.retry_timer)
                task.retry_timer = None
                task.retry_pending = True  # still the retry: resume() after pause() requeues it
                self._make_ready(task)
        return True

    def _run_now_acts(self, task: Task) -> bool:
        """Whether ``run_now`` does anything to the task (the one test for both)."""
        if task.cancel_requested or task.state.settled and task.recurrence is None:
            return False
        if task.recurrence is not None and task.state is not S.PENDING:
            return not (task.runs and task.overlap == Overlap.SKIP)
        return task.state is S.SCHEDULED or task.state is S.RETRY_WAIT

    def pause(self, task_id: str | None = None) -> None:
        """Hold a task (``task_id``) or the whole dispatcher (None): nothing new starts,
        running attempts go on, due occurrences fold into one run."""
        with self._edit():
            if task_id is None:
                if not self._paused_all:
                    self._paused_all = True
                    self._emit_engine("paused")
            else:
                task = self._get(task_id)
                if not task.paused:
                    task.paused = True
                    if task.ready is not None:  # held until resumed
                        self._ready.discard(task.ready)
                        task.ready = None
                    self._emit(task, "paused")

    def resume(self, task_id: str | None = None) -> None:
        """Undo ``pause`` for a task (``task_id``) or the whole dispatcher (None)."""
        with self._edit():
            if task_id is None:
                if self._paused_all:
                    self._paused_all = False
                    self._emit_engine("resumed")
                self._work_cond.notify_all()
            else:
                task = self._get(task_id)
                if task.paused:
                    task.paused = False
                    self._emit(task, "resumed")
                    if task.waiting_runs > 0 or task.retry_pending:
                        self._push_ready(task)

    # ------------------------------------------------------------------ listeners
    def on(self, kind: str, callback) -> Callable[[], None]:
        """Call ``callback(event)`` for each event of ``kind`` (a state's lowercase name, or
        one of ``EVENT_KINDS``), outside the engine lock, in ``seq`` order. Returns a
        function that unsubscribes."""
        if kind not in EVENT_KINDS:
            kinds = ", ".join(sorted(EVENT_KINDS))
            raise ValueError(f"unknown event kind {kind!r}; one of: {kinds}")
        self._delivery.add(kind, callback)
        return lambda: self._delivery.remove(kind, callback)

    def subscribe(self, callback) -> Callable[[], None]:
        """Call ``callback(event)`` for every event, as ``on`` does. Returns a function that
        unsubscribes."""
        self._delivery.add(None, callback)
        return lambda: self._delivery.remove(None, callback)

    # ------------------------------------------------------------------ queries
    def task(self, task_id: str) -> TaskInfo:
        """A frozen ``TaskInfo`` snapshot of one task; ``KeyError`` if unknown."""
        with self._lock:
            return self._info(self._get(task_id))

    def definition(self, task_id: str) -> TaskDefinition:
        """How ``task_id`` was defined (``definitions.TaskDefinition``), with the
        dependencies it has now: what re-creates it (``submit``), stores it and writes
        it to a workflow file. A task restored from a store has the definition its
        row keeps. ``KeyError`` if unknown."""
        with self._lock:
            task = self._get(task_id)
            definition, deps = task.definition, tuple(task.deps)
            if not isinstance(definition, TaskDefinition):  # see _create
                at = self._wall_time(definition) if isinstance(definition, float) else definition
                definition = definition_of_task(task, at)
        return definition.with_deps(deps, task_id)

    def _wall_time(self, at: float) -> datetime:
        """A scheduler-clock time as an aware UTC datetime."""
        return datetime.fromtimestamp(self._to_wall(at), UTC)

    def tasks(self) -> list[TaskInfo]:
        """Frozen ``TaskInfo`` snapshots of every task, in the order they were added."""
        with self._lock:
            return [self._info(t) for t in self._tasks.values()]

    def upcoming(self, limit: int = 100) -> list[Entry]:
        """The next ``limit`` timer entries (scheduled runs, retry backoffs, recurring
        occurrences), earliest first, as frozen ``Entry`` records."""
        with self._lock:
            return self._upcoming(limit)

    def snapshot(self):
        """(seq, tasks, upcoming) as one consistent view; later events have seq > seq."""
        with self._lock:
            return (
                self._seq,
                [self._info(t) for t in self._tasks.values()],
                self._upcoming(100),
            )

    def attempts(self, task_id: str) -> list[Attempt]:
        """The task's recent attempts (this run, in memory), oldest first, as frozen
        ``Attempt`` records; the store keeps them all."""
        with self._lock:
            return list(self._get(task_id).history or ())

    def live_log(self, task_id: str) -> str | None:
        """The log file the task's newest attempt in flight is writing (a command
        writes its output there as it goes), or None: not running, not a command yet,
        or run in another process. The finished attempt's record keeps the path
        (``Attempt.log_path``). ``KeyError`` if unknown."""
        with self._lock:
            runs = self._get(task_id).runs
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
        with self._lock:
            return self._cycle_closed_by(self._get(task_id), dep_id)

    def _cycle_closed_by(self, task: Task, dep_id: str) -> list[str] | None:
        if dep_id == task.id:
            return [task.id, task.id]
        if not task.dependents or dep_id not in self._tasks:
            return None  # only a task something depends on can be part of a cycle
        path = find_path_downstream(self._tasks, task.id, dep_id)
        return None if path is None else [*path, task.id]

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
        with self._lock:
            task = self._get(task_id)
            if self._closed:
                return frozenset()
            return self._allowed_actions(task)

    def _allowed_actions(self, task: Task) -> frozenset[Action]:
        state = task.state
        allowed = [Action.RESUME if task.paused else Action.PAUSE]
        if not (state.settled or task.cancel_requested):
            allowed.append(Action.CANCEL)
        if (
            state in (S.FAILED, S.SKIPPED, S.CANCELLED)
            and not task.runs
            and (task.recurrence is not None or self._decide(task) != SKIP)
        ):
            allowed.append(Action.RETRY)
        if self._run_now_acts(task):
            allowed.append(Action.RUN_NOW)
        if not task.runs:
            allowed.append(Action.REMOVE)
            if state in NOT_STARTED or state.settled:
                allowed.append(Action.EDIT)
        if state in NOT_STARTED or task.recurrence is not None:
            allowed.append(Action.ADD_DEPENDENCY)
        return frozenset(allowed)

    @property
    def paused(self) -> bool:
        """Whether the whole dispatcher is paused."""
        return self._paused_all

    @property
    def clock(self):
        """The clock the scheduler runs on."""
        return self._clock

    @property
    def workers(self) -> int:
        """How many attempts may run at once."""
        return self._workers

    def _upcoming(self, limit: int) -> list[Entry]:
        import heapq

        entries = heapq.nsmallest(
            limit, (e for e in self._timers.alive() if e[3] in _TIMER_KINDS), key=lambda e: e[:2]
        )
        return [Entry(e[0], e[2].priority, e[2].id, e[3]) for e in entries]

    @staticmethod
    def _info(t: Task) -> TaskInfo:
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

    def _get(self, task_id: str) -> Task:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise KeyError(f"no task {task_id!r}") from None

    @contextmanager
    def _edit(self):
        """Hold the lock for a scheduling or editing call; afterwards, outside the lock,
        run deferred callbacks, deliver events and dispatch. A call refused with an
        exception changes nothing, so there is nothing to deliver."""
        with self._lock:
            self._check_open()
            yield
            deferred = self._take_deferred()
        self._after(deferred)

    def _check_open(self) -> None:
        if self._store_error is not None:
            self._raise_store_error()
        if self._closed:
            raise RuntimeError("the scheduler has been shut down")

    # ------------------------------------------------------------------ state machine
    def _set_state(self, task: Task, new: TaskState, error: str | None = None) -> None:
        old = task.state
        check_transition(task.id, old, new)
        task.state = new
        if not task.repeats:
            if old.settled and not new.settled:
                self._unsettled += 1
            elif new.settled and not old.settled:
                self._unsettled -= 1
                self._notify_if_settled()
        self._emit(task, new.value, error)

    def _notify_if_settled(self) -> None:
        if self._unsettled == 0:
            self._settled_cond.notify_all()

    # An attempt's outcome rides on the first event its end emits (``Event.outcome``).
    # RunLogic records the outcome and then changes the task's state; these two hooks
    # note the outcome in between, and forget it once the end is handled, so an end
    # that emits nothing (a cancelled or interrupted run while another still runs)
    # never lends its outcome to a later event.
    def _record_attempt(self, task, run, outcome, error_text, tb) -> None:
        super()._record_attempt(task, run, outcome, error_text, tb)
        self._ending = (task, outcome)

    def _record_outcome(self, run, error, tb) -> None:
        try:
            super()._record_outcome(run, error, tb)
        finally:
            self._ending = None

    def _emit(self, task: Task, kind: str, error: str | None = None) -> None:
        self._seq += 1
        outcome = None
        ending = self._ending
        if ending is not None and ending[0] is task:
            outcome = ending[1]
            self._ending = None
        if self._store is not None:
            self._persist_state(task, kind, error)
        delivery = self._delivery
        if delivery.has_listeners:
            delivery.last_queued = self._seq
            delivery.outbox.append(
                Event(
                    self._seq,
                    kind,
                    task.id,
                    task.state,
                    self._clock.now(),
                    task.attempt,
                    task.run_at,
                    error,
                    outcome,
                )
            )

    def _emit_engine(self, kind: str) -> None:
        """An event about the whole engine (pause/resume all): task_id "" and no state."""
        self._seq += 1
        delivery = self._delivery
        if delivery.has_listeners:
            delivery.last_queued = self._seq
            delivery.outbox.append(
                Event(self._seq, kind, "", None, self._clock.now(), 0, None, None)
            )

    @property
    def store(self):
        """The store the scheduler writes to, or None."""
        return self._store
