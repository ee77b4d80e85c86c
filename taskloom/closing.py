"""Closing a session's window: the close watcher that stops its run, and the question
whether a run with recurring tasks goes on in the background (a headless owner)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject

CLOSE_BACKGROUND, CLOSE_STOP, CLOSE_CANCEL = "background", "stop", "cancel"


class _CloseWatcher(QObject):
    """Stops the session's engine when its window closes (the title bar's X, Quit).

    A person closing a window whose run has recurring tasks is asked whether the
    schedule should go on in the background (a headless ``taskloom run`` takes the
    run over) or stop; "cancel" keeps the window open."""

    def __init__(self, session):
        super().__init__(session.window)
        self.session = session

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Close:
            question = self.session.window.close_question
            hands_off = getattr(self.session, "asks_on_close", lambda: False)()
            # Running tasks are asked about once: by the hand-off question when there is
            # one, and never for a watcher (closing it stops nothing).
            question.counts_running = not hands_off and not getattr(self.session, "watching", False)
            if not question.may_close():
                event.ignore()  # the person chose to keep it open
                return True
            if hands_off:
                choice = self.session.ask_on_close()
                if choice == CLOSE_CANCEL:
                    event.ignore()
                    return True
                self.session.hand_off = choice == CLOSE_BACKGROUND
            self.session.stop()
        return False


def ask_keep_schedule(window, name: str) -> str:
    """Ask whether closing the window should leave the schedule running."""
    from PySide6.QtWidgets import QMessageBox

    box = QMessageBox(window)
    box.setObjectName("keep_schedule")
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Taskloom: keep the schedule running?")
    box.setText(f"{name} has recurring tasks. Keep running them after this window closes?")
    box.setInformativeText(
        "In the background, a headless 'taskloom run' takes the run over: commands "
        "running now go on and it records their ends. Open the workflow again to "
        "watch it."
    )
    keep = box.addButton("Keep running in the background", QMessageBox.ButtonRole.AcceptRole)
    stop = box.addButton("Stop the schedule", QMessageBox.ButtonRole.DestructiveRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(keep)
    box.exec()
    clicked = box.clickedButton()
    return CLOSE_BACKGROUND if clicked is keep else CLOSE_STOP if clicked is stop else CLOSE_CANCEL
