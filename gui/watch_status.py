"""Whose run a watching window shows, the owner's answers, and "Take over".

A window that watches a run another process owns (``taskloom.engine.watched_run``)
gets this in its status bar: who owns the run (program, pid, host, since when),
the owner's answers to the requests sent from here (a refusal as an error), and,
once the owner has stopped, a button to take the run over in this window. The
views themselves do not know whose run they show.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from .status_message import ElidedLabel

CHECK_MS = 100  # how often the owner's answers are looked at while one is awaited
IDLE_CHECK_MS = 500  # and its liveness otherwise (an answer shows within this too)


class WatchStatus(QWidget):
    takeOverRequested = Signal()

    def __init__(self, window, run, name: str):
        super().__init__(window)
        self.setObjectName("watchStatus")
        self.window_ = window
        self.run = run
        self.name = name
        self.label = ElidedLabel()  # a long owner leaves a small window its size
        self.label.setObjectName("watchOwner")
        self.take_over = QPushButton("Take over")
        self.take_over.setObjectName("takeOver")
        self.take_over.setToolTip("Resume the run in this window: it becomes its owner")
        self.take_over.clicked.connect(self.takeOverRequested)
        self.take_over.hide()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 0, 6, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.take_over)
        self.owner_gone = False
        owner = run.owner.describe() if run.owner else "another process"
        self._watching = f"◉ Watching the run of {owner}"
        self._answering = True
        self.label.setText(self._watching)
        self.label.setToolTip(
            "This window follows a run another process owns. Run control (cancel, retry, "
            "run now, pause) is sent to the owner; graph edits are refused."
        )
        window.statusBar().insertPermanentWidget(0, self)
        window.setWindowTitle(f"{name} — watching {owner} — Taskloom")
        self._timer = QTimer(self)
        self._timer.setInterval(IDLE_CHECK_MS)
        self._timer.timeout.connect(self.check)
        self._timer.start()

    def check(self) -> None:
        """Show the owner's answers; notice when it stopped."""
        for _rid, action, tid, status, text in self.run.take_answers():
            error = status != "done"
            prefixes = {"refused": "The owner refused: ", "failed": "Not sent: "}
            prefix = prefixes.get(status, "Owner: ")
            self.window_.statusBar().showMessage(
                ("⚠ " if error else "") + prefix + (text or f"{action} {tid}"),
                8000 if error else 3000,
            )
        if self.owner_gone:
            return
        if not self.run.owner_alive:
            self.stopped()
        else:
            answering = self.run.owner_answering
            if answering != self._answering:  # its heartbeat stopped, or came back
                self._answering = answering
                owner = self.run.owner
                who = f"{owner.program} (pid {owner.pid} on {owner.host})" if owner else "The owner"
                self.label.setText(
                    self._watching
                    if answering
                    else f"⏸ {who} is not answering (stopped or frozen): requests wait for it"
                )
        awaited = self.run.awaiting_answers
        self._timer.setInterval(CHECK_MS if awaited else IDLE_CHECK_MS)

    def stopped(self) -> None:
        self.owner_gone = True
        at = time.strftime("%H:%M:%S", time.localtime(self.run.stopped_at or time.time()))
        owner = self.run.owner
        who = f"{owner.program} (pid {owner.pid} on {owner.host})" if owner else "The owner"
        self.label.setText(f"■ {who} stopped at {at}")
        self.label.setToolTip(
            "The process that ran this workflow has stopped: nothing starts new work. "
            "Commands it started go on under their supervisor. Take over resumes the run "
            "in this window, which adopts them and records their ends."
        )
        self.take_over.show()
        self.window_.setWindowTitle(f"{self.name} — stopped — Taskloom")
        tasks = self.window_.bridge.tasks.values()
        if tasks and all(info.state.settled and not info.recurring for info in tasks):
            message = "The run had finished when its owner stopped: Take over to work on it here"
        else:  # tasks still to run (or a recurring one): nothing starts them until then
            message = "Take over to resume the run here"
        self.window_.statusBar().showMessage(message, 0)
        self.window_.refresh_actions()

    def close_status(self) -> None:
        self._timer.stop()
