"""Telling people what happened while they look elsewhere: a desktop notification
when a task fails for good and when a run finishes, and a tray icon while the
window owns recurring schedules.

Notifications go to the freedesktop notification service on the session bus
when there is one (``desktop_notify.py``, no ``notify-send`` needed: a stock GNOME
has no tray to show Qt's messages), else through Qt's system tray message (a balloon, or
the notification service on desktops with a StatusNotifier host). A click on the
message selects the task it was about. Both can be turned off in Preferences.
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from taskloom.engine import TaskState

from .desktop_notify import FreedesktopNotifier, find_session_bus
from .icons import icon

NOTIFY_KEY = "notifications/enabled"
TRAY_KEY = "tray/enabled"
MESSAGE_MS = 10000  # how long a message shows
MAX_FAILURES = 3  # failures in one batch told one by one; more are counted


def setting_on(settings, key: str) -> bool:
    """On unless turned off: QSettings gives "false" back as a string from a file."""
    value = settings.value(key, True)
    return value not in (False, "false", "0", 0)


class Notifier(Protocol):
    """What tells people (``TrayNotifier``, ``FreedesktopNotifier``, a test's)."""

    def notify(self, title: str, text: str, error: bool, task: str | None = None) -> object: ...


class TrayNotifier:
    """Shows a message from the tray icon; the tray shows for the message if it was
    hidden (Qt needs a tray entry to show one), and hides again afterwards."""

    def __init__(self, tray: QSystemTrayIcon):
        self.tray = tray
        self._hide = QTimer(tray)
        self._hide.setSingleShot(True)
        self._hide.timeout.connect(self._hide_again)
        self._shown_for_message = False

    def notify(self, title: str, text: str, error: bool, task: str | None = None) -> None:
        if not self.tray.isVisible():
            self._shown_for_message = True
            self.tray.show()
        icons = QSystemTrayIcon.MessageIcon
        kind = icons.Warning if error else icons.Information
        self.tray.showMessage(title, text, kind, MESSAGE_MS)
        if self._shown_for_message:
            self._hide.start(MESSAGE_MS + 1000)

    @property
    def shown_for_message(self) -> bool:
        """The tray shows only for a message (it hides again afterwards)."""
        return self._shown_for_message

    def stop_hiding(self) -> None:
        """The tray is wanted for its own sake now: keep it."""
        self._shown_for_message = False
        self._hide.stop()

    def _hide_again(self) -> None:
        if self._shown_for_message:
            self._shown_for_message = False
            self.tray.hide()


class RunNotices(QObject):
    """Watches the window's tasks (the bridge's latest state per task, so nothing is
    missed when events are dropped) and says when one fails for good and when the
    run's one-shot tasks have all settled."""

    taskChosen = Signal(str)  # a notification was clicked: show this task
    showRequested = Signal()  # the tray was clicked: show the window

    def __init__(self, window, settings, notifier=None):
        super().__init__(window)
        self.window = window
        self.settings = settings
        self.tray = QSystemTrayIcon(icon("app"), self)
        self.tray.setObjectName("trayIcon")
        self.tray.setToolTip(f"Taskloom: {window.windowTitle()}")
        menu = QMenu(window)
        menu.setObjectName("trayMenu")
        menu.addAction("Show window", self.showRequested.emit)
        menu.addAction("Quit", window.close)
        self.tray.setContextMenu(menu)
        self.tray.activated.connect(self._on_activated)
        self.tray.messageClicked.connect(self._on_message_clicked)
        if notifier is None:
            bus = find_session_bus()
            notifier = FreedesktopNotifier(bus, self) if bus else TrayNotifier(self.tray)
        self.notifier: Notifier = notifier
        if isinstance(notifier, FreedesktopNotifier):  # it knows which message was clicked
            notifier.clicked.connect(self._on_clicked)
        self.last_task: str | None = None
        self._states = {tid: info.state for tid, info in window.bridge.tasks.items()}
        # Kept up to date per batch, so a big graph costs per change, not per task.
        self._counted: set[str] = set()
        self._unsettled: set[str] = set()
        self._repeating: set[str] = set()
        self._recurring = False
        self.rebuilds = 0  # full passes over every task (the tests count them)
        self._on_structure()
        self._finished = self._run_finished()
        # The document's batches say which tasks came (the window's edits among them):
        # those are counted, not every task again.
        window.document.structureChanged.connect(self._on_structure_change)
        window.bridge.tasksChanged.connect(self._on_tasks_changed)

    # -- what happened ----------------------------------------------------------------
    def _on_tasks_changed(self, changed: dict) -> None:
        failed = []
        for tid, info in changed.items():
            before = self._states.get(tid)
            self._states[tid] = info.state
            if info.state is TaskState.FAILED and before is not TaskState.FAILED:
                failed.append(info)
            if tid in self._counted:
                if info.state.settled:
                    self._unsettled.discard(tid)
                else:
                    self._unsettled.add(tid)
        finished = self._run_finished()
        if finished and not self._finished:
            self._notify_finished()  # names the failures too: one message, not two
        else:
            for info in failed[:MAX_FAILURES]:
                error = info.error or "failed"
                self._notify(f"{info.id} failed", f"{self._name()}: {error}", info.id, True)
            if len(failed) > MAX_FAILURES:
                more = len(failed) - MAX_FAILURES
                self._notify(f"{more} more tasks failed", self._name(), None, True)
        self._finished = finished

    def _on_structure_change(self, change) -> None:
        """One batch: new tasks that depend on no task already known are counted
        alone (work per task added); anything else is worked out again."""
        added = set(change.added)
        if (
            change.removed
            or change.edges_removed
            or change.changed
            or any(down not in added for _up, down in change.edges_added)
        ):
            self._on_structure()
            return
        tasks = self.window.document.tasks
        new = [tid for tid in change.added if tid in tasks]
        repeating = self._repeating
        grew = True
        while grew:  # the new tasks may depend on each other, in any order
            grew = False
            for tid in new:
                info = tasks[tid]
                if tid not in repeating and (
                    info.recurring or any(dep in repeating for dep in info.deps)
                ):
                    repeating.add(tid)
                    grew = True
        for tid in new:
            if tid not in repeating:
                self._counted.add(tid)
                if not tasks[tid].state.settled:
                    self._unsettled.add(tid)
        if repeating and not self._recurring:
            self._recurring = True
        self._finished = self._run_finished()
        self.update_tray()

    def _on_structure(self) -> None:
        """Which tasks count for "the run finished": the one-shot tasks, not recurring
        nor downstream of a recurring one (as ``taskloom run``'s exit code)."""
        self.rebuilds += 1
        tasks = self.window.document.tasks
        repeating: set[str] = set()
        changed = True
        while changed:  # downstream of a recurring task, as far as it goes
            changed = False
            for info in tasks.values():
                if info.id not in repeating and (
                    info.recurring or any(dep in repeating for dep in info.deps)
                ):
                    repeating.add(info.id)
                    changed = True
        self._repeating = repeating
        self._counted = set(tasks) - repeating
        self._unsettled = {t for t in self._counted if not tasks[t].state.settled}
        self._recurring = bool(repeating)
        self._finished = self._run_finished()
        self.update_tray()

    def _run_finished(self) -> bool:
        # Not while the bridge still reads tasks it heard of (a flood caught up with:
        # the first 1,000 of 20,000 all succeeded is not the run finished).
        reading = getattr(self.window.bridge, "reading", lambda: False)()
        return bool(self._counted) and not self._unsettled and not reading

    def _notify_finished(self) -> None:
        tasks = self.window.bridge.tasks.values()
        failed = [info for info in tasks if info.state is TaskState.FAILED]
        counts: dict[str, int] = {}
        for info in tasks:
            counts[info.state.value] = counts.get(info.state.value, 0) + 1
        text = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        if not failed:
            self._notify(f"{self._name()} finished", text, None, False)
            return
        first = failed[0]
        text = f"{first.id}: {first.error or 'failed'}\n{text}"
        self._notify(f"{self._name()} finished: {len(failed)} failed", text, first.id, True)

    def _notify(self, title: str, text: str, task: str | None, error: bool) -> None:
        if not self.window.started or not setting_on(self.settings, NOTIFY_KEY):
            return
        self.last_task = task
        self.notifier.notify(title, text, error, task)

    def _name(self) -> str:
        return self.window.document.name or "Taskloom"

    # -- clicks -----------------------------------------------------------------------
    def _on_message_clicked(self) -> None:
        """Qt says only that the last message was clicked."""
        self._on_clicked(self.last_task)

    def _on_clicked(self, task) -> None:
        self.showRequested.emit()
        if task is not None:
            self.taskChosen.emit(task)

    def _on_activated(self, reason) -> None:
        if reason in (
            QSystemTrayIcon.ActivationReason.Trigger,
            QSystemTrayIcon.ActivationReason.DoubleClick,
        ):
            self.showRequested.emit()

    # -- the tray icon ----------------------------------------------------------------
    def owns_schedules(self) -> bool:
        """The window runs (owns, and has started) a run with recurring tasks."""
        window = self.window
        if not window.started or not window.owns_run:
            return False
        return self._recurring

    def update_tray(self) -> None:
        wanted = self.owns_schedules() and setting_on(self.settings, TRAY_KEY)
        if wanted:
            self.tray.setToolTip(f"Taskloom: {self._name()}, recurring schedule running")
            if isinstance(self.notifier, TrayNotifier):
                self.notifier.stop_hiding()
            self.tray.show()
        elif self.tray.isVisible() and not (
            isinstance(self.notifier, TrayNotifier) and self.notifier.shown_for_message
        ):
            self.tray.hide()

    def close(self) -> None:
        self.tray.hide()
        if isinstance(self.notifier, FreedesktopNotifier):
            self.notifier.close()
