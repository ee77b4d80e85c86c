"""The task graph: every task record, the edges between them, trigger rules, cycles.

``TaskGraph`` owns the tasks dict and the edges (each ``Task`` keeps its ``deps``
and ``dependents``; ``orphans`` holds edges to tasks not added yet). It answers
whether a task's dependencies allow it to run (``decide``, the one place a
trigger rule is evaluated) and which cycle an edge would close (the question
``Scheduler.would_close_cycle`` and the GUI ask). It changes no task's state:
that is the lifecycle's business.

Cycle checks:

A brand-new task cannot close a cycle (nothing depends on it yet), so adding
one costs O(its deps). Only an edge into a task that already has dependents
needs this search, which stops at the first hit.

The search runs from both ends at once, growing whichever side has looked at
fewer edges: its cost is bounded by the smaller of the region downstream of the
start and the region upstream of the target, so a large graph built in any order
is not walked once per edge (adding tasks dependents-first).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import count

from ..options import TriggerRule
from ..states import TaskState
from .core import Core
from .task import Task

S = TaskState
WAIT, RELEASE, SKIP = 0, 1, 2  # what TaskGraph.decide says of a task's trigger rule


class TaskGraph:
    """Tasks by id, their edges, and questions about them.

    Not thread-safe: every method is called with the core lock held."""

    def __init__(self, core: Core) -> None:
        self._core = core  # the unsettled count follows ``repeats`` (refresh_repeats)
        self.tasks: dict[str, Task] = {}  # in the order they were added
        self.orphans: dict[str, dict[str, None]] = {}  # missing id -> tasks that depend on it
        self._order: Iterator[int] = count()
        self._names: Iterator[int] = count(1)

    def get(self, task_id: str) -> Task:
        try:
            return self.tasks[task_id]
        except KeyError:
            raise KeyError(f"no task {task_id!r}") from None

    def next_order(self) -> int:
        return next(self._order)

    def continue_order_after(self, last: int) -> None:
        """Restored tasks took orders up to ``last``: new ones are ordered after them."""
        self._order = iter(range(last + 1, 1 << 62))

    def generate_id(self, fn: object) -> str:
        base = getattr(fn, "__name__", None) or type(fn).__name__
        if not base.isidentifier():
            base = "task"
        while True:
            candidate = f"{base}-{next(self._names)}"
            if candidate not in self.tasks and candidate not in self.orphans:
                return candidate

    def first_orphan(self) -> tuple[str, str] | None:
        """(a task, the unknown id it depends on), if any task waits for an unknown one."""
        for missing, waiting in self.orphans.items():
            return next(iter(waiting)), missing
        return None

    # cycles --------------------------------------------------------------
    def cycle_closed_by(self, task: Task, dep_id: str) -> list[str] | None:
        """The cycle the edge ``task`` -> ``dep_id`` would close, in ``CycleError.path``'s form."""
        if dep_id == task.id:
            return [task.id, task.id]
        if not task.dependents or dep_id not in self.tasks:
            return None  # only a task something depends on can be part of a cycle
        path = find_path_downstream(self.tasks, task.id, dep_id)
        return None if path is None else [*path, task.id]

    def cycle_closed_by_new(self, name: str, deps: list[str]) -> list[str] | None:
        """The cycle a new task ``name`` with ``deps`` would close, or None."""
        if name in deps:
            return [name, name]
        waiting = self.orphans.get(name)
        if not waiting:  # only a task others already wait for can close a cycle
            return None
        # One search for all waiters and deps; a dep not added yet reaches nothing.
        present = [dep for dep in deps if dep in self.tasks]
        path = present and find_path(self.tasks, waiting, present)
        return [name, *path, name] if path else None

    # edits ---------------------------------------------------------------
    def insert(self, task: Task, deps: list[str]) -> bool:
        """Add a new task and its edges; returns whether tasks already waited for it."""
        name = task.id
        tasks = self.tasks
        tasks[name] = task
        waiting = self.orphans.pop(name, None)
        if waiting:
            for dependent in waiting:
                task.add_dependent(dependent)
        for dep in deps:
            self.link(task, dep)
        if deps and not task.repeats:  # no generator for a task without deps
            task.repeats = any(tasks[d].repeats for d in deps if d in tasks)
        return bool(waiting)

    def link(self, task: Task, dep_id: str) -> None:
        """Add the edge ``task`` waits for ``dep_id`` (which may not exist yet)."""
        task.add_dep(dep_id)
        upstream = self.tasks.get(dep_id)
        if upstream is None:
            self.orphans.setdefault(dep_id, {})[task.id] = None
        else:
            upstream.add_dependent(task.id)

    def unlink(self, task: Task, dep_id: str) -> list[str]:
        """Drop the edge; returns the tasks it made one-shot again (no longer downstream
        of a recurring task), which the caller re-evaluates: a dependent waiting for
        a new success of theirs may now be decided."""
        task.drop_dep(dep_id)
        if task.consumed:
            task.consumed.pop(dep_id, None)
        upstream = self.tasks.get(dep_id)
        if upstream is not None:
            upstream.drop_dependent(task.id)
        else:
            waiting = self.orphans.get(dep_id)
            if waiting is not None:
                waiting.pop(task.id, None)
                if not waiting:
                    del self.orphans[dep_id]
        repeated = task.repeats
        self.refresh_repeats(task)
        if not repeated or task.repeats:
            return []
        flipped, stack = [], [task]  # downstream of task, all of it repeated before
        while stack:
            current = stack.pop()
            flipped.append(current.id)
            stack.extend(self.tasks[d] for d in current.dependents if not self.tasks[d].repeats)
        return flipped

    def remove(self, task: Task) -> list[str]:
        """Take a task and all its edges out; returns the tasks to re-evaluate."""
        decidable = []
        for dep_id in list(task.deps):
            decidable += self.unlink(task, dep_id)
        dependents = list(task.dependents)
        for dependent_id in dependents:
            decidable += self.unlink(self.tasks[dependent_id], task.id)
        del self.tasks[task.id]
        return [*dependents, *decidable]

    def refresh_repeats(self, start: Task) -> None:
        """Keep ``repeats`` (recurring or downstream of recurring) right after an edit."""
        core = self._core
        stack = [start]
        while stack:
            task = stack.pop()
            repeats = task.recurrence is not None or any(
                self.tasks[d].repeats for d in task.deps if d in self.tasks
            )
            if repeats == task.repeats:
                continue
            task.repeats = repeats
            if not task.state.settled:
                core.unsettled += -1 if repeats else 1
                core.notify_if_settled()
            stack.extend(self.tasks[d] for d in task.dependents)

    def add_restored(self, task: Task) -> None:
        """Recovery: a task read back from the store; its edges follow (``relink``)."""
        self.tasks[task.id] = task

    def relink(self) -> None:
        """Recovery: every restored task's deps become edges (or orphans)."""
        tasks = self.tasks
        for task in tasks.values():
            for dep in task.deps:
                if dep in tasks:
                    tasks[dep].add_dependent(task.id)
                else:
                    self.orphans.setdefault(dep, {})[task.id] = None

    def mark_repeats(self) -> None:
        """Recurring tasks and all downstream of them repeat: one pass down from the
        recurring ones, without recursion (a restored graph may be any depth)."""
        tasks = self.tasks
        stack = [task for task in tasks.values() if task.recurrence is not None]
        for task in stack:
            task.repeats = True
        while stack:
            for dependent_id in stack.pop().dependents:
                dependent = tasks[dependent_id]
                if not dependent.repeats:
                    dependent.repeats = True
                    stack.append(dependent)

    # trigger rules -------------------------------------------------------
    def decide(self, task: Task) -> int:
        """Can the task's trigger rule be met now (RELEASE), later (WAIT), or never (SKIP)?"""
        n = len(task.deps)
        if n == 0:
            return RELEASE
        succeeded = failed = done = 0
        tasks = self.tasks
        for dep_id in task.deps:
            dep = tasks.get(dep_id)
            if dep is None:
                continue
            if dep.repeats:  # met by each new success, never "failed for good"
                if dep.successes > (task.consumed or {}).get(dep_id, 0):
                    succeeded += 1
                    done += 1
                continue
            state = dep.state
            if state is S.SUCCEEDED:
                succeeded += 1
                done += 1
            elif state is S.FAILED:
                failed += 1
                done += 1
            elif state is S.SKIPPED or state is S.CANCELLED:
                done += 1
        rule = task.trigger_rule
        if rule == TriggerRule.ALL_SUCCESS:
            if done > succeeded:
                return SKIP
            return RELEASE if succeeded == n else WAIT
        if rule == TriggerRule.ALL_DONE:
            return RELEASE if done == n else WAIT
        if failed:  # TriggerRule.ONE_FAILED
            return RELEASE
        return SKIP if done == n else WAIT


