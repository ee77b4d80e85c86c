"""Scene items built only from Qt's C++ item classes.

No Python ``paint()`` overrides: a Python paint holds the GIL on every repaint
and halved worker throughput in our measurements. A node is a rounded-rect
``QGraphicsPathItem`` with child text items; all edges are one path item.
"""

from __future__ import annotations

from functools import cache

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QPainterPath, QPen
from PySide6.QtWidgets import (
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsSimpleTextItem,
)

from taskloom.engine import TaskInfo, TaskState

from ..style import (
    PAUSED_GLYPH,
    RECURRING_MARK,
    state_colour,
    state_outline,
    state_words,
    text_colour_on,
)
from .layout import NODE_HEIGHT, NODE_WIDTH

ROLE_ID = 0  # item.data(ROLE_ID) -> task id
ROLE_KIND = 1  # item.data(ROLE_KIND) -> "node" or "port"
PORT_RADIUS = 6.0
ARROW_LENGTH = 9.0
ARROW_HALF_WIDTH = 4.5


@cache
def _card_path() -> QPainterPath:
    """One shared outline for every node (QPainterPath is implicitly shared)."""
    path = QPainterPath()
    path.addRoundedRect(QRectF(0, 0, NODE_WIDTH, NODE_HEIGHT), 8.0, 8.0)
    return path


class NodeItem(QGraphicsPathItem):
    """One task: a coloured card with its name, state glyph, attempts and a recurring mark."""

    _name_font: QFont | None = None
    _status_font: QFont | None = None

    def __init__(self, task_id: str):
        super().__init__(_card_path())
        self.task_id = task_id
        self.info: TaskInfo | None = None
        self.setData(ROLE_ID, task_id)
        self.setData(ROLE_KIND, "node")
        self.setZValue(1)
        self.setCacheMode(QGraphicsItem.CacheMode.NoCache)
        if NodeItem._name_font is None:
            NodeItem._name_font = QFont()
            NodeItem._name_font.setPointSizeF(10)
            NodeItem._name_font.setBold(True)
            NodeItem._status_font = QFont()
            NodeItem._status_font.setPointSizeF(8.5)
        assert NodeItem._name_font is not None and NodeItem._status_font is not None
        self.name_text = QGraphicsSimpleTextItem(self)
        self.name_text.setFont(NodeItem._name_font)
        self.name_text.setPos(12, 6)
        self.status_text = QGraphicsSimpleTextItem(self)
        self.status_text.setFont(NodeItem._status_font)
        self.status_text.setPos(12, 26)
        self.port = QGraphicsEllipseItem(
            QRectF(-PORT_RADIUS, -PORT_RADIUS, 2 * PORT_RADIUS, 2 * PORT_RADIUS), self
        )
        self.port.setPos(NODE_WIDTH, NODE_HEIGHT / 2)
        self.port.setData(ROLE_ID, task_id)
        self.port.setData(ROLE_KIND, "port")
        self.port.setToolTip("Drag to another task to make it depend on this one")
        self.port.setCursor(Qt.CursorShape.CrossCursor)
        self._detail = True
        self._base: QColor | None = None
        self.elapsed: float | None = None  # seconds the running attempt has taken so far

    def set_info(self, info: TaskInfo, base: QColor) -> None:
        """Recolour and relabel from a task snapshot (the only per-event work).

        Runs for every changed task in every batch, so it only touches what changed
        and reuses one brush/pen set per state.
        """
        old, self.info = self.info, info
        look = _look(info.state, base)
        if old is None or old.state is not info.state or self._base != base:
            self._base = base
            self.setBrush(look.brush)
            self.setPen(look.pen)
            self.name_text.setBrush(look.ink)
            self.status_text.setBrush(look.ink)
            self.port.setBrush(look.port_brush)
            self.port.setPen(look.port_pen)
        name = info.name or info.id
        if old is None or (old.name or old.id) != name:
            assert NodeItem._name_font is not None  # made with the first card
            self.name_text.setText(
                QFontMetrics(NodeItem._name_font).elidedText(
                    name, Qt.TextElideMode.ElideMiddle, int(NODE_WIDTH - 24)
                )
            )
        if info.state is not TaskState.RUNNING:
            self.elapsed = None
        self._show_status()
        self.setToolTip(_tooltip(info))

    def set_elapsed(self, seconds: float | None) -> None:
        """How long the running attempt has taken: shown after the state while running."""
        self.elapsed = seconds
        self._show_status()

    def _show_status(self) -> None:
        if self.info is None:
            return  # nothing to say before set_info
        held = getattr(self.scene(), "dispatcher_paused", False)
        status = _status_text(self.info, self.elapsed, held)
        if status != self.status_text.text():
            self.status_text.setText(status)

    def set_detail(self, detail: bool) -> None:
        """Level of detail: zoomed out, text is unreadable noise, so hide it."""
        if detail != self._detail:
            self._detail = detail
            self.name_text.setVisible(detail)
            self.status_text.setVisible(detail)
            self.port.setVisible(detail)

    def output_point(self) -> QPointF:
        return self.pos() + QPointF(NODE_WIDTH, NODE_HEIGHT / 2)

    def input_point(self) -> QPointF:
        return self.pos() + QPointF(0, NODE_HEIGHT / 2)


class _Look:
    """The brushes and pens of one state on one background (built once, shared)."""

    def __init__(self, state, base: QColor):
        dark = base.lightness() < 128
        fill = state_colour(state, dark)
        self.brush = QBrush(fill)
        self.pen = QPen(state_outline(state, dark), 1.0)
        self.pen.setCosmetic(True)
        self.ink = QBrush(text_colour_on(fill))
        self.port_brush = QBrush(base)
        self.port_pen = QPen(fill.darker(160), 1.5)


