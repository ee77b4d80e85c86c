"""The workflow document: what the window edits and Save writes.

It owns the file (path, the text as read, name and settings), the undo stack
every edit goes through, the dirty flag (the stack's clean state) and the
definitions Save writes: the engine's definition of each task, in file order,
with the positions the scene pins and the edges the file keeps although this
run can no longer honour them (an undone removal whose dependents already ran).

Saving rewrites only what changed in the text a person wrote (``workflow_text``):
comments, order and formatting stay, and a file saved without edits is byte for
byte what was read. Paths are rebased to the folder saved in.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from taskloom.engine.workflow import Workflow, dumps
from taskloom.engine.workflow_text import update_text

from .structure import Structure, StructureChange


class WorkflowDocument(QObject):
    """The workflow being edited. It is also the one source of structure for the
    scene: ``structureChanged(StructureChange)`` says, once per batch, which tasks and
    edges came and went and which tasks were redefined, after an edit made here
    (undo, redo and push re-read the tasks the step touched) and when the engine
    reports a change made elsewhere (the bridge's batches: API calls, a watched run).
    """

    dirtyChanged = Signal(bool)
    pathChanged = Signal(object)  # Path or None
    structureChanged = Signal(object)  # a StructureChange: one per batch

    def __init__(self, scheduler, undo_stack, pins, parent=None):
        """``pins()`` gives {task id: (x, y)} for the nodes a person placed."""
        super().__init__(parent)
        self.scheduler = scheduler
        self.undo_stack = undo_stack
        self.pins = pins
        self.workflow: Workflow | None = None
        self.source_text: str | None = None  # the file as read, or as last saved
        self.kept_edges: set[tuple[str, str]] = set()  # (dependent, dependency)
        self.structure = Structure()
        self._index = undo_stack.index()
        undo_stack.cleanChanged.connect(lambda clean: self.dirtyChanged.emit(not clean))
        undo_stack.indexChanged.connect(self._after_step)

    # -- its structure (what the scene shows) ----------------------------------------
    @property
    def tasks(self) -> dict:
        """{task id: TaskInfo} as the document knows them, in the order they came."""
        return self.structure.tasks

    def follow(self, tasks: dict) -> None:
        """Start from the bridge's snapshot ({task id: TaskInfo}); no signal."""
        self.structure.reset(tasks)

    def engine_changed(self, changed: dict) -> None:
        """The bridge's batch of changed tasks (states mostly; new tasks and edges too)."""
        self._emit(self.structure.apply(changed.values()))

    def engine_removed(self, removed: list) -> None:
        self._emit(self.structure.apply((), removed))

    def engine_events(self, events: list) -> None:
        """Tasks redefined by anyone (``edited`` events) are changed tasks."""
        edited = [e.task_id for e in events if e.kind == "edited"]
        if edited:
            self._emit(self.structure.apply((), (), edited))

    def reread(self, ids, edited=()) -> StructureChange:
        """Read ``ids`` from the engine now and emit what changed (an edit just made)."""
        infos, gone = [], []
        for tid in ids:
            try:
                infos.append(self.scheduler.task(tid))
            except KeyError:
                gone.append(tid)
        change = self.structure.apply(infos, gone, edited)
        self._emit(change)
        return change

    def _after_step(self, index: int) -> None:
        """A step was pushed, undone or redone: the tasks it touched, read again."""
        old, self._index = self._index, index
        ids: set[str] = set()
        edited: set[str] = set()
        try:
            commands = [self.undo_stack.command(i) for i in range(min(old, index), max(old, index))]
        except RuntimeError:  # the stack is being destroyed with the window
            return
        for command in commands:
            if command is not None and hasattr(command, "task_ids"):
                ids |= command.task_ids()
                edited |= command.edited_ids()
        if ids:
            self.reread(sorted(ids), sorted(edited))

    def _emit(self, change: StructureChange) -> None:
        if change:
            self.structureChanged.emit(change)

    # -- what it is ---------------------------------------------------------------
    @property
    def path(self) -> Path | None:
        return None if self.workflow is None else self.workflow.path

    @property
    def name(self) -> str:
        if self.workflow is not None:
            return self.workflow.name
        return "untitled"

    @property
    def dirty(self) -> bool:
        return not self.undo_stack.isClean()

    def attach(self, workflow) -> None:
        """The document is ``workflow`` (as loaded from its file, already scheduled)."""
        self.workflow = workflow
        self.source_text = None
        if workflow.path is not None:
            try:
                self.source_text = Path(workflow.path).read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                self.source_text = None  # written afresh on save
        self._keep_file_edges(workflow)
        self.undo_stack.setClean()
        self.pathChanged.emit(self.path)

    def _keep_file_edges(self, workflow) -> None:
        """Edges the file has that the engine does not (a resumed run keeps a task that
        succeeded as it was stored): Save must not drop them from the file."""
        known = self.tasks  # the bridge's snapshot: the engine's deps, read once
        for tid, definition in workflow.tasks.items():
            info = known.get(tid)
            if info is not None and set(definition.deps) <= set(info.deps):
                continue  # nothing missing (every task of a new run): no engine call
            try:
                now = set(self.scheduler.definition(tid).deps)
            except KeyError:
                continue
            missing = [dep for dep in definition.deps if dep not in now]
            for dep in missing:
                self.kept_edges.add((tid, dep))

    def keep_edges(self, dependency: str, dependents) -> None:
        """The file keeps ``dependents`` waiting for ``dependency`` (this run cannot)."""
        self.kept_edges.update((d, dependency) for d in dependents)

    def forget_edge(self, dependency: str, dependent: str) -> None:
        self.kept_edges.discard((dependent, dependency))

    # -- what Save writes ---------------------------------------------------------------
    def definitions(self) -> tuple[dict, list[str]]:
        """({task id: definition} as Save writes them, [tasks left out: Python objects]).
        File order first, then tasks added here; kept edges added back."""
        ids = [t.id for t in self.scheduler.tasks()]
        present = set(ids)
        order = [t for t in (self.workflow.tasks if self.workflow else ()) if t in present]
        kept, left_out = {}, []
        base = self.base_dir
        for tid in [*order, *ids]:
            if tid in kept or tid in left_out:
                continue
            try:
                definition = self.scheduler.definition(tid)
                definition.to_table(base)  # ValueError: no file form
            except KeyError:
                continue  # removed meanwhile
            except ValueError:
                left_out.append(tid)
                continue
            extra = [d for (t, d) in sorted(self.kept_edges) if t == tid and d in present]
            extra = [d for d in extra if d not in definition.deps]
            if extra:
                definition = definition.with_deps((*definition.deps, *extra))
            group = self.file_group(tid)
            if group != definition.group:  # the engine keeps no group: the file's stays
                definition = replace(definition, group=group)
            kept[tid] = definition
        return kept, left_out

    def file_group(self, tid: str) -> str | None:
        """The ``group`` key the file gives ``tid`` (the window groups by it), or None."""
        definition = self.workflow.tasks.get(tid) if self.workflow else None
        return definition.group if definition is not None else None

    @property
    def base_dir(self) -> Path:
        return self.workflow.base_dir if self.workflow is not None else Path.cwd()

    def sync(self) -> list[str]:
        """Make ``workflow`` what the window shows; returns the tasks left out."""
        if self.workflow is None:
            self.workflow = Workflow(name="workflow", workers=self.scheduler.workers)
        kept, left_out = self.definitions()
        self.workflow.tasks = kept
        pins = self.pins()
        self.workflow.positions = {}
        for tid in kept:
            pin = pins.get(tid)
            if pin is not None:
                self.workflow.set_position(tid, round(pin[0], 1), round(pin[1], 1))
        return left_out

    def _rebase_folders(self, new_base: Path) -> None:
        """Save As elsewhere: a command that ran in the file's folder (or a folder under
        it) runs in the same place beside the new file, so the file says so relative
        to itself (no ``cwd``, or ``cwd = "sub"``), never the old folder's absolute path:
        a copied folder runs its own scripts. Absolute folders stay as they are."""
        from taskloom.engine.command import Command

        if self.workflow is None or self.workflow.path is None:
            return
        old_base = Path(self.workflow.base_dir).resolve()
        if old_base == new_base:
            return
        for tid, definition in list(self.workflow.tasks.items()):
            action = definition.action
            if not isinstance(action, Command) or action.cwd is None:
                continue
            cwd = Path(action.cwd).resolve()
            if cwd != old_base and old_base not in cwd.parents:
                continue
            moved = str(new_base / cwd.relative_to(old_base))
            command = Command(action.argv, shell=action.shell, cwd=moved, env=action.env)
            self.workflow.tasks[tid] = replace(definition, action=command)

    def text_for(self, target: Path) -> str:
        """The file's text as saved at ``target``: the text as read, changed only where
        the document changed; a document without one is written afresh."""
        base = target.resolve().parent
        workflow = self.workflow
        if workflow is None:
            raise ValueError("the document has no workflow to write yet")
        if self.source_text is None:
            return dumps(workflow, base)
        return update_text(self.source_text, workflow, base)

    def save(self, path=None) -> tuple[Path, list[str]]:
        """Write the document to ``path`` (default: its own file) atomically; returns
        (the path, tasks left out). ``ValueError``/``OSError`` leave the file as it was."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("save: the workflow has no file yet: use Save As")
        if self.workflow is None:
            self.workflow = Workflow(name=target.stem, workers=self.scheduler.workers)
        left_out = self.sync()
        workflow = self.workflow
        self._rebase_folders(target.resolve().parent)
        text = self.text_for(target)
        write_atomically(target, text)
        old = self.path
        moved = old is None or target.resolve() != old.resolve()
        workflow.path = target
        self.source_text = text
        self.undo_stack.setClean()
        if moved:
            self.pathChanged.emit(target)
        return target, left_out


def write_atomically(target: Path, text: str) -> None:
    """Write to a temporary file beside ``target`` and move it over: a failure at
    any point leaves the original as it was; the file's mode is kept."""
    handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        mode = target.stat().st_mode & 0o7777 if target.exists() else 0o644
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
