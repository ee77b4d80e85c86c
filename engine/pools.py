"""Executors that run tasks beyond the engine's own threads: a process pool or a Dask cluster.

``make_executor("processes", 4)`` or ``make_executor("dask://host:8786", 8)`` returns a
``concurrent.futures.Executor`` for ``Scheduler(executor=...)``; ``"threads"`` returns
None (the engine's own threads, the fastest choice for work that releases the GIL).

Both executors run each task through ``_run_here`` on the far side, which gives the
code a ``RunContext`` of its own (so a ``Command`` captures its output there) and
sends back an ``engine.context.RemoteResult``: the worker that ran it, the output
tail, log path and exit code, and the exception if it failed. The engine copies
those into the attempt record.

What the engine needs from them, and how each provides it:

- A worker that dies fails the attempt, never hangs it. A pool process that dies
  breaks a ``ProcessPoolExecutor`` for good; ``RecoveringProcessPool`` fails the
  affected futures with ``WorkerLost`` and starts a fresh pool. On Dask, the
  scheduler reports ``KilledWorker`` once ``distributed.scheduler.allowed-failures``
  is used up (set it to 0 to see every death as a failed attempt).
- ``future.cancel()`` reaches the running code: the pool signals a per-command
  event that the child watches; on Dask every worker is asked to cancel the run by
  its token (a run still queued there is dropped). Either way the command's
  process group is terminated and the attempt comes back with its output, marked
  cancelled. On Dask a ``Call`` sees the request too (``current_run().cancelled``).

The engine calls ``submit`` with the run's ``RunContext`` current (if it does
not, runs are labelled by function name): task id, attempt and log directory
travel with the call.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import re
import threading
import traceback
import uuid
from collections import OrderedDict
from concurrent.futures import Executor, Future, InvalidStateError, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool, ProcessPoolExecutor
from multiprocessing.managers import SyncManager
from typing import NamedTuple

from ._jobs import reaper
from ._jobs.context import RemoteResult, RunContext, current_run, run_in_context
from .errors import TaskCancelled

log = logging.getLogger("taskloom.engine")

CONNECT_TIMEOUT_S = 10
_DASK_SPEC = re.compile(r"^dask://(?P<host>[^\s:/]+):(?P<port>\d{1,5})$")


def make_executor(spec: str, workers: int) -> Executor | None:
    """The executor an ``executor`` setting names: threads, processes or dask://HOST:PORT."""
    if spec == "threads":
        return None
    if spec == "processes":
        return RecoveringProcessPool(workers)
    match = _DASK_SPEC.match(spec) if isinstance(spec, str) else None
    if match:
        if not 1 <= int(match["port"]) <= 65535:  # else a 10 s connect timeout says less
            raise ValueError(f"executor {spec!r}: port must be 1 to 65535")
        try:
            return DaskExecutor(f"tcp://{match['host']}:{match['port']}")
        except ImportError as exc:
            raise ValueError(f"executor {spec!r}: {exc}") from None
    raise ValueError(f"executor must be 'threads', 'processes' or 'dask://HOST:PORT', got {spec!r}")


class WorkerLost(Exception):
    """The process that ran (or was about to run) the attempt died."""


# ---------------------------------------------------------------------- the far side
class _RunMeta(NamedTuple):
    """What the remote side needs to know about the attempt it runs."""

    task_id: str
    attempt: int
    log_dir: str | None
    env: dict[str, str] | None = None  # RunContext.env and .scheduled_at, for commands
    scheduled_at: float | None = None


def _meta_for(fn, default_log_dir: str | None) -> _RunMeta:
    run = current_run()  # the engine submits inside the run's context
    if run is not None:
        return _RunMeta(
            run.task_id, run.attempt, run.log_dir or default_log_dir, run.env, run.scheduled_at
        )
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return _RunMeta(name, 0, default_log_dir)


