"""The dispatcher: the ready queue, and running task code on workers or an executor.

By default ``workers`` engine-owned threads take work straight off the ready
heap; with an ``Executor`` the engine submits at most ``workers`` callables at a
time and learns outcomes from done-callbacks. This is the only part that runs
code outside the core lock: task code, cancel callbacks and event delivery
(``after``). It starts attempts and frees their slots; what an outcome means
for the task is the lifecycle's (``Lifecycle.record_outcome``).
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import random
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any

from .._jobs.context import RemoteResult, RunContext, _current, run_in_context
from .._jobs.supervision import SUPERVISED_WORKER
from .._schedule.timers import TimerQueue
from ..actions import Call
from ..clock import Clock
from ..command import Command, CommandDetached
from ..errors import StoreError, TaskCancelled
from ..executors import SyncExecutor
from ..models import Attempt
from ..options import Outcome, Overlap
from ..secret_env import masked, redact
from ..states import TaskState
from .core import Core
from .delivery import EventDelivery
from .events import Events
from .graph import TaskGraph
from .heaps import ReadyHeap
from .slots import PARKED, PoolSlots
from .task import MAX_ATTEMPTS_KEPT, Run, Task

if TYPE_CHECKING:
    from .._store.journal import Journal
    from .lifecycle import Lifecycle

S = TaskState
# Plain module names for the states: ``TaskState.X`` goes through the Enum metaclass
# (~50 ns a read), and this module reads them several times per task run.
READY, RUNNING = S.READY, S.RUNNING
log = logging.getLogger("taskloom.engine")
# Builds a NamedTuple from ALL its fields (defaults are not filled in) without its
# Python-level __new__: a frame per record, and the hot path makes two Attempts a run.
_new_tuple: Callable[..., Any] = tuple.__new__

_ENGINE_DIR = os.path.dirname(os.path.dirname(__file__))
_FUTURES_DIR = os.path.dirname(concurrent.futures.__file__)


def _task_traceback(exc: BaseException) -> str:
    """A task's traceback from its own first frame: the engine's and the executor's
    frames above it are noise to the person reading it. An error raised by the
    engine itself for the task (a command's exit code) gets no frames at all."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith((_ENGINE_DIR, _FUTURES_DIR)):
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    _drop_frames(exc)
    return text


def _drop_frames(exc: BaseException) -> None:
    """Once the traceback is text, the exception lets go of its frames. They hold the
    whole stack the code ran on, every local in it, and, through the executor's future
    (a frame's local) that holds the exception, a reference cycle: without this a failed
    attempt's frames lived until the next full collection. In a window that is a Qt
    object's wrapper outliving the object (a segfault when its address is reused)."""
    pending, seen = [exc], set()
    while pending:
        error = pending.pop()
        if id(error) in seen:
            continue
        seen.add(id(error))
        error.__traceback__ = None
        pending.extend(e for e in (error.__cause__, error.__context__) if e is not None)


def _acquire_politely(lock: threading.Lock) -> None:
    """Take the core lock without ever holding it while waiting for the GIL.

    A blocking acquire sleeps in the kernel, is handed the lock there and then waits
    for the GIL, lock in hand: every other thread that wants the lock blocks in turn
    and each hand-over costs two context switches (a lock convoy). Yielding the GIL
    instead lets the holder run to its release. The tries are bounded: a holder
    that sleeps with the lock (nothing in the engine does) must not turn the
    waiting workers into busy loops, so after ``POLITE_TRIES`` they block.
    """
    for _ in range(POLITE_TRIES):
        if lock.acquire(False):
            return
        time.sleep(0)
    lock.acquire()


POLITE_TRIES = 200  # each try yields the GIL: up to a switch interval while Python runs


class _Held:
    """``with`` for a lock already acquired: releases it on the way out."""

    __slots__ = ("_lock",)

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock

    def __enter__(self) -> _Held:
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def _needs_durable_start(run: Run) -> bool:
    """A command's attempt is on disk before the command starts, so that after a crash
    recovery knows it ran and ends what it left behind. In-process code starts at once
    (the commit would halve the store's speed on short calls): ``invoke`` notes it in a
    slot that outlives a crash, so recovery still counts it ``lost`` if it brought the
    process down (``engine/_store/inflight.py``)."""
    return isinstance(run.task.fn, Command)


class Dispatcher:
    """The ready heap, the running count, the worker threads or executor submissions.

    Fields are guarded by the core lock (``local`` is per thread). The thread
    entry points (``worker_loop``, ``pump``, the done-callbacks, ``after``,
    ``on_store_failure``, ``durable_done``, ``durable_batch_done``) are called
    without the lock and take it; every other method is called with it held."""

    def __init__(
        self,
        core: Core,
        clock: Clock,
        graph: TaskGraph,
        timers: TimerQueue,
        events: Events,
        delivery: EventDelivery,
        journal: Journal | None,
        lifecycle: Lifecycle,
        *,
        workers: int,
        executor: Executor | None,
        log_dir: str | None,
        pools: dict[str, int] | None = None,
        seed: int | None = None,
    ) -> None:
        self._core = core
        self._clock = clock
        self._graph = graph
        self._timers = timers
        self._events = events
        self._delivery = delivery
        self._journal = journal
        self._store = None if journal is None else journal.store
        self._lifecycle = lifecycle
        self.workers = workers
        self.executor = executor
        self._log_dir = log_dir
        self.env: dict[str, str] | None = None  # every attempt's RunContext.env
        self._wall_of = lifecycle.wall_of  # scheduler-clock time -> epoch seconds
        # Code submitted to these runs in this process, so it can see its RunContext.
        self._local_executor = executor is None or isinstance(
            executor, (SyncExecutor, ThreadPoolExecutor)
        )
        self.sync = isinstance(executor, SyncExecutor)  # everything on the calling thread
        # Guarded by the core lock:
        self.ready = ReadyHeap()
        self.running = 0  # runs whose code has not returned yet
        self._idle_workers = 0  # own workers waiting in core.work_cond (worker_loop)
        self._pumping = False  # one thread runs pump()'s loop at a time
        self.durable: set[Run] = set()  # runs whose success waits for its commit
        # Of those, committed: noted by the store's writer (``put_attempt(committed=run)``,
        # a deque's append is atomic, no lock), in commit order; finished by
        # durable_batch_done under one lock acquisition.
        self._durable_committed: deque[Run] = (
            deque() if self._store is None else self._store.committed
        )
        # Written under the core lock by start() (and its undo); shutdown() joins them
        # once stopping is set, when nothing adds to the list any more.
        self.threads: list[threading.Thread] = []
        self.local = threading.local()  # .run: the attempt whose code this thread runs
        # Runs recovery adopted (commands an earlier owner started), each waited for on a
        # thread of its own from start(); guarded by the core lock.
        self.adopted: list[Run] = []
        # Own workers take new work only while fewer than ``workers`` runs are in
        # flight: as many workers as adopted runs still in flight stay parked.
        self._adopted_in_flight = 0
        self._parked = 0
        # Shared limits beside ``workers`` (slots.py), and the draws of jitter delays.
        self.slots = PoolSlots(pools or {})
        self._random = random.Random(seed)

    # ------------------------------------------------------------------ threads
    def start_threads(self) -> None:
        """Start the engine's threads (under the lock). ``RuntimeError`` if the OS has
        no more threads: those started wait for the lock, then see ``stopping``."""
        if self.executor is None:
            for i in range(self.workers):
                self._spawn(self.worker_loop, f"taskloom-worker-{i}")
        if not self._clock.manual:
            self._spawn(self._timers.loop, "taskloom-timers")
        adopted, self.adopted = self.adopted, []
        for run in adopted:
            self._spawn(partial(self._wait_adopted, run), f"taskloom-adopted-{run.task.id}")

    def forget_threads(self) -> None:
        """A failed start(): its threads were joined, the next start() makes new ones."""
        self.threads = []

    def threads_needed(self) -> int:
        own = self.workers if self.executor is None else 0
        return own + (not self._clock.manual) + len(self.adopted)

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    def in_task_code(self) -> bool:
        """Whether the calling thread runs a task's code."""
        return getattr(self.local, "run", None) is not None

    def stop_run(self, run: Run) -> None:
        """Ask a run to stop; the calls run after the lock is released."""
        run.stop_requested = True  # submit() cancels a future attached after this
        core = self._core
        core.defer(run.ctx.request_cancel)
        if run.future is not None:
            core.defer(run.future.cancel)

    # ------------------------------------------------------------------ ready work
    def push_ready(self, task: Task) -> None:
        if task.ready is not None or task.paused:
            return  # one entry per task; a paused task is held until resumed
        if task.start_held:
            task.held = True  # made ready when the run in the way ends (finish)
            return
        if task.jitter is not None and not task.retry_pending and not self._jitter_done(task):
            return  # queued when its random delay ends (on_jitter)
        due = self._clock.now()  # read once
        if task.run_at is not None and task.run_at < due:
            due = task.run_at
        task.ready = self.ready.add(task.priority, due, task.order, task, "run")
        if self._idle_workers:  # a busy worker comes back for it: no Condition call
            self._core.work_cond.notify()

    def drop_ready(self, task: Task) -> None:
        """Take the task's ready entry off the heap (cancel, remove, pause)."""
        entry = task.ready
        if entry is not None and entry[5] == PARKED:  # waiting for a slot of its pool
            self.slots.discard(task.pool, entry)
        else:
            self.ready.discard(entry)
        task.ready = None
        if task.jitter_timer is not None:  # the occurrence's delay ends with it
            self._timers.discard(task.jitter_timer)
            task.jitter_timer = None
        if task.jittered is not None:
            task.jittered = None

    # ------------------------------------------------------------------ jitter
    def _jitter_done(self, task: Task) -> bool:
        """Whether the occurrence being queued has waited its random delay: draws it
        (uniform in [0, jitter]) and arms its timer the first time it is asked."""
        if task.jitter_timer is not None:
            return False  # still waiting
        if task.jittered is not None:
            return True
        assert task.jitter is not None
        delay = task.jittered = self._random.uniform(0.0, task.jitter)
        task.jitter_timer = self._timers.add(self._clock.now() + delay, task, "jitter")
        self._timers.changed()
        return False

    def on_jitter(self, task: Task) -> None:
        """The timer of a task's jitter came due: it is queued now."""
        task.jitter_timer = None
        self.push_ready(task)

    # ------------------------------------------------------------------ pools
    def _free_slot(self, run: Run) -> None:
        """A run of a pool's task ended: the best task waiting for the pool goes on."""
        pool, run.pool = run.pool, None
        assert pool is not None
        entry = self.slots.release(pool)
        if entry is not None:
            task = entry[4]
            task.ready = self.ready.add(-entry[0], entry[1], entry[2], task, "run")
            if self._idle_workers:
                self._core.work_cond.notify()

    def pool_wait(self, task: Task) -> str | None:
        """What a ready task waits for, if it waits for a slot of its pool."""
        entry = task.ready
        if entry is None or entry[5] != PARKED or task.pool is None:
            return None
        return self.slots.wait_text(task.pool)

    def adopt(
        self, task: Task, record: Attempt, wait_end: Callable[[], Any], log_path: str | None
    ) -> None:
        """Recovery: attempt ``record`` of ``task`` is a command an earlier owner started
        that outlived it (or ended after it) under its supervisor. It is in flight here
        from its real start, holds a worker slot, and a thread started with the engine
        waits for its end (``wait_end``) as a worker would for the task's code."""
        ctx = RunContext(task.id, record.number, self._log_dir)
        ctx.log_path = log_path
        ctx.worker = record.worker
        run = Run(task, record.number, ctx, record.started)
        run.adopted = wait_end
        task.add_run(run)
        self.running += 1
        if self.executor is None:
            self._adopted_in_flight += 1
        if task.timeout is not None:
            run.timeout_entry = self._timers.add_timeout(record.started + task.timeout, run)
        if task.pool is not None:
            self.slots.take(task.pool)
            run.pool = task.pool
        self.adopted.append(run)

    def adopted_end(self, run: Run, now: float) -> float:
        """When an adopted command ended, on this clock: its supervisor's record of it
        (the end may predate this owner), else now."""
        ended_wall = run.ctx.ended_wall
        if ended_wall is None:
            return now
        return min(now, ended_wall - (self._clock.wall().timestamp() - now))

    def forget_unstarted_adopted(self) -> None:
        """Under the lock, at shutdown of a scheduler that never started: the commands it
        adopted were never waited for here. They go on, their attempts still running
        in the store, for the next owner (nothing is recorded of them)."""
        adopted, self.adopted = self.adopted, []
        for run in adopted:
            run.task.drop_run(run)
            self._timers.discard(run.timeout_entry)
            self.running -= 1
            if self.executor is None:
                self._adopted_in_flight -= 1
            if run.pool is not None:
                self._free_slot(run)
        if adopted and self.running == 0:
            self._core.notify_settled()

    def _wait_adopted(self, run: Run) -> None:
        """An adopted run's thread: its end is the run's outcome, as the code's would be."""
        error: BaseException | None = None
        tb: str | None = None
        token = _current.set(run.ctx)
        try:
            assert run.adopted is not None
            run.adopted()
        except BaseException as exc:  # any failure is the task's outcome
            error, tb = exc, _task_traceback(exc)
        finally:
            _current.reset(token)
        try:
            self._future_outcome(run, error, tb)
        except BaseException as exc:  # an engine bug must not pass unseen
            with self._core.lock:
                self._lifecycle.engine_error("an adopted command", exc, run)

    def enqueue_restored(self, task: Task) -> None:
        """Recovery: the task is ready as restored (due now, as it was stored)."""
        task.ready = self.ready.add(task.priority, self._clock.now(), task.order, task, "run")

    def _take_ready(self) -> Run | None:
        """Pop the most urgent ready task and start an attempt of it."""
        while True:
            entry = self.ready.pop()
            if entry is None:
                return None
            task = entry[4]
            task.ready = None
            if task.state is not RUNNING and not task.state.allowed & RUNNING.bit:
                # A bookkeeping bug queued it: starting would raise IllegalTransition
                # half-way through and kill the thread. Drop the entry, say so.
                log.error(
                    "task %r is %s and cannot start: dropped its ready entry",
                    task.id,
                    task.state.name,
                )
                task.retry_pending = False
                continue
            if task.start_held:
                task.held = True  # a run in its way began lingering after it was queued
                continue
            pool = task.pool
            if pool is not None and self.slots.full(pool):
                task.ready = self.slots.park(pool, entry)  # goes on when a slot frees
                continue
            return self._start_run(task)

    def _start_run(self, task: Task) -> Run:
        scheduled = None  # the occurrence's nominal time (epoch), for scheduled_at
        jitter = None
        if task.retry_pending:
            task.retry_pending = False
            scheduled = task.occurrence_at
        else:
            if task.dues or task.occurrence_at is not None:  # recurring, or was retried
                scheduled = self._lifecycle.next_occurrence(task)
            if task.waiting_runs > 0:  # not max(): a builtin call per run
                task.waiting_runs -= 1
            if task.repeats:  # each occurrence gets a fresh retry budget
                task.budget_base = task.attempt
            if task.jittered is not None:  # the delay this occurrence waited
                jitter, task.jittered = task.jittered, None
        tasks = self._graph.tasks
        inputs = None
        for dep_id in task.deps:  # record which upstream successes this run used
            dep = tasks.get(dep_id)
            if dep is not None and dep.repeats:
                if task.consumed is None:
                    task.consumed = {}
                task.consumed[dep_id] = dep.successes
            if dep is not None and dep.outputs is not None:  # given to this attempt
                if inputs is None:
                    inputs = {}
                inputs[dep_id] = dep.outputs
        task.attempt += 1
        now = self._clock.now()
        ctx = RunContext(task.id, task.attempt, self._log_dir)
        ctx.env = self.env
        if inputs is not None:
            ctx.inputs = inputs
        if scheduled is not None:
            ctx.scheduled_at = scheduled
        elif task.run_at is not None and not task.repeats:  # a one-shot's time
            ctx._due, ctx._to_wall = task.run_at, self._wall_of  # ctx.due_at, inlined
        elif isinstance(task.fn, Command):  # no time of its own: its start
            ctx._due, ctx._to_wall = now, self._wall_of
        run = Run(task, task.attempt, ctx, now)
        task.add_run(run)
        self.running += 1
        if task.pool is not None:
            self.slots.take(task.pool)
            run.pool = task.pool
        if jitter is not None:
            run.jitter = jitter
            jitters = task.jitters
            if jitters is None:
                jitters = task.jitters = {}
            jitters[task.attempt] = jitter
            if len(jitters) > MAX_ATTEMPTS_KEPT:
                del jitters[next(iter(jitters))]
        if task.timeout is not None:
            run.timeout_entry = self._timers.add_timeout(now + task.timeout, run)
        if task.history is None:
            task.history = []
        # Every field: no end, error, output, log, exit code yet; the worker only for a
        # command given to a supervisor (recovery tells one that never started by it);
        # task_id and run are None on the engine's own records.
        worker = None
        journal = self._journal
        if (
            journal is not None
            and self._local_executor
            and _needs_durable_start(run)
            and journal.supervise(run)
        ):
            worker = SUPERVISED_WORKER
        record: Attempt = _new_tuple(
            Attempt,
            (run.attempt, now, None, Outcome.RUNNING, None, None, None, None, None, worker,
             None, None),
        )  # fmt: skip
        task.history.append(record)
        if journal is not None:
            in_process = not _needs_durable_start(run)
            # In-process code is noted in the in-flight file by invoke(): its start row
            # can wait for its end row to replace it (SQLiteStore.put_attempt), unless
            # a jitter delay is to be written onto that row.
            deferred = in_process and self._local_executor and jitter is None
            row = journal.put_attempt(task, record, deferred=deferred)
            if jitter is not None:
                journal.store.put_jitter(task.id, task.attempt, jitter)
            if in_process:
                run.start_row = row
            journal.record_processes(run)
        if task.state is RUNNING:
            self._events.emit(task, "running")  # another parallel run of a recurring task
        else:
            self._lifecycle.set_state(task, RUNNING)
        if task.overlap == Overlap.PARALLEL and task.waiting_runs > 0:
            self.push_ready(task)
        return run

    def _keep_outputs(self, run: Run) -> None:
        """A run succeeded with outputs: its task gives them to its dependents' next
        attempts, and the store keeps them with the attempt (engine/outputs.py)."""
        ctx = run.ctx
        outputs, ctx._outputs = ctx._outputs, None
        assert outputs is not None
        run.task.outputs = outputs
        if self._store is not None:
            from ..outputs import encode

            self._store.put_outputs(run.task.id, run.attempt, encode(outputs))

    def forget_durable(self, run: Run) -> None:
        """The run failed for another reason: no commit will finish it."""
        self.durable.discard(run)

    def release_slot(self, run: Run) -> None:
        """The run's code returned: its worker (or executor slot) is free."""
        if not run.released:
            run.released = True
            self.running -= 1
            if run.pool is not None:
                self._free_slot(run)
            if self.running == 0:
                self._core.notify_settled()

    def finish(self, run: Run, error: BaseException | None, tb: str | None) -> None:
        """The run's code returned: free its slot, record its outcome (under the lock)."""
        if run.released:
            return
        run.released = True
        self.running -= 1
        if run.pool is not None:
            self._free_slot(run)
        if self.running == 0:
            self._core.notify_settled()
        if run.ctx._outputs is not None and error is None and not run.done:
            self._keep_outputs(run)
        task = run.task
        if error is not None and error.__class__ is CommandDetached:
            if run.adopted is not None and self.executor is None:
                self._adopted_in_flight -= 1
            return  # handed over: its end is the store's next owner's to record
        if run.adopted is not None and self.executor is None:
            self._adopted_in_flight -= 1
            self._core.work_cond.notify_all()  # its slot is free: a parked worker goes on
        if run.done:  # timed out: its outcome is recorded, the task's next start waited
            if run.lingers:
                run.lingers = False
                task.lingering -= 1
        else:
            self._lifecycle.record_outcome(run, error, tb)
        if task.held and not task.start_held:  # a start waited for this run to end
            task.held = False
            if task.state is READY or task.waiting_runs > 0 or task.retry_pending:
                self._lifecycle.make_ready(task)

    # ------------------------------------------------------------------ durable successes
    def finish_when_durable(self, run: Run) -> None:
        """Under the lock, for a run whose code returned in time: report its success only
        once it is on disk. Its timeout no longer applies, so the row queued here is the
        engine's outcome (a later cancel queues "cancelled" after it). The store's writer
        finishes the run after its commit, so no worker waits on I/O. With
        ``SyncExecutor`` the caller commits and finishes it at once (deterministic)."""
        store_error = self._core.store_error
        if store_error is not None:  # nothing commits any more: the run fails
            self.finish(run, store_error, None)
            return
        assert self._journal is not None and self._store is not None
        self._timers.discard(run.timeout_entry)
        run.timeout_entry = None
        ctx = run.ctx
        if ctx._outputs is not None:  # queued before the success: the same commit, mostly
            self._keep_outputs(run)
        ended = self._clock.now()
        if run.adopted is not None:  # it may have ended before this owner came
            ended = self.adopted_end(run, ended)
        output = ctx.output
        if output is not None and masked():  # secret_env values never reach the store
            output = redact(output)
        record: Attempt = _new_tuple(  # Attempt(...) without its Python-level __new__
            Attempt,
            (
                run.attempt,
                run.started,
                ended,
                Outcome.SUCCEEDED,
                None,
                None,
                output,
                ctx.log_path,
                ctx.exit_code,
                ctx.worker,
                None,  # task_id
                None,  # run
            ),
        )
        row = self._journal.attempt_row(run.task, record)
        run.durable = record  # the final record: record_attempt writes it no second time
        self.durable.add(run)  # finished by durable_[batch_]done, or by on_store_failure
        if self.sync:
            self._store.put_attempt(row)
        else:
            # Only noted here, on the writer thread; durable_batch_done finishes the
            # batch's runs after the commit, under one lock acquisition.
            self._store.put_attempt(row, committed=run)

    def durable_done(self, run: Run) -> None:
        """The run's success is on disk: finish it (unless a store failure already did)."""
        core = self._core
        with core.lock:
            self._finish_durable(run)
            deferred = core.take_deferred()
        self.after(deferred)

    def durable_batch_done(self) -> None:
        """After a commit, on the committing thread (``SQLiteStore.add_commit_listener``):
        finish the runs whose success it made durable, in commit order, under one lock
        acquisition instead of one per run (the writer no longer queues for the lock
        per run)."""
        committed = self._durable_committed
        if not committed:
            return
        core = self._core
        with core.lock:
            while committed:
                self._finish_durable(committed.popleft())
            deferred = core.take_deferred()
        self.after(deferred)

    def _finish_durable(self, run: Run) -> None:
        """Under the core lock: finish a run whose success is on disk, unless a store
        failure failed it already."""
        if run not in self.durable:
            return
        self.durable.discard(run)
        try:
            self.finish(run, None, None)
        except Exception as exc:
            self._lifecycle.engine_error("finishing a committed run", exc, run)

    def on_store_failure(self, error: StoreError) -> None:
        """The store cannot be written (any thread, never under the lock): stop starting
        work, fail the runs waiting for their success to be committed, wake waiters.
        ``wait()``, ``shutdown()`` and every scheduling call report ``error`` from now on."""
        core = self._core
        with core.lock:
            if core.store_error is None:
                core.store_error = error
                log.error("%s; the engine stops", error)
                core.stopping = True
                for run in list(self.durable):
                    self.durable.discard(run)
                    try:
                        self.finish(run, error, None)
                    except Exception as exc:
                        self._lifecycle.engine_error("store failure handling", exc, run)
                core.wake_all()
            deferred = core.take_deferred()
        self.after(deferred)

    # ------------------------------------------------------------------ after the lock
    def after(self, deferred: list[Callable[[], object]]) -> None:
        """Run what had to wait for the lock to be released, then deliver and dispatch."""
        if deferred:
            self._run_deferred(deferred)  # kicks delivery after the callbacks
        elif self._delivery.outbox:
            self._delivery.kick()
        if self.executor is not None and self._core.started:
            self.pump()

    def _run_deferred(self, deferred: list[Callable[[], object]]) -> None:
        for callback in deferred:
            try:
                callback()
            except Exception:
                log.exception("deferred engine callback %r failed", callback)
        if self._delivery.outbox:
            self._delivery.kick()

    # ------------------------------------------------------------------ own workers
    def invoke(self, run: Run) -> Any:
        """Run the attempt's code in this process (a worker or a local executor)."""
        row = run.start_row
        if row is None:
            return self._invoke(run)
        store = self._store
        assert store is not None
        # Noted where a crash cannot erase it (_store/inflight.py); flushed if too long.
        slot = store.note_running(row)
        if slot is None:
            store.flush()
            return self._invoke(run)
        try:
            return self._invoke(run)
        finally:
            store.running_ended(slot)

    def _invoke(self, run: Run) -> Any:
        run.ctx.worker = threading.current_thread().name
        token = _current.set(run.ctx)
        local = self.local  # lets wait()/shutdown() see they were called from task code
        outer = getattr(local, "run", None)
        local.run = run
        try:
            result = run.task.fn()
            if result is not None and type(run.task.fn) is Call:  # its return value
                from ..outputs import outputs_of_value

                run.ctx._outputs = outputs_of_value(result)
            return result
        finally:
            local.run = outer
            _current.reset(token)

    def worker_loop(self) -> None:
        """An engine-owned worker: takes work straight off the ready heap.

        Nothing but the task's own code may end it: an engine error fails the attempt
        it was handling (``Lifecycle.engine_error``) and the loop goes on.
        """
        core = self._core
        lock = core.lock
        run: Run | None = None
        error: BaseException | None = None
        tb: str | None = None
        while True:
            try:
                _acquire_politely(lock)  # a worker never waits for the GIL, lock in hand
                with _Held(lock):
                    if run is not None:
                        ended, run = run, None
                        try:
                            # Decided under the lock: a timeout cannot slip in between.
                            if error is None and self._store is not None and not ended.done:
                                self.finish_when_durable(ended)
                            else:
                                self.finish(ended, error, tb)
                        except Exception as exc:
                            self._lifecycle.engine_error("a worker", exc, ended)
                    while self._adopted_in_flight > self._parked and not core.stopping:
                        # An adopted command holds this worker's slot until it ends.
                        self._parked += 1
                        try:
                            core.work_cond.wait()
                        finally:
                            self._parked -= 1
                    while (
                        not core.stopping
                        and (core.paused_all or not self.ready)
                        and not core.deferred
                    ):
                        if self._delivery.outbox:  # threaded delivery: only queues a wake-up token
                            self._delivery.kick()
                        self._idle_workers += 1
                        try:
                            core.work_cond.wait()
                        finally:
                            self._idle_workers -= 1
                    stopping = core.stopping
                    if not stopping and not core.paused_all and self.ready:
                        run = self._take_ready()
                    deferred = core.take_deferred()
                self.after(deferred)
            except BaseException as exc:  # an engine bug must not end the thread
                with lock:
                    self._lifecycle.engine_error("a worker", exc, run)
                run = None
                continue
            if stopping:
                return
            if run is None:
                continue
            error = tb = None
            if self._store is not None and _needs_durable_start(run):
                try:
                    self._store.flush()
                except StoreError as exc:  # the attempt fails without running
                    self.on_store_failure(exc)
                    error = exc
                    continue
            try:
                self.invoke(run)
            except BaseException as exc:  # any failure is the task's outcome
                error, tb = exc, _task_traceback(exc)

    # ------------------------------------------------------------------ executor mode
    def pump(self) -> None:
        """Executor mode: submit ready work while fewer than ``workers`` are in flight.

        One thread pumps at a time; a call made while another pumps (a done-callback
        of ``SyncExecutor`` inside the loop) returns at once, and the loop, which
        re-checks the ready heap under the lock, picks its work up. No recursion.
        """
        core = self._core
        with core.lock:
            if self._pumping:
                return
            self._pumping = True
        try:
            while True:
                with core.lock:
                    batch = []
                    while (
                        not core.stopping
                        and not core.paused_all
                        and self.running < self.workers
                        and self.ready
                    ):
                        run = self._take_ready()
                        if run is not None:  # None: only held tasks were left
                            batch.append(run)
                    deferred = core.take_deferred()
                    if not batch and not deferred:
                        self._pumping = False
                        break
                self._run_deferred(deferred)
                for run in batch:
                    self._submit(run)
        except BaseException:
            with core.lock:
                self._pumping = False
            raise
        if self._delivery.outbox:
            self._delivery.kick()

    def _submit(self, run: Run) -> None:
        if self._store is not None and _needs_durable_start(run):
            try:
                self._store.flush()
            except StoreError as exc:  # the attempt fails without running
                self.on_store_failure(exc)
                self._on_done(run, exc, None)
                return
        assert self.executor is not None
        submit = self.executor.submit
        try:
            if self._local_executor:
                future = submit(lambda: self.invoke(run))
            else:  # an executor wrapper learns the task id, attempt and log_dir from current_run()
                fn = run.task.fn
                future = run_in_context(run.ctx, lambda: submit(fn))
        except BaseException as exc:  # a broken pool fails the attempt
            self._on_done(run, exc, traceback.format_exc())
            if isinstance(exc, KeyboardInterrupt):
                raise
            return
        with self._core.lock:  # cancel() and timeouts look for the future under the lock
            run.future = future
            stop = run.stop_requested
        if stop:  # asked to stop while it was being submitted
            future.cancel()
        future.add_done_callback(lambda f: self._future_done(run, f))

    def _future_done(self, run: Run, future: Future) -> None:
        """A done-callback: on the executor's thread, or inline with ``SyncExecutor``."""
        try:
            error = self._future_result(run, future)
        except BaseException as exc:  # an engine bug must not kill a pool thread
            try:
                core = self._core
                with core.lock:
                    self._lifecycle.engine_error("an executor callback", exc, run)
                    deferred = core.take_deferred()
                self.after(deferred)
            except BaseException:
                log.exception("engine error while handling an engine error")
            return
        if isinstance(error, KeyboardInterrupt) and self.sync:
            raise error  # Ctrl-C in task code run inline reaches the caller

    def _future_result(self, run: Run, future: Future) -> BaseException | None:
        if future.cancelled():
            self._on_done(run, TaskCancelled("cancelled before it started"), None)
            return None
        exc = future.exception()
        if exc is None:
            result = future.result()
            if isinstance(result, RemoteResult):  # sent back by code run elsewhere
                result.apply_to(run.ctx)
                exc = result.error
        tb = None if exc is None else _task_traceback(exc)
        self._future_outcome(run, exc, tb)
        return exc

    def _future_outcome(self, run: Run, error: BaseException | None, tb: str | None) -> None:
        if error is None and self._store is not None:
            core = self._core
            with core.lock:  # decided under the lock: a timeout cannot slip in between
                durable = not run.done
                if durable:
                    self.finish_when_durable(run)
                deferred = core.take_deferred()
            self.after(deferred)
            if durable:
                if self.sync:  # commit now and finish (deterministic)
                    try:
                        self._store.flush()
                    except StoreError as exc:  # fails the run waiting for the commit
                        self.on_store_failure(exc)
                    else:
                        self.durable_done(run)
                return
        self._on_done(run, error, tb)

    def _on_done(self, run: Run, error: BaseException | None, tb: str | None) -> None:
        core = self._core
        with core.lock:
            try:
                self.finish(run, error, tb)
            except Exception as exc:
                self._lifecycle.engine_error("recording an outcome", exc, run)
            deferred = core.take_deferred()
        self.after(deferred)
