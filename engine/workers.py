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

from .context import RemoteResult, _current, run_in_context
from .errors import TaskCancelled
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
        try:
            return run.task.fn()
        finally:
            _current.reset(token)

    def _worker_loop(self) -> None:
        """An engine-owned worker: takes work straight off the ready heap."""
        lock = self._lock
        run: Run | None = None
        error = tb = None
        while True:
            with lock:
                if run is not None:
                    # Decided under the lock: a timeout cannot slip in between.
                    if error is None and self._store is not None and not run.done:
                        self._finish_when_durable(run)
                    else:
                        self._finish(run, error, tb)
                    run = None
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
            if stopping:
                return
            if run is None:
                continue
            error = tb = None
            if self._store is not None:  # every attempt is on disk before its code runs
                self._store.flush()
            try:
                self._invoke(run)
            except BaseException as exc:  # noqa: BLE001 - any failure is the task's outcome
                error, tb = exc, _task_traceback(exc)

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
        if self._store is not None:  # every attempt is on disk before its code runs
            self._store.flush()
        submit = self._executor.submit
        try:
            if self._local_executor:
                future = submit(lambda: self._invoke(run))
            else:  # an executor wrapper learns the task id, attempt and log_dir from current_run()
                fn = run.task.fn
                future = run_in_context(run.ctx, lambda: submit(fn))
        except BaseException as exc:  # noqa: BLE001 - a broken pool fails the attempt
            self._on_done(run, exc, traceback.format_exc())
            return
        with self._lock:  # cancel() and timeouts look for the future under the lock
            run.future = future
            stop = run.stop_requested
        if stop:  # asked to stop while it was being submitted
            future.cancel()
        future.add_done_callback(lambda f: self._future_done(run, f))

    def _future_done(self, run: Run, future) -> None:
        if future.cancelled():
            self._on_done(run, TaskCancelled("cancelled before it started"), None)
            return
        exc = future.exception()
        if exc is None:
            result = future.result()
            if isinstance(result, RemoteResult):  # sent back by code run elsewhere
                result.apply_to(run.ctx)
                exc = result.error
        tb = None if exc is None else _task_traceback(exc)
        self._future_outcome(run, exc, tb)

    def _future_outcome(self, run: Run, error, tb) -> None:
        if error is None and self._store is not None:
            with self._lock:  # decided under the lock: a timeout cannot slip in between
                durable = not run.done
                if durable:
                    self._finish_when_durable(run)
            if durable:
                if self._sync:  # commit now and finish (deterministic)
                    self._store.flush()
                    self._on_done(run, None, None)
                return
        self._on_done(run, error, tb)

    def _on_done(self, run: Run, error, tb) -> None:
        with self._lock:
            self._finish(run, error, tb)
            deferred = self._take_deferred()
        self._after(deferred)
        if isinstance(error, KeyboardInterrupt):
            raise error
