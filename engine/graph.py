"""Reachability in the dependency graph, for cycle checks.

A brand-new task cannot close a cycle (nothing depends on it yet), so adding
one costs O(its deps). Only an edge into a task that already has dependents
needs this search, which stops at the first hit.

The search runs from both ends at once, growing whichever side has looked at
fewer edges: its cost is bounded by the smaller of the region downstream of the
start and the region upstream of the target, so a large graph built in any order
is not walked once per edge (adding tasks dependents-first).
"""

from __future__ import annotations

from collections.abc import Iterable


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
