"""Turns user intent (signals from views) into engine calls, through the undo stack.

Views never call the engine; they emit what the user asked for and the
controller does it, reporting refusals as messages.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoStack

from engine import CycleError

from .commands import AddDependencyCommand, AddTaskCommand, RemoveDependencyCommand


class Controller(QObject):
    message = Signal(str, bool)  # (text, is_error)
    cycleRefused = Signal(list)  # the cycle the refused edge would have closed

    def __init__(self, scheduler, parent=None):
        super().__init__(parent)
        self.scheduler = scheduler
        self.undo_stack = QUndoStack(self)

    # -- graph edits (undoable) ---------------------------------------------------
    def connect_tasks(self, upstream: str, downstream: str) -> bool:
        """Make ``downstream`` depend on ``upstream``; the engine decides."""
        try:
            if upstream in self.scheduler.task(downstream).deps:
                self.message.emit(f"{downstream} already runs after {upstream}", False)
                return False  # nothing to do, and nothing to undo

            self.scheduler.add_dependency(downstream, upstream)
        except CycleError as exc:
            self.cycleRefused.emit(list(exc.path))
            self.message.emit(f"Refused: {' → '.join(exc.path)} would be a cycle", True)
            return False
        except (ValueError, KeyError, RuntimeError) as exc:
            self.message.emit(f"Refused: {_describe(exc)}", True)
            return False
        self.undo_stack.push(AddDependencyCommand(self.scheduler, upstream, downstream))
        self.message.emit(f"{downstream} now runs after {upstream}", False)
        return True

    def disconnect_tasks(self, upstream: str, downstream: str) -> bool:
        try:
            self.scheduler.remove_dependency(downstream, upstream)
        except (ValueError, KeyError, RuntimeError) as exc:
            self.message.emit(f"Cannot remove the edge: {_describe(exc)}", True)
            return False
        self.undo_stack.push(RemoveDependencyCommand(self.scheduler, upstream, downstream))
        self.message.emit(f"{downstream} no longer waits for {upstream}", False)
        return True

    def add_task(self, spec) -> str | None:
        try:
            tid = spec.submit(self.scheduler)
        except (ValueError, TypeError, KeyError, RuntimeError) as exc:
            self.message.emit(f"Cannot add the task: {_describe(exc)}", True)
            return None
        self.undo_stack.push(AddTaskCommand(self.scheduler, spec, tid))
        self.message.emit(f"Added {tid}", False)
        return tid

    # -- run control (not undoable: you cannot un-run a task) ---------------------
    def cancel(self, ids) -> int:
        return self._each(ids, self.scheduler.cancel, "cancel")

    def retry(self, ids) -> int:
        return self._each(ids, self.scheduler.retry, "retry")

    def run_now(self, ids) -> int:
        return self._each(ids, self.scheduler.run_now, "run now")

    def toggle_pause(self, ids) -> int:
        done = 0
        for tid in ids:
            try:
                paused = self.scheduler.task(tid).paused
                (self.scheduler.resume if paused else self.scheduler.pause)(tid)
                done += 1
            except (KeyError, ValueError, RuntimeError) as exc:
                self.message.emit(f"Cannot pause {tid}: {_describe(exc)}", True)
        return done

    def pause_all(self, paused: bool) -> None:
        try:
            self.scheduler.pause() if paused else self.scheduler.resume()
        except RuntimeError as exc:
            self.message.emit(_describe(exc), True)
            return
        self.message.emit("Dispatcher paused" if paused else "Dispatcher resumed", False)

    def _each(self, ids, method, verb: str) -> int:
        done, refused = 0, []
        for tid in ids:
            try:
                ok = method(tid)
            except (KeyError, ValueError, RuntimeError) as exc:
                self.message.emit(f"Cannot {verb} {tid}: {_describe(exc)}", True)
                continue
            if ok:
                done += 1
            else:
                refused.append(tid)
        if refused:
            states = ", ".join(f"{t} ({self._state_name(t)})" for t in refused)
            self.message.emit(f"Cannot {verb} {states} in its current state", True)
        elif done:
            self.message.emit(f"{verb.capitalize()}: {', '.join(ids)}", False)
        return done

    def _state_name(self, tid: str) -> str:
        try:
            return self.scheduler.task(tid).state.name.lower()
        except (KeyError, RuntimeError):
            return "gone"


def _describe(exc: BaseException) -> str:
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return text or type(exc).__name__
