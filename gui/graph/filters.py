"""Which tasks the graph shows: by state (and what they block), by text, or the
upstream and downstream of chosen tasks. Plain Python, O(tasks + edges).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from taskloom.engine import TaskInfo, TaskState


def _walk(tasks: Mapping[str, object], start: Iterable[str], attribute: str) -> set[str]:
    seen: set[str] = set()
    todo = [tid for tid in start if tid in tasks]
    while todo:
        tid = todo.pop()
        if tid in seen:
            continue
        seen.add(tid)
        todo.extend(t for t in getattr(tasks[tid], attribute) if t in tasks and t not in seen)
    return seen


def downstream_of(tasks: Mapping[str, object], start: Iterable[str]) -> set[str]:
    """``start`` and every task that waits for one of them, directly or not."""
    return _walk(tasks, start, "dependents")


def upstream_of(tasks: Mapping[str, object], start: Iterable[str]) -> set[str]:
    """``start`` and every task one of them waits for, directly or not."""
    return _walk(tasks, start, "deps")


def _label(tid: str, info) -> str:
    return f"{tid}\n{getattr(info, 'name', '') or ''}".lower()


@dataclass(frozen=True)
class GraphFilter:
    """Every part given must hold (an empty part holds for every task)."""

    states: frozenset[TaskState] = frozenset()
    with_blocked: bool = True  # states: also show what the matching tasks block
    text: str = ""  # in the id or name, any case
    around: tuple[str, ...] = ()  # these tasks, their upstream and downstream

    @property
    def active(self) -> bool:
        return bool(self.states or self.text.strip() or self.around)

    def shown(self, tasks: Mapping[str, TaskInfo]) -> set[str] | None:
        """The task ids this filter lets through, or None when it is not active."""
        if not self.active:
            return None
        keep = set(tasks)
        if self.states:
            hit = [tid for tid, info in tasks.items() if info.state in self.states]
            keep &= downstream_of(tasks, hit) if self.with_blocked else set(hit)
        needle = self.text.strip().lower()
        if needle:
            keep = {tid for tid in keep if needle in _label(tid, tasks[tid])}
        if self.around:
            keep &= upstream_of(tasks, self.around) | downstream_of(tasks, self.around)
        return keep
