"""One collapsed group: its name, how many tasks it holds, and a bar of their states.

Built from Qt's C++ items only (no Python ``paint()``), the size of a task node so
the layered layout places groups and tasks alike. The bar has one segment per state
present, in the order of a task's life, each as wide as its share of the tasks; the
count line repeats the states with their glyphs, so colour is never the only cue.
"""

from __future__ import annotations

from functools import cache

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsRectItem, QGraphicsSimpleTextItem

from taskloom.engine import TaskState

from ..style import STATE_GLYPHS, state_colour
from .groups import group_name
from .items import ROLE_ID, ROLE_KIND
from .layout import NODE_HEIGHT, NODE_WIDTH

ROLE_GROUP = 2  # item.data(ROLE_GROUP) -> the group's name
BAR_HEIGHT = 6.0
# Below this zoom the name and count are drawn at screen size over the card (a map's
# label): a fitted view of many groups stays readable.
LABEL_ZOOM = 0.75
BAR_INSET = 10.0
# The order of a task's life: finished states last, failures where the eye lands first.
BAR_ORDER = (
    TaskState.FAILED,
    TaskState.RUNNING,
    TaskState.RETRY_WAIT,
    TaskState.READY,
    TaskState.SCHEDULED,
    TaskState.PENDING,
    TaskState.SKIPPED,
    TaskState.CANCELLED,
    TaskState.SUCCEEDED,
)


@cache
def _group_path() -> QPainterPath:
    """A card with a second card peeking out behind it: a stack of tasks."""
    path = QPainterPath()
    path.addRoundedRect(QRectF(0, 0, NODE_WIDTH, NODE_HEIGHT), 8.0, 8.0)
    return path


class GroupItem(QGraphicsPathItem):
    def __init__(self, rep: str, base: QColor, ink: QColor):
        super().__init__(_group_path())
        self.rep = rep
        self.group_name = group_name(rep)  # not .group: QGraphicsItem.group() is Qt's
        self.setData(ROLE_ID, None)
        self.setData(ROLE_KIND, "group")
        self.setData(ROLE_GROUP, self.group_name)
        self.setZValue(1)
        self.counts: dict[TaskState, int] = {}
        self.members: list[str] | None = None  # the shown tasks last counted
        self.shadow = QGraphicsPathItem(_group_path(), self)  # the stack's second card
        self.shadow.setPos(4, 4)
        self.shadow.setFlag(QGraphicsPathItem.GraphicsItemFlag.ItemStacksBehindParent)
        name_font = QFont()
        name_font.setPointSizeF(10)
        name_font.setBold(True)
        self.name_text = QGraphicsSimpleTextItem(self)
        self.name_text.setFont(name_font)
        self.name_text.setPos(10, 4)
        count_font = QFont()
        count_font.setPointSizeF(8)
        self._count_font = count_font
        self.count_text = QGraphicsSimpleTextItem(self)
        self.count_text.setFont(count_font)
        self.count_text.setPos(10, 21)
        self.segments: dict[TaskState, QGraphicsRectItem] = {}
        self._name_font = name_font
        self.zoom = 1.0
        self.set_colours(base, ink)

    def set_colours(self, base: QColor, ink: QColor) -> None:
        fill = QColor(base).darker(106) if base.lightness() > 128 else QColor(base).lighter(140)
        pen = QPen(ink, 1.6)
        pen.setCosmetic(True)
        self.setBrush(QBrush(fill))
        self.setPen(pen)
        self.shadow.setBrush(QBrush(fill.darker(112)))
        self.shadow.setPen(pen)
        self.name_text.setBrush(QBrush(ink))
        self.count_text.setBrush(QBrush(ink))
        self._dark = base.lightness() < 128
        self._show_counts()

    def set_counts(self, counts: dict[TaskState, int]) -> None:
        """How many of the group's shown tasks are in each state."""
        counts = {s: n for s, n in counts.items() if n}
        if counts != self.counts:
            self.counts = counts
            self._show_counts()

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def set_zoom(self, zoom: float) -> None:
        """Zoomed out, the label keeps its screen size (and says how many tasks)."""
        if abs(zoom - self.zoom) > 1e-3:
            self.zoom = zoom
            self._show_counts()

    def _show_name(self) -> None:
        small = self.zoom < LABEL_ZOOM
        # Scaled by 1/zoom rather than ignoring transformations: the overview and an
        # export draw the label as the view does, not at full size on a tiny picture.
        self.name_text.setScale(1.0 / self.zoom if small else 1.0)
        self.count_text.setVisible(not small)
        metrics = QFontMetrics(self._name_font)
        if small:  # as wide as the card and the gap after it, on screen; the count kept
            count = f" {self.total:,}"
            width = (NODE_WIDTH + 60) * self.zoom - metrics.horizontalAdvance(count)
            name = metrics.elidedText(self.group_name, Qt.TextElideMode.ElideRight, int(width))
            self.name_text.setText(name + count)
            self.name_text.setPos(4, 1)
        else:
            self.name_text.setText(
                metrics.elidedText(
                    f"▣ {self.group_name}", Qt.TextElideMode.ElideMiddle, int(NODE_WIDTH - 20)
                )
            )
            self.name_text.setPos(10, 4)

    def _show_counts(self) -> None:
        self._show_name()
        total = self.total
        parts = [f"{total:,} tasks"]
        parts += [f"{STATE_GLYPHS[s]}{self.counts[s]:,}" for s in BAR_ORDER if s in self.counts]
        text = " ".join(parts)
        self.count_text.setText(
            QFontMetrics(self._count_font).elidedText(
                text, Qt.TextElideMode.ElideRight, int(NODE_WIDTH - 20)
            )
        )
        self.setToolTip(
            f"<b>{self.group_name}</b>: {total:,} tasks<br>"
            + "<br>".join(
                f"{STATE_GLYPHS[s]} {s.name.lower()}: {self.counts[s]:,}"
                for s in BAR_ORDER
                if s in self.counts
            )
            + "<br>Double-click or + to expand"
        )
        width = NODE_WIDTH - 2 * BAR_INSET
        x = BAR_INSET
        # Zoomed out, the bar grows to a third of the card and a state holds at least
        # 3 pixels: a single failure among thousands stays visible.
        zoom = min(self.zoom, 1.0)
        height = min(NODE_HEIGHT / 3, max(BAR_HEIGHT, 5.0 / zoom))
        minimum = max(2.0, 3.0 / zoom)
        top = NODE_HEIGHT - height - min(5.0, 2.0 / zoom)
        for state in BAR_ORDER:
            count = self.counts.get(state, 0)
            segment = self.segments.get(state)
            if not count or not total:
                if segment is not None:
                    segment.setVisible(False)
                continue
            if segment is None:
                segment = self.segments[state] = QGraphicsRectItem(self)
                segment.setPen(Qt.PenStyle.NoPen)
            segment.setBrush(QBrush(state_colour(state, self._dark)))
            share = max(minimum, width * count / total)
            segment.setRect(QRectF(x, top, max(0.0, min(share, BAR_INSET + width - x)), height))
            segment.setVisible(True)
            x += share

    def output_point(self) -> QPointF:
        return self.pos() + QPointF(NODE_WIDTH, NODE_HEIGHT / 2)

    def input_point(self) -> QPointF:
        return self.pos() + QPointF(0, NODE_HEIGHT / 2)
