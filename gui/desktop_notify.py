"""Notifications through the freedesktop notification service, straight on D-Bus.

Qt's tray message needs a system tray, and a stock GNOME desktop has none: there,
the tray's messages never show. ``FreedesktopNotifier`` talks to
org.freedesktop.Notifications on the session bus itself (``taskloom.dbus_notify``,
the same sender a headless run's ``[workflow.notify] desktop`` uses): no
``notify-send`` is needed. Each message is one short-lived thread that sends it
with a "Show task" action and stays on the bus until the notification closes; a
click on it selects the task (through ``relay``: the window may be gone by then).
"""

from __future__ import annotations

import logging
import threading

from PySide6.QtCore import QObject, Signal

from taskloom import resources_dir
from taskloom.dbus_notify import NotifyError, notify_and_watch, session_bus_address

from . import relay

log = logging.getLogger(__name__)

ACTION = "show"  # the action key the service sends back when the notification is clicked
MAX_LIVE = 4  # notifications on screen at once; more are dropped (the log has them)


def find_session_bus() -> str | None:
    """The session bus's address, if there is one to send notifications to."""
    return session_bus_address()


class FreedesktopNotifier(QObject):
    """``notify(title, text, error, task)``; ``clicked(task)`` when one is clicked."""

    clicked = Signal(object)

    def __init__(self, address: str | None = None, parent=None, timeout_ms: int = 10000):
        super().__init__(parent)
        relay.install()
        self.address = address
        self.timeout_ms = timeout_ms
        self.live: list[threading.Thread] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.icon = str(resources_dir() / "icons" / "app.svg")

    def notify(self, title: str, text: str, error: bool, task: str | None = None) -> bool:
        with self._lock:
            self.live = [thread for thread in self.live if thread.is_alive()]
            if len(self.live) >= MAX_LIVE:
                log.info("too many notifications on screen; not shown: %s", title)
                return False
            thread = threading.Thread(
                target=self._show,
                args=(title, text, error, task),
                name="taskloom-notification",
                daemon=True,
            )
            self.live.append(thread)
        thread.start()
        return True

    def _show(self, title: str, text: str, error: bool, task) -> None:
        def on_action(key: str) -> None:
            if key == ACTION:
                relay.post(self, "_clicked", task)

        try:
            notify_and_watch(
                title,
                text,
                actions=(ACTION, "Show task" if task else "Show"),
                on_action=on_action,
                stop=self._stop,
                urgency="critical" if error else "normal",
                icon=self.icon,
                expire_ms=self.timeout_ms,
                address=self.address,
            )
        except NotifyError as exc:
            log.info("notification not shown: %s", exc)
        finally:
            relay.post(self, "_ended")

    def _clicked(self, task) -> None:
        self.clicked.emit(task)

    def _ended(self) -> None:
        with self._lock:
            self.live = [thread for thread in self.live if thread.is_alive()]

    def close(self) -> None:
        """The window closes: its notifications' threads leave the bus."""
        self._stop.set()
        for thread in list(self.live):
            thread.join(2.0)
        self.live.clear()
