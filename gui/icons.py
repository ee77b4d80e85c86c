"""Toolbar icons: the SVGs in resources/icons.

Each icon carries its own disabled look (the picture at a third of its opacity):
the style's generated one barely differs from the normal picture in the dark
theme, so a disabled action looked enabled.
"""

from __future__ import annotations

from functools import cache

from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon, QPainter, QPixmap

from taskloom import resources_dir

SIZES = (16, 20, 24, 32, 48)
DISABLED_OPACITY = 0.35


@cache
def icon(name: str) -> QIcon:
    path = resources_dir() / "icons" / f"{name}.svg"
    if not path.exists():
        return QIcon()
    source = QIcon(str(path))
    result = QIcon()
    for size in SIZES:
        picture = source.pixmap(size, size)
        result.addPixmap(picture, QIcon.Mode.Normal)
        result.addPixmap(_faded(picture), QIcon.Mode.Disabled)
    return result


def _faded(picture: QPixmap) -> QPixmap:
    faded = QPixmap(picture.size())
    faded.setDevicePixelRatio(picture.devicePixelRatio())
    faded.fill(Qt.GlobalColor.transparent)
    painter = QPainter(faded)
    painter.setOpacity(DISABLED_OPACITY)
    painter.drawPixmap(0, 0, picture)
    painter.end()
    return faded
