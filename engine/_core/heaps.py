"""The two queues the dispatcher works from.

Not-yet-due timers and due work live apart: a timer heap keyed by due time, and
a ready heap keyed by (-priority, due time, scheduling order). One heap keyed by
(due time, -priority) would let a low-priority task that came due a microsecond
earlier jump a high-priority one.

Removal is lazy (an entry is marked dead) but bounded: once dead entries are
a quarter of the heap, it is rebuilt, so cancelled work frees its memory long before its
due time.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from itertools import count
from typing import Any

_order = count()  # global tie-breaker: scheduling order, never compares past it
# A timer for a run (a timeout) has no task order: these count down, apart from them.
_run_order = count(-1, -1)

# Entry layout (a list, so it can be marked dead in place):
#   timer: [run_at, order, alive, target, kind]
#   ready: [-priority, due, task order, order, task, kind, alive]
# A task's timers break ties with the task's own order (no int of their own: 28
# bytes per pending task). Two entries can then tie on (run_at, order) only if
# they are the same task's: ``alive`` comes next, so a dead and a live one compare
# there, and two live ones (a timer and a retry) compare equal targets and then
# their kinds; nothing ever compares a task with a task.
ALIVE_T = 2
ALIVE_R = 6


class _LazyHeap:
    __slots__ = ("_heap", "_dead", "_alive_index", "_task_index")

    def __init__(self, alive_index: int, task_index: int):
        self._heap: list[list] = []
        self._dead = 0
        self._alive_index = alive_index
        self._task_index = task_index

    def __len__(self) -> int:
        return len(self._heap) - self._dead

    def push(self, entry: list) -> list:
        heapq.heappush(self._heap, entry)
        return entry

    def discard(self, entry: list | None) -> None:
        """Mark ``entry`` dead; rebuild once dead entries are half the heap."""
        if entry is None or not entry[self._alive_index]:
            return
        entry[self._alive_index] = False
        entry[self._task_index] = None  # a removed task is freed before the rebuild
        self._dead += 1
        if self._dead > 32 and self._dead * 4 > len(self._heap):  # at most 1/4 is waste
            alive = self._alive_index
            self._heap = [e for e in self._heap if e[alive]]
            heapq.heapify(self._heap)
            self._dead = 0

    def peek(self) -> list | None:
        heap, alive = self._heap, self._alive_index
        while heap and not heap[0][alive]:
            heapq.heappop(heap)
            self._dead -= 1
        return heap[0] if heap else None

    def pop(self) -> list | None:
        entry = self.peek()
        if entry is not None:
            heapq.heappop(self._heap)
            entry[self._alive_index] = False
        return entry

    def alive(self) -> Iterator[list]:
        alive = self._alive_index
        return (e for e in self._heap if e[alive])


class TimerHeap(_LazyHeap):
    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(ALIVE_T, 3)

    def add(self, run_at: float, target: Any, kind: str) -> list:
        """``target`` is a Task (its ``order`` breaks ties) or, for a timeout, a Run."""
        order = next(_run_order) if kind == "timeout" else target.order
        return self.push([run_at, order, True, target, kind])

    def next_due(self) -> float | None:
        entry = self.peek()
        return None if entry is None else entry[0]

    def alive_until(self, until: float) -> list[list]:
        """The live entries due at or before ``until``, earliest first: a walk down
        the heap that stops at later entries, so it costs what it finds, not the heap."""
        heap, found, stack = self._heap, [], [0]
        size = len(heap)
        while stack:
            i = stack.pop()
            if i >= size or heap[i][0] > until:
                continue
            if heap[i][ALIVE_T]:
                found.append(heap[i])
            stack.append(2 * i + 1)
            stack.append(2 * i + 2)
        found.sort(key=lambda e: (e[0], e[1]))
        return found

    def pop_due(self, now: float) -> list | None:
        entry = self.peek()
        if entry is None or entry[0] > now:
            return None
        return self.pop()


class ReadyHeap(_LazyHeap):
    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(ALIVE_R, 4)

    def add(self, priority: int, due: float, task_order: int, task: Any, kind: str) -> list:
        entry = [-priority, due, task_order, next(_order), task, kind, True]
        heapq.heappush(self._heap, entry)  # push(), inline: once per task run
        return entry
