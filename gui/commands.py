"""Undoable edits. Each command calls only the engine's public methods.

The edit is applied (and judged by the engine) before the command is pushed,
so a refused edit never enters the undo stack; the first ``redo()`` that
``QUndoStack.push`` makes is therefore a no-op.
"""

from __future__ import annotations

from PySide6.QtGui import QUndoCommand


class _AppliedCommand(QUndoCommand):
    def __init__(self, text: str):
        super().__init__(text)
        self._applied = True  # already done by the controller before push()

    def redo(self) -> None:
        if self._applied:
            self._applied = False
            return
        self.apply()

    def apply(self) -> None:
        raise NotImplementedError


class AddDependencyCommand(_AppliedCommand):
    def __init__(self, scheduler, upstream: str, downstream: str):
        super().__init__(f"connect {upstream} → {downstream}")
        self.scheduler, self.upstream, self.downstream = scheduler, upstream, downstream

    def apply(self) -> None:
        self.scheduler.add_dependency(self.downstream, self.upstream)

    def undo(self) -> None:
        self.scheduler.remove_dependency(self.downstream, self.upstream)


class RemoveDependencyCommand(_AppliedCommand):
    def __init__(self, scheduler, upstream: str, downstream: str):
        super().__init__(f"disconnect {upstream} → {downstream}")
        self.scheduler, self.upstream, self.downstream = scheduler, upstream, downstream

    def apply(self) -> None:
        self.scheduler.remove_dependency(self.downstream, self.upstream)

    def undo(self) -> None:
        self.scheduler.add_dependency(self.downstream, self.upstream)


class AddTaskCommand(_AppliedCommand):
    """Undo removes the task from the engine; redo schedules it again under the same id."""

    def __init__(self, scheduler, spec, task_id: str):
        super().__init__(f"add task {task_id}")
        self.scheduler, self.spec, self.task_id = scheduler, spec, task_id

    def apply(self) -> None:
        self.spec.submit(self.scheduler, name=self.task_id)

    def undo(self) -> None:
        self.scheduler.remove(self.task_id)
