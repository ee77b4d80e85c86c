"""Recent workflow files and the last session, kept in the window's settings."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

RECENT_KEY = "recent/files"
LAST_KEY = "session/lastFile"
MAX_RECENT = 10


class RecentFiles:
    """The workflows opened lately, newest first, at most ``MAX_RECENT``, each once."""

    def __init__(self, settings: QSettings):
        self.settings = settings

    def files(self, existing_only: bool = True) -> list[Path]:
        value = self.settings.value(RECENT_KEY) or []
        if isinstance(value, str):  # QSettings gives a one-item list back as a string
            value = [value]
        paths = [Path(text) for text in value if text]
        return [p for p in paths if p.is_file()] if existing_only else paths

    def add(self, path) -> None:
        """``path`` was opened: first in the list, and the last session's file."""
        path = Path(path).expanduser().resolve()
        rest = [p for p in self.files(existing_only=False) if p != path]
        self.settings.setValue(RECENT_KEY, [str(p) for p in [path, *rest][:MAX_RECENT]])
        self.settings.setValue(LAST_KEY, str(path))
        self.settings.sync()

    def remove(self, path) -> None:
        path = Path(path)
        kept = [str(p) for p in self.files(existing_only=False) if p != path]
        self.settings.setValue(RECENT_KEY, kept)
        self.settings.sync()

    def last(self) -> Path | None:
        """The workflow open when Taskloom last closed, if its file is still there."""
        text = self.settings.value(LAST_KEY)
        if not text or not Path(str(text)).is_file():
            return None
        return Path(str(text))
