"""Running task code: engine-owned worker threads, or any ``Executor``.

A mixin of ``Scheduler``. This is the only part that runs code outside the
engine lock: task code, cancel callbacks and event delivery (``_after``).
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
import traceback

from .command import Command
from .context import RemoteResult, _current, run_in_context
from .errors import TaskCancelled
from .store import StoreError
from .task import Run

log = logging.getLogger("taskloom.engine")

_ENGINE_DIR = os.path.dirname(__file__)
_FUTURES_DIR = os.path.dirname(concurrent.futures.__file__)


def _task_traceback(exc: BaseException) -> str:
    """A task's traceback from its own first frame: the engine's and the executor's
    frames above it are noise to the person reading it. An error raised by the
    engine itself for the task (a command's exit code) gets no frames at all."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith((_ENGINE_DIR, _FUTURES_DIR)):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _needs_durable_start(run: Run) -> bool:
    """A command's attempt is on disk before the command starts, so that after a crash
    recovery knows it ran and ends what it left behind. In-process code needs no such
    record: it dies with the process, and an attempt not on disk simply runs again
    (at-least-once). Skipping the commit halves the store's cost on short calls."""
    return isinstance(run.task.fn, Command)


class WorkerLoop:
    def _take_deferred(self) -> list:
        deferred = self._deferred
        if deferred:
            self._deferred = []
        return deferred

    def _after(self, deferred: list) -> None:
        """Run what had to wait for the lock to be released, then deliver and dispatch."""
        self._run_deferred(deferred)
        if self._executor is not None and self._started:
            self._pump()
        elif self._delivery.outbox:
            self._delivery.kick()

    def _run_deferred(self, deferred: list) -> None:
        for callback in deferred:
            try:
                callback()
            except Exception:
                log.exception("deferred engine callback %r failed", callback)
        if self._delivery.outbox:
            self._delivery.kick()

    def _invoke(self, run: Run):
        run.ctx.worker = threading.current_thread().name
        token = _current.set(run.ctx)
        local = self._local  # lets wait()/shutdown() see they were called from task code
        outer = getattr(local, "run", None)
        local.run = run
        try:
            return run.task.fn()
        finally:
            local.run = outer
            _current.reset(token)

    def _worker_loop(self) -> None:
        """An engine-owned worker: takes work straight off the ready heap.

        Nothing but the task's own code may end it: an engine error fails the attempt
        it was handling (``_engine_error``) and the loop goes on.
        """
        lock = self._lock
        run: Run | None = None
        error = tb = None
        while True:
            try:
                with lock:
                    if run is not None:
                        ended, run = run, None
                        try:
                            # Decided under the lock: a timeout cannot slip in between.
                            if error is None and self._store is not None and not ended.done:
                                self._finish_when_durable(ended)
                            else:
                                self._finish(ended, error, tb)
                        except Exception as exc:
                            self._engine_error("a worker", exc, ended)
                    while (
                        not self._stopping
                        and (self._paused_all or not self._ready)
                        and not self._deferred
                    ):
                        if self._delivery.outbox:  # threaded delivery: only sets an Event
                            self._delivery.kick()
                        self._work_cond.wait()
                    stopping = self._stopping
                    if not stopping and not self._paused_all and self._ready:
                        run = self._take_ready()
                    deferred = self._take_deferred()
                self._after(deferred)
            except BaseException as exc:  # noqa: BLE001 - an engine bug must not end the thread
                with lock:
                    self._engine_error("a worker", exc, run)
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
                    self._on_store_failure(exc)
                    error = exc
                    continue
            try:
                self._invoke(run)
            except BaseException as exc:  # noqa: BLE001 - any failure is the task's outcome
                error, tb = exc, _task_traceback(exc)

    def _on_store_failure(self, error: StoreError) -> None:
        """The store cannot be written (any thread, never under the lock): stop starting
        work, fail the runs waiting for their success to be committed, wake waiters.
        ``wait()``, ``shutdown()`` and every scheduling call report ``error`` from now on."""
        with self._lock:
            if self._store_error is None:
                self._store_error = error
                log.error("%s; the engine stops", error)
                self._stopping = True
                for run in list(self._durable):
                    self._durable.discard(run)
                    try:
                        self._finish(run, error, None)
                    except Exception as exc:
                        self._engine_error("store failure handling", exc, run)
                self._work_cond.notify_all()
                self._timer_cond.notify_all()
                self._settled_cond.notify_all()
            deferred = self._take_deferred()
        self._after(deferred)

    def _durable_done(self, run: Run) -> None:
        """The run's success is on disk: finish it (unless a store failure already did)."""
        with self._lock:
            if run not in self._durable:
                return
            self._durable.discard(run)
            try:
                self._finish(run, None, None)
            except Exception as exc:
                self._engine_error("finishing a committed run", exc, run)
            deferred = self._take_deferred()
        self._after(deferred)

    def _pump(self) -> None:
        """Executor mode: submit ready work while fewer than ``workers`` are in flight.

        One thread pumps at a time; a call made while another pumps (a done-callback
        of ``SyncExecutor`` inside the loop) returns at once, and the loop, which
        re-checks the ready heap under the lock, picks its work up. No recursion.
        """
        with self._lock:
            if self._pumping:
                return
            self._pumping = True
        try:
            while True:
                with self._lock:
                    batch = []
                    while (
                        not self._stopping
                        and not self._paused_all
                        and self._running < self._workers
                        and self._ready
                    ):
                        run = self._take_ready()
                        if run is not None:  # None: only held tasks were left
                            batch.append(run)
                    deferred = self._take_deferred()
                    if not batch and not deferred:
                        self._pumping = False
                        break
                self._run_deferred(deferred)
                for run in batch:
                    self._submit(run)
        except BaseException:
            with self._lock:
                self._pumping = False
            raise
        if self._delivery.outbox:
            self._delivery.kick()

    def _submit(self, run: Run) -> None:
        if self._store is not None and _needs_durable_start(run):
            try:
                self._store.flush()
            except StoreError as exc:  # the attempt fails without running
                self._on_store_failure(exc)
                self._on_done(run, exc, None)
                return
        submit = self._executor.submit
        try:
            if self._local_executor:
                future = submit(lambda: self._invoke(run))
            else:  # an executor wrapper learns the task id, attempt and log_dir from current_run()
                fn = run.task.fn
                future = run_in_context(run.ctx, lambda: submit(fn))
        except BaseException as exc:  # noqa: BLE001 - a broken pool fails the attempt
            self._on_done(run, exc, traceback.format_exc())
            if isinstance(exc, KeyboardInterrupt):
                raise
            return
        with self._lock:  # cancel() and timeouts look for the future under the lock
            run.future = future
            stop = run.stop_requested
        if stop:  # asked to stop while it was being submitted
            future.cancel()
        future.add_done_callback(lambda f: self._future_done(run, f))

    def _future_done(self, run: Run, future) -> None:
        """A done-callback: on the executor's thread, or inline with ``SyncExecutor``."""
        try:
            error = self._future_result(run, future)
        except BaseException as exc:  # noqa: BLE001 - an engine bug must not kill a pool thread
            try:
                with self._lock:
                    self._engine_error("an executor callback", exc, run)
                    deferred = self._take_deferred()
                self._after(deferred)
            except BaseException:  # noqa: BLE001
                log.exception("engine error while handling an engine error")
            return
        if isinstance(error, KeyboardInterrupt) and self._sync:
            raise error  # Ctrl-C in task code run inline reaches the caller

    def _future_result(self, run: Run, future):
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

    def _future_outcome(self, run: Run, error, tb) -> None:
        if error is None and self._store is not None:
            with self._lock:  # decided under the lock: a timeout cannot slip in between
                durable = not run.done
                if durable:
                    self._finish_when_durable(run)
                deferred = self._take_deferred()
            self._after(deferred)
            if durable:
                if self._sync:  # commit now and finish (deterministic)
                    try:
                        self._store.flush()
                    except StoreError as exc:  # fails the run waiting for the commit
                        self._on_store_failure(exc)
                    else:
                        self._durable_done(run)
                return
        self._on_done(run, error, tb)

    def _on_done(self, run: Run, error, tb) -> None:
        with self._lock:
            try:
                self._finish(run, error, tb)
            except Exception as exc:
                self._engine_error("recording an outcome", exc, run)
            deferred = self._take_deferred()
        self._after(deferred)
