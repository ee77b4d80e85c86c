"""What keeps graph.py's topological order cheap when a graph is added in any order.

Every task has a ``rank`` (a float) and each dependency ranks below its dependents
(``TaskGraph`` keeps that). Two things here make repairing the order cheap:

- ``Components``: the weakly connected components of the tasks that have an edge,
  each with bounds on its ranks. No path joins two components, so an edge between
  two closes no cycle and needs no search: if it goes against the order, the
  smaller component is shifted whole past the other (``Components.shift``: every
  rank by one whole number, so its own order holds). Removing an edge leaves its
  component whole: a component may be a union of true ones, which is still safe
  (it only means a search where none was needed).
- ``spread``: ranks to place a region between two others, a power of two apart,
  so ranks stay dyadic and a whole-number shift of them stays exact.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Protocol


class Ranked(Protocol):
    """What is ordered: a task's id and rank (``engine._core.task.Task``)."""

    id: str
    rank: float


class Component:
    """One weakly connected component: its tasks by id, and bounds of their ranks
    (``lo`` at most the lowest, ``hi`` at least the highest)."""

    __slots__ = ("members", "lo", "hi")

    def __init__(self, members: dict[str, Ranked], lo: float, hi: float) -> None:
        self.members = members
        self.lo = lo
        self.hi = hi


class Components:
    """The components of the tasks with an edge; a task without one is in none.

    ``of`` maps a task's id to its component (read it directly on hot paths)."""

    def __init__(self) -> None:
        self.of: dict[str, Component] = {}

    def unite(self, a: Ranked, b: Ranked) -> None:
        """One component for ``a`` and ``b`` (an edge joins them): the smaller
        component's tasks join the larger one."""
        of = self.of
        one, other = of.get(a.id), of.get(b.id)
        if one is other:
            if one is None:
                lo, hi = (a.rank, b.rank) if a.rank < b.rank else (b.rank, a.rank)
                of[a.id] = of[b.id] = Component({a.id: a, b.id: b}, lo, hi)
            return
        if one is None:
            a, b, one, other = b, a, other, one
        assert one is not None
        if other is None:  # b was alone
            one.members[b.id] = b
            of[b.id] = one
            self.widen(one, b.rank)
            return
        if len(one.members) < len(other.members):
            one, other = other, one
        one.members.update(other.members)
        one.lo = min(one.lo, other.lo)
        one.hi = max(one.hi, other.hi)
        for task_id in other.members:
            of[task_id] = one

    def discard(self, task_id: str) -> None:
        """A task left the graph (its edges went first)."""
        comp = self.of.pop(task_id, None)
        if comp is not None:
            del comp.members[task_id]

    @staticmethod
    def widen(comp: Component, rank: float) -> None:
        """A task of ``comp`` was given ``rank``: the bounds cover it."""
        if rank < comp.lo:
            comp.lo = rank
        elif rank > comp.hi:
            comp.hi = rank

    def rebound(self) -> None:
        """Every rank changed: the bounds again, from the ranks."""
        for comp in {id(c): c for c in self.of.values()}.values():
            ranks = [t.rank for t in comp.members.values()]
            comp.lo, comp.hi = min(ranks), max(ranks)

    @staticmethod
    def shift(comp: Component, delta: float) -> int | None:
        """Every rank in ``comp`` moves by ``delta`` (a whole number): returns how many
        moved, or None, changing nothing, if a rank is too fine to move exactly."""
        members = comp.members.values()
        shifted = [t.rank + delta for t in members]
        if any(new - delta != t.rank for t, new in zip(members, shifted, strict=True)):
            return None
        for t, new in zip(members, shifted, strict=True):
            t.rank = new
        comp.lo += delta
        comp.hi += delta
        return len(shifted)


def spread(low: float, high: float, n: int) -> list[float] | None:
    """``n`` increasing ranks strictly between ``low`` and ``high``, a power of two
    apart (dyadic when ``low`` is), or None when there is no room."""
    step = (high - low) / (n + 1)
    if not step > 0.0:
        return None
    step = 2.0 ** math.floor(math.log2(step))
    ranks = [low + step * (i + 1) for i in range(n)]
    if not low < ranks[0] or not ranks[-1] < high:
        return None
    if any(a >= b for a, b in pairwise(ranks)):
        return None
    return ranks
