"""Ready work and outcomes: starting attempts and recording how they ended.

A mixin of ``Scheduler``; runs under the engine lock. An outcome decides the
next state: SUCCEEDED (and dependents re-evaluated), RETRY_WAIT with a backoff
timer, FAILED, CANCELLED, or back on the timer heap for a recurring task.
"""

from __future__ import annotations

import logging

from .context import RunContext
from .errors import TaskTimeout
from .models import Attempt
from .options import Mode, Outcome, Overlap
from .states import TaskState
from .task import MAX_ATTEMPTS_KEPT, Run, Task

S = TaskState
log = logging.getLogger("taskloom.engine")


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class RunLogic:
    def _make_ready(self, task: Task) -> None:
        if task.state is not S.READY and not task.runs:
            self._set_state(task, S.READY)
        self._push_ready(task)

    def _push_ready(self, task: Task) -> None:
        if task.ready is not None or task.paused:
            return  # one entry per task; a paused task is held until resumed
        if task.start_held:
            task.held = True  # made ready when the run in the way ends (_finish)
            return
        due = self._clock.now() if task.run_at is None else min(task.run_at, self._clock.now())
        task.ready = self._ready.add(task.priority, due, task.order, task, "run")
        if self._executor is None:
            self._work_cond.notify()

    def _take_ready(self) -> Run | None:
        """Pop the most urgent ready task and start an attempt of it."""
        while True:
            entry = self._ready.pop()
            if entry is None:
                return None
            task = entry[4]
            task.ready = None
            if task.state is not S.RUNNING and not task.state.allowed & S.RUNNING.bit:
                # A bookkeeping bug queued it: starting would raise IllegalTransition
                # half-way through and kill the thread. Drop the entry, say so.
                log.error(
                    "task %r is %s and cannot start: dropped its ready entry",
                    task.id,
                    task.state.name,
                )
                task.retry_pending = False
                continue
            if not task.start_held:
                return self._start_run(task)
            task.held = True  # a run in its way began lingering after it was queued

    def _start_run(self, task: Task) -> Run:
        if task.retry_pending:
            task.retry_pending = False
        else:
            task.waiting_runs = max(0, task.waiting_runs - 1)
            if task.repeats:  # each occurrence gets a fresh retry budget
                task.budget_base = task.attempt
        for dep_id in task.deps:  # record which upstream successes this run used
            dep = self._tasks.get(dep_id)
            if dep is not None and dep.repeats:
                if task.consumed is None:
                    task.consumed = {}
                task.consumed[dep_id] = dep.successes
        task.attempt += 1
        now = self._clock.now()
        ctx = RunContext(task.id, task.attempt, self._log_dir)
        run = Run(task, task.attempt, ctx, now)
        task.add_run(run)
        self._running += 1
        if task.timeout is not None:
            run.timeout_entry = self._timers.add(now + task.timeout, run, "timeout")
            self._timers_changed()
        if task.history is None:
            task.history = []
        record = Attempt(run.attempt, now, None, Outcome.RUNNING, None, None, None, None, None)
        task.history.append(record)
        if self._store is not None:
            self._store.put_attempt(self._attempt_row(task, record))
            self._record_processes(run)
        if task.state is S.RUNNING:
            self._emit(task, "running")  # another parallel run of a recurring task
        else:
            self._set_state(task, S.RUNNING)
        if task.overlap == Overlap.PARALLEL and task.waiting_runs > 0:
            self._push_ready(task)
        return run

    def _finish(self, run: Run, error: BaseException | None, tb: str | None) -> None:
        """The run's code returned: free its slot, record its outcome (under the lock)."""
        if run.released:
            return
        run.released = True
        self._running -= 1
        if self._running == 0:
            self._settled_cond.notify_all()
        task = run.task
        if run.done:  # timed out: its outcome is recorded, the task's next start waited
            if run.lingers:
                run.lingers = False
                task.lingering -= 1
        else:
            self._record_outcome(run, error, tb)
        if task.held and not task.start_held:  # a start waited for this run to end
            task.held = False
            if task.state is S.READY or task.waiting_runs > 0 or task.retry_pending:
                self._make_ready(task)

    def _record_outcome(self, run: Run, error: BaseException | None, tb: str | None) -> None:
        run.done = True
        task = run.task
        task.runs.remove(run)
        self._timers.discard(run.timeout_entry)
        interrupted = self._interrupting and error is not None and not task.cancel_requested
        if task.cancel_requested:
            outcome = Outcome.CANCELLED
        elif error is None:
            outcome = Outcome.SUCCEEDED
        else:
            outcome = Outcome.INTERRUPTED if interrupted else Outcome.FAILED
        error_text = None if error is None else _error_text(error)
        self._record_attempt(task, run, outcome, error_text, tb)

        if interrupted:  # stopped by shutdown: not the task's failure, run it again later
            task.budget_base += 1
            task.waiting_runs = max(task.waiting_runs, 1)
            if not task.runs:
                self._make_ready(task)
            return
        if task.cancel_requested:
            if not task.runs:
                task.cancel_requested = False
                self._drop_queued(task)
                self._set_state(task, S.CANCELLED, error_text)
                self._after_settled(task)
            return
        if error is None:
            task.successes += 1
            task.error = None
            self._set_state(task, S.SUCCEEDED)
            if task.recurrence is not None:
                self._after_recurring_run(task)
            elif task.repeats:
                self._after_settled(task)
                self._evaluate_many((task.id,))
            else:
                self._after_settled(task)
            return

        task.error = error_text
        policy = task.retry
        used = task.attempt - task.budget_base
        if policy is not None and used < policy.max_attempts and not self._stopping:
            delay = policy.delay(used, self._rng.random())
            due = self._clock.now() + delay
            self._timers.discard(task.retry_timer)
            task.retry_timer = self._timers.add(due, task, "retry")
            self._timers_changed()
            task.run_at = due
            if task.runs:  # another occurrence still runs (overlap=parallel): still RUNNING
                self._emit(task, "running", error_text)
                return
            self._set_state(task, S.RETRY_WAIT, error_text)
            return
        self._set_state(task, S.FAILED, error_text)
        self._after_failed(task)

    def _after_failed(self, task: Task) -> None:
        """A task FAILED for good: its cadence goes on, or what depends on it is decided."""
        if task.recurrence is not None:
            self._after_recurring_run(task)
        elif task.repeats:
            self._evaluate_many((task.id,))
        else:
            self._after_settled(task)

    def _after_recurring_run(self, task: Task) -> None:
        """A recurring run ended: back on the timer heap (or straight on to the next run)."""
        task.budget_base = task.attempt
        if task.recurrence.mode == Mode.FIXED_DELAY and task.timer is None:
            self._set_timer(task, self._clock.now() + task.recurrence.interval)
        if task.successes and task.dependents:
            self._evaluate_many(task.dependents)
        if task.runs:
            self._set_state(task, S.RUNNING)
        elif task.waiting_runs > 0:
            self._make_ready(task)
        else:
            task.run_at = task.timer[0] if task.timer is not None else None
            self._set_state(task, S.SCHEDULED)

    def _record_attempt(self, task, run, outcome, error_text, tb) -> None:
        ctx = run.ctx
        record = Attempt(
            run.attempt,
            run.started,
            self._clock.now(),
            outcome,
            error_text,
            tb,
            ctx.output,
            ctx.log_path,
            ctx.exit_code,
            ctx.worker,
        )
        history = task.history
        for i in range(len(history) - 1, -1, -1):
            if history[i].number == run.attempt:
                history[i] = record
                break
        else:
            history.append(record)
        if self._store is not None:
            self._store.put_attempt(self._attempt_row(task, record))
        if len(history) > MAX_ATTEMPTS_KEPT:
            del history[: len(history) - MAX_ATTEMPTS_KEPT]

    def _on_timeout(self, run: Run) -> None:
        if run.done:
            return
        task = run.task
        self._stop_run(run)  # a command is terminated
        # The code may still run; it keeps its worker until it returns (_finish).
        error = TaskTimeout(f"task {task.id!r} ran past its {task.timeout:g}s timeout")
        task.lingering += 1  # first: what _record_outcome makes ready must wait for it
        run.lingers = True
        self._record_outcome(run, error, None)

    def _engine_error(
        self, where: str, exc: BaseException, run: Run | None = None, returned: bool = True
    ) -> None:
        """Under the lock: an unexpected error in an engine thread (a bug). Log it once
        and fail the attempt it was handling, so that nothing waits on it for ever.
        ``returned``: the attempt's code has returned (else a timeout was handling it)."""
        what = "" if run is None else f" handling attempt {run.attempt} of {run.task.id!r}"
        log.error("engine error in %s%s", where, what, exc_info=exc)
        if run is not None:
            try:
                self._fail_attempt(run, exc, returned)
            except Exception:
                log.exception("could not fail attempt %d of %r", run.attempt, run.task.id)
        self._settled_cond.notify_all()
        self._work_cond.notify_all()

    def _fail_attempt(self, run: Run, exc: BaseException, returned: bool) -> None:
        task = run.task
        if not returned and not run.done and not run.lingers:
            run.lingers = True  # its code still runs: _finish ends the lingering
            task.lingering += 1
        if not run.done:
            run.done = True
            if run in task.runs:
                task.runs.remove(run)
            self._timers.discard(run.timeout_entry)
            self._durable.discard(run)
            text = f"engine error: {_error_text(exc)}"
            task.error = text
            self._record_attempt(task, run, Outcome.FAILED, text, None)
            if task.state is not S.FAILED and task.state.allowed & S.FAILED.bit and not task.runs:
                self._set_state(task, S.FAILED, text)
                self._after_failed(task)
        if returned:
            if not run.released:
                run.released = True
                self._running -= 1
            if run.lingers:
                run.lingers = False
                task.lingering -= 1
            if task.held and not task.start_held:
                task.held = False
                if task.state is S.READY or task.waiting_runs > 0 or task.retry_pending:
                    self._make_ready(task)

    def _stop_run(self, run: Run) -> None:
        """Ask a run to stop; the calls run after the lock is released."""
        run.stop_requested = True  # _submit cancels a future attached after this
        self._deferred.append(run.ctx.request_cancel)
        if run.future is not None:
            self._deferred.append(run.future.cancel)
