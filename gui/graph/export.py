"""Export the graph as a picture: SVG (vector, text kept as text) or PNG."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QImage, QPainter

from .scene import GraphScene

MAX_PNG_SIDE = 16000  # a 5,000-node graph at full size would be a gigapixel


def png_size(scene: GraphScene) -> QSize:
    """Full size (1 px per scene unit), scaled down to fit MAX_PNG_SIDE."""
    rect = scene.sceneRect()
    scale = min(1.0, MAX_PNG_SIDE / max(rect.width(), rect.height(), 1.0))
    return QSize(max(1, round(rect.width() * scale)), max(1, round(rect.height() * scale)))


def export_graph(scene: GraphScene, path) -> Path:
    """Write the whole graph (not just the visible part) to ``path``; .svg or .png."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".svg", ".png"):
        raise ValueError(f"export as .png or .svg, not “{path.suffix or path.name}”")
    detail = scene.detail
    scene.set_detail(True)  # names and arrows even when the view is zoomed out
    scene.halo.setVisible(False)  # the selection is the window's, not the graph's
    try:
        if suffix == ".svg":
            _svg(scene, path)
        else:
            _png(scene, path)
    finally:
        scene.halo.setVisible(True)
        scene.set_detail(detail)
    return path


def _render(scene: GraphScene, painter: QPainter, target: QRectF) -> None:
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
    painter.fillRect(target, scene.backgroundBrush())
    scene.render(painter, target, scene.sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)


def _svg(scene: GraphScene, path: Path) -> None:
    from PySide6.QtSvg import QSvgGenerator  # only needed here

    rect = scene.sceneRect()
    generator = QSvgGenerator()
    generator.setFileName(str(path))
    generator.setSize(QSize(round(rect.width()), round(rect.height())))
    generator.setViewBox(QRectF(0, 0, rect.width(), rect.height()))
    generator.setTitle("Taskloom graph")
    painter = QPainter()
    if not painter.begin(generator):
        raise OSError(f"cannot write {path}")
    try:
        _render(scene, painter, QRectF(0, 0, rect.width(), rect.height()))
    finally:
        painter.end()
    if not path.exists():
        raise OSError(f"cannot write {path}")


def _png(scene: GraphScene, path: Path) -> None:
    size = png_size(scene)
    image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(scene.backgroundBrush().color())
    painter = QPainter(image)
    try:
        _render(scene, painter, QRectF(0, 0, size.width(), size.height()))
    finally:
        painter.end()
    if not image.save(str(path), "PNG"):  # type: ignore[call-overload]  # Qt stubs: bytes
        raise OSError(f"cannot write {path}")
