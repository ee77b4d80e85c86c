"""Taskloom's PySide6 window. Talks to the engine only through its public API."""

from __future__ import annotations

__all__ = ["MainWindow", "EngineBridge"]


def __getattr__(name):
    # Lazy so that `import gui` stays cheap and never creates Qt objects by itself.
    if name == "MainWindow":
        from .main_window import MainWindow

        return MainWindow
    if name == "EngineBridge":
        from .bridge import EngineBridge

        return EngineBridge
    raise AttributeError(name)