def _run_here(call, meta: _RunMeta, worker: str, token: str | None = None, cancel_event=None):
    """Run ``call`` in a RunContext of its own; report how it went as a RemoteResult."""
    ctx = RunContext(meta.task_id, meta.attempt, meta.log_dir)
    ctx.env, ctx.scheduled_at = meta.env, meta.scheduled_at
    ctx.worker = worker
    finished = threading.Event() if cancel_event is not None else None
    if token is not None:
        _track(token, ctx)
    if cancel_event is not None and finished is not None:
        _watch(cancel_event, ctx, finished)
    value = error = None
    try:
        if ctx.cancelled:
            raise TaskCancelled("cancelled before it started")
        value = run_in_context(ctx, call)
    except BaseException as exc:  # every failure goes back as the outcome
        error = _portable_error(exc, worker)
    finally:
        if token is not None:
            _untrack(token)
        if cancel_event is not None and finished is not None:
            finished.set()
            _release_watcher(cancel_event)
    return RemoteResult(
        _portable_value(value),
        worker=ctx.worker,
        output=ctx.output,
        log_path=ctx.log_path,
        exit_code=ctx.exit_code,
        error=error,
    )


class _Invocation:
    """``fn(*args, **kwargs)`` as one picklable callable."""

    __slots__ = ("fn", "args", "kwargs")

    def __init__(self, fn, args, kwargs):
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def __call__(self):
        return self.fn(*self.args, **self.kwargs)


def _portable_error(exc: BaseException, worker: str) -> BaseException:
    """The exception, made to survive pickling with its traceback (as a note)."""
    text = "".join(traceback.format_exception(exc))
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # an exception type that cannot travel: send its text
        exc = RuntimeError(f"{type(exc).__name__}: {exc}")
    exc.__traceback__ = None
    exc.add_note(f"Traceback on {worker}:\n{text.rstrip()}")
    return exc


def _portable_value(value):
    """The engine ignores return values; never let one that cannot travel fail a run."""
    if value is None:
        return None
    try:
        pickle.dumps(value)
    except Exception:
        return repr(value)
    return value


# Runs in flight in this worker process, by token, and tokens cancelled before their
# run arrived here (bounded: a token only matters for moments).
_runs: dict[str, RunContext] = {}
_cancelled_tokens: OrderedDict[str, None] = OrderedDict()
_CANCELLED_KEPT = 10_000
_runs_lock = threading.Lock()  # guards _runs and _cancelled_tokens


def _track(token: str, ctx: RunContext) -> None:
    with _runs_lock:
        _runs[token] = ctx
        cancelled = token in _cancelled_tokens
    if cancelled:
        ctx.request_cancel()


def _untrack(token: str) -> None:
    with _runs_lock:
        _runs.pop(token, None)
        _cancelled_tokens.pop(token, None)


def _cancel_token(token: str) -> bool:
    """Cancel the run with this token here; True if it was running here."""
    with _runs_lock:
        ctx = _runs.get(token)
        if ctx is None:  # not here (yet): remember, in case it arrives later
            _cancelled_tokens[token] = None
            while len(_cancelled_tokens) > _CANCELLED_KEPT:
                _cancelled_tokens.popitem(last=False)
    if ctx is None:
        return False
    ctx.request_cancel()
    return True


def _watch(cancel_event, ctx: RunContext, finished: threading.Event) -> None:
    """Cancel ``ctx`` when the parent sets ``cancel_event`` (a manager Event proxy)."""

    def watch():
        try:
            cancel_event.wait()
        except (OSError, EOFError):  # the parent went away: nobody can cancel any more
            return
        if not finished.is_set():
            ctx.request_cancel()

    threading.Thread(target=watch, name="taskloom-cancel-watch", daemon=True).start()


def _release_watcher(cancel_event) -> None:
    try:
        cancel_event.set()  # wakes the watcher, which sees the run has finished
    except (OSError, EOFError):
        pass


def _run_in_child(payload: bytes, meta: _RunMeta, cancel_event) -> RemoteResult:
    """Pool process entry point: unpickle the task here, so a bad one fails its attempt."""
    worker = f"pid {os.getpid()}"
    try:
        call = pickle.loads(payload)
    except BaseException as exc:  # e.g. its module cannot be imported here
        return RemoteResult(worker=worker, error=_portable_error(exc, worker))
    return _run_here(call, meta, worker, cancel_event=cancel_event)


def _run_on_dask_worker(call, meta: _RunMeta, token: str) -> RemoteResult:
    from distributed import get_worker

    try:
        worker = get_worker().address
    except ValueError:  # not inside a worker (a synchronous scheduler)
        worker = f"pid {os.getpid()}"
    return _run_here(call, meta, worker, token=token)


