"""A task's lifecycle: every state change, and what each one sets off.

``Lifecycle`` is the one part that changes a task's state. It decides what
happens next when dependencies allow a task (release), when a timer comes due,
when an attempt ends (success, a retry with a backoff timer, failure, cancel,
an interruption by shutdown, the next occurrence of a recurring task), and what
the control calls (cancel, retry, run_now, pause, resume, edits of the graph) do.
It asks the graph (``decide``), arms the timer queue, hands ready work to the
dispatcher and makes events; the states and their legal transitions are in
``states.py``.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .._schedule.recurrence import RUN_ALL_CAP, CronRecurrence, IntervalRecurrence, Recurrence
from .._schedule.timers import TimerQueue
from ..clock import Clock
from ..errors import CommandLost, CycleError, InvalidArgument, TaskTimeout
from ..models import Action, Attempt, RetryPolicy
from ..options import Misfire, Mode, Outcome, Overlap, TriggerRule
from ..run_api import clear_plan, refusal_text
from ..secret_env import masked, redact
from ..states import NOT_STARTED, TaskState, check_transition
from .core import Core
from .events import Events
from .graph import RELEASE, SKIP, TaskGraph
from .task import MAX_ATTEMPTS_KEPT, Run, Task
from .task import task_info as _info_of

if TYPE_CHECKING:
    from datetime import datetime

    from .._store.journal import Journal
    from ..definitions import TaskDefinition
    from .dispatch import Dispatcher

S = TaskState
# Plain module names for the states: ``TaskState.X`` goes through the Enum metaclass
# (~50 ns a read), and this module reads them several times per task run.
PENDING, SCHEDULED, READY, RUNNING = S.PENDING, S.SCHEDULED, S.READY, S.RUNNING
RETRY_WAIT, SUCCEEDED, FAILED, SKIPPED = S.RETRY_WAIT, S.SUCCEEDED, S.FAILED, S.SKIPPED
CANCELLED = S.CANCELLED
log = logging.getLogger("taskloom.engine")
# Builds a NamedTuple from ALL its fields, without its Python-level __new__ (hot path).
_new_tuple: Callable[..., Any] = tuple.__new__
MAX_DUES = 100  # nominal times kept for queued occurrences of one task


def error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return redact(text) if masked() else text  # secret_env values never reach the store


class Lifecycle:
    """State changes and what they set off.

    Not thread-safe: every method is called with the core lock held. Callbacks it
    needs run (cancel requests) go to ``core.defer`` and run after the lock is
    released."""

    def __init__(
        self,
        core: Core,
        clock: Clock,
        graph: TaskGraph,
        timers: TimerQueue,
        events: Events,
        journal: Journal | None,
    ) -> None:
        self._core = core
        self._clock = clock
        self._graph = graph
        self._timers = timers
        self._events = events
        self._journal = journal
        self._rng = random.Random()  # retry jitter
        # Epoch seconds now: ``wall_seconds`` where the clock has it (time.time, no
        # datetime built), as the journal stamps rows.
        self._wall_seconds: Callable[[], float] = getattr(
            clock, "wall_seconds", lambda: clock.wall().timestamp()
        )
        # Runs recurring occurrences added while the dispatcher was paused, by task id:
        # folded by each task's misfire policy when it resumes (``_fold_paused``).
        self._due_while_paused: dict[str, int] = {}

    dispatcher: Dispatcher  # set once by connect(), before any other call

    def connect(self, dispatcher: Dispatcher) -> None:
        """The dispatcher that takes ready work (it reports outcomes back here)."""
        self.dispatcher = dispatcher

    # ------------------------------------------------------------------ states
    def set_state(self, task: Task, new: TaskState, error: str | None = None) -> None:
        old = task.state
        if not old.allowed & new.bit:  # check_transition's test, inline on the hot path
            check_transition(task.id, old, new)
        task.state = new
        if not task.repeats and old.settled is not new.settled:
            core = self._core
            if old.settled:
                core.unsettled += 1
            else:
                core.unsettled -= 1
                core.notify_if_settled()
        self._events.emit(task, new.kind, error)

    def make_ready(self, task: Task) -> None:
        if task.state is not READY and not task.runs:
            self.set_state(task, READY)
        self.dispatcher.push_ready(task)

    def release(self, task: Task, first: bool = False) -> None:
        """Dependencies allow the task: put it on the timer heap or make it ready."""
        if task.recurrence is not None:
            if first and task.run_at is not None:
                self._timers.set_timer(task, task.run_at)
            else:
                self._timers.start_cadence(task)
            self.set_state(task, SCHEDULED)
            return
        if task.run_at is not None:
            wall = self._timers.wall_time(task)
            if wall is not None:  # an aware time: as the wall clock reads now (suspend, steps)
                task.run_at = self._timers.clock_time(wall)
            if task.run_at > self._clock.now():
                if wall is None:
                    self._timers.set_timer(task, task.run_at)
                else:
                    self._timers.set_at(task, wall)
                self.set_state(task, SCHEDULED)
                return
        task.waiting_runs = 1
        self.make_ready(task)

    def evaluate_many(self, task_ids: Iterable[str]) -> None:
        """Re-check waiting dependents; SKIPPED spreads downstream without recursion,
        and tasks downstream of a recurring one run again after each upstream success."""
        stack = list(task_ids)
        tasks = self._graph.tasks
        decide = self._graph.decide
        while stack:
            task = tasks.get(stack.pop())
            if task is None or task.runs or task.ready is not None:
                continue
            state = task.state
            if state is PENDING:
                decision = decide(task)
                if decision == RELEASE:
                    self.release(task, first=task.attempt == 0)
                elif decision == SKIP:
                    self.set_state(task, SKIPPED)
                    stack.extend(task.dependents)
            elif (  # downstream of a recurring task: runs again after each upstream success
                task.repeats
                and task.recurrence is None
                and state.settled
                and state is not CANCELLED
                and decide(task) == RELEASE
            ):
                task.waiting_runs = 1
                self.make_ready(task)

    def after_settled(self, task: Task) -> None:
        """A task reached a final outcome (for now): wake what depends on it."""
        if task.dependents:
            self.evaluate_many(task.dependents)

    def drop_queued(self, task: Task) -> None:
        """Forget every timer and ready entry of a task (cancel, remove)."""
        self._timers.discard(task.timer)
        self._timers.drop_at(task)
        self.dispatcher.drop_ready(task)
        task.timer = None
        task.waiting_runs = 0
        if task.dues is not None:
            task.dues = None
        if self._due_while_paused:  # a removed or redefined task starts a new count
            self._due_while_paused.pop(task.id, None)
        # Written only when set: these live on the task's shared defaults record
        # (task.py), where a write is a Python call even when it changes nothing.
        if task.retry_timer is not None:
            self._timers.discard(task.retry_timer)
            task.retry_timer = None
        if task.cron_next is not None:
            task.cron_next = None
        if task.retry_pending:
            task.retry_pending = False
        if task.held:
            task.held = False

    # ------------------------------------------------------------------ new tasks
    def add_task(
        self,
        name: str | None,
        fn: Callable[[], Any],
        deps: list[str],
        spec: dict[str, Any] | None,
        *,
        definition: TaskDefinition | datetime | float | None,
        run_at: float | None,
        priority: int,
        retry: RetryPolicy | None,
        timeout: float | None,
        trigger_rule: TriggerRule,
        recurrence: Recurrence | None,
        options: dict[str, Any],
    ) -> str:
        """Add a task whose arguments were checked (``Scheduler._create``) to the graph,
        and give it its first state. ``spec`` is its stored form, with a store."""
        graph = self._graph
        name = self._new_name(name, fn, deps)
        task = Task(
            name,
            fn,
            order=graph.next_order(),
            priority=priority,
            retry=retry,
            timeout=timeout,
            trigger_rule=trigger_rule,
            run_at=run_at,
        )
        task.definition = definition
        if self._journal is not None:
            task.attempt = task.budget_base = self._journal.first_attempt(name)
        if recurrence is not None:
            self._make_recurring(task, recurrence, options)
        if "pool" in options or "jitter" in options:
            task.pool, task.jitter = options.get("pool"), options.get("jitter")
        waited = graph.insert(task, deps)
        if not task.repeats:
            self._core.unsettled += 1
        if spec is not None:
            assert self._journal is not None
            self._journal.put_task(task, spec)
        if waited:
            for dependent in list(task.dependents):
                graph.refresh_repeats(graph.tasks[dependent])
        self.arm_new(task)
        if waited:
            self.evaluate_many(task.dependents)
        return name

    def put_back(
        self, task: Task, deps: list[str], spec: dict[str, Any] | None, **_fields: Any
    ) -> str:
        """``Scheduler.restore``: a task ``remove`` took out goes back into the graph as
        it was (its fields never changed since). A settled task keeps its state and
        emits ``restored``; one that had not settled is judged again as a new one."""
        graph = self._graph
        self._new_name(task.id, task.fn, deps)  # the same refusals as a new task
        task.deps = []
        waited = graph.insert(task, deps)
        graph.refresh_repeats(task)
        settled = task.state.settled and (task.recurrence is None)
        if not task.repeats and not task.state.settled:
            self._core.unsettled += 1
        if isinstance(task.recurrence, CronRecurrence):
            self._timers.add_cron(task)
        if spec is not None:
            assert self._journal is not None
            self._journal.attempt_floor.pop(task.id, None)
            self._journal.put_task(task, spec)
        if waited:
            for dependent in list(task.dependents):
                graph.refresh_repeats(graph.tasks[dependent])
        if settled:
            self._events.emit(task, "restored", task.error)
        else:
            task.state = PENDING  # unsettled either way: counted above
            self.arm_new(task)
        if waited:
            self.evaluate_many(task.dependents)
        return task.id

    def relink_dependents(self, task: Task, dependents: Iterable[str]) -> list[str]:
        """After ``put_back``: the dependents that lost their edge to ``task`` wait for it
        again when they have not started (judged again) or have settled (the edge only);
        returns those that cannot (running now, or gone)."""
        graph = self._graph
        lost = []
        for dependent_id in dependents:
            dependent = graph.tasks.get(dependent_id)
            if dependent is None:
                lost.append(dependent_id)
                continue
            if task.id in dependent.deps:
                continue
            state = dependent.state
            not_started = state in NOT_STARTED and not dependent.runs
            if not (not_started or (state.settled and not dependent.runs)):
                lost.append(dependent_id)
                continue
            if graph.cycle_closed_by(dependent, task.id) is not None:
                lost.append(dependent_id)
                continue
            graph.link(dependent, task.id)
            graph.refresh_repeats(dependent)
            self._events.emit(dependent, "dependency_added")
            if not_started and dependent.recurrence is None:
                self._reconsider_not_started(dependent)
        return lost

    def _new_name(self, name: str | None, fn: object, deps: list[str]) -> str:
        """The new task's id, once the graph can take it (no clash, cycle, unknown dep)."""
        graph = self._graph
        tasks = graph.tasks
        if name is None:
            name = graph.generate_id(fn)
        elif name in tasks:
            raise InvalidArgument(f"a task named {name!r} already exists", "name")
        if name in deps:
            raise CycleError([name, name])
        if self._core.started:
            for dep in deps:
                if dep not in tasks:
                    raise KeyError(f"task {name!r} depends on unknown task {dep!r}")
        if name in graph.orphans:  # only a task others already wait for can close a cycle
            cycle = graph.cycle_closed_by_new(name, deps)
            if cycle is not None:
                raise CycleError(cycle)
        return name

    def _make_recurring(self, task: Task, recurrence: Recurrence, options: dict[str, Any]) -> None:
        task.recurrence = recurrence
        task.overlap = options["overlap"]
        task.misfire = options["misfire"]
        task.misfire_grace = options["misfire_grace"]
        task.repeats = True
        if isinstance(recurrence, CronRecurrence):
            self._timers.add_cron(task)

    def arm_new(self, task: Task) -> None:
        """Give a new task its first state (one event)."""
        decision = self._graph.decide(task)
        if decision == RELEASE:
            self.release(task, first=True)
        elif decision == SKIP:
            self.set_state(task, SKIPPED)
            self.evaluate_many(task.dependents)
        else:
            self._events.emit(task, "pending")

    # ------------------------------------------------------------------ graph edits
    def add_dependency(self, task: Task, dep_id: str) -> None:
        graph = self._graph
        task_id = task.id
        if dep_id not in graph.tasks and self._core.started:
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
        cycle = graph.cycle_closed_by(task, dep_id)
        if cycle is not None:
            raise CycleError(cycle)
        graph.link(task, dep_id)
        graph.refresh_repeats(task)
        self._events.emit(task, "dependency_added")
        if task.state in NOT_STARTED and task.recurrence is None:
            self._reconsider_not_started(task)

    def remove_dependency(self, task: Task, dep_id: str) -> None:
        if dep_id not in task.deps:
            raise KeyError(f"task {task.id!r} does not depend on {dep_id!r}")
        decidable = self._graph.unlink(task, dep_id)
        self._events.emit(task, "dependency_removed")
        pending = [task.id] if task.state is PENDING else []
        self.evaluate_many([*pending, *decidable])

    def _reconsider_not_started(self, task: Task) -> None:
        """A not-started task gained an edge: it may have to wait, or be skipped."""
        decision = self._graph.decide(task)
        if decision == RELEASE:
            return
        self.drop_queued(task)  # a retry that came due too: it waits for the deps now
        if decision == SKIP:
            self.set_state(task, SKIPPED)
            self.evaluate_many(task.dependents)
        elif task.state is not PENDING:
            self.set_state(task, PENDING)

    def remove(self, task: Task) -> bool:
        if task.runs:
            return False
        self.drop_queued(task)
        decidable = self._graph.remove(task)
        if not task.repeats and not task.state.settled:
            self._core.unsettled -= 1
            self._core.notify_if_settled()
        if isinstance(task.recurrence, CronRecurrence):
            self._timers.drop_cron(task)
        if self._journal is not None:
            self._journal.forget(task)
        self._events.emit(task, "removed")
        self.evaluate_many(decidable)
        return True

    def replace(
        self,
        task: Task,
        fn: Callable[[], Any],
        deps: list[str],
        spec: dict[str, Any] | None,
        *,
        definition: TaskDefinition | datetime | float | None,
        run_at: float | None,
        priority: int,
        retry: RetryPolicy | None,
        timeout: float | None,
        trigger_rule: TriggerRule,
        recurrence: Recurrence | None,
        options: dict[str, Any],
    ) -> None:
        """``Scheduler.update`` once its arguments were checked: the task's definition
        becomes the new one, in place, so what it did stays (attempts and their count,
        successes its dependents counted, a settled state and error, a pause). A task
        that has not started is judged again, as a new one would be. Every refusal is
        raised before anything changes."""
        tid, state = task.id, task.state
        if task.runs or task.lingering or not (state in NOT_STARTED or state.settled):
            busy = " with an attempt in flight" if task.runs or task.lingering else ""
            raise ValueError(
                f"task {tid!r} is {state.name}{busy}: only a task that has not started, "
                "or has settled, can be updated"
            )
        graph = self._graph
        if tid in deps:
            raise CycleError([tid, tid])
        if self._core.started:
            for dep in deps:
                if dep not in graph.tasks:
                    raise KeyError(f"task {tid!r} cannot depend on unknown task {dep!r}")
        for dep in deps:  # a cycle runs through one new edge into the task: one check each
            if dep not in task.deps:
                cycle = graph.cycle_closed_by(task, dep)
                if cycle is not None:
                    raise CycleError(cycle)
        # Nothing is refused from here on.
        self.drop_queued(task)
        if isinstance(task.recurrence, CronRecurrence):
            self._timers.drop_cron(task)
        decidable = []
        for dep in [d for d in task.deps if d not in deps]:
            decidable += graph.unlink(task, dep)
        for dep in deps:
            if dep not in task.deps:
                graph.link(task, dep)
        if list(task.deps) != deps and deps:
            task.deps = list(deps)  # the order given (definition() reports it)
        task.fn, task.definition, task.run_at = fn, definition, run_at
        task.priority, task.retry, task.timeout = priority, retry, timeout
        task.trigger_rule = trigger_rule
        task.recurrence = recurrence
        task.pool, task.jitter = options.get("pool"), options.get("jitter")
        if recurrence is not None:
            task.overlap, task.misfire = options["overlap"], options["misfire"]
            task.misfire_grace = options["misfire_grace"]
        else:  # the defaults, as a new one-shot task has them
            task.overlap, task.misfire, task.misfire_grace = Overlap.SKIP, Misfire.RUN_ONCE, 30.0
        if isinstance(recurrence, CronRecurrence):
            self._timers.add_cron(task)
        graph.refresh_repeats(task)  # counts it in wait() (or not) and marks downstream
        if spec is not None:
            assert self._journal is not None
            self._journal.put_task(task, spec)
        if not state.settled:
            task.state = PENDING  # unsettled either way: wait()'s count is unchanged
        self._events.emit(task, "edited")
        if not state.settled:
            decision = graph.decide(task)
            if decision == RELEASE:
                self.release(task, first=True)
            elif decision == SKIP:
                self.set_state(task, SKIPPED)
                decidable += task.dependents
        self.evaluate_many(decidable)

    # ------------------------------------------------------------------ control
    def cancel(self, task: Task) -> bool:
        if task.state.settled or task.cancel_requested:
            return False
        self.drop_queued(task)
        if task.runs:
            task.cancel_requested = True
            for run in task.runs:
                self.dispatcher.stop_run(run)
        else:
            self.set_state(task, CANCELLED)
            self.after_settled(task)
        return True

    def retry(self, task: Task) -> bool:
        if task.state not in (FAILED, SKIPPED, CANCELLED) or task.runs:
            return False
        task.cancel_requested = False
        task.budget_base = task.attempt
        task.retry_pending = False
        task.run_at = None  # the old time is ignored: run as soon as deps allow
        rearmed = self._rearm_skipped_downstream(task)
        if task.recurrence is not None:
            self._timers.start_cadence(task)
            task.waiting_runs = 1
            self.make_ready(task)
        else:
            decision = self._graph.decide(task)
            if decision == RELEASE:
                self.release(task)
            else:
                self.set_state(task, PENDING)
                if decision == SKIP:
                    self.set_state(task, SKIPPED)
        self.evaluate_many(rearmed)
        return True

    def clear_plan(self, roots: list[Task], downstream: bool) -> list[str]:
        """The ids ``clear(roots, downstream)`` resets, in the run's order (a dry run)."""
        chosen = clear_plan(
            roots,
            downstream,
            self._dependents_of,
            lambda task: task.recurrence is not None,
            lambda task: task.state.settled and not task.runs,
        )
        ids = {task.id for task in chosen}
        return [tid for tid in self._graph.tasks if tid in ids]

    def _dependents_of(self, task: Task) -> list[Task]:
        tasks = self._graph.tasks
        return [tasks[d] for d in task.dependents]

    def clearable(self, task: Task) -> bool:
        """Whether ``clear`` takes the task as a root: settled, one-shot, nothing in flight."""
        return task.state.settled and not task.runs and task.recurrence is None

    def clear(self, roots: list[Task], downstream: bool) -> list[str]:
        """``Scheduler.clear`` once its checks passed: ``roots`` (and, with
        ``downstream``, the settled one-shot tasks below them) back to PENDING."""
        tasks = self._graph.tasks
        cleared = self.clear_plan(roots, downstream)
        for tid in cleared:
            task = tasks[tid]
            task.cancel_requested = False
            task.budget_base = task.attempt
            task.retry_pending = False
            task.run_at = None
            self.set_state(task, S.PENDING)
        self.evaluate_many(reversed(cleared))  # a stack: upstream decided first
        return cleared

    def _rearm_skipped_downstream(self, task: Task) -> list[str]:
        tasks = self._graph.tasks
        rearmed, stack = [], list(task.dependents)
        while stack:
            dependent = tasks[stack.pop()]
            if dependent.state is SKIPPED:
                self.set_state(dependent, PENDING)
                rearmed.append(dependent.id)
                stack.extend(dependent.dependents)
        return rearmed

    def run_now(self, task: Task) -> bool:
        if not self.run_now_acts(task):
            return False
        timers = self._timers
        if task.recurrence is not None and task.state is RETRY_WAIT and not task.runs:
            # the retry, now: its timer must not start another run later
            timers.discard(task.retry_timer)
            task.retry_timer = None
            task.retry_pending = True
            self.make_ready(task)
        elif task.recurrence is not None and task.state is not PENDING:
            task.waiting_runs = max(task.waiting_runs, 0) + 1
            if task.overlap == Overlap.QUEUE and task.runs:
                task.waiting_runs = 1
            else:
                self.make_ready(task)
        elif task.state is SCHEDULED:
            timers.discard(task.timer)
            task.timer = None
            task.waiting_runs = 1
            self.make_ready(task)
        else:  # RETRY_WAIT
            timers.discard(task.retry_timer)
            task.retry_timer = None
            task.retry_pending = True  # still the retry: resume() after pause() requeues it
            self.make_ready(task)
        return True

    def run_now_acts(self, task: Task) -> bool:
        """Whether ``run_now`` does anything to the task (the one test for both)."""
        if task.cancel_requested or task.state.settled and task.recurrence is None:
            return False
        if task.recurrence is not None and task.state is not PENDING:
            return not (task.runs and task.overlap == Overlap.SKIP)
        return task.state is SCHEDULED or task.state is RETRY_WAIT

    def pause(self, task: Task | None) -> None:
        core = self._core
        if task is None:
            if not core.paused_all:
                core.paused_all = True
                self._events.emit_engine("paused")
        elif not task.paused:
            task.paused = True
            if task.ready is not None:  # held until resumed
                self.dispatcher.drop_ready(task)
            self._events.emit(task, "paused")

    def resume(self, task: Task | None) -> None:
        core = self._core
        if task is None:
            if core.paused_all:
                core.paused_all = False
                self._fold_paused()
                self._events.emit_engine("resumed")
            core.work_cond.notify_all()
        elif task.paused:
            task.paused = False
            self._events.emit(task, "resumed")
            if task.waiting_runs > 0 or task.retry_pending:
                self.dispatcher.push_ready(task)

    def _fold_paused(self) -> None:
        """The dispatcher resumes: occurrences that came due while it was paused were
        missed, and each task's misfire policy says what runs of them: ``run_once`` one
        run, ``skip`` none (the next occurrence comes at its time), ``run_all`` each.
        No burst of the pause's backlog, as pausing the task alone folds it."""
        held, self._due_while_paused = self._due_while_paused, {}
        tasks = self._graph.tasks
        for tid, added in held.items():
            task = tasks.get(tid)
            if task is None or task.recurrence is None:
                continue
            if task.misfire == Misfire.RUN_ALL:
                keep = min(added, RUN_ALL_CAP)
            elif task.misfire == Misfire.SKIP:
                keep = 0
            else:
                keep = 1
            task.waiting_runs = max(0, task.waiting_runs - (added - keep))
            if (
                task.waiting_runs == 0
                and task.state is READY
                and not task.runs
                and not task.retry_pending
            ):
                self.dispatcher.drop_ready(task)
                if task.timer is None:  # fixed_delay counts from a run's end: from now
                    self._timers.start_cadence(task)
                self.set_state(task, SCHEDULED)  # waits for its next occurrence

    def allowed_actions(self, task: Task) -> frozenset[Action]:
        state = task.state
        allowed = [Action.RESUME if task.paused else Action.PAUSE]
        if not (state.settled or task.cancel_requested):
            allowed.append(Action.CANCEL)
        if state in (FAILED, SKIPPED, CANCELLED) and not task.runs and not self._retry_futile(task):
            allowed.append(Action.RETRY)
        if self.run_now_acts(task):
            allowed.append(Action.RUN_NOW)
        if not task.runs:
            allowed.append(Action.REMOVE)
            if state in NOT_STARTED or state.settled:
                allowed.append(Action.EDIT)
        if state in NOT_STARTED or task.recurrence is not None:
            allowed.append(Action.ADD_DEPENDENCY)
        if self.clearable(task):
            allowed.append(Action.CLEAR)
        return frozenset(allowed)

    def _retry_futile(self, task: Task) -> bool:
        """A one-shot task its dependencies would only skip again."""
        return task.recurrence is None and self._graph.decide(task) == SKIP

    def why_not(self, task: Task, action: Action) -> str | None:
        """Why ``action`` is not allowed for the task now (``refusal_text``), or None."""
        if action in self.allowed_actions(task):
            return None
        return refusal_text(
            _info_of(task),
            action,
            in_flight=bool(task.runs),
            cancelling=task.cancel_requested,
            upstream_rules_out=action is Action.RETRY and self._retry_futile(task),
        )

    # ------------------------------------------------------------------ timers
    def on_timer(self, due: float, target: Any, kind: str, now: float) -> None:
        """A timer came due (``TimerQueue.promote_due``)."""
        if kind == "timeout":
            self.on_timeout(target)
        elif kind == "retry":
            target.retry_timer = None
            target.retry_pending = True
            # A parallel occurrence may have run and settled the task since: from
            # SCHEDULED too, the retry makes it READY (while one still runs, it is RUNNING).
            if target.state in (RETRY_WAIT, SCHEDULED) and not target.runs:
                self.set_state(target, READY)
            self.dispatcher.push_ready(target)
        elif kind == "recurring":
            target.timer = None
            self._occurrence(target, due, now)
        elif kind == "jitter":  # an occurrence's random delay ended (Task.jitter)
            self.dispatcher.on_jitter(target)
        else:
            target.timer = None
            self._timers.drop_at(target)
            target.waiting_runs = 1
            self.make_ready(target)

    def _occurrence(self, task: Task, due: float, now: float) -> None:
        """A recurring task came due: apply misfire and overlap, queue the next one."""
        recurrence = task.recurrence
        assert recurrence is not None
        timers = self._timers
        dues: list[float]
        # Only an interval recurrence has fixed_delay (cron is always fixed_rate).
        fixed_delay = (
            isinstance(recurrence, IntervalRecurrence) and recurrence.mode == Mode.FIXED_DELAY
        )
        nominal: list[float] | None = None  # wall times of dues (exact for cron)
        if fixed_delay:
            dues = [due]
        elif isinstance(recurrence, CronRecurrence):
            # Counted from the cursor in wall time. The cursor itself came due: its
            # monotonic due arrived, even if the wall clock reads a hair earlier (skew).
            wall_now = self._clock.wall()
            assert task.cron_next is not None
            walls, next_wall = recurrence.due_until(task.cron_next, wall_now)
            timers.set_cron(task, next_wall)
            dues = [due] + [now - (wall_now - w).total_seconds() for w in walls[1:]]
            nominal = [w.timestamp() for w in walls]
        else:
            dues, following = recurrence.due_until(due, now, self._clock)
            timers.set_timer(task, following)
        # Occurrences at most misfire_grace late run; older ones were missed (a stall,
        # a suspend) and follow the misfire policy.
        grace = task.misfire_grace
        on_time = sum(1 for d in dues if now - d <= grace)
        missed = len(dues) - on_time
        if task.misfire == Misfire.RUN_ALL:
            runs = len(dues)
        elif task.misfire == Misfire.SKIP:
            runs = on_time
        else:
            runs = on_time + (1 if missed else 0)
        if runs == 0:
            if fixed_delay:
                assert isinstance(recurrence, IntervalRecurrence)
                timers.set_timer(task, recurrence.kept(now + recurrence.interval, self._clock))
            if task.state is SCHEDULED:
                self._events.emit(task, "scheduled")  # same state, a new next run time
            return
        if nominal is None or len(nominal) != len(dues):
            nominal = [self.wall_of(d) for d in dues]
        if task.busy:
            if task.overlap == Overlap.SKIP:
                return
            if task.overlap == Overlap.QUEUE:
                task.waiting_runs = 1
                task.dues = nominal[-1:]
                if task.runs or task.state is RETRY_WAIT:
                    return  # made ready when that run (or its retry) ends
                self.make_ready(task)  # only a lingering run: held until it ends
                return
        if task.paused:
            runs = 1  # occurrences due while paused fold into one run
            task.waiting_runs = 0
            task.dues = None
        elif self._core.paused_all:  # folded by the misfire policy on resume()
            held = self._due_while_paused
            held[task.id] = held.get(task.id, 0) + runs
        task.waiting_runs += runs
        # The runs are the latest dues (a missed one stands for those before it).
        task.dues = ((task.dues or []) + nominal[-runs:])[-MAX_DUES:]
        self.make_ready(task)

    def wall_of(self, due: float) -> float:
        """A time on the scheduler clock as wall-clock epoch seconds."""
        return self._wall_seconds() - (self._clock.now() - due)

    def next_occurrence(self, task: Task) -> float | None:
        """A run of a new occurrence of a recurring task (or of a task that retried
        before) starts: its nominal time, the oldest queued due (kept as
        ``occurrence_at``: such a task has its own side record), else None. A one-shot
        task's time is read from its ``run_at`` by the dispatcher, nothing written."""
        dues = task.dues
        if dues:
            at = task.occurrence_at = dues.pop(0)
            return at
        if task.occurrence_at is not None:  # a retried one-shot's, or a past occurrence's
            task.occurrence_at = None
        return None

    def occurrence_of(self, task: Task) -> float | None:
        """The nominal time of the task's occurrence running now or last (epoch)."""
        at = task.occurrence_at
        if at is None and task.run_at is not None and task.recurrence is None:
            at = self.wall_of(task.run_at)
        return at

    # ------------------------------------------------------------------ outcomes
    def record_outcome(self, run: Run, error: BaseException | None, tb: str | None) -> None:
        """An attempt ended (its code returned, or a timeout): record it, move the task on."""
        try:
            self._record_outcome(run, error, tb)
        finally:
            self._events.ending = None  # an end that emitted nothing lends no outcome

    def _record_outcome(self, run: Run, error: BaseException | None, tb: str | None) -> None:
        run.done = True
        task = run.task
        task.drop_run(run)
        self._timers.discard(run.timeout_entry)
        lost = error is not None and error.__class__ is CommandLost and not task.cancel_requested
        interrupted = lost or (
            self._core.interrupting and error is not None and not task.cancel_requested
        )
        if task.cancel_requested:
            outcome = Outcome.CANCELLED
        elif error is None:
            outcome = Outcome.SUCCEEDED
        elif lost:  # not the task's failure: it runs again, as after a crash
            outcome = Outcome.LOST
        else:
            outcome = Outcome.INTERRUPTED if interrupted else Outcome.FAILED
        text = None if error is None else error_text(error)
        self.record_attempt(task, run, outcome, text, tb)

        if interrupted:  # stopped by shutdown: not the task's failure, run it again later
            task.budget_base += 1
            task.waiting_runs = max(task.waiting_runs, 1)
            if not task.runs:
                self.make_ready(task)
            return
        if task.cancel_requested:
            if not task.runs:
                task.cancel_requested = False
                self.drop_queued(task)
                self.set_state(task, CANCELLED, text)
                self.after_settled(task)
            return
        if error is None:
            task.successes += 1
            if task.error is not None:  # a write, even of the default, is a Python call
                task.error = None
            self.set_state(task, SUCCEEDED)
            if task.recurrence is not None:
                self._after_recurring_run(task)
            elif task.repeats:
                self.after_settled(task)
                self.evaluate_many((task.id,))
            else:
                self.after_settled(task)
            return

        task.error = text
        policy = task.retry
        used = task.attempt - task.budget_base
        if policy is not None and used < policy.max_attempts and not self._core.stopping:
            delay = policy.delay(used, self._rng.random())
            if task.occurrence_at is None:  # a one-shot's: what its first attempt was told
                task.occurrence_at = run.ctx.scheduled_at or self.wall_of(run.started)
            due = self._clock.now() + delay
            self._timers.set_retry(task, due)
            task.run_at = due
            if task.runs:  # another occurrence still runs (overlap=parallel): still RUNNING
                self._events.emit(task, "running", text)
                return
            self.set_state(task, RETRY_WAIT, text)
            return
        self.set_state(task, FAILED, text)
        self._after_failed(task)

    def _after_failed(self, task: Task) -> None:
        """A task FAILED for good: its cadence goes on, or what depends on it is decided."""
        if task.recurrence is not None:
            self._after_recurring_run(task)
        elif task.repeats:
            self.evaluate_many((task.id,))
        else:
            self.after_settled(task)

    def _after_recurring_run(self, task: Task) -> None:
        """A recurring run ended: back on the timer heap (or straight on to the next run)."""
        task.budget_base = task.attempt
        recurrence = task.recurrence
        if (
            isinstance(recurrence, IntervalRecurrence)
            and recurrence.mode == Mode.FIXED_DELAY
            and task.timer is None
        ):
            # counted from the run's end, past any skipped days (calendars)
            self._timers.set_timer(
                task, recurrence.kept(self._clock.now() + recurrence.interval, self._clock)
            )
        if task.successes and task.dependents:
            self.evaluate_many(task.dependents)
        if task.runs:
            self.set_state(task, RUNNING)
        elif task.waiting_runs > 0:
            self.make_ready(task)
        else:
            task.run_at = task.timer[0] if task.timer is not None else None
            self.set_state(task, SCHEDULED)

    def record_attempt(
        self, task: Task, run: Run, outcome: Outcome, text: str | None, tb: str | None
    ) -> None:
        """The attempt's final record; its outcome rides on the next event of the task."""
        durable = run.durable
        if durable is not None and outcome is Outcome.SUCCEEDED:
            # Written before the success was reported (finish_when_durable): the same
            # record, ended when its code returned, needs no second row.
            self._keep_attempt(task, run, durable, outcome, journal=False)
            return
        ctx = run.ctx
        output = ctx.output
        if masked():  # secret_env values: neither a traceback nor a call's output keeps one
            tb = None if tb is None else redact(tb)
            output = None if output is None else redact(output)
        ended = self._clock.now()
        if run.adopted is not None:  # it may have ended before this owner came
            ended = self.dispatcher.adopted_end(run, ended)
        record: Attempt = _new_tuple(  # Attempt(...) without its Python-level __new__
            Attempt,
            (
                run.attempt,
                run.started,
                ended,
                outcome,
                text,
                tb,
                output,
                ctx.log_path,
                ctx.exit_code,
                ctx.worker,
                None,  # task_id
                None,  # run
            ),
        )
        self._keep_attempt(task, run, record, outcome, journal=True)

    def _keep_attempt(
        self, task: Task, run: Run, record: Attempt, outcome: Outcome, journal: bool
    ) -> None:
        """``record`` replaces the run's record in the task's history (and is journaled)."""
        history = task.history
        assert history is not None  # an attempt that started has a history
        for i in range(len(history) - 1, -1, -1):
            if history[i].number == run.attempt:
                history[i] = record
                break
        else:
            history.append(record)
        if journal and self._journal is not None:
            self._journal.put_attempt(task, record)
        if len(history) > MAX_ATTEMPTS_KEPT:
            del history[: len(history) - MAX_ATTEMPTS_KEPT]
        self._events.ending = (task, outcome)

    def on_timeout(self, run: Run) -> None:
        if run.done:
            return
        task = run.task
        self.dispatcher.stop_run(run)  # a command is terminated
        # The code may still run; it keeps its worker until it returns (Dispatcher.finish).
        assert task.timeout is not None
        error = TaskTimeout(f"task {task.id!r} ran past its {task.timeout:g}s timeout")
        task.lingering += 1  # first: what record_outcome makes ready must wait for it
        run.lingers = True
        self.record_outcome(run, error, None)

    # ------------------------------------------------------------------ engine errors
    def engine_error(
        self, where: str, exc: BaseException, run: Run | None = None, returned: bool = True
    ) -> None:
        """An unexpected error in an engine thread (a bug). Log it once and fail the
        attempt it was handling, so that nothing waits on it for ever. ``returned``:
        the attempt's code has returned (else a timeout was handling it)."""
        what = "" if run is None else f" handling attempt {run.attempt} of {run.task.id!r}"
        log.error("engine error in %s%s", where, what, exc_info=exc)
        if run is not None:
            try:
                self._fail_attempt(run, exc, returned)
            except Exception:
                log.exception("could not fail attempt %d of %r", run.attempt, run.task.id)
        self._core.settled_cond.notify_all()
        self._core.work_cond.notify_all()

    def _fail_attempt(self, run: Run, exc: BaseException, returned: bool) -> None:
        task = run.task
        if not returned and not run.done and not run.lingers:
            run.lingers = True  # its code still runs: Dispatcher.finish ends the lingering
            task.lingering += 1
        if not run.done:
            run.done = True
            if run in task.runs:
                task.drop_run(run)
            self._timers.discard(run.timeout_entry)
            self.dispatcher.forget_durable(run)
            text = f"engine error: {error_text(exc)}"
            task.error = text
            self.record_attempt(task, run, Outcome.FAILED, text, None)
            if task.state is not FAILED and task.state.allowed & FAILED.bit and not task.runs:
                self.set_state(task, FAILED, text)
                self._after_failed(task)
        if returned:
            self.dispatcher.release_slot(run)
            if run.lingers:
                run.lingers = False
                task.lingering -= 1
            if task.held and not task.start_held:
                task.held = False
                if task.state is READY or task.waiting_runs > 0 or task.retry_pending:
                    self.make_ready(task)
