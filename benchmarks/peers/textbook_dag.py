"""A textbook dependency scheduler: worker threads pulling from one ready heap.

The heap is keyed by (ready time, -priority); a task enters it when its last
dependency finishes. Every ``add`` checks for a cycle by collecting all
ancestors of the new task's dependencies, so adding n tasks to a deep graph
costs O(n^2). A failed task skips its downstream, transitively.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time


class CycleError(ValueError):
    pass


class _Node:
    __slots__ = ("name", "fn", "parents", "dependents", "priority", "waiting", "done")

    def __init__(self, name, fn, parents, priority):
        self.name = name
        self.fn = fn
        self.parents = parents
        self.dependents: list[_Node] = []
        self.priority = priority
        self.waiting = 0  # unfinished dependencies
        self.done = False


class TextbookDag:
    def __init__(self, workers: int = 4, listener=None):
        self._nodes: dict[str, _Node] = {}
        self._ready: list[tuple] = []
        self._cv = threading.Condition()
        self._seq = itertools.count()
        self._listener = listener  # called as listener(ok) once per finished or skipped task
        self._started = False
        self._stopped = False
        self._threads = [
            threading.Thread(target=self._work, name=f"textbook-dag-{i}", daemon=True)
            for i in range(workers)
        ]

    def add(self, fn, name: str, deps=(), priority: int = 0) -> str:
        with self._cv:
            if name in self._nodes:
                raise ValueError(f"duplicate task {name!r}")
            dep_nodes = [self._nodes[d] for d in deps]  # KeyError for an unknown dependency
            if name in self._ancestors(dep_nodes):
                raise CycleError(name)
            node = _Node(name, fn, dep_nodes, priority)
            for dep in dep_nodes:
                dep.dependents.append(node)
                node.waiting += not dep.done
            self._nodes[name] = node
            if node.waiting == 0:
                self._push_ready(node)
        return name

    def start(self) -> None:
        with self._cv:
            self._started = True
            self._cv.notify_all()
        for thread in self._threads:
            thread.start()

    def shutdown(self, wait: bool = True) -> None:
        with self._cv:
            self._stopped = True
            self._cv.notify_all()
        if wait:
            for thread in self._threads:
                if thread.is_alive():
                    thread.join()

    @staticmethod
    def _ancestors(nodes: list[_Node]) -> set[str]:
        seen: set[_Node] = set()
        stack = list(nodes)
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(node.parents)
        return {node.name for node in seen}

    def _push_ready(self, node: _Node) -> None:
        heapq.heappush(self._ready, (time.monotonic(), -node.priority, next(self._seq), node))
        self._cv.notify()

    def _work(self) -> None:
        while True:
            with self._cv:
                while not self._stopped and not (self._started and self._ready):
                    self._cv.wait()
                if self._stopped:
                    return
                node = heapq.heappop(self._ready)[3]
            try:
                node.fn()
                ok = True
            except Exception:
                ok = False
            with self._cv:
                node.done = True
                if ok:
                    for child in node.dependents:
                        child.waiting -= 1
                        if child.waiting == 0:
                            self._push_ready(child)
                    skipped = 0
                else:
                    skipped = self._skip_downstream(node)
            if self._listener is not None:
                self._listener(ok)
                for _ in range(skipped):
                    self._listener(False)

    def _skip_downstream(self, node: _Node) -> int:
        count, stack = 0, list(node.dependents)
        while stack:
            child = stack.pop()
            if not child.done:
                child.done = True
                count += 1
                stack.extend(child.dependents)
        return count
