"""The graph scene: node items placed by the layered layout, edges in one path.

Structure changes (tasks or edges added/removed) re-lay out; state changes only
recolour. Large graphs are laid out on a worker thread so the window never
stalls; the result comes back by a queued signal.
"""

from __future__ import annotations

import math
import threading

import networkx as nx
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QPainterPath, QPalette
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsScene

from engine import TaskInfo, TaskState

from .items import NodeItem, add_edge, cosmetic_pen, edge_curve, routed_curve
from .layout import NODE_HEIGHT, NODE_WIDTH, Layout, LayoutCache, compute_layout, structure_key

NOT_STARTED = frozenset({TaskState.PENDING, TaskState.SCHEDULED, TaskState.READY})
BACKGROUND_LAYOUT_NODES = 400  # above this, lay out off the GUI thread
MARGIN = 60.0
ACCEPT_COLOUR = QColor("#009E73")
REFUSE_COLOUR = QColor("#D55E00")
SELECT_COLOUR = QColor("#1F6FEB")


class GraphScene(QGraphicsScene):
    layoutApplied = Signal()
    _layoutReady = Signal(object, object)  # (structure key, Layout), from the worker thread

    def __init__(self, parent=None):
        super().__init__(parent)
        # Keep the default BSP index: item lookups under the mouse stay O(log n).
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)
        self.nodes: dict[str, NodeItem] = {}
        self.tasks: dict[str, TaskInfo] = {}
        self.graph = nx.DiGraph()  # upstream -> downstream, mirrors the engine's edges
        self.cache = LayoutCache()
        self.layout: Layout | None = None
        self._wanted_key: tuple | None = None
        self._detail = True
        self.selected: list[str] = []
        self.selected_edge: tuple[str, str] | None = None
        self._layoutReady.connect(self._on_layout_ready, Qt.ConnectionType.QueuedConnection)

        self.edges_item = QGraphicsPathItem()
        self.edges_item.setZValue(0)
        self.heads_item = QGraphicsPathItem()
        self.heads_item.setZValue(0.5)
        self.heads_item.setPen(Qt.PenStyle.NoPen)
        self.edge_highlight = QGraphicsPathItem()  # the selected edge, drawn over the rest
        self.edge_highlight.setZValue(0.8)
        self.halo = QGraphicsPathItem()  # rings around selected nodes
        self.halo.setZValue(0.9)
        self.halo.setBrush(Qt.BrushStyle.NoBrush)
        self.target_ring = QGraphicsPathItem()  # green/red ring on a drag-to-connect target
        self.target_ring.setZValue(2)
        self.cycle_path = QGraphicsPathItem()  # the cycle a refused edge would close
        self.cycle_path.setZValue(2)
        self.rubber = QGraphicsPathItem()  # the arrow that follows the mouse while connecting
        self.rubber.setZValue(3)
        for item in (
            self.edges_item,
            self.heads_item,
            self.edge_highlight,
            self.halo,
            self.target_ring,
            self.cycle_path,
            self.rubber,
        ):
            self.addItem(item)
        self.apply_palette()

    # -- theme ------------------------------------------------------------------
    def apply_palette(self, palette: QPalette | None = None) -> None:
        palette = palette or QGuiApplication.palette()
        self.base = palette.color(QPalette.ColorRole.Base)
        self.setBackgroundBrush(QBrush(self.base))
        ink = palette.color(QPalette.ColorRole.Text)
        edge = QColor(ink)
        edge.setAlpha(150)
        # Exactly 1 px: a 1.2 px cosmetic pen made a 2,000-node repaint 20x slower (432 ms).
        self.edges_item.setPen(cosmetic_pen(edge, 1.0))
        self.heads_item.setBrush(QBrush(edge))
        self.edge_highlight.setPen(cosmetic_pen(SELECT_COLOUR, 3.0))
        self.halo.setPen(cosmetic_pen(SELECT_COLOUR, 3.0))
        for tid, node in self.nodes.items():
            node.set_info(self.tasks[tid], self.base)

    # -- structure ----------------------------------------------------------------
    def set_tasks(self, tasks: dict[str, TaskInfo]) -> None:
        """Show exactly these tasks; lays out again only if the structure changed."""
        self.tasks = dict(tasks)
        edges = [(dep, t.id) for t in tasks.values() for dep in t.deps if dep in tasks]
        graph = nx.DiGraph()
        graph.add_nodes_from(tasks)
        graph.add_edges_from(edges)
        self.graph = graph
        for tid in [t for t in self.nodes if t not in tasks]:
            self.removeItem(self.nodes.pop(tid))
        for tid, info in tasks.items():
            node = self.nodes.get(tid)
            if node is None:
                node = self.nodes[tid] = NodeItem(tid)
                node.set_detail(self._detail)
                node.setVisible(False)  # until the layout places it
                self.addItem(node)
            node.set_info(info, self.base)
        self.selected = [t for t in self.selected if t in tasks]
        if self.selected_edge and not graph.has_edge(*self.selected_edge):
            self.selected_edge = None
        key = structure_key(tasks, edges)
        self._wanted_key = key
        cached = self.cache.get(key)
        if cached is not None:
            self._apply_layout(cached)
        elif len(tasks) < BACKGROUND_LAYOUT_NODES:
            layout = compute_layout(tasks, edges)
            self.cache.put(key, layout)
            self._apply_layout(layout)
        else:
            threading.Thread(
                target=self._layout_in_background, args=(key, list(tasks), edges), daemon=True
            ).start()

    def _layout_in_background(self, key, nodes, edges) -> None:
        layout = compute_layout(nodes, edges)
        self.cache.put(key, layout)
        try:
            self._layoutReady.emit(key, layout)
        except RuntimeError:  # the window closed while we were working
            pass

    def _on_layout_ready(self, key, layout) -> None:
        if key == self._wanted_key:  # a newer structure may have been requested meanwhile
            self._apply_layout(layout)

    def _apply_layout(self, layout: Layout) -> None:
        self.layout = layout
        # Explicit scene rect first: otherwise Qt grows the rect (and re-indexes) per move.
        self.setSceneRect(
            QRectF(-MARGIN, -MARGIN, layout.width + 2 * MARGIN, layout.height + 2 * MARGIN)
        )
        # Moving thousands of items one by one re-balances the BSP tree each time
        # (5,000 nodes took over 20 s); switch the index off for the bulk move and
        # rebuild it once.
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.NoIndex)
        for tid, node in self.nodes.items():
            x, y = layout.positions.get(tid, (0.0, 0.0))
            node.setPos(x, y)
            node.setVisible(True)
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)
        self._rebuild_edges()
        self._update_halo()
        self.layoutApplied.emit()

    def _rebuild_edges(self) -> None:
        edges, heads = QPainterPath(), QPainterPath()
        routes = self.layout.routes if self.layout is not None else {}
        for up, down in self.graph.edges:
            add_edge(
                edges,
                heads,
                self.nodes[up].output_point(),
                self.nodes[down].input_point(),
                routes.get((up, down), ()),
            )
        self.edges_item.setPath(edges)
        self.heads_item.setPath(heads)
        self._update_edge_highlight()

    # -- state ------------------------------------------------------------------
    def update_tasks(self, changed: dict[str, TaskInfo]) -> bool:
        """Recolour changed tasks. Returns True if the structure changed (caller re-lays out)."""
        structural = False
        for tid, info in changed.items():
            node = self.nodes.get(tid)
            old = self.tasks.get(tid)
            if node is None or old is None or old.deps != info.deps:
                structural = True
            self.tasks[tid] = info
            if node is not None:
                node.set_info(info, self.base)
        return structural

    # -- level of detail ---------------------------------------------------------
    def set_detail(self, detail: bool) -> None:
        if detail != self._detail:
            self._detail = detail
            self.heads_item.setVisible(detail)  # specks when zoomed out, and costly to fill
            for node in self.nodes.values():
                node.set_detail(detail)

    # -- selection ---------------------------------------------------------------
    def set_selection(self, ids: list[str]) -> None:
        self.selected = [t for t in ids if t in self.nodes]
        self._update_halo()

    def _update_halo(self) -> None:
        path = QPainterPath()
        for tid in self.selected:
            node = self.nodes[tid]
            path.addRoundedRect(
                QRectF(
                    node.pos() - QPointF(4, 4),
                    QPointF(4, 4) + node.pos() + QPointF(NODE_WIDTH, NODE_HEIGHT),
                ),
                11,
                11,
            )
        self.halo.setPath(path)

    def select_edge(self, edge: tuple[str, str] | None) -> None:
        self.selected_edge = edge
        self._update_edge_highlight()

    def _update_edge_highlight(self) -> None:
        path = QPainterPath()
        if self.selected_edge is not None and self.graph.has_edge(*self.selected_edge):
            path = self.edge_path(*self.selected_edge)
        self.edge_highlight.setPath(path)

    def edge_at(self, point: QPointF, tolerance: float) -> tuple[str, str] | None:
        """The edge whose curve passes within ``tolerance`` scene units of ``point``."""
        best, best_distance = None, tolerance
        px, py = point.x(), point.y()
        routes = self.layout.routes if self.layout is not None else {}
        for up, down in self.graph.edges:
            # Cheap box test on the end points first: a click must not build 5,000 curves.
            a, b = self.nodes[up].output_point(), self.nodes[down].input_point()
            ys = [a.y(), b.y(), *(y for _x, y in routes.get((up, down), ()))]
            if not (
                a.x() - tolerance <= px <= b.x() + tolerance
                and min(ys) - tolerance <= py <= max(ys) + tolerance
            ):
                continue
            curve = self.edge_path(up, down)
            for i in range(25):
                p = curve.pointAtPercent(i / 24)
                distance = math.hypot(p.x() - px, p.y() - py)
                if distance < best_distance:
                    best, best_distance = (up, down), distance
        return best

    def edge_path(self, up: str, down: str) -> QPainterPath:
        """The curve of one edge as drawn (through its route, if it skips layers)."""
        via = self.layout.routes.get((up, down), ()) if self.layout is not None else ()
        return routed_curve(self.nodes[up].output_point(), self.nodes[down].input_point(), via)

    def node_at(self, point: QPointF) -> str | None:
        for item in self.items(point):
            tid = item.data(0)
            if tid is not None and tid in self.nodes:
                return tid
        return None

    # -- drag-to-connect feedback --------------------------------------------------
    def show_rubber(self, start: QPointF | None, end: QPointF | None, ok: bool | None) -> None:
        if start is None or end is None:
            self.rubber.setPath(QPainterPath())
            return
        colour = QColor(SELECT_COLOUR if ok is None else ACCEPT_COLOUR if ok else REFUSE_COLOUR)
        self.rubber.setPen(cosmetic_pen(colour, 2.0, Qt.PenStyle.DashLine))
        self.rubber.setBrush(Qt.BrushStyle.NoBrush)
        edges, heads = QPainterPath(), QPainterPath()
        add_edge(edges, heads, start, end)
        edges.addPath(heads)
        self.rubber.setPath(edges)

    def show_target(self, tid: str | None, ok: bool) -> None:
        path = QPainterPath()
        if tid is not None:
            node = self.nodes[tid]
            path.addRoundedRect(node.sceneBoundingRect().adjusted(-5, -5, 5, 5), 12, 12)
        self.target_ring.setPen(cosmetic_pen(ACCEPT_COLOUR if ok else REFUSE_COLOUR, 3.0))
        self.target_ring.setPath(path)

    def show_cycle(self, cycle: list[str] | tuple[str, ...]) -> None:
        """Draw the would-be cycle (ids in order, first repeated at the end) in red."""
        path = QPainterPath()
        for up, down in zip(cycle, cycle[1:], strict=False):
            if up in self.nodes and down in self.nodes:
                if self.graph.has_edge(up, down):
                    path.addPath(self.edge_path(up, down))
                else:  # the refused edge itself
                    path.addPath(
                        edge_curve(self.nodes[up].output_point(), self.nodes[down].input_point())
                    )
        for tid in set(cycle):
            if tid in self.nodes:
                path.addRoundedRect(
                    self.nodes[tid].sceneBoundingRect().adjusted(-3, -3, 3, 3), 10, 10
                )
        self.cycle_path.setPen(cosmetic_pen(REFUSE_COLOUR, 2.5, Qt.PenStyle.DashLine))
        self.cycle_path.setPath(path)

    def clear_feedback(self) -> None:
        self.show_rubber(None, None, None)
        self.target_ring.setPath(QPainterPath())
        self.cycle_path.setPath(QPainterPath())

    def has_started(self, tid: str) -> bool:
        """A one-shot task past PENDING/SCHEDULED/READY can no longer gain a dependency."""
        info = self.tasks.get(tid)
        return info is not None and not info.recurring and info.state not in NOT_STARTED

    def would_close_cycle(self, upstream: str, downstream: str) -> list[str] | None:
        """If making ``downstream`` depend on ``upstream`` closes a cycle, return it."""
        if upstream == downstream:
            return [upstream, upstream]
        try:
            path = nx.shortest_path(self.graph, downstream, upstream)
        except (nx.NetworkXNoPath, nx.NodeNotFound):
            return None
        return [*path, downstream]
