"""Shared limits (a workflow's ``[pools]``): at most N runs of a pool's tasks at once.

``PoolSlots`` owns, per pool, its limit, how many of its runs are in flight and the
ready tasks that wait for one of its slots, best first (the ready heap's order:
priority, then due time, then scheduling order). It is the dispatcher's part: the
dispatcher asks it whether a popped task may start (``full``), takes a slot when a
run starts (``take``), parks a task that may not (``park``) and, when a run's code
returns, frees its slot and gets back the best waiting task (``release``), which it
puts back on its own ready heap. A pool's limit counts beside ``workers``: a task
needs a worker and a slot of its pool.

Every method is called with the core lock held; every field is guarded by it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgument
from .heaps import ReadyHeap

PARKED = "pool"  # the kind of a parked task's ready entry (Task.ready points at it)


def checked_limits(pools: object) -> dict[str, int]:
    """``pools`` as the scheduler takes it: a mapping of names to ints >= 1."""
    if pools is None:
        return {}
    if not isinstance(pools, Mapping):
        raise TypeError(f"pools must be a mapping of names to limits, got {pools!r}")
    limits: dict[str, int] = {}
    for name, limit in pools.items():
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"a pool name must be a non-empty string, got {name!r}", "pools")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidArgument(
                f"pool {name!r} must have a limit that is an int >= 1, got {limit!r}", "pools"
            )
        limits[name] = limit
    return limits


class PoolSlots:
    """The pools' limits, their runs in flight and the tasks waiting for a slot."""

    def __init__(self, limits: Mapping[str, int]) -> None:
        self.limits: dict[str, int] = dict(limits)
        self.busy: dict[str, int] = dict.fromkeys(self.limits, 0)
        self._waiting: dict[str, ReadyHeap] = {}

    def __bool__(self) -> bool:
        return bool(self.limits)

    def full(self, pool: str) -> bool:
        """Whether a run of this pool must wait (an unknown pool never limits)."""
        limit = self.limits.get(pool)
        return limit is not None and self.busy[pool] >= limit

    def take(self, pool: str) -> None:
        """A run of the pool starts (or was adopted: it may go over the limit)."""
        if pool in self.busy:
            self.busy[pool] += 1

    def release(self, pool: str) -> Any:
        """A run of the pool ended: its slot is free. Returns the waiting entry that may
        go now (popped; its task to be put back on the ready heap), or None."""
        if pool not in self.busy:
            return None
        self.busy[pool] -= 1
        waiting = self._waiting.get(pool)
        if waiting is None or not waiting or self.full(pool):
            return None
        return waiting.pop()

    def park(self, pool: str, entry: list) -> list:
        """A ready task of a full pool waits: a new entry in the pool's queue, kept in
        the ready heap's order (``entry`` is the one popped from that heap)."""
        waiting = self._waiting.get(pool)
        if waiting is None:
            waiting = self._waiting[pool] = ReadyHeap()
        task = entry[4]
        return waiting.add(-entry[0], entry[1], entry[2], task, PARKED)

    def discard(self, pool: str | None, entry: list) -> None:
        """A parked task leaves the queue (cancel, remove, pause)."""
        waiting = self._waiting.get(pool) if pool is not None else None
        if waiting is not None:
            waiting.discard(entry)

    def waiting(self, pool: str) -> list[str]:
        """Ids of the tasks waiting for a slot of the pool, best first."""
        queue = self._waiting.get(pool)
        if queue is None:
            return []
        return [e[4].id for e in sorted(queue.alive(), key=lambda e: e[:4])]

    def wait_text(self, pool: str) -> str:
        """What a task waiting for the pool waits for, as a person reads it."""
        return f"waiting for pool {pool}: {self.busy.get(pool, 0)} of {self.limits[pool]} busy"
