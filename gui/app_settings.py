"""Where the window keeps its settings: one lower-case name, as the data directory.

Settings used to live in ``~/.config/Taskloom/Taskloom.conf`` while the data lived in
``~/.local/share/taskloom``; now both are ``taskloom``. The old file is copied over
once, so a person's geometry and recent files survive the rename.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings

APP_NAME = "taskloom"  # the config and data folders' name (platformdirs uses it too)
DISPLAY_NAME = "Taskloom"
OLD_NAME = "Taskloom"  # before the folders had one case


def user_settings() -> QSettings:
    """The person's settings (``<user config dir>/taskloom/taskloom.conf`` on Linux)."""
    settings = QSettings(APP_NAME, APP_NAME)
    if not settings.allKeys():
        _copy_old(settings)
    return settings


def _copy_old(settings: QSettings) -> None:
    old = QSettings(OLD_NAME, OLD_NAME)
    if old.fileName() == settings.fileName():  # a case-insensitive file system
        return
    keys = old.allKeys()
    for key in keys:
        settings.setValue(key, old.value(key))
    if keys:
        settings.sync()
