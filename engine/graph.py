"""Reachability in the dependency graph, for cycle checks.

A brand-new task cannot close a cycle (nothing depends on it yet), so adding
one costs O(its deps). Only an edge into a task that already has dependents
needs this search, which walks downstream and stops at the first hit.
"""

from __future__ import annotations


def find_path_downstream(tasks: dict, start: str, target: str) -> list[str] | None:
    """Ids from ``start`` down to ``target`` along dependents, or None if unreachable."""
    if start == target:
        return [start]
    parent: dict[str, str] = {start: start}
    stack = [start]
    while stack:
        current = stack.pop()
        task = tasks.get(current)
        if task is None:
            continue
        for nxt in task.dependents:
            if nxt in parent:
                continue
            parent[nxt] = current
            if nxt == target:
                path = [nxt]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return path[::-1]
            stack.append(nxt)
    return None