_looks: dict[tuple, _Look] = {}


def _look(state, base: QColor) -> _Look:
    key = (state, base.rgba())
    look = _looks.get(key)
    if look is None:
        look = _looks[key] = _Look(state, base)
    return look


def _status_text(info: TaskInfo, elapsed: float | None = None, held: bool = False) -> str:
    """The card's second line. A READY task that nothing will start (it, or the whole
    dispatcher, is paused) reads "paused" first: it waits for Resume, not a worker."""
    glyph, label = state_words(info)
    parts = [f"{glyph} {label}"]
    if info.state is TaskState.READY and (info.paused or held):
        parts = [f"{PAUSED_GLYPH} paused, {label}"]
    if elapsed is not None and info.state is TaskState.RUNNING:
        parts[0] += f" {format_elapsed(elapsed)}"
    if info.attempt:
        parts.append(f"#{info.attempt}")
    if info.recurring:
        parts.append(RECURRING_MARK)
    if info.paused and info.state is not TaskState.READY:
        parts.append(f"{PAUSED_GLYPH} paused")
    return "  ".join(parts)


def format_elapsed(seconds: float) -> str:
    """12s, 3m05s, 1h02m: short enough for a node's status line."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _tooltip(info: TaskInfo) -> str:
    lines = [f"<b>{info.name or info.id}</b>", f"state: {state_words(info)[1]}"]
    if info.attempt:
        lines.append(f"attempt: {info.attempt}")
    if info.deps:
        lines.append("after: " + ", ".join(info.deps))
    if info.error:
        lines.append(f"error: {info.error}")
    return "<br>".join(lines)


def edge_curve(start: QPointF, end: QPointF) -> QPainterPath:
    """An S-curve from an output port to just before an input (room for the arrow head)."""
    tip = QPointF(end.x() - ARROW_LENGTH, end.y())
    bend = max(30.0, abs(tip.x() - start.x()) / 2.0)
    path = QPainterPath(start)
    path.cubicTo(start + QPointF(bend, 0), tip - QPointF(bend, 0), tip)
    return path


def routed_curve(start: QPointF, end: QPointF, via=()) -> QPainterPath:
    """Like ``edge_curve``, but through the centres of reserved slots in skipped layers."""
    if not via:
        return edge_curve(start, end)
    path = QPainterPath(start)
    point = start
    for cx, cy in via:
        enter = QPointF(cx - NODE_WIDTH / 2, cy)
        bend = max(30.0, (enter.x() - point.x()) / 2.0)
        path.cubicTo(point + QPointF(bend, 0), enter - QPointF(bend, 0), enter)
        point = QPointF(cx + NODE_WIDTH / 2, cy)
        path.lineTo(point)
    tip = QPointF(end.x() - ARROW_LENGTH, end.y())
    bend = max(30.0, (tip.x() - point.x()) / 2.0)
    path.cubicTo(point + QPointF(bend, 0), tip - QPointF(bend, 0), tip)
    return path


BACK_EDGE_GAP = 14.0  # how far a back edge clears the ports and the nodes it goes round


def back_edge(start: QPointF, end: QPointF, clear_y: float) -> QPainterPath:
    """An edge from an output port back to an input port at its left, drawn round the
    nodes rather than through them: out to the right, along ``clear_y`` (above the
    nodes in between), and into the input from the left."""
    tip = QPointF(end.x() - ARROW_LENGTH, end.y())
    out_x = start.x() + BACK_EDGE_GAP
    in_x = tip.x() - BACK_EDGE_GAP
    path = QPainterPath(start)
    for point in (
        QPointF(out_x, start.y()),
        QPointF(out_x, clear_y),
        QPointF(in_x, clear_y),
        QPointF(in_x, tip.y()),
        tip,
    ):
        path.lineTo(point)
    return path


def add_edge(
    edges: QPainterPath, heads: QPainterPath, start: QPointF, end: QPointF, via=(), curve=None
) -> None:
    """Append one edge (``curve``, else the routed curve) and its arrow head to the paths."""
    edges.addPath(curve if curve is not None else routed_curve(start, end, via))
    head = QPainterPath(end)
    head.lineTo(end.x() - ARROW_LENGTH, end.y() - ARROW_HALF_WIDTH)
    head.lineTo(end.x() - ARROW_LENGTH, end.y() + ARROW_HALF_WIDTH)
    head.closeSubpath()
    heads.addPath(head)


def add_plain_edge(
    edges: QPainterPath, heads: QPainterPath, sx: float, sy: float, ex: float, ey: float
) -> None:
    """``add_edge`` for an edge with no route, written into the paths directly (no
    path per edge: a big graph has 100,000 of them)."""
    tip = ex - ARROW_LENGTH
    bend = max(30.0, abs(tip - sx) / 2.0)
    edges.moveTo(sx, sy)
    edges.cubicTo(sx + bend, sy, tip - bend, ey, tip, ey)
    heads.moveTo(ex, ey)
    heads.lineTo(tip, ey - ARROW_HALF_WIDTH)
    heads.lineTo(tip, ey + ARROW_HALF_WIDTH)
    heads.closeSubpath()


def cosmetic_pen(colour: QColor, width: float = 1.0, style=Qt.PenStyle.SolidLine) -> QPen:
    pen = QPen(colour, width, style)
    pen.setCosmetic(True)  # constant screen width at any zoom; much faster to stroke
    return pen
