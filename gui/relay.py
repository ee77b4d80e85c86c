"""Answers from worker threads to Qt objects that may be gone by the time they arrive.

A worker that emits a signal of the object it answers (a scene, a forecaster) races
the GUI thread deleting that object when its window closes: the emit then touches
freed memory, and the process crashes later, somewhere else. Workers post to this
relay instead, which lives as long as the application; on the GUI thread it calls
the named method only if the object is still alive.
"""

from __future__ import annotations

import weakref

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, Signal


class _Relay(QObject):
    posted = Signal(object, str, tuple)  # (weak reference to the target, method, arguments)

    def __init__(self) -> None:
        super().__init__(QCoreApplication.instance())
        self.posted.connect(self._deliver)  # queued: posted from other threads

    def _deliver(self, target_ref, method: str, args: tuple) -> None:
        target = target_ref()
        if target is not None and shiboken6.isValid(target):
            getattr(target, method)(*args)


_relay: _Relay | None = None


def install() -> None:
    """On the GUI thread, before any worker posts (each user calls it when made)."""
    global _relay
    if _relay is None or not shiboken6.isValid(_relay):
        _relay = _Relay()


def post(target: QObject, method: str, *args) -> None:
    """From any thread: call ``target.method(*args)`` on the GUI thread, if ``target``
    is still alive then."""
    relay = _relay
    if relay is not None and shiboken6.isValid(relay):
        relay.posted.emit(weakref.ref(target), method, args)
