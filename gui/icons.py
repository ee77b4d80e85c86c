"""Toolbar icons: the SVGs in resources/icons."""

from __future__ import annotations

from functools import cache

from PySide6.QtGui import QIcon

from taskloom import resources_dir


@cache
def icon(name: str) -> QIcon:
    path = resources_dir() / "icons" / f"{name}.svg"
    return QIcon(str(path)) if path.exists() else QIcon()
