"""Closing the window with unsaved edits or running tasks asks first."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from taskloom.engine import TaskState


class CloseQuestion:
    """``may_close()`` asks (once per close) when closing would lose something.

    ``enabled`` is cleared by whoever closes the window for a reason of its own
    (a signal, the app quitting after its own question, a test's teardown).
    """

    asks_by_default = True  # the GUI tests turn it off, and on where they test it

    def __init__(self, window):
        self.window = window
        self.enabled = self.asks_by_default
        self.answered = False  # yes, close: the close watcher and closeEvent ask once
        self.counts_running = True  # off when another question covers running tasks
        self.box: QMessageBox | None = None

    def reasons(self) -> list[str]:
        """What closing now would lose, in words; empty when nothing."""
        reasons = []
        if self.window.document.dirty:
            reasons.append("unsaved edits")
        running = self.counts_running and sum(
            info.state is TaskState.RUNNING for info in self.window.bridge.tasks.values()
        )
        if running:
            plural = "s" if running != 1 else ""
            reasons.append(f"{running} running task{plural} (stopped on close)")
        return reasons

    def may_close(self) -> bool:
        if self.answered or not self.enabled:
            return True
        reasons = self.reasons()
        if not reasons:
            return True
        box = QMessageBox(self.window)
        box.setObjectName("close_question")
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle("Close Taskloom?")
        box.setText(f"Close {self.window.document.name}? It has {' and '.join(reasons)}.")
        box.setInformativeText(
            "Running commands are stopped and run again when the workflow is next opened."
            if len(reasons) > 1 or not self.window.document.dirty
            else "Unsaved edits are lost unless you save them."
        )
        buttons = QMessageBox.StandardButton
        choices = buttons.Cancel | (
            buttons.Save | buttons.Discard if self.window.document.dirty else buttons.Close
        )
        box.setStandardButtons(choices)
        box.setDefaultButton(buttons.Cancel)
        self.box = box
        answer = box.exec()
        self.box = None
        box.deleteLater()
        if answer == buttons.Save:
            self.window._save_workflow()
            ok = not self.window.document.dirty  # saved (not cancelled or failed)
        else:
            ok = answer in (buttons.Discard, buttons.Close)
        self.answered = ok
        return ok
