"""The graph's shape as the document knows it, and what one batch of changes did to it.

The document is the one source of structure for the scene (Orange's canvas: the
scheme is the model, the scene follows its signals). Edits the window makes and
changes others make through the engine (API calls, a watched run) both arrive
here, and the document emits one ``StructureChange`` per batch: thousands of tasks
added at once are one change, laid out once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple


class StructureChange(NamedTuple):
    """One batch: tasks added and removed, edges (upstream, downstream) added and
    removed, tasks redefined (an edit: ``edited`` events)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    edges_added: tuple[tuple[str, str], ...] = ()
    edges_removed: tuple[tuple[str, str], ...] = ()
    changed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return any(len(part) for part in self)


class Structure:
    """Each task's dependencies and its last ``TaskInfo`` (the scene builds nodes from
    it), in the order the tasks came."""

    def __init__(self) -> None:
        self.tasks: dict = {}  # task id -> TaskInfo

    def reset(self, infos: Mapping) -> None:
        self.tasks = dict(infos)

    def apply(self, infos: Iterable, removed: Iterable[str] = (), changed=()) -> StructureChange:
        """Take ``infos`` (TaskInfo, newer) and ``removed`` ids; returns what changed in
        the shape (an empty change if only states did)."""
        tasks = self.tasks
        added, edges_added, edges_removed = [], [], []
        for info in infos:
            old = tasks.get(info.id)
            tasks[info.id] = info
            if old is None:
                added.append(info.id)
                edges_added += [(dep, info.id) for dep in info.deps]
            elif old.deps != info.deps:
                before, after = set(old.deps), set(info.deps)
                edges_added += [(dep, info.id) for dep in info.deps if dep not in before]
                edges_removed += [(dep, info.id) for dep in old.deps if dep not in after]
        gone = []
        for tid in removed:
            old = tasks.pop(tid, None)
            if old is not None:
                gone.append(tid)
                edges_removed += [(dep, tid) for dep in old.deps]
        changed = tuple(tid for tid in dict.fromkeys(changed) if tid in tasks)
        return StructureChange(
            tuple(added), tuple(gone), tuple(edges_added), tuple(edges_removed), changed
        )


class StructureDelta:
    """Changes gathered over several batches until the views take them: a task added
    then removed before they look is neither."""

    def __init__(self) -> None:
        self.added: dict[str, None] = {}  # ordered sets
        self.removed: dict[str, None] = {}
        self.changed: dict[str, None] = {}  # redefined, or their dependencies changed

    def take(self, change: StructureChange) -> None:
        for tid in change.added:
            if tid in self.removed:
                del self.removed[tid]
                self.changed[tid] = None  # removed and back: read afresh
            else:
                self.added[tid] = None
        for tid in change.removed:
            if tid in self.added:
                del self.added[tid]
            else:
                self.removed[tid] = None
            self.changed.pop(tid, None)
        for _up, down in change.edges_added + change.edges_removed:
            self.changed[down] = None
        for tid in change.changed:
            self.changed[tid] = None

    def touched(self) -> list[str]:
        """Tasks whose definition a view must read again: added or changed."""
        return list({**self.added, **self.changed})

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)
