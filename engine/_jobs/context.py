"""What running task code can see of its own run: cooperative cancel and output.

Inside a task, ``engine.current_run()`` returns the ``RunContext`` of the attempt
being run in this thread (``None`` outside a task)::

    def long_job():
        run = current_run()
        for chunk in work:
            if run.cancelled:          # cancel() or a timeout asked us to stop
                raise TaskCancelled()
            ...

Code that starts something it must stop (a subprocess) registers a callback with
``on_cancel``; the engine calls it, outside its lock, when the attempt is
cancelled or passes its timeout.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ..clock import iso_time

T = TypeVar("T")

log = logging.getLogger("taskloom.engine")

_current: contextvars.ContextVar[RunContext | None] = contextvars.ContextVar(
    "taskloom_run", default=None
)


class RunContext:
    """What task code sees of its own attempt (``current_run()``): its id and attempt
    number, the occurrence's nominal time (``scheduled_at``, epoch seconds or None),
    the run's variables for commands (``env``), a cooperative cancel flag with
    callbacks, and fields it may set for the attempt record (``output``, ``log_path``,
    ``exit_code``, ``worker``)."""

    __slots__ = (
        "task_id",
        "attempt",
        "log_dir",
        "log_path",
        "output",
        "exit_code",
        "worker",
        "on_process",
        "env",
        "_scheduled",
        "_due",
        "_to_wall",
        "supervision",
        "detached",
        "ended_wall",
        "_cancelled",
        "_callbacks",
        "_event",
        # The dependencies' outputs (engine/outputs.py), set only when there are some:
        # never written in __init__, so an attempt without them costs nothing.
        "_inputs",
        "_outputs",
    )

    def __init__(self, task_id: str, attempt: int, log_dir: str | None = None):
        self.task_id = task_id
        self.attempt = attempt
        self.log_dir = log_dir  # where a task may write its captured output
        self.log_path: str | None = None  # set by the task if it wrote a log
        self.output: str | None = None  # tail of output, set by the task
        self.exit_code: int | None = None  # set by commands
        self.worker: str | None = None  # where the attempt ran, when known
        # Set by an engine with a store: records the process a command started, as
        # on_process(task_id, attempt, pid, pgid) (one callable for every run).
        self.on_process: Callable[[str, int, int, int], None] | None = None
        # Set where the attempt starts: variables for its command (the run's number and
        # params, shared by every attempt) and the occurrence's nominal time (epoch
        # seconds; None: the attempt's own start), see ``Command``.
        self.env: dict[str, str] | None = None
        self._scheduled: float | None = None
        # Or its time on the engine's clock, turned into a wall time when first read
        # (most attempts never read it: the conversion costs a start nothing).
        self._due: float | None = None
        self._to_wall: Callable[[float], float] | None = None
        # Set by an engine with a store, for a command: what its supervisor records it
        # under (folder, key, owner), so that the store's next owner can adopt it.
        self.supervision: dict[str, Any] | None = None
        self.detached = False  # handed over: the command goes on, its end is not ours
        self.ended_wall: float | None = None  # when a command ended, if not just now
        # Built lazily: most runs are never cancelled, and an Event costs a lock.
        self._cancelled = False
        self._callbacks: list[Callable[[], object]] | None = None
        self._event: threading.Event | None = None
        self._outputs: dict[str, Any] | None = None  # what it gives its dependents

    @property
    def inputs(self) -> dict[str, dict[str, Any]]:
        """The outputs of the dependencies this attempt started after: {task: {key: value}}."""
        return getattr(self, "_inputs", None) or {}

    @inputs.setter
    def inputs(self, value: dict[str, dict[str, Any]]) -> None:
        self._inputs = value

    @property
    def outputs(self) -> dict[str, Any] | None:
        """What this attempt gives its dependents, once its code returned (or None)."""
        return self._outputs

    @outputs.setter
    def outputs(self, value: dict[str, Any] | None) -> None:
        self._outputs = value

    @property
    def scheduled_at(self) -> float | None:
        """The nominal time of the occurrence the attempt belongs to (epoch seconds),
        or None: what its commands get as ``TASKLOOM_SCHEDULED_AT``."""
        if self._scheduled is None and self._due is not None and self._to_wall is not None:
            self._scheduled = self._to_wall(self._due)
        return self._scheduled

    @scheduled_at.setter
    def scheduled_at(self, value: float | None) -> None:
        self._scheduled = value

    def due_at(self, due: float, to_wall: Callable[[float], float]) -> None:
        """The nominal time as a time on the engine's clock, and how to read it as a
        wall time (done when ``scheduled_at`` is first read)."""
        self._due, self._to_wall = due, to_wall

    @property
    def cancelled(self) -> bool:
        """Whether the attempt was asked to stop (cancel, timeout or shutdown)."""
        return self._cancelled

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Block until the attempt is asked to stop or ``timeout`` passes; True if asked."""
        with _lock:
            if self._cancelled:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    def process_started(self, pid: int, pgid: int) -> None:
        """A command started process ``pid`` (group ``pgid``) for this attempt: with a
        store, it is recorded in the attempt's row (see ``survivors.py``)."""
        if self.on_process is not None:
            self.on_process(self.task_id, self.attempt, pid, pgid)

    def on_cancel(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` when the run is cancelled (at once if it already is)."""
        with _lock:
            if not self._cancelled:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(callback)
                return
        _safe_call(callback)

    def request_detach(self) -> None:
        """Hand the attempt over (``shutdown(hand_over=True)``): a command goes on under
        its supervisor; code that cannot be handed over is asked to stop."""
        self.detached = True
        self.request_cancel()

    def request_cancel(self) -> None:
        """Ask the attempt to stop: sets the flag and calls the registered callbacks once."""
        with _lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks or [], None
            if self._event is not None:
                self._event.set()
        for callback in callbacks:
            _safe_call(callback)


_lock = threading.Lock()  # guards the rare cancel bookkeeping of every RunContext


def _safe_call(callback: Callable[[], object]) -> None:
    try:
        callback()
    except Exception:
        log.exception("cancel callback %r failed", callback)


class RemoteResult:
    """What code run in another process returns to report on its run.

    Code sent to a process pool or a cluster cannot see its ``RunContext``; an
    executor wrapper returns one of these instead and the engine copies the
    fields into the attempt record.
    """

    __slots__ = ("value", "worker", "output", "log_path", "exit_code", "error")

    def __init__(
        self,
        value: Any = None,
        *,
        worker: str | None = None,
        output: str | None = None,
        log_path: str | None = None,
        exit_code: int | None = None,
        error: BaseException | None = None,
    ) -> None:
        self.value = value
        self.worker = worker
        self.output = output
        self.log_path = log_path
        self.exit_code = exit_code
        self.error = error  # an exception the remote code raised, re-raised by the engine

    def __reduce__(self) -> tuple[Callable[..., RemoteResult], tuple[Any, ...]]:
        fields = (self.worker, self.output, self.log_path, self.exit_code, self.error)
        return (_remote_result, (self.value, *fields))

    def apply_to(self, ctx: RunContext) -> None:
        """Copy what the remote code reported into the attempt's ``RunContext``."""
        ctx.worker = self.worker or ctx.worker
        ctx.output = self.output if self.output is not None else ctx.output
        ctx.log_path = self.log_path or ctx.log_path
        ctx.exit_code = self.exit_code if self.exit_code is not None else ctx.exit_code


def _remote_result(
    value: Any,
    worker: str | None,
    output: str | None,
    log_path: str | None,
    exit_code: int | None,
    error: BaseException | None,
) -> RemoteResult:
    return RemoteResult(
        value, worker=worker, output=output, log_path=log_path, exit_code=exit_code, error=error
    )


def attempt_env(ctx: RunContext | None) -> dict[str, str]:
    """What a command of the attempt ``ctx`` is told, over the inherited environment:
    the run's variables (``TASKLOOM_RUN``, ``TASKLOOM_PARAM_*``), ``TASKLOOM_TASK``,
    ``TASKLOOM_ATTEMPT`` and ``TASKLOOM_SCHEDULED_AT`` (the occurrence's nominal time,
    or the attempt's start for a task with no time of its own)."""
    if ctx is None:
        return {}
    import time

    env = dict(ctx.env) if ctx.env else {}
    env["TASKLOOM_TASK"] = ctx.task_id
    env["TASKLOOM_ATTEMPT"] = str(ctx.attempt)
    scheduled = ctx.scheduled_at
    if scheduled is None:
        scheduled = time.time()
    env["TASKLOOM_SCHEDULED_AT"] = iso_time(scheduled)
    inputs = getattr(ctx, "_inputs", None)
    if inputs:  # the dependencies' outputs (engine/outputs.py)
        from ..outputs import input_variables

        env.update(input_variables(inputs))
    return env


def current_run() -> RunContext | None:
    """The context of the task attempt running in this thread, if any."""
    return _current.get()


def run_in_context(ctx: RunContext, fn: Callable[[], T]) -> T:
    token = _current.set(ctx)
    try:
        return fn()
    finally:
        _current.reset(token)