# ---------------------------------------------------------------------- futures
class _RemoteFuture(Future):
    """The engine's view of a remote run: ``cancel()`` also stops it once started."""

    def __init__(self, cancel_remote):
        super().__init__()
        self._cancel_remote = cancel_remote  # -> True if it was stopped before starting

    def cancel(self) -> bool:
        if self.done():
            return self.cancelled()
        try:
            stopped_early = self._cancel_remote()
        except Exception:
            log.exception("cancelling a remote run failed")
            stopped_early = False
        return super().cancel() if stopped_early else False

    def _settle(self, result=None, error: BaseException | None = None, cancelled=False) -> None:
        self._cancel_remote = _already_done  # drop what it held (a Dask future, a pool item)
        try:
            if cancelled:
                Future.cancel(self)
            elif error is not None:
                self.set_exception(error)
            else:
                self.set_result(result)
        except InvalidStateError:  # cancelled meanwhile: that outcome stands
            pass


def _already_done() -> bool:
    return False


def _describe_submission(fn) -> str:
    return getattr(fn, "__name__", None) or repr(fn)


def _is_command(fn) -> bool:
    from .command import Command

    return isinstance(fn, Command)


# ---------------------------------------------------------------------- process pool
class RecoveringProcessPool(Executor):
    """A process pool that survives its processes dying.

    A ``ProcessPoolExecutor`` whose child dies is broken for good. Here the futures
    it had in flight fail with ``WorkerLost`` (a FAILED attempt, retried per the
    task's policy) and the next submission gets a fresh pool.

    Tasks must be picklable: a ``Call``, a ``Command`` or a module-level function,
    not a lambda. A ``Command`` can be cancelled while it runs (its process group is
    terminated); other code in a child only stops when it returns. Children are
    spawned, so a script that uses the pool needs ``if __name__ == "__main__":``.
    """

    def __init__(self, max_workers: int | None = None, mp_context=None, log_dir=None):
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers!r}")
        self._max_workers = max_workers or os.cpu_count() or 1
        # spawn, not fork: forking a process that runs threads can copy a held lock.
        self._context = mp_context or multiprocessing.get_context("spawn")
        self._log_dir = log_dir
        self._lock = threading.Lock()  # guards _pool, _manager, _closed and restarts
        # Marks the pool's processes (and the manager, the resource tracker): they end
        # with this process even when it is killed (see reaper.py).
        reaper.ensure_started()
        self._pool = self._new_pool()
        # Started for the first Command: carries cancel requests.
        self._manager: SyncManager | None = None
        self._closed = False
        self.restarts = 0  # how many times a dead process made us start a fresh pool

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self._max_workers, mp_context=self._context)

    def submit(self, fn, /, *args, **kwargs) -> Future:
        call = _Invocation(fn, args, kwargs) if args or kwargs else fn
        try:
            payload = pickle.dumps(call)
        except Exception as exc:
            raise TypeError(
                f"{_describe_submission(fn)} cannot be sent to a worker process ({exc}); "
                "name it as 'package.module:function' or use a Command"
            ) from exc
        meta = _meta_for(fn, self._log_dir)
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit to a RecoveringProcessPool after shutdown")
            cancel_event = self._new_cancel_event() if _is_command(fn) else None
            pool = self._pool
            try:
                inner = pool.submit(_run_in_child, payload, meta, cancel_event)
            except BrokenProcessPool:
                pool = self._replace(pool)
                inner = pool.submit(_run_in_child, payload, meta, cancel_event)

        def cancel_remote() -> bool:
            if inner.cancel():
                return True
            if cancel_event is not None and not inner.done():
                cancel_event.set()
            return False

        outer = _RemoteFuture(cancel_remote)
        inner.add_done_callback(lambda f: self._settle(pool, f, outer))
        return outer

    def _new_cancel_event(self):
        if self._manager is None:
            self._manager = self._context.Manager()
        return self._manager.Event()

    def _settle(self, pool: ProcessPoolExecutor, inner: Future, outer: _RemoteFuture) -> None:
        if inner.cancelled():
            outer._settle(cancelled=True)
            return
        error = inner.exception()
        if isinstance(error, BrokenProcessPool):
            with self._lock:
                if self._pool is pool and not self._closed:
                    self._replace(pool)
            lost = WorkerLost(
                "a worker process died (killed, or exited without returning) while this "
                "attempt was running or queued; the pool was restarted"
            )
            lost.__cause__ = error
            outer._settle(error=lost)
        elif error is not None:
            outer._settle(error=error)
        else:
            outer._settle(inner.result())

    def _replace(self, broken: ProcessPoolExecutor) -> ProcessPoolExecutor:
        """Swap in a fresh pool (caller holds the lock)."""
        if self._pool is broken:
            self._pool = self._new_pool()
            self.restarts += 1
            log.warning("a pool process died; started a fresh process pool")
        broken.shutdown(wait=False)
        return self._pool

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            pool, manager = self._pool, self._manager
        pool.shutdown(wait=wait, cancel_futures=cancel_futures)
        if manager is not None:
            manager.shutdown()


