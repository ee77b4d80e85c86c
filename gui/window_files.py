"""The window's workflow file: open, save, save as, export, the title, recent files and the file's
problems."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from .graph.export import export_graph
from .window_parts import WindowParts


class WindowFiles(WindowParts):
    """Part of ``MainWindow`` (a mixin, see ``window_parts``): this module's job."""

    def _open_workflow(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open workflow", "", "Workflows (*.toml)")
        if path:
            self.openRequested.emit(path)

    def _save_workflow(self) -> None:
        """Save writes the open file; a workflow without one asks where (Save As)."""
        if self.document.path is None:
            self._save_workflow_as()
        else:
            self.save_workflow()

    def _save_workflow_as(self) -> None:
        # The dialog opens in the file's folder with a new name, never on the file
        # itself: Enter must not overwrite what Save As was chosen to keep.
        path = self.document.path
        folder = path.resolve().parent if path is not None else Path.cwd()
        stem = path.stem if path is not None else self.document.name
        start = str(folder / f"{stem}-copy.toml")
        chosen, _ = QFileDialog.getSaveFileName(
            self, "Save workflow as", start, "Workflows (*.toml)"
        )
        if chosen:
            self.save_workflow(chosen)

    @property
    def workflow(self):
        """The engine.workflow.Workflow shown, if it came from (or went to) a file."""
        return self.document.workflow

    @workflow.setter
    def workflow(self, value) -> None:
        if value is not None:
            self.document.attach(value)

    def attach_workflow(self, workflow) -> None:
        """Show ``workflow`` (already scheduled on the engine): its ``pos`` keys place
        nodes, and Save writes it."""
        self.scene.pin_many(dict(workflow.positions))
        self.document.attach(workflow)

    def sync_workflow(self, workflow) -> list[str]:
        """Make the document's workflow what the window shows; returns the tasks left
        out (those that run a Python object)."""
        return self.document.sync()

    def save_workflow(self, path=None) -> bool:
        """Write the workflow as shown (atomically, keeping the file's comments and
        formatting); explains a failure in the status bar."""
        try:
            saved, left_out = self.document.save(path)
        except (OSError, ValueError) as exc:
            self._show_message(f"Cannot save: {exc}", True)
            return False
        note = f" (left out {', '.join(left_out)}: Python objects)" if left_out else ""
        self._show_message(f"Saved {saved}{note}", bool(left_out))
        return True

    def _update_title(self) -> None:
        """ "name — /path/to/file.toml[*] — Taskloom": which file is open, and (*) unsaved."""
        path = self.document.path
        name = self._title or (self.document.name if self.document.workflow else "")
        parts = [part for part in (name, str(path) if path is not None else "") if part]
        if not parts:
            self.setWindowTitle("Taskloom[*]")
            return
        self.setWindowTitle(" — ".join([*parts[:-1], f"{parts[-1]}[*]", "Taskloom"]))

    def show_problems(self, path, problems) -> None:
        """List every problem of the file at ``path`` in a panel (not the status bar)."""
        from .problems import ProblemsPanel

        if getattr(self, "problems_dock", None) is None:
            self.problems = ProblemsPanel()
            self.problems.taskActivated.connect(self._jump_to_problem)
            self.problems.reloadRequested.connect(self.openRequested)
            self.problems_dock = self._dock(
                "Problems", self.problems, Qt.DockWidgetArea.BottomDockWidgetArea
            )
            self.tabifyDockWidget(self.event_dock, self.problems_dock)
        self.problems.show_problems(path, problems)
        self.problems_dock.show()
        self.problems_dock.raise_()
        self.resizeDocks([self.problems_dock], [720], Qt.Orientation.Horizontal)
        self.resizeDocks([self.problems_dock], [300], Qt.Orientation.Vertical)
        self._show_message(f"{Path(path).name} has {len(problems)} problem(s): see Problems", True)

    def _jump_to_problem(self, task: str) -> None:
        path, shown = self.document.path, self.problems.path
        same_file = (
            path is not None and shown is not None and Path(shown).resolve() == path.resolve()
        )
        if same_file and task in self.bridge.tasks:
            self.select_tasks([task], centre=True)
            return
        self._show_message(f"{task} is in {self.problems.path}", False)

    def _export_graph(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Export graph", "graph.png", "PNG image (*.png);;SVG drawing (*.svg)"
        )
        if path:
            self.export_graph(path)

    def export_graph(self, path) -> bool:
        try:
            export_graph(self.scene, path)
        except (OSError, ValueError) as exc:
            self._show_message(f"Cannot export: {exc}", True)
            return False
        self._show_message(f"Exported the graph to {path}", False)
        return True

    def set_recent(self, paths) -> None:
        """File > Open recent lists ``paths`` (newest first); choosing one opens it."""
        self.recent_menu.clear()
        for path in paths:
            action = self.recent_menu.addAction(f"{Path(path).stem}  ({path})")
            action.setData(str(path))
            action.triggered.connect(lambda _on=False, p=str(path): self.openRequested.emit(p))
        self.recent_menu.setEnabled(bool(paths))
