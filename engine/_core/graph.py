"""The task graph: every task record, the edges between them, trigger rules, cycles.

``TaskGraph`` owns the tasks dict and the edges (each ``Task`` keeps its ``deps``
and ``dependents``; ``orphans`` holds edges to tasks not added yet). It answers
whether a task's dependencies allow it to run (``decide``, the one place a
trigger rule is evaluated) and which cycle an edge would close (the question
``Scheduler.would_close_cycle`` and the GUI ask). It changes no task's state:
that is the lifecycle's business.

Cycle checks:

The graph keeps a topological order: each task has a ``rank`` (a float) and
every dependency ranks below its dependents. An edge from a lower rank to a
higher one cannot close a cycle, so most checks are one comparison. Once an edge
has gone against the order, the graph also keeps its weakly connected components
(``order.py``): an edge between two components closes no cycle either, and if it
goes against the order the smaller component shifts whole past the other (each
task once, no search). Only an edge against the order inside one component is
checked and, if it closes no cycle, the order is repaired, after Pearce and Kelly
("A dynamic topological sort algorithm for directed acyclic graphs", 2006):
search down from the dependent and up from the dependency, in turns, only among
tasks ranked between the two. Unlike theirs, only the region found first (the
smaller) moves: just above the dependency, or just below the dependent (floats
leave room; they are spread a power of two apart so that shifts stay exact).

A new task is ranked between its dependencies and the tasks already waiting for
it when there is room (a new task with neither goes on top), so a graph added in
any order repairs only small regions (benchmarks/engine_bench.py, "random-order
DAG"). When two ranks leave no float between them, every task is ranked again
(rare). When a cycle is found, its path comes from the search that runs from
both ends (``find_path``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from itertools import count

from ..options import TriggerRule
from ..states import TaskState
from .core import Core
from .order import Components, spread
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
        self._top: float = 0.0  # at least the highest rank (isolated tasks go above it)
        self.reordered = 0  # tasks re-ranked so far (tests count the work)
        self._placed: tuple[str, float] | None = None  # a new task's rank, from its cycle check
        # Task id -> its weakly connected component, for the tasks with an edge (one
        # without is alone). Kept from the first edge added against the order on
        # (None before: a graph added in order never needs them). Removing an edge
        # leaves its component whole: a component may be a union of true ones.
        self._comps: Components | None = None

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
        """The cycle the edge ``task`` -> ``dep_id`` would close, in ``CycleError.path``'s form.
        Without one, the order may be repaired for the edge (it stays right without it)."""
        if dep_id == task.id:
            return [task.id, task.id]
        upstream = self.tasks.get(dep_id)
        if not task.dependents or upstream is None:
            return None  # only a task something depends on can be part of a cycle
        if upstream.rank < task.rank:
            return None
        comps = self._components().of
        comp = comps.get(task.id)
        if comp is None or comp is not comps.get(dep_id):
            return None  # no path from one component to another
        if not self._reorder(upstream, task):
            return None
        path = find_path_downstream(self.tasks, task.id, dep_id)
        assert path is not None
        return [*path, task.id]

    def cycle_closed_by_new(self, name: str, deps: list[str]) -> list[str] | None:
        """The cycle a new task ``name`` with ``deps`` would close, or None."""
        if name in deps:
            return [name, name]
        waiting = self.orphans.get(name)
        if not waiting:  # only a task others already wait for can close a cycle
            return None
        tasks = self.tasks
        present = [tasks[dep] for dep in deps if dep in tasks]  # one not added reaches nothing
        if not present:
            return None
        # A waiter reaching a dep closes the cycle; it can only reach one ranked above it.
        highest = max(dep.rank for dep in present)
        starts = [tasks[w] for w in waiting if tasks[w].rank <= highest]
        if not starts:
            return None  # ranked between its deps and its waiters by insert
        comps = self._components().of
        dep_comps = {id(comps.get(dep.id, dep)) for dep in present}  # a task alone: itself
        if not any(id(comps.get(w.id, w)) in dep_comps for w in starts):
            return None  # no waiter is connected to a dependency (insert orders them)
        lowest = min(w.rank for w in starts)
        ends = [dep for dep in present if dep.rank >= lowest]
        cycle, down, up, down_first = self._meet(starts, ends, highest, lowest)
        if cycle:
            path = find_path(tasks, waiting, [dep.id for dep in present])
            assert path
            return [name, *path, name]
        # No cycle: make room for the new task now, from what the search found (the
        # order stays right for the graph as it is if the task is not added after all).
        if down_first:  # the region below the highest dep moves above it, the task first
            region = sorted(down.values(), key=_rank_of)
            after = [tasks[d].rank for t in region for d in t.dependents if d not in down]
            after += [tasks[w].rank for w in waiting if w not in down]
            ceiling = min(after) if after else highest + len(region) + 2.0
            ranks = spread(highest, ceiling, len(region) + 1)
            if ranks is not None:
                rank, ranks = ranks[0], ranks[1:]
        else:  # the region above the lowest waiter moves below it, the task last
            region = sorted(up.values(), key=_rank_of)
            before = [tasks[d].rank for t in region for d in t.deps if d in tasks and d not in up]
            before += [dep.rank for dep in present if dep.id not in up]
            floor = max(before) if before else lowest - len(region) - 2.0
            ranks = spread(floor, lowest, len(region) + 1)
            if ranks is not None:
                rank, ranks = ranks[-1], ranks[:-1]
        if ranks is None:  # no room: rank afresh, and let insert repair it edge by edge
            self._rerank()
            return None
        for t, new_rank in zip(region, ranks, strict=True):
            t.rank = new_rank
            comp = comps.get(t.id)
            if comp is not None:
                Components.widen(comp, new_rank)
        self._placed = (name, rank)
        self.reordered += len(region)
        return None

    # the topological order ----------------------------------------------
    def _rank_new(self, task: Task, waiting: Iterable[str] | None, present: list[Task]) -> None:
        """Give a new task a rank: between its dependencies and the tasks waiting for it
        if there is room, else just below those waiting (its dependency edges repair
        the order, ``link``); with nothing waiting, just above its deps, or its order."""
        tasks = self.tasks
        if not waiting:  # nothing waits for it: above its deps
            if not present:  # no edge: on top; its order if that is (an int it holds)
                if task.order >= self._top:
                    self._top = task.rank = task.order
                else:
                    self._top += 1.0
                    task.rank = self._top
            else:  # close above its deps: the parts of a graph added out of order stay
                task.rank = max(dep.rank for dep in present) + 1.0  # compact
            return
        high = min(tasks[w].rank for w in waiting)
        low = max((dep.rank for dep in present), default=high - 2.0)
        placed, self._placed = self._placed, None
        if placed is not None and placed[0] == task.id and low < placed[1] < high:
            task.rank = placed[1]  # room made by cycle_closed_by_new
            return
        if low >= high:
            low = high - 2.0
        rank = (low + high) / 2
        if not low < rank < high:
            self._rerank()
            self._rank_new(task, waiting, present)
            return
        task.rank = rank

    def _rerank(self) -> None:
        """Rank every task again, 1.0 apart, in the same order (no room left somewhere)."""
        ordered = sorted(self.tasks.values(), key=_rank_of)
        for n, task in enumerate(ordered):
            task.rank = float(n)
        self._top = float(len(ordered))
        if self._comps is not None:
            self._comps.rebound()

    def _meet(
        self, down_from: list[Task], up_from: list[Task], high: float, low: float
    ) -> tuple[bool, dict[str, Task], dict[str, Task], bool]:
        """Whether a task of ``down_from`` reaches one of ``up_from`` (a path whose
        ranks all lie in [``low``, ``high``]): two searches in turns, down along
        dependents and up along dependencies, each only among tasks so ranked.
        Returns (found, the region searched down, the one searched up, whether the
        search down finished first)."""
        tasks = self.tasks
        down = {t.id: t for t in down_from}
        up = {t.id: t for t in up_from}
        if not down.keys().isdisjoint(up):
            return True, down, up, True
        down_stack, up_stack = list(down_from), list(up_from)
        while down_stack and up_stack:
            for nxt_id in down_stack.pop().dependents:
                if nxt_id not in down:
                    if nxt_id in up:
                        return True, down, up, False
                    nxt = tasks[nxt_id]
                    if nxt.rank <= high:
                        down[nxt_id] = nxt
                        down_stack.append(nxt)
            for prev_id in up_stack.pop().deps:
                if prev_id not in up:
                    if prev_id in down:
                        return True, down, up, False
                    prev = tasks.get(prev_id)
                    if prev is not None and prev.rank >= low:
                        up[prev_id] = prev
                        up_stack.append(prev)
        return False, down, up, not down_stack

    def _reorder(self, upstream: Task, task: Task) -> bool:
        """The edge ``upstream`` -> ``task`` goes against the order (``upstream`` ranks
        at or above ``task``): returns True if it closes a cycle, else repairs the order.

        The region between the two is searched from both ends (``_meet``); the side
        that finished first is the smaller, and only it moves: the region below
        ``upstream`` just above it (under anything it leads to), or the region above
        ``task`` just below it (over anything it comes from)."""
        tasks = self.tasks
        high, low = upstream.rank, task.rank
        cycle, down, up, down_first = self._meet([task], [upstream], high, low)
        if cycle:
            return True
        if down_first:
            region = sorted(down.values(), key=_rank_of)
            after = [tasks[d].rank for t in region for d in t.dependents if d not in down]
            ceiling = min(after) if after else high + len(region) + 1.0
            ranks = spread(high, ceiling, len(region))
        else:
            region = sorted(up.values(), key=_rank_of)
            before = [tasks[d].rank for t in region for d in t.deps if d in tasks and d not in up]
            floor = max(before) if before else low - len(region) - 1.0
            ranks = spread(floor, low, len(region))
        if ranks is None:  # no room between two ranks: rank everything afresh, once
            self._rerank()
            return self._reorder(upstream, task) if upstream.rank >= task.rank else False
        for t, rank in zip(region, ranks, strict=True):
            t.rank = rank
        self.reordered += len(region)
        comp = self._comps.of.get(task.id) if self._comps is not None else None
        if comp is not None:
            Components.widen(comp, ranks[0])
            Components.widen(comp, ranks[-1])
        return False

    # components ----------------------------------------------------------
    def _components(self) -> Components:
        """The components, found from the edges the first time they are needed."""
        comps = self._comps
        if comps is None:
            comps = self._comps = Components()
            tasks = self.tasks
            for task in tasks.values():
                for dep in task.deps:
                    upstream = tasks.get(dep)
                    if upstream is not None:
                        comps.unite(upstream, task)
        return comps

    def _join(self, upstream: Task, task: Task) -> None:
        """The edge ``upstream`` -> ``task`` is in the graph and closes no cycle: make
        the order right for it, and one component of the two ends. Within a component
        the tasks between the two move (``_reorder``); of two components, the smaller
        is shifted whole past the other (no edge but this one joins them)."""
        comps = self._comps
        if comps is None:
            if upstream.rank < task.rank:
                return  # in order, and no component kept yet
            comps = self._components()
        if upstream.rank >= task.rank:
            comp_up, comp_down = comps.of.get(upstream.id), comps.of.get(task.id)
            if comp_up is not None and comp_up is comp_down:
                cycle = self._reorder(upstream, task)
                assert not cycle
            elif comp_down is None:  # a task alone can go anywhere: just above
                task.rank = upstream.rank + 1.0
            elif comp_up is None:
                upstream.rank = task.rank - 1.0
            else:
                gap = math.floor(comp_up.hi - comp_down.lo) + 1.0
                if len(comp_down.members) <= len(comp_up.members):
                    comp, delta = comp_down, gap
                else:
                    comp, delta = comp_up, -gap
                moved = comps.shift(comp, delta)
                if moved is None:  # ranks too fine to shift exactly: whole numbers first
                    self._rerank()
                    moved = comps.shift(comp, delta)
                    assert moved is not None
                self.reordered += moved
        comps.unite(upstream, task)

    # edits ---------------------------------------------------------------
    def insert(self, task: Task, deps: list[str]) -> bool:
        """Add a new task and its edges; returns whether tasks already waited for it."""
        name = task.id
        tasks = self.tasks
        waiting = self.orphans.pop(name, None)
        present = [tasks[dep] for dep in deps if dep in tasks]
        self._rank_new(task, waiting, present)
        tasks[name] = task
        for dep in deps:
            task.add_dep(dep)
            upstream = tasks.get(dep)
            if upstream is None:
                self.orphans.setdefault(dep, {})[name] = None
            else:
                upstream.add_dependent(name)
        if waiting:
            for dependent in waiting:
                task.add_dependent(dependent)
        if waiting or self._comps is not None:  # else ranked above its deps: in order
            if waiting:  # ranked below them: only components to join
                for dependent in waiting:
                    self._join(task, tasks[dependent])
            if len(present) > 1:  # the highest first: when it moves, its component follows
                present.sort(key=_rank_of, reverse=True)
            for upstream in present:
                self._join(upstream, task)
        if present and not task.repeats:  # no generator for a task without deps
            task.repeats = any(dep.repeats for dep in present)
        return bool(waiting)

    def link(self, task: Task, dep_id: str) -> None:
        """Add the edge ``task`` waits for ``dep_id`` (which may not exist yet)."""
        task.add_dep(dep_id)
        upstream = self.tasks.get(dep_id)
        if upstream is None:
            self.orphans.setdefault(dep_id, {})[task.id] = None
        else:
            upstream.add_dependent(task.id)
            if self._comps is not None or upstream.rank >= task.rank:
                self._join(upstream, task)  # checked for cycles before

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
        if self._comps is not None:
            self._comps.discard(task.id)
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
        """Recovery: every restored task's deps become edges (or orphans), and the
        graph is ranked afresh (a topological order, Kahn's)."""
        tasks = self.tasks
        for task in tasks.values():
            for dep in task.deps:
                if dep in tasks:
                    tasks[dep].add_dependent(task.id)
                else:
                    self.orphans.setdefault(dep, {})[task.id] = None
        waits = {tid: sum(1 for d in t.deps if d in tasks) for tid, t in tasks.items()}
        ready = [tid for tid, n in waits.items() if n == 0]
        ranked = 0
        while ready:
            task = tasks[ready.pop()]
            task.rank = float(ranked)
            ranked += 1
            for dependent in task.dependents:
                waits[dependent] -= 1
                if waits[dependent] == 0:
                    ready.append(dependent)
        for tid, n in waits.items():  # a cycle a store should never hold: ranked last
            if n > 0:
                tasks[tid].rank = float(ranked)
                ranked += 1
        self._top = float(ranked)
        self._comps = None  # found again from the edges when needed

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


def _rank_of(task: Task) -> float:
    return task.rank


def _join(down: dict, up: dict, meet: str) -> list[str]:
    path = [meet]
    while down[path[-1]] is not None:
        path.append(down[path[-1]])
    path.reverse()
    while up[path[-1]] is not None:
        path.append(up[path[-1]])
    return path