def find_path_downstream(tasks: dict, start: str, target: str) -> list[str] | None:
    """Ids from ``start`` down to ``target`` along dependents, or None if unreachable."""
    return find_path(tasks, (start,), (target,))


def find_path(tasks: dict, starts: Iterable[str], targets: Iterable[str]) -> list[str] | None:
    """Ids from one of ``starts`` down (along dependents) to one of ``targets``, or None."""
    down: dict[str, str | None] = dict.fromkeys(starts)  # id -> the id it was reached from
    up: dict[str, str | None] = {}  # id -> the id downstream of it, towards a target
    for target in targets:
        if target in down:
            return [target]
        up[target] = None
    down_stack, up_stack = list(down), list(up)
    down_work = up_work = 0
    while down_stack and up_stack:
        if down_work <= up_work:
            task = tasks.get(down_stack.pop())
            if task is None:
                continue
            down_work += 1 + len(task.dependents)
            for nxt in task.dependents:
                if nxt in down:
                    continue
                down[nxt] = task.id
                if nxt in up:
                    return _join(down, up, nxt)
                down_stack.append(nxt)
        else:
            task = tasks.get(up_stack.pop())
            if task is None:
                continue
            up_work += 1 + len(task.deps)
            for prev in task.deps:
                if prev in up or prev not in tasks:
                    continue
                up[prev] = task.id
                if prev in down:
                    return _join(down, up, prev)
                up_stack.append(prev)
    return None


def _join(down: dict, up: dict, meet: str) -> list[str]:
    path = [meet]
    while down[path[-1]] is not None:
        path.append(down[path[-1]])
    path.reverse()
    while up[path[-1]] is not None:
        path.append(up[path[-1]])
    return path
