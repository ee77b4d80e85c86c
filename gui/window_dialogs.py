"""The window's dialogs: add and edit a task, preferences."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer

from .fix_task import offers_run_again
from .window_parts import WindowParts


class WindowDialogs(WindowParts):
    """Part of ``MainWindow`` (a mixin, see ``window_parts``): this module's job."""

    def add_task_dialog(self) -> None:
        from taskloom.engine.workflow import new_task_template

        from .add_task import AddTaskDialog  # the dialog is big; load it on first use

        refusal = self.controller.edit_refusal()
        if refusal:  # say so before the form is filled in, not after
            self._show_message(f"Cannot add a task: {refusal}", True)
            return
        workflow = self.document.workflow
        template = None if workflow is None else new_task_template(workflow)
        dialog = AddTaskDialog(list(self.document.tasks), self, template=template)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.specReady.connect(lambda spec: self.controller.add_task(self._in_file_folder(spec)))
        dialog.open()
        self.add_dialog = dialog

    def _in_file_folder(self, definition):
        """A command added here runs in the workflow file's folder, as the file's own
        tasks do (not wherever the app was started)."""
        from dataclasses import replace

        from taskloom.engine.command import Command

        action = definition.action
        if self.document.path is None or not isinstance(action, Command) or action.cwd:
            return definition
        folder = str(self.document.base_dir)
        command = Command(action.argv, shell=action.shell, cwd=folder, env=action.env)
        return replace(definition, action=command)

    def edit_task_dialog(self) -> None:
        from .add_task import AddTaskDialog

        if len(self.selected) != 1:
            return
        tid = self.selected[0]
        why = self.controller.can_edit(tid)
        if why is not None:
            self._show_message(f"Cannot edit: {why}", True)
            return
        try:
            spec = self.scheduler.definition(tid)
        except KeyError as exc:  # removed since it was selected
            self._show_message(f"Cannot edit: {exc.args[0]}", True)
            return
        dialog = AddTaskDialog(
            list(self.document.tasks),
            self,
            spec=spec,
            task_id=tid,
            submit=lambda new: self._submit_edit(tid, new),
        )
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.edit_dialog = dialog

    def _submit_edit(self, tid: str, new):
        """The edit dialog's OK: a FAILED task fixed is offered to run again (once the
        dialog has closed)."""
        before = self.document.tasks.get(tid)
        refused = self.controller.edit_task(tid, new)
        if refused is None and before is not None and offers_run_again(before.state):
            QTimer.singleShot(0, self, lambda: self.clear_question.ask_fixed(tid))
        return refused

    def show_preferences(self):
        from .preferences import PreferencesDialog

        dialog = PreferencesDialog(self.settings, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.accepted.connect(self.notices.update_tray)
        dialog.open()
        self.preferences_dialog = dialog
        return dialog