# ---------------------------------------------------------------------- dask
class DaskExecutor(Executor):
    """Runs tasks on a Dask cluster: ``DaskExecutor("tcp://host:8786")`` or a ``Client``.

    Built on ``client.get_executor(pure=False)``. Every worker must be able to
    import the engine and the task's callable. The engine keeps at most ``workers``
    runs in flight, so give it at least as many as the cluster has threads.
    """

    def __init__(self, address_or_client, log_dir=None):
        try:
            from distributed import Client
        except ImportError:
            raise ImportError(
                "running tasks on a Dask cluster needs the 'distributed' package: "
                "pip install 'taskloom[dask]'"
            ) from None
        if isinstance(address_or_client, str):
            # An unreachable scheduler raises OSError after this many seconds.
            self._client = Client(address_or_client, timeout=CONNECT_TIMEOUT_S)
            self._owns_client = True
        else:
            self._client = address_or_client
            self._owns_client = False
        self._cluster_executor = self._client.get_executor(pure=False)
        # Outcomes arrive on the client's event loop; the engine's bookkeeping for
        # them runs on this thread instead, so it never delays the client's network.
        self._settler = ThreadPoolExecutor(1, thread_name_prefix="taskloom-dask-settle")
        self._log_dir = log_dir
        self._closed = False

    @property
    def client(self):
        return self._client

    def submit(self, fn, /, *args, **kwargs) -> Future:
        if self._closed:
            raise RuntimeError("cannot submit to a DaskExecutor after shutdown")
        call = _Invocation(fn, args, kwargs) if args or kwargs else fn
        meta = _meta_for(fn, self._log_dir)
        token = uuid.uuid4().hex
        # ClientExecutor hands keyword arguments to client.submit: the key names the
        # task on the dashboard.
        key = f"taskloom-{meta.task_id}-{meta.attempt}-{token}"
        inner = self._cluster_executor.submit(_run_on_dask_worker, call, meta, token, key=key)

        def cancel_remote() -> bool:
            threading.Thread(
                target=self._cancel_on_cluster,
                args=(token, inner),
                name="taskloom-dask-cancel",
                daemon=True,
            ).start()
            return False  # the outcome arrives through the future when the run stops

        outer = _RemoteFuture(cancel_remote)
        inner.add_done_callback(lambda f: self._settler.submit(_settle_from_cluster, f, outer))
        return outer

    def _cancel_on_cluster(self, token: str, inner: Future) -> None:
        """Ask every worker to stop the run; if none has it running, drop it unrun."""
        try:
            found = self._client.run(_cancel_token, token, on_error="ignore")
        except Exception:
            log.exception("asking the Dask workers to cancel %s failed", token)
            found = {}
        if not any(value is True for value in found.values()):
            inner.cancel()  # cancels the task on the cluster too

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed = True
        self._settler.shutdown(wait=wait)
        if self._owns_client:
            self._client.close()


def _settle_from_cluster(inner: Future, outer: _RemoteFuture) -> None:
    """Copy the cluster's outcome into the engine's future."""
    if inner.cancelled():
        outer._settle(cancelled=True)
        return
    error = inner.exception()
    if error is None:
        outer._settle(inner.result())
        return
    # KilledWorker names the worker that died: the attempt record shows it.
    died_on = getattr(getattr(error, "last_worker", None), "address", None)
    if died_on:
        outer._settle(RemoteResult(worker=died_on, error=error))
    else:
        outer._settle(error=error)
