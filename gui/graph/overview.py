"""A small overview of the whole graph in the view's corner, shown when zoomed in.

It is a picture of the scene, re-rendered at most once a second (rendering a
5,000-node scene costs ~150 ms, so it must not follow every recolour), with the
visible part outlined. Click or drag on it to move there.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QPainter, QPalette, QPen, QPixmap
from PySide6.QtWidgets import QFrame

SIZE = QSize(220, 140)


class Overview(QFrame):
    def __init__(self, view):
        super().__init__(view)
        self.setObjectName("graphOverview")
        self.view = view
        self.scene = view.graph_scene
        self.setFixedSize(SIZE)
        self.setFrameShape(QFrame.Shape.Box)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Overview: click to move there")
        self._picture: QPixmap | None = None
        self._target = QRectF()  # where the scene is drawn inside the widget
        self._dirty = True
        # A new picture at most once a second, and only after the scene changed.
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(1000)
        self._timer.timeout.connect(self._render_if_dirty)
        self.scene.changed.connect(self._mark_dirty)
        view.horizontalScrollBar().valueChanged.connect(self.update)
        view.verticalScrollBar().valueChanged.connect(self.update)
        self.hide()

    def _mark_dirty(self, *_):
        self._dirty = True
        if self.isVisible() and not self._timer.isActive():
            self._timer.start()

    def _render_if_dirty(self) -> None:
        if self._dirty and self.isVisible():
            self.render_now()

    def render_now(self) -> None:
        self._dirty = False
        rect = self.scene.sceneRect()
        if rect.isEmpty():
            return
        scale = min(SIZE.width() / rect.width(), SIZE.height() / rect.height())
        width, height = rect.width() * scale, rect.height() * scale
        self._target = QRectF(
            (SIZE.width() - width) / 2, (SIZE.height() - height) / 2, width, height
        )
        picture = QPixmap(SIZE)
        picture.fill(self.palette().color(QPalette.ColorRole.Base))
        painter = QPainter(picture)
        self.scene.render(painter, self._target, rect)
        painter.end()
        self._picture = picture
        self.update()

    def place(self) -> None:
        """Bottom-right corner of the view; visible only when the graph does not fit."""
        viewport = self.view.viewport().geometry()
        self.move(viewport.right() - SIZE.width() - 8, viewport.bottom() - SIZE.height() - 8)
        visible = self.view.visible_scene_rect()
        rect = self.scene.sceneRect()
        fits = visible.contains(rect.adjusted(20, 20, -20, -20))
        # In a small graph pane the overview would hide the graph it maps: it shows
        # only where it takes at most a quarter of the pane (half of each side).
        roomy = viewport.width() > 2 * SIZE.width() and viewport.height() > 2 * SIZE.height()
        wanted = bool(self.scene.nodes) and not fits and roomy
        if wanted and not self.isVisible():
            self.show()
            if getattr(self.scene, "virtual", False):
                # A big graph's picture (100 ms and more) in a pass of its own: not in
                # the slice that zoomed in (Find centring a task).
                self._dirty = True
                QTimer.singleShot(0, self, self._render_if_dirty)
            else:
                self.render_now()
        elif not wanted:
            self.hide()
        self.update()

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        if self._picture is not None:
            painter.drawPixmap(0, 0, self._picture)
        rect = self.scene.sceneRect()
        if not rect.isEmpty() and not self._target.isEmpty():
            visible = self.view.visible_scene_rect().intersected(rect)
            sx = self._target.width() / rect.width()
            sy = self._target.height() / rect.height()
            frame = QRectF(
                self._target.x() + (visible.x() - rect.x()) * sx,
                self._target.y() + (visible.y() - rect.y()) * sy,
                visible.width() * sx,
                visible.height() * sy,
            )
            highlight = self.palette().color(QPalette.ColorRole.Highlight)
            fill = QColor(highlight)
            fill.setAlpha(40)
            painter.fillRect(frame, fill)
            painter.setPen(QPen(highlight, 1.5))
            painter.drawRect(frame)
        painter.end()
        super().paintEvent(event)

    def scene_point(self, pos: QPointF) -> QPointF:
        rect = self.scene.sceneRect()
        x = rect.x() + (pos.x() - self._target.x()) / self._target.width() * rect.width()
        y = rect.y() + (pos.y() - self._target.y()) / self._target.height() * rect.height()
        return QPointF(x, y)

    def mousePressEvent(self, event) -> None:
        if not self._target.isEmpty():
            self.view.centerOn(self.scene_point(event.position()))

    def mouseMoveEvent(self, event) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton and not self._target.isEmpty():
            self.view.centerOn(self.scene_point(event.position()))
