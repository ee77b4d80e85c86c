"""Turns user intent (signals from views) into engine calls, through the undo stack.

Views never call the engine; they emit what the user asked for and the
controller does it, reporting refusals as messages.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoStack

from taskloom.engine import Action, CycleError, InvalidArgument, TaskState
from taskloom.engine.run_api import RunInterface

from .commands import (
    AddDependencyCommand,
    AddTaskCommand,
    AppliedGroup,
    EditTaskCommand,
    HoldCommand,
    MoveNodesCommand,
    RemoveDependencyCommand,
    RemoveTaskCommand,
)
from .fix_task import describe_changes
from .task_spec import target_text

S = TaskState


class Controller(QObject):
    message = Signal(str, bool)  # (text, is_error)
    cycleRefused = Signal(list)  # the cycle the refused edge would have closed
    edited = Signal(str, str)  # (task id, what changed): the event log says it

    def __init__(self, scheduler: RunInterface, parent=None):
        super().__init__(parent)
        self.scheduler = scheduler
        self.undo_stack = QUndoStack(self)
        # the document's: edges the file keeps that this run cannot
        self.keep_edges: Callable[[str, list[str]], object] | None = None
        # How each task was defined (what undo of a removal, an edit and Save need)
        # is the engine's to tell: Scheduler.definition(task_id).

    def _push(self, command) -> None:
        command.report = self.message.emit  # a step that fails later says why
        parts = command.commands if isinstance(command, AppliedGroup) else []
        for part in [command, *parts]:
            part.keep_edges = self.keep_edges
        self.undo_stack.push(command)

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
        self._push(AddDependencyCommand(self.scheduler, upstream, downstream))
        self.message.emit(f"{downstream} now runs after {upstream}", False)
        return True

    def disconnect_tasks(self, upstream: str, downstream: str) -> bool:
        step = AppliedGroup(f"disconnect {upstream} → {downstream}")
        holding = self._hold([downstream])
        try:
            self.scheduler.remove_dependency(downstream, upstream)
        except (ValueError, KeyError, RuntimeError) as exc:
            self._let_go(holding, [])
            self.message.emit(f"Cannot remove the edge: {_describe(exc)}", True)
            return False
        held = self._let_go(holding, step.commands)
        step.commands.append(RemoveDependencyCommand(self.scheduler, upstream, downstream))
        self._push(step)
        self.message.emit(f"{downstream} no longer waits for {upstream}{_held(held)}", bool(held))
        return True

    def _hold(self, ids) -> list[str]:
        """Pause the tasks among ``ids`` an edit may release, before it is made; returns
        those paused here (``_let_go`` decides what stays paused)."""
        held = []
        for tid in ids:
            try:
                info = self.scheduler.task(tid)
                if not info.paused and info.state is S.PENDING and not info.recurring:
                    self.scheduler.pause(tid)
                    held.append(tid)
            except (KeyError, RuntimeError):
                continue
        return held

    def _let_go(self, held, commands: list) -> list[str]:
        """Resume the held tasks the edit did not release; those it released (they would
        start at once) stay paused, as undoable steps put first in ``commands``."""
        kept = []
        for tid in held:
            try:
                released = self.scheduler.task(tid).state is S.READY
                if released:
                    kept.append(tid)
                    commands.insert(0, HoldCommand(self.scheduler, tid))
                else:
                    self.scheduler.resume(tid)
            except (KeyError, RuntimeError):
                continue
        return kept

    def add_task(self, definition) -> str | None:
        """Schedule a ``TaskDefinition`` (one undo step); returns its id, or None."""
        try:
            tid = definition.submit(self.scheduler)
        except (ValueError, TypeError, KeyError, RuntimeError) as exc:
            self.message.emit(f"Cannot add the task: {_describe(exc)}", True)
            return None
        self._push(AddTaskCommand(self.scheduler, definition.with_deps(definition.deps, tid)))
        self.message.emit(f"Added {tid}", False)
        return tid

    def bridging_edges(self, ids) -> list[tuple[str, str]]:
        """(upstream, downstream) pairs that removing ``ids`` would leave unconnected:
        each task outside ``ids`` that waits on one of them, and each task outside
        ``ids`` that one of them waits on (through removed tasks), not yet its dep."""
        gone = set(ids)
        pairs: list[tuple[str, str]] = []
        try:
            for tid in ids:
                for downstream in self.scheduler.task(tid).dependents:
                    if downstream in gone:
                        continue
                    deps = self.scheduler.task(downstream).deps
                    for upstream in self._upstream_outside(tid, gone):
                        pair = (upstream, downstream)
                        if upstream not in deps and pair not in pairs:
                            pairs.append(pair)
        except (KeyError, RuntimeError):
            return []
        return pairs

    def _upstream_outside(self, tid: str, gone: set[str]) -> list[str]:
        """The tasks outside ``gone`` that ``tid`` waits on, through tasks in ``gone``."""
        found: list[str] = []
        seen = {tid}
        todo = [tid]
        while todo:
            for dep in self.scheduler.task(todo.pop()).deps:
                if dep in seen:
                    continue
                seen.add(dep)
                if dep in gone:
                    todo.append(dep)
                else:
                    found.append(dep)
        return found

    def remove_tasks(self, ids, connect: bool = False) -> int:
        """Remove tasks (one undo step for all); a running task is refused, with the reason.
        With ``connect``, each removed task's upstream is connected to its downstream
        (``bridging_edges``) in the same step, so the downstream still waits."""
        pairs = self.bridging_edges(ids) if connect else []
        step = AppliedGroup(f"remove {', '.join(ids)}")
        dependents: set[str] = set()
        for tid in ids:
            try:
                dependents.update(self.scheduler.task(tid).dependents)
            except (KeyError, RuntimeError):
                continue
        holding = self._hold(sorted(dependents - set(ids)))
        removed = sum(self._remove_task(tid, step) for tid in ids)
        if removed < len(ids):  # one is still there: its edges still hold
            pairs = []
        for upstream, downstream in pairs:
            try:
                self.scheduler.add_dependency(downstream, upstream)
            except (CycleError, ValueError, KeyError, RuntimeError) as exc:
                self.message.emit(
                    f"Cannot connect {upstream} → {downstream}: {_describe(exc)}", True
                )
                continue
            step.commands.append(AddDependencyCommand(self.scheduler, upstream, downstream))
        if pairs and step.commands:
            step.setText(f"{step.text()} and connect {pairs_text(pairs)}")
            self.message.emit(f"Removed {', '.join(ids)} and connected {pairs_text(pairs)}", False)
        held = self._let_go(holding, step.commands)
        if step.commands:  # only what can be put back is undoable
            self._push(step)
        if held:
            self.message.emit(f"Removed {', '.join(ids)}{_held(held)}", True)
        return removed

    def _remove_task(self, tid: str, step: AppliedGroup) -> bool:
        try:
            info = self.scheduler.task(tid)
            definition = self.scheduler.definition(tid)  # with its edges as they are now
            if not self.scheduler.remove(tid):
                self.message.emit(
                    f"{tid} is running: cancel it, or wait until it has finished", True
                )
                return False
        except (KeyError, RuntimeError) as exc:
            self.message.emit(f"Cannot remove {tid}: {_describe(exc)}", True)
            return False
        step.commands.append(
            RemoveTaskCommand(self.scheduler, definition, info.dependents, self.message.emit)
        )
        self.message.emit(f"Removed {tid}", False)
        return True

    def edit_refusal(self) -> str | None:
        """Why no graph edit is possible at all (a run watched, not owned), or None."""
        return self.scheduler.edit_refusal or None

    def can_edit(self, tid: str) -> str | None:
        """Why ``tid`` cannot be edited now, or None if it can."""
        refusal = self.edit_refusal()
        if refusal:
            return refusal
        try:
            if target_text(self.scheduler.definition(tid).action) is None:
                return f"{tid} runs a Python object, which the dialog cannot show"
            state = self.scheduler.task(tid).state
            editable = Action.EDIT in self.scheduler.allowed_actions(tid)
        except (KeyError, RuntimeError) as exc:
            return _describe(exc)
        if not editable:  # Scheduler.update takes a task not started, or settled
            return f"{tid} is {state.name.lower()}: edit it before it starts or once it has settled"
        return None

    def allowed_actions(self, ids) -> frozenset[Action]:
        """What the engine allows now for at least one of ``ids`` (gone ones allow nothing)."""
        allowed: set[Action] = set()
        for tid in ids:
            try:
                allowed |= self.scheduler.allowed_actions(tid)
            except KeyError:  # removed since the window last heard of it
                continue
        return frozenset(allowed)

    def edit_task(self, tid: str, new) -> tuple[str, str] | None:
        """Replace ``tid``'s definition (``Scheduler.update``, one undo step): it keeps its
        attempts and, once settled, its state.

        Returns None when done, or (field, why) when refused; the engine is left as it was.
        ``field`` is the argument the engine refused (``InvalidArgument.field``: "deps"
        for a cycle), or "submit" when the refusal is about no one argument.
        """
        why = self.can_edit(tid)
        if why is not None:
            return "submit", why
        old = self.scheduler.definition(tid)
        new = new.with_deps(new.deps, tid)
        try:
            self.scheduler.update(tid, new)
        except CycleError as exc:
            self.cycleRefused.emit(list(exc.path))
            return "deps", f"{' → '.join(exc.path)} would be a cycle"
        except (ValueError, TypeError, KeyError, RuntimeError) as exc:
            field = exc.field if isinstance(exc, InvalidArgument) else None
            return field or "submit", _describe(exc)
        self._push(EditTaskCommand(self.scheduler, old, new))
        changes = describe_changes(old, new)
        self.edited.emit(tid, changes)
        self.message.emit(f"Changed {tid}: {changes}", False)
        return None

    def move_nodes(self, placer, moves: dict) -> None:
        """Record one drag gesture (already shown) as one undo step."""
        moves = {tid: (a, b) for tid, (a, b) in moves.items() if a != b}
        if moves:
            self._push(MoveNodesCommand(placer, moves))

    # -- run control (not undoable: you cannot un-run a task) ---------------------
    def cancel(self, ids) -> int:
        return self._each(ids, self.scheduler.cancel, "cancel")

    def retry(self, ids) -> int:
        return self._each(ids, self.scheduler.retry, "retry")

    def retry_failed(self, ids=()) -> int:
        """Retry every FAILED task upstream of (or among) ``ids``, or all of them.

        The engine re-arms a retried task's SKIPPED downstream, so this also runs
        everything that was skipped because of those failures.
        """
        tasks = {t.id: t for t in self.scheduler.tasks()}
        if ids:
            around = set()
            stack = [tid for tid in ids if tid in tasks]
            while stack:  # the selection and everything upstream of it
                tid = stack.pop()
                if tid not in around:
                    around.add(tid)
                    stack.extend(d for d in tasks[tid].deps if d in tasks)
        else:
            around = set(tasks)
        failed = sorted(t for t in around if tasks[t].state is S.FAILED)
        if not failed:
            self.message.emit("No failed task to retry", False)
            return 0
        return self._each(failed, self.scheduler.retry, "retry")

    def run_now(self, ids) -> int:
        done = self._each(ids, self.scheduler.run_now, "run now")
        held = [tid for tid in ids if self._paused(tid)]
        if done and (held or self.scheduler.paused):
            what = (
                "the dispatcher is paused"
                if self.scheduler.paused
                else (f"{', '.join(held)} {'is' if len(held) == 1 else 'are'} paused")
            )
            self.message.emit(f"Run now: due now, but {what}: it starts when resumed", True)
        return done

    def _paused(self, tid: str) -> bool:
        try:
            return self.scheduler.task(tid).paused
        except (KeyError, RuntimeError):
            return False

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


def _held(held) -> str:
    if not held:
        return ""
    names = ", ".join(held)
    return (
        f": {names} would start at once, so {'it is' if len(held) == 1 else 'they are'} "
        "held paused (Resume to run; Undo puts the edit back)"
    )


def _describe(exc: BaseException) -> str:
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return text or type(exc).__name__


def pairs_text(pairs) -> str:
    """ "load → cleanup", up to three pairs, then how many more."""
    shown = ", ".join(f"{u} → {d}" for u, d in pairs[:3])
    return shown if len(pairs) <= 3 else f"{shown} and {len(pairs) - 3} more"
