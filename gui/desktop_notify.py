"""Notifications through the freedesktop notification service, with ``notify-send``.

Qt's tray message needs a system tray, and a stock GNOME desktop has none: there,
the tray's messages never show. ``notify-send`` (libnotify) talks to
org.freedesktop.Notifications directly. Each message is one short-lived
``notify-send --action`` process; it prints the action's name when the person
clicks the notification, which selects the task. The process ends when the
notification closes or expires.
"""

from __future__ import annotations

import logging
import os
import shutil

from PySide6.QtCore import QObject, QProcess, Signal

from taskloom import resources_dir

log = logging.getLogger(__name__)

PROGRAM = "notify-send"
ACTION = "show"  # the name notify-send prints when the notification is clicked
MAX_LIVE = 4  # notifications on screen at once; more are dropped (the log has them)


def find_notify_send() -> str | None:
    """The notify-send program, if there is one and a session bus to send to."""
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return None
    return shutil.which(PROGRAM)


class FreedesktopNotifier(QObject):
    """``notify(title, text, error, task)``; ``clicked(task)`` when one is clicked."""

    clicked = Signal(object)

    def __init__(self, program: str, parent=None, timeout_ms: int = 10000):
        super().__init__(parent)
        self.program = program
        self.timeout_ms = timeout_ms
        self.live: list[QProcess] = []
        self.icon = str(resources_dir() / "icons" / "app.svg")

    def notify(self, title: str, text: str, error: bool, task: str | None = None) -> bool:
        if len(self.live) >= MAX_LIVE:
            log.info("too many notifications on screen; not shown: %s", title)
            return False
        process = QProcess(self)
        process.setProcessChannelMode(QProcess.ProcessChannelMode.SeparateChannels)
        args = [
            "--app-name=Taskloom",
            f"--icon={self.icon}",
            f"--expire-time={self.timeout_ms}",
            f"--category={'transfer.error' if error else 'transfer.complete'}",
            f"--action={ACTION}=Show task" if task else f"--action={ACTION}=Show",
            title,
            text,
        ]
        process.finished.connect(lambda *_: self._finished(process, task))
        process.errorOccurred.connect(lambda _e: self._finished(process, None))
        self.live.append(process)
        process.start(self.program, args)
        return True

    def _finished(self, process: QProcess, task) -> None:
        if process not in self.live:
            return  # errorOccurred and finished both came
        self.live.remove(process)
        said = bytes(process.readAllStandardOutput()).decode(errors="replace").split()
        if ACTION in said:
            self.clicked.emit(task)
        process.deleteLater()

    def close(self) -> None:
        """The window closes: its notifications' processes go too."""
        for process in list(self.live):
            process.kill()
            process.waitForFinished(1000)
        self.live.clear()
