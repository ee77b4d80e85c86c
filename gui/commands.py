"""Undoable edits. Each command calls only the engine's public methods.

The edit is applied (and judged by the engine) before the command is pushed,
so a refused edit never enters the undo stack; the first ``redo()`` that
``QUndoStack.push`` makes is therefore a no-op.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QUndoCommand

ENGINE_REFUSALS = (KeyError, ValueError, TypeError, RuntimeError)


class _AppliedCommand(QUndoCommand):
    """Subclasses give ``apply()`` and ``revert()``; Qt calls ``redo()``/``undo()``.

    A step the engine can no longer take (a task removed meanwhile by something
    that could not be undone) is reported through ``report`` and dropped from the
    stack, instead of raising inside Qt's event loop.
    """

    # report(text, is_error); the controller sets it when pushing
    report: Callable[[str, bool], object] | None = None
    # keep_edges(task, dependents): the file keeps edges this run cannot
    keep_edges: Callable[[str, list[str]], object] | None = None

    def __init__(self, text: str):
        super().__init__(text)
        self._applied = True  # already done by the controller before push()

    def redo(self) -> None:
        if self._applied:
            self._applied = False
            return
        self._guarded(self.apply, "redo")

    def undo(self) -> None:
        self._guarded(self.revert, "undo")

    def _guarded(self, step, verb: str) -> None:
        try:
            step()
        except ENGINE_REFUSALS as exc:
            self.setObsolete(True)
            if self.report is not None:
                self.report(f"Cannot {verb} “{self.text()}”: {exc}", True)

    def apply(self) -> None:
        raise NotImplementedError

    def revert(self) -> None:
        raise NotImplementedError

    def task_ids(self) -> set[str]:
        """The tasks whose shape this step may change (the document re-reads them)."""
        return set()

    def edited_ids(self) -> set[str]:
        """The tasks this step redefines."""
        return set()


class AppliedGroup(_AppliedCommand):
    """Several applied commands as one undo step (Python-held, not Qt child commands)."""

    def __init__(self, text: str):
        super().__init__(text)
        self.commands: list[_AppliedCommand] = []

    def apply(self) -> None:
        for command in self.commands:
            command.apply()

    def revert(self) -> None:
        for command in reversed(self.commands):
            command.revert()

    def task_ids(self) -> set[str]:
        return set().union(*(command.task_ids() for command in self.commands))

    def edited_ids(self) -> set[str]:
        return set().union(*(command.edited_ids() for command in self.commands))


class AddDependencyCommand(_AppliedCommand):
    def __init__(self, scheduler, upstream: str, downstream: str):
        super().__init__(f"connect {upstream} → {downstream}")
        self.scheduler, self.upstream, self.downstream = scheduler, upstream, downstream

    def apply(self) -> None:
        self.scheduler.add_dependency(self.downstream, self.upstream)

    def revert(self) -> None:
        self.scheduler.remove_dependency(self.downstream, self.upstream)

    def task_ids(self) -> set[str]:
        return {self.upstream, self.downstream}


class RemoveDependencyCommand(_AppliedCommand):
    def __init__(self, scheduler, upstream: str, downstream: str):
        super().__init__(f"disconnect {upstream} → {downstream}")
        self.scheduler, self.upstream, self.downstream = scheduler, upstream, downstream

    def apply(self) -> None:
        self.scheduler.remove_dependency(self.downstream, self.upstream)

    def revert(self) -> None:
        self.scheduler.add_dependency(self.downstream, self.upstream)

    def task_ids(self) -> set[str]:
        return {self.upstream, self.downstream}


class AddTaskCommand(_AppliedCommand):
    """Undo removes the task from the engine; redo schedules its definition again."""

    def __init__(self, scheduler, definition):
        super().__init__(f"add task {definition.id}")
        self.scheduler, self.definition = scheduler, definition

    def apply(self) -> None:
        self.definition.submit(self.scheduler)

    def revert(self) -> None:
        self.scheduler.remove(self.definition.id)

    def task_ids(self) -> set[str]:
        return {self.definition.id, *self.definition.deps}


def _restore_dependents(scheduler, task_id: str, dependents) -> list[str]:
    """Make ``dependents`` wait for ``task_id`` again; returns those that no longer can."""
    lost = []
    for dependent in dependents:
        try:
            scheduler.add_dependency(dependent, task_id)
        except (ValueError, KeyError, RuntimeError):
            if not _rearm_skipped(scheduler, task_id, dependent):
                lost.append(dependent)  # it ran meanwhile, or is gone
    return lost


def _rearm_skipped(scheduler, task_id: str, dependent: str) -> bool:
    """A dependent SKIPPED because of the old ``task_id`` (a failed task being fixed)
    waits for the new one: cleared (with what it skipped), held while its edge comes
    back so it cannot start without it. False if it is not such a task."""
    try:
        info = scheduler.task(dependent)
        if info.state.name != "SKIPPED" or info.recurring:
            return False
        was_paused = info.paused
        scheduler.pause(dependent)
        try:
            scheduler.clear(dependent, downstream=True)
            scheduler.add_dependency(dependent, task_id)
        finally:
            if not was_paused:
                scheduler.resume(dependent)
    except (ValueError, KeyError, RuntimeError):
        return False
    return True


class RemoveTaskCommand(_AppliedCommand):
    """Undo puts the task back as it was when removed (its state, attempts and edges,
    nothing runs), and makes its dependents wait for it again."""

    def __init__(self, scheduler, definition, dependents, report):
        super().__init__(f"remove task {definition.id}")
        self.scheduler, self.definition = scheduler, definition
        self.dependents = tuple(dependents)
        self.report = report  # report(text, is_error): edges that could not come back

    def task_ids(self) -> set[str]:
        return {self.definition.id, *self.definition.deps, *self.dependents}

    def apply(self) -> None:
        self.scheduler.remove(self.definition.id)

    def revert(self) -> None:
        """The engine puts the task back as it was (``Scheduler.restore``: state,
        attempts, edges; nothing runs); a task it no longer keeps is defined again."""
        task_id = self.definition.id
        try:
            lost = self.scheduler.restore(task_id)
        except KeyError:
            if task_id in {t.id for t in self.scheduler.tasks()}:
                raise
            task_id = self.definition.submit(self.scheduler)
            lost = _restore_dependents(self.scheduler, task_id, self.dependents)
        if lost:
            if self.keep_edges is not None:  # Save still writes them
                self.keep_edges(task_id, lost)
            if self.report is not None:
                self.report(
                    f"{', '.join(lost)} already started: they wait for {task_id} again from the "
                    "next run (the file keeps the edge)",
                    True,
                )


class EditTaskCommand(_AppliedCommand):
    """Replaces a task's definition (``Scheduler.update``): the task keeps its attempts,
    its settled state and its dependents; undo puts the old definition back the same way."""

    def __init__(self, scheduler, old, new):
        super().__init__(f"edit task {old.id}")
        self.scheduler, self.task_id, self.old, self.new = scheduler, old.id, old, new

    def apply(self) -> None:
        self.scheduler.update(self.task_id, self.new)

    def revert(self) -> None:
        self.scheduler.update(self.task_id, self.old)

    def task_ids(self) -> set[str]:
        return {self.task_id, *self.old.deps, *self.new.deps}

    def edited_ids(self) -> set[str]:
        return {self.task_id}


class MoveNodesCommand(_AppliedCommand):
    """One drag gesture: nodes pinned where they were dropped.

    ``moves`` maps a task id to (position before, position after); a position is
    an (x, y) pin or None (placed by the layout).
    """

    def __init__(self, placer, moves: dict):
        names = ", ".join(sorted(moves)[:3]) + ("…" if len(moves) > 3 else "")
        super().__init__(f"move {names}")
        self.placer, self.moves = placer, dict(moves)

    def apply(self) -> None:
        self.placer.pin_many({tid: after for tid, (_before, after) in self.moves.items()})

    def revert(self) -> None:
        self.placer.pin_many({tid: before for tid, (before, _after) in self.moves.items()})


class HoldCommand(_AppliedCommand):
    """Keeps a task an edit would start at once paused, so the edit can be undone in
    full: undo resumes it after the edit is reverted (it waits again)."""

    def __init__(self, scheduler, task_id: str):
        super().__init__(f"hold {task_id}")
        self.scheduler, self.task_id = scheduler, task_id

    def apply(self) -> None:
        self.scheduler.pause(self.task_id)

    def revert(self) -> None:
        self.scheduler.resume(self.task_id)
