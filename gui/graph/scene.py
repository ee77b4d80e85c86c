"""The graph scene: node items placed by the layered layout, edges in one path.

Structure changes (tasks or edges added/removed) re-lay out; state changes only
recolour. Large graphs are laid out on a worker thread so the window never
stalls; the result comes back by a queued signal.
"""

from __future__ import annotations

import math
import time

import networkx as nx
from PySide6.QtCore import QElapsedTimer, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QPainterPath, QPalette
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPathItem, QGraphicsScene

from taskloom.engine import Action, TaskInfo, TaskState

from .. import relay
from ..background import LatestWorker
from .bulk import BulkCards, NodeTable
from .grouped_scene import GroupedScene
from .groups import is_group_rep
from .items import (
    ARROW_LENGTH,
    BACK_EDGE_GAP,
    NodeItem,
    add_edge,
    add_plain_edge,
    back_edge,
    cosmetic_pen,
    edge_curve,
    routed_curve,
)
from .layout import (
    LAYER_GAP,
    NODE_HEIGHT,
    NODE_WIDTH,
    ROW_GAP,
    Layout,
    LayoutCache,
    compute_layout,
    structure_key,
)

BACKGROUND_LAYOUT_NODES = 400  # above this, lay out off the GUI thread
CHUNKED_NODES = 400  # above this many new nodes, create them in slices between events
SLICE_MS = 30  # longest time one slice of node creation may hold the GUI thread
# And at most this many nodes or edges per slice, whatever the clock says (a slice's
# size does not depend on how busy the machine is).
NODES_PER_SLICE = 200
EDGES_PER_SLICE = 2000
MOVES_PER_SLICE = 2000
CARDS_PER_SLICE = 2000  # bulk cards drawn per slice (bulk.py)
# Zero timers due together run in one pass of the event loop, and their slices add
# up: a slice that finds another ended less than this ago (seconds) waits a pass.
PASS_GAP = 0.003
MARGIN = 60.0
# Above this many tasks shown, cards are drawn in bulk and node items made only where
# needed (bulk.py); at most MADE_CAP made items are kept once out of sight.
VIRTUAL_ABOVE = 1000
MADE_CAP = 3000
KEEP_PLACES_UP_TO = 400  # above this, an edit lays the graph out again (placing is O(n^2))
# Above this many edges their path is cached as a picture: recolouring nodes never
# changes it, and stroking 10,000 curves made every idle repaint ~5x slower.
CACHED_EDGES = 1500
DEVICE_CACHE = QGraphicsItem.CacheMode.DeviceCoordinateCache
ACCEPT_COLOUR = QColor("#009E73")
REFUSE_COLOUR = QColor("#D55E00")
SELECT_COLOUR = QColor("#1F6FEB")
OUT_X, OUT_Y = NODE_WIDTH, NODE_HEIGHT / 2  # a card's output port, from its top-left corner
OUT = QPointF(OUT_X, OUT_Y)
IN = QPointF(0, NODE_HEIGHT / 2)


class GraphScene(GroupedScene, QGraphicsScene):
    layoutApplied = Signal()
    virtual_above = VIRTUAL_ABOVE  # tests lower it

    def __init__(self, parent=None):
        super().__init__(parent)
        # Keep the default BSP index: item lookups under the mouse stay O(log n).
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)
        self.nodes = NodeTable(self._make_node)
        self.virtual = False  # the view's cards are drawn in bulk (bulk.py)
        self.tasks: dict[str, TaskInfo] = {}
        self.graph = nx.DiGraph()  # upstream -> downstream, mirrors the engine's edges
        self._layout_worker = LatestWorker("taskloom-graph-layout")
        # The engine, asked whether a dragged edge could be added (None: no engine).
        self.scheduler = None
        self.cache = LayoutCache()
        self.layout: Layout | None = None
        self._wanted_key: tuple | None = None
        self._detail = True
        self.selected: list[str] = []
        self.selected_edge: tuple[str, str] | None = None
        # Positions a person dragged nodes to (top-left corner); the layout fills in the rest.
        self.pins: dict[str, tuple[float, float]] = {}
        # Where nodes stood before an edit changed the graph: an edit does not move
        # them (a full relayout made every node jump). Not saved; Re-layout drops them.
        self.kept: dict[str, tuple[float, float]] = {}
        self._fresh: set[str] = set()  # nodes an edit added
        self._shown_edges: set = set()  # the edges shown last (a new one may move its target)
        self._unbuilt: list[str] = []  # tasks whose node items are still to be made
        self._layout_waiting: Layout | None = None  # ready before all nodes were built
        self._build_timer = QTimer(self)
        self._build_timer.setSingleShot(True)
        self._build_timer.timeout.connect(self._build_slice)
        self._place_timer = QTimer(self)
        self._place_timer.setSingleShot(True)
        self._place_timer.timeout.connect(self._place_waiting)
        self._edges_timer = QTimer(self)
        self._edges_timer.setSingleShot(True)
        self._edges_timer.timeout.connect(self._edges_slice)
        self._edge_job: tuple | None = None  # edges drawn so far, in slices (big graphs)
        self._move_timer = QTimer(self)
        self._move_timer.setSingleShot(True)
        self._move_timer.timeout.connect(self._move_slice)
        # A big layout's listeners (a found task selected and centred, the timeline's
        # lanes) run in a slice of their own after the items are shown.
        self._announce_timer = QTimer(self)
        self._announce_timer.setSingleShot(True)
        self._announce_timer.timeout.connect(self.layoutApplied.emit)
        self._move_job: list | None = None  # representatives still to be placed
        self._move_finishing = False  # all placed: shown and indexed in the next slice
        relay.install()  # layouts and views worked out on threads come back through it
        # Running nodes show how long their attempt has taken, refreshed once a second
        # while any runs: only those nodes are touched, so a big graph pays for its few
        # running tasks, and a graph with none is not woken at all.
        self.elapsed_source = None  # callable: task id -> seconds running, or None
        self._running: set[str] = set()
        self._elapsed_timer = QTimer(self)
        self._elapsed_timer.setInterval(1000)
        self._elapsed_timer.timeout.connect(self.refresh_elapsed)
        self._init_groups()
        self._slice_end = 0.0  # when the last slice of this scene's work ended
        self.bulk = BulkCards(self)
        self._bulk_timer = QTimer(self)
        self._bulk_timer.setSingleShot(True)
        self._bulk_timer.timeout.connect(self._redraw_bulk)

        self.edges_item = QGraphicsPathItem()
        self.edges_item.setZValue(0)
        self.heads_item = QGraphicsPathItem()
        self.heads_item.setZValue(0.5)
        self.heads_item.setPen(Qt.PenStyle.NoPen)
        self.edge_highlight = QGraphicsPathItem()  # the selected edge, drawn over the rest
        self.edge_highlight.setZValue(0.8)
        self._moving: set[str] = set()  # nodes being dragged: their edges drawn apart
        self._moving_edges: list[tuple[str, str]] = []
        self.moving_edges_item = QGraphicsPathItem()
        self.moving_edges_item.setZValue(0)
        self.moving_heads_item = QGraphicsPathItem()
        self.moving_heads_item.setZValue(0.5)
        self.moving_heads_item.setPen(Qt.PenStyle.NoPen)
        self.halo = QGraphicsPathItem()  # rings around selected nodes
        self.halo.setZValue(0.9)
        self.halo.setBrush(Qt.BrushStyle.NoBrush)
        self.target_ring = QGraphicsPathItem()  # green/red ring on a drag-to-connect target
        self.target_ring.setZValue(2)
        self.cycle_path = QGraphicsPathItem()  # the cycle a refused edge would close
        self.cycle_route = QPainterPath()  # its edges, as shown_cycle drew them
        self.cycle_path.setZValue(2)
        self.rubber = QGraphicsPathItem()  # the arrow that follows the mouse while connecting
        self.rubber.setZValue(3)
        self.bundle_counts = QGraphicsPathItem()  # the count on each bundled edge
        self.bundle_counts.setZValue(0.6)
        self.bundle_counts.setPen(Qt.PenStyle.NoPen)
        for item in (
            self.bundle_counts,
            self.edges_item,
            self.heads_item,
            self.moving_edges_item,
            self.moving_heads_item,
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
        self.moving_edges_item.setPen(cosmetic_pen(edge, 1.0))
        self.moving_heads_item.setBrush(QBrush(edge))
        self.edge_highlight.setPen(cosmetic_pen(SELECT_COLOUR, 3.0))
        self.halo.setPen(cosmetic_pen(SELECT_COLOUR, 3.0))
        self.bundle_counts.setBrush(QBrush(ink))
        self.ink_from(palette)
        for tid, node in self.nodes.made.items():
            node.set_info(self.tasks[tid], self.base)
        self.bulk.recolour_all()
        self._schedule_bulk()

    # -- structure ----------------------------------------------------------------
    def set_tasks(self, tasks: dict[str, TaskInfo]) -> None:
        """Show exactly these tasks; lays out again only if the structure changed.

        What to draw (tasks, and one node per collapsed group: groups.py) is worked
        out on a worker thread for big graphs, and shown when ready (``_show_view``).
        """
        if not self._same_tasks:  # new tasks (a regroup keeps them)
            self.tasks_version += 1
        self.tasks = dict(tasks)
        self._running = {tid for tid, info in self.tasks.items() if info.state is TaskState.RUNNING}
        self._pace_elapsed()
        if self._work_out_view():
            self._show_view()

    def _show_view(self) -> None:
        tasks, graph, view = self.tasks, self.graph, self.view_model
        self.virtual = len(view.tasks_shown) > self.virtual_above
        for node in self.nodes.set_keys(view.tasks_shown):
            self.removeItem(node)
        if not self.virtual:
            self.bulk.clear()
        # Pins of removed tasks stay: undoing the removal puts the node back where it was.
        self._sync_group_items(view)
        made = self.nodes.made
        missing = [] if self.virtual else [t for t in view.tasks_shown if t not in made]
        for tid, node in made.items():
            info = tasks[tid]
            if node.info is not info:  # the rest have it (update_tasks set it)
                node.set_info(info, self.base)
        # Thousands of new nodes take a second or more to make: build them in
        # slices from a zero timer so the window keeps painting and answering.
        self._unbuilt = missing
        self._layout_waiting = None
        if len(missing) <= CHUNKED_NODES:
            self._build_slice(budget_ms=None)
        else:
            self._build_timer.start(0)
        self.selected = [t for t in self.selected if t in view.members]
        if self.selected_edge and not (
            graph.has_edge(*self.selected_edge) and set(self.selected_edge) <= view.members.keys()
        ):
            self.selected_edge = None
        # The layout places representatives: tasks shown, and collapsed groups.
        shown, edges = list(view.members), list(view.edges)
        key = structure_key(shown, edges)
        edited = self.layout is not None and key != getattr(self, "_wanted_key", key)
        regrouped, self.regrouped = self.regrouped, False  # groups opened, closed, filtered
        if edited and not regrouped and len(shown) <= KEEP_PLACES_UP_TO:
            self._fresh.update(missing)  # placed beside a neighbour, not by the layout
            for rep in shown:
                item = self.item_of(rep)
                if rep not in self.pins and rep not in missing and item.isVisible():
                    self.kept.setdefault(rep, (item.pos().x(), item.pos().y()))
            self._keep_flowing_right(set(edges) - self._shown_edges)
        self._shown_edges = set(edges)
        self._wanted_key = key
        cached = self.cache.get(key)
        if cached is not None:
            self._apply_layout(cached)
        elif len(shown) < BACKGROUND_LAYOUT_NODES:
            layout = compute_layout(shown, edges)
            self.cache.put(key, layout)
            self._apply_layout(layout)
        else:
            self._layout_worker.submit(lambda: self._layout_in_background(key, shown, edges))

    @property
    def building(self) -> bool:
        """True while node items are still being made (the layout waits for them)."""
        return bool(self._unbuilt)

    def _build_slice(self, budget_ms: int | None = SLICE_MS) -> None:
        clock = QElapsedTimer()
        clock.start()
        made = 0
        while self._unbuilt:
            # Fifty at a time between clock checks (about 6 ms on our machine).
            batch, self._unbuilt = self._unbuilt[:50], self._unbuilt[50:]
            for i, tid in enumerate(batch):
                # The clock per item too: with a worker thread holding the GIL, fifty
                # items took 800 ms (each Qt call waits for the GIL back).
                if budget_ms is not None and (
                    clock.elapsed() >= budget_ms or made >= NODES_PER_SLICE
                ):
                    self._unbuilt = batch[i:] + self._unbuilt
                    self._build_timer.start(0)
                    return
                made += 1
                info = self.tasks.get(tid)
                if info is None or self.nodes.is_made(tid):
                    continue
                self.nodes.put(tid, self._new_node(tid, info))
            if budget_ms is not None and clock.elapsed() >= budget_ms and self._unbuilt:
                self._build_timer.start(0)
                return
        if self._layout_waiting is not None:
            if budget_ms is None:
                self._place_waiting()
            else:
                self._place_timer.start(0)  # placing thousands gets a slice of its own

    def _new_node(self, tid: str, info: TaskInfo) -> NodeItem:
        node = NodeItem(tid)
        node.set_detail(self._detail)
        node.port.setScale(getattr(self, "_port_scale", 1.0))
        node.setVisible(False)  # until the layout places it
        self.addItem(node)
        node.set_info(info, self.base)  # in the scene: it reads dispatcher_paused
        return node

    def _make_node(self, tid: str) -> NodeItem:
        """The item of a task drawn in bulk, made on first use (``self.nodes[tid]``):
        placed at once if the layout has placed the rest; its bulk card is dropped."""
        node = self._new_node(tid, self.tasks[tid])
        if self.layout is not None and self._move_job is None and not self._unbuilt:
            node.setPos(*self.position_of(tid))
            node.setVisible(True)
        self.bulk.touch(tid)
        self._schedule_bulk()
        return node

    def _schedule_bulk(self) -> None:
        if self.bulk.dirty and not self._bulk_timer.isActive():
            self._bulk_timer.start(0)

    def slice_free(self) -> bool:
        """False when another slice of this scene's work ended a moment ago (in the same
        pass of the event loop): the caller's timer waits for the next pass."""
        return time.perf_counter() - self._slice_end > PASS_GAP

    def slice_done(self) -> None:
        self._slice_end = time.perf_counter()

    def _redraw_bulk(self) -> None:
        """Dirty tiles of the bulk cards, a few per slice (after the layout's listeners)."""
        if self._announce_timer.isActive() or not self.slice_free():
            self._bulk_timer.start(0)
            return
        done = self.bulk.redraw(limit=CARDS_PER_SLICE)
        self.slice_done()
        if not done:
            self._bulk_timer.start(0)

    def make_visible_nodes(self, rect: QRectF, limit: int = NODES_PER_SLICE) -> bool:
        """Make the items of bulk cards in ``rect`` (the view at a legible zoom), at most
        ``limit`` now; True when all are made. Items out of sight past MADE_CAP go back."""
        if not self.virtual or self.layout is None or self._move_job is not None:
            return True
        made = self.nodes.made
        wanted = self.bulk.inside(rect)
        todo = [t for t in wanted if t not in made]
        for tid in todo[:limit]:
            self.nodes[tid]
        if len(made) > MADE_CAP:
            keep = set(wanted) | set(self.selected) | self._moving
            for tid in [t for t in made if t not in keep][: len(made) - MADE_CAP]:
                self.removeItem(made.pop(tid))
                self.bulk.touch(tid)
            self._schedule_bulk()
        return len(todo) <= limit

    def virtual_at(self, point: QPointF) -> str | None:
        """The task whose bulk card is under ``point`` (None if made or not virtual)."""
        if not self.virtual:
            return None
        return self.bulk.at(point.x(), point.y())

    def _place_waiting(self) -> None:
        if self._layout_waiting is not None and not self._unbuilt:
            layout, self._layout_waiting = self._layout_waiting, None
            self._apply_layout(layout)

    def _layout_in_background(self, key, nodes, edges) -> None:
        layout = compute_layout(nodes, edges)
        self.cache.put(key, layout)
        relay.post(self, "_on_layout_ready", key, layout)  # if the scene still is

    def _on_layout_ready(self, key, layout) -> None:
        if key == self._wanted_key:  # a newer structure may have been requested meanwhile
            self._apply_layout(layout)

    def _apply_layout(self, layout: Layout) -> None:
        if self._unbuilt:  # nodes still being made: place them all at once when done
            self._layout_waiting = layout
            return
        self.layout = layout
        # Moving thousands of items one by one re-balances the BSP tree each time
        # (5,000 nodes took over 20 s); switch the index off for the bulk move and
        # rebuild it once. Off before the scene rect too: a new rect re-indexes (80 ms).
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.NoIndex)
        # Explicit scene rect first: otherwise Qt grows the rect (and re-indexes) per move.
        self._update_scene_rect()
        # Thousands of moves (Expand all) in slices of their own, then edges, then
        # layoutApplied (a selection waiting for the layout follows it).
        self._move_job = list(self.view_model.members)
        if self.virtual:  # every card is filed afresh by the moves, then drawn
            self.bulk.clear()
        self._move_finishing = False
        if len(self._move_job) <= CHUNKED_NODES:
            self._move_slice(budget_ms=None)
        else:
            self._move_timer.start(0)

    def _move_slice(self, budget_ms: int | None = SLICE_MS) -> None:
        job = self._move_job
        if job is None:
            return
        clock = QElapsedTimer()
        clock.start()
        done = 0
        made, groups, bulk = self.nodes.made, self.group_items, self.bulk
        virtual = self.virtual
        for rep in job:
            item = made.get(rep) or groups.get(rep)
            if item is not None:
                item.setPos(*self.position_of(rep))
            if virtual and not is_group_rep(rep):
                bulk.add(rep, *self.position_of(rep))
            done += 1
            if budget_ms is not None and (clock.elapsed() >= budget_ms or done >= MOVES_PER_SLICE):
                break
        del job[:done]
        if job or (budget_ms is not None and done and not self._move_finishing):
            # The last moves, and showing and indexing every item (then whatever the
            # layout's listeners do: a found task selected and centred), in slices of
            # their own: together they held the GUI thread 100-250 ms on a big graph.
            self._move_finishing = not job
            self._move_timer.start(0)
            return
        self._move_finishing = False
        self._move_job = None
        # Shown all at once, in place: shown slice by slice, every slice repainted the
        # thousands already shown (Expand all took a third longer).
        for node in self.nodes.made.values():
            node.setVisible(True)
        for group in self.group_items.values():
            group.setVisible(True)
        self._schedule_bulk()  # the cards (a big graph's), drawn a few tiles a slice
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)
        if len(self.nodes) > CHUNKED_NODES:
            self._edge_job = None  # thousands of curves: drawn in slices, afresh
            self._edges_timer.start(0)
        else:
            self._rebuild_edges()
        self._update_halo()
        if budget_ms is None:
            self.layoutApplied.emit()
        else:
            self._announce_timer.start(0)

    # -- positions a person chose ---------------------------------------------------
    def position_of(self, tid: str) -> tuple[float, float]:
        """Where ``tid`` belongs: its pin if dragged, else where it stood before the
        last edit, else (new after an edit) next to a neighbour, else the layout's place."""
        pin = self.pins.get(tid)
        if pin is not None:
            return pin
        kept = self.kept.get(tid)
        if kept is not None:
            return kept
        if tid in self._fresh:  # added by an edit: beside its neighbours
            self._fresh.discard(tid)
            near = self._beside_neighbour(tid)
            self.kept[tid] = near
            return near
        return self.layout.positions.get(tid, (0.0, 0.0)) if self.layout else (0.0, 0.0)

    def _keep_flowing_right(self, new_edges) -> None:
        """An edge an edit added into a node that stands left of (or level with) its new
        upstream would run back across the graph: that node moves beside the upstream."""
        for up, down in new_edges:
            if down in self.pins or down not in self.kept:
                continue
            where = self.pins.get(up) or self.kept.get(up)
            if where is not None and self.kept[down][0] <= where[0]:
                del self.kept[down]
                self._fresh.add(down)

    def _beside_neighbour(self, tid: str) -> tuple[float, float]:
        """Right of its rightmost placed upstream task (else left of a downstream one,
        else where the layout puts it), moved down until it overlaps no other node."""
        info = self.tasks.get(tid)
        placed = {**self.kept, **self.pins}
        spot = None
        if info is not None:
            ups = [placed[dep] for dep in info.deps if dep in placed]
            if ups:
                x, y = max(ups)
                spot = (x + NODE_WIDTH + LAYER_GAP, y)
            else:
                downs = [placed[c] for c in info.dependents if c in placed]
                if downs:
                    x, y = min(downs)
                    spot = (x - NODE_WIDTH - LAYER_GAP, y)
        if spot is None:
            spot = self.layout.positions.get(tid, (0.0, 0.0)) if self.layout else (0.0, 0.0)
        return self._free_spot(tid, *spot)

    def _free_spot(self, tid: str, x: float, y: float) -> tuple[float, float]:
        """(x, y), or the first place below it that overlaps no other node's card."""
        taken = []
        for other in self.view_model.members:
            if other == tid:
                continue
            where = self.pins.get(other) or self.kept.get(other)
            if where is None and other not in self._fresh and self.layout is not None:
                where = self.layout.positions.get(other)
            if where is not None:
                taken.append(where)
        while any(abs(px - x) < NODE_WIDTH and abs(py - y) < NODE_HEIGHT for px, py in taken):
            y += NODE_HEIGHT + ROW_GAP
        return (x, y)

    def relayout(self) -> None:
        """Forget where edits left nodes: the layout places every node not pinned."""
        self.kept.clear()
        self._fresh.clear()
        if self.layout is not None:
            self._apply_layout(self.layout)

    def pin_many(self, pins: dict) -> None:
        """Pin tasks at (x, y), or hand them back to the layout with None."""
        for tid, xy in pins.items():
            if xy is None:
                self.pins.pop(tid, None)
            else:
                self.pins[tid] = (float(xy[0]), float(xy[1]))
            node = self.nodes.made.get(tid)
            if node is not None and self.layout is not None:
                node.setPos(*self.position_of(tid))
            if tid in self.bulk.where and self.layout is not None:
                self.bulk.move(tid, *self.position_of(tid))  # its card, when given back
                self._schedule_bulk()
        self._update_scene_rect()
        self._rebuild_edges()
        self._update_halo()

    def preview_positions(self, positions: dict) -> None:
        """Show nodes at these positions while they are being dragged (not pinned yet).

        Only the edges touching them are redrawn per mouse move (in their own item):
        rebuilding all 5,000 edges of a big graph took 65 ms a move.
        """
        moving = set(positions)
        if moving != self._moving:
            self._moving = moving
            self._rebuild_edges()  # once per gesture: every edge but the moving ones
        for tid, (x, y) in positions.items():
            self.nodes[tid].setPos(x, y)
        edges, heads = QPainterPath(), QPainterPath()
        for up, down in self._moving_edges:
            start, end = self.output_point(up), self.input_point(down)
            add_edge(edges, heads, start, end)
        heads.setFillRule(Qt.FillRule.WindingFill)
        self.moving_edges_item.setPath(edges)
        self.moving_heads_item.setPath(heads)
        self._update_halo()

    def end_preview(self, rebuild: bool = True) -> None:
        """The drag is over: all edges in the shared path again (``rebuild=False``
        when a ``pin_many`` that rebuilds them follows at once)."""
        self._moving = set()
        self.moving_edges_item.setPath(QPainterPath())
        self.moving_heads_item.setPath(QPainterPath())
        if rebuild:
            self._rebuild_edges()

    def _update_scene_rect(self) -> None:
        layout = self.layout
        rect = QRectF(0, 0, layout.width, layout.height) if layout else QRectF()
        for tid, (x, y) in [*self.pins.items(), *self.kept.items()]:
            if tid in self.nodes or tid in self.group_items:
                rect = rect.united(QRectF(x, y, NODE_WIDTH, NODE_HEIGHT))
        self.setSceneRect(rect.adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN))

    def _made_item(self, rep: str):
        """The node or group item of a representative if it exists (nothing is made)."""
        return self.nodes.made.get(rep) or self.group_items.get(rep)

    def _anchor(self, rep: str) -> QPointF | None:
        """A representative's top-left corner as drawn (its item's, else its bulk
        card's), without making an item; None if it is not drawn yet."""
        item = self._made_item(rep)
        if item is not None:
            return item.pos()
        if self.virtual and rep in self.nodes:
            return QPointF(*self.position_of(rep))
        return None

    def output_point(self, rep: str) -> QPointF:
        anchor = self._anchor(rep)
        return QPointF() if anchor is None else anchor + OUT

    def input_point(self, rep: str) -> QPointF:
        anchor = self._anchor(rep)
        return QPointF() if anchor is None else anchor + IN

    def _route(self, up: str, down: str):
        """Slots a long edge passes through; none once a person moved either end."""
        moved = (up in self.pins or down in self.pins) or (up in self.kept or down in self.kept)
        if self.layout is None or moved:
            return ()
        return self.layout.routes.get((up, down), ())

    def _rebuild_edges(self) -> None:
        """Every edge's curve now (one slice of the GUI thread)."""
        self._edges_timer.stop()
        self._edge_job = None
        self._edges_slice(budget_ms=None)

    def _edges_slice(self, budget_ms: int | None = SLICE_MS) -> None:
        """Edges' curves and bundle counts, at most ``budget_ms`` per slice (big graphs:
        10,000 curves held the GUI thread 1.2 s); the paths are set once all are made."""
        if budget_ms is not None and (
            self._announce_timer.isActive() or self.bulk.dirty or not self.slice_free()
        ):
            self._edges_timer.start(0)  # a slice of its own, after those
            return
        if self._edge_job is None:
            view = self.view_model
            self._edge_job = (iter(list(view.edges.items())), QPainterPath(), QPainterPath())
            self._moving_edges = []
            self._labels = None  # bundle counts of an unfinished job are dropped
        pending, edges, heads = self._edge_job
        clock = QElapsedTimer()
        clock.start()
        drawn = 0
        made, groups = self.nodes.made, self.group_items
        cards = self.bulk.where if self.virtual else {}  # cards with no item (bulk.py)
        routes = self.layout.routes if self.layout is not None else {}
        moving = self._moving

        def corner(rep: str) -> tuple[float, float] | None:
            item = made.get(rep) or groups.get(rep)
            if item is None:
                return cards.get(rep)
            at = item.pos()
            return at.x(), at.y()

        for (up, down), count in pending:  # bundled where a group is collapsed
            a, b = corner(up), corner(down)
            if a is None or b is None:
                continue  # still being built
            if up in moving or down in moving:
                self._moving_edges.append((up, down))  # drawn by preview_positions
                continue
            route = self._route(up, down) if routes else ()
            if route:
                add_edge(edges, heads, QPointF(*a) + OUT, QPointF(*b) + IN, route)
            else:  # most edges of a big graph: straight into the shared paths
                add_plain_edge(edges, heads, a[0] + OUT_X, a[1] + OUT_Y, b[0], b[1] + OUT_Y)
            if count >= 2:
                self.add_bundle_label(up, down, count)
            drawn += 1
            if budget_ms is not None and (clock.elapsed() >= budget_ms or drawn >= EDGES_PER_SLICE):
                self.slice_done()
                self._edges_timer.start(0)
                return
        self._edge_job = None
        self.bundle_counts.setPath(self.take_bundle_labels())
        # Winding fill: with the default odd-even rule, the identical heads of several
        # edges entering one node cancel out and the arrow turns hollow.
        heads.setFillRule(Qt.FillRule.WindingFill)
        large = self.edge_count > CACHED_EDGES
        mode = DEVICE_CACHE if large else QGraphicsItem.CacheMode.NoCache
        self.edges_item.setCacheMode(mode)
        self.heads_item.setCacheMode(mode)
        self.edges_item.setPath(edges)
        self.heads_item.setPath(heads)
        self._update_edge_highlight()

    # -- state ------------------------------------------------------------------
    dispatcher_paused = False  # the whole dispatcher: ready cards read "paused"

    def set_dispatcher_paused(self, paused: bool) -> None:
        """Nothing starts while the dispatcher is paused: ready cards say so."""
        if paused == self.dispatcher_paused:
            return
        self.dispatcher_paused = paused
        for tid, node in self.nodes.made.items():
            info = self.tasks[tid]
            if info.state is TaskState.READY:
                node._show_status()

    def update_tasks(self, changed: dict[str, TaskInfo]) -> bool:
        """Recolour changed tasks. Returns True if the structure changed (caller re-lays out)."""
        structural = False
        old_states = {}
        by_state = bool(self.filter.states)
        made, bulk = self.nodes.made, self.bulk.tile_of
        for tid, info in changed.items():
            node = made.get(tid)
            if node is None and tid in bulk:
                self.bulk.touch(tid)  # its card is redrawn with its tile
            old = self.tasks.get(tid)
            if old is None or old.deps != info.deps:
                structural = True  # (a known task with no node yet is still being built)
            elif by_state and old.state is not info.state:
                structural = True  # it may enter or leave the state filter
            if old is None or old.deps != info.deps or old.name != info.name:
                self.tasks_version += 1  # groups, edges and Find's index are out of date
            if old is not None:
                old_states[tid] = old.state
            self.tasks[tid] = info
            if info.state is TaskState.RUNNING:
                self._running.add(tid)
            else:
                self._running.discard(tid)
            if node is not None:
                node.set_info(info, self.base)
        self._recount_groups(changed, old_states)
        self._schedule_bulk()
        self._pace_elapsed()
        return structural

    def _pace_elapsed(self) -> None:
        if not self._running:
            self._elapsed_timer.stop()
        elif not self._elapsed_timer.isActive():
            self._elapsed_timer.start()

    def refresh_elapsed(self) -> None:
        source = self.elapsed_source
        if source is None:
            return
        for tid in list(self._running):
            node = self.nodes.made.get(tid)
            if node is not None:
                node.set_elapsed(source(tid))

    # -- level of detail ---------------------------------------------------------
    def set_port_scale(self, scale: float) -> None:
        """Ports drawn ``scale`` times their size, so they stay big enough to hit."""
        scale = min(scale, 1.0 / 0.45)  # below the detail zoom, ports are hidden anyway
        if abs(scale - getattr(self, "_port_scale", 1.0)) < 0.01:
            return
        self._port_scale = scale
        for node in self.nodes.made.values():
            node.port.setScale(scale)

    @property
    def detail(self) -> bool:
        return self._detail

    def set_detail(self, detail: bool) -> None:
        if detail != self._detail:
            self._detail = detail
            self.heads_item.setVisible(detail)  # specks when zoomed out, and costly to fill
            self.moving_heads_item.setVisible(detail)
            for node in self.nodes.made.values():
                node.set_detail(detail)

    # -- selection ---------------------------------------------------------------
    def set_selection(self, ids: list[str]) -> None:
        self.selected = [t for t in ids if t in self.nodes]
        self._update_halo()

    def _update_halo(self) -> None:
        path = QPainterPath()
        for tid in self.selected:
            node = self.nodes.get(tid)
            if node is None:  # still being built
                continue
            path.addRoundedRect(
                QRectF(
                    node.pos() - QPointF(4, 4),
                    QPointF(4, 4) + node.pos() + QPointF(NODE_WIDTH, NODE_HEIGHT),
                ),
                11,
                11,
            )
        self.group_halo(path)
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
        for up, down in self.graph.edges:
            if up not in self.nodes or down not in self.nodes:
                continue
            # Cheap box test on the end points first: a click must not build 5,000 curves.
            a, b = self.output_point(up), self.input_point(down)
            ys = [a.y(), b.y(), *(y for _x, y in self._route(up, down))]
            if not (
                min(a.x(), b.x()) - tolerance <= px <= max(a.x(), b.x()) + tolerance
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
        return routed_curve(self.output_point(up), self.input_point(down), self._route(up, down))

    def node_at(self, point: QPointF) -> str | None:
        for item in self.items(point):
            tid = item.data(0)
            if tid is not None and tid in self.nodes:
                return tid
        return self.virtual_at(point)

    # -- drag-to-connect feedback --------------------------------------------------
    def show_rubber(
        self, start: QPointF | None, end: QPointF | None, ok: bool | None, curve=None
    ) -> None:
        if start is None or end is None:
            self.rubber.setPath(QPainterPath())
            return
        colour = QColor(SELECT_COLOUR if ok is None else ACCEPT_COLOUR if ok else REFUSE_COLOUR)
        self.rubber.setPen(cosmetic_pen(colour, 2.0, Qt.PenStyle.DashLine))
        self.rubber.setBrush(Qt.BrushStyle.NoBrush)
        edges, heads = QPainterPath(), QPainterPath()
        add_edge(edges, heads, start, end, curve=curve)
        edges.setFillRule(Qt.FillRule.WindingFill)
        edges.addPath(heads)
        self.rubber.setPath(edges)

    def show_target(self, tid: str | None, ok: bool) -> None:
        path = QPainterPath()
        if tid is not None:
            node = self.nodes[tid]
            path.addRoundedRect(node.sceneBoundingRect().adjusted(-5, -5, 5, 5), 12, 12)
        self.target_ring.setPen(cosmetic_pen(ACCEPT_COLOUR if ok else REFUSE_COLOUR, 3.0))
        self.target_ring.setPath(path)

    def closing_edge(self, up: str, down: str) -> QPainterPath:
        """The curve of a would-be edge: an S-curve forwards; backwards (``down`` left of
        ``up``, as the edge closing a cycle usually is), round the nodes in between."""
        start, end = self.nodes[up].output_point(), self.nodes[down].input_point()
        if end.x() - ARROW_LENGTH > start.x() + 2 * BACK_EDGE_GAP:
            return edge_curve(start, end)
        left, right = end.x() - ARROW_LENGTH - 2 * BACK_EDGE_GAP, start.x() + 2 * BACK_EDGE_GAP
        tops = [
            anchor.y()
            for tid in self.nodes
            for anchor in (self._anchor(tid),)
            if anchor is not None and anchor.x() + NODE_WIDTH >= left and anchor.x() <= right
        ]
        clear_y = min([*tops, start.y(), end.y()]) - BACK_EDGE_GAP
        return back_edge(start, end, clear_y)

    def show_cycle(self, cycle: list[str] | tuple[str, ...]) -> None:
        """Draw the would-be cycle (ids in order, first repeated at the end) in red, along
        its edges as drawn; the refused edge that would close it goes round the nodes."""
        path = QPainterPath()
        for up, down in zip(cycle, cycle[1:], strict=False):
            if up in self.nodes and down in self.nodes:
                if self.graph.has_edge(up, down):
                    path.addPath(self.edge_path(up, down))
                else:  # the refused edge itself
                    path.addPath(self.closing_edge(up, down))
        self.cycle_route = QPainterPath(path)  # the edges alone, without the node rings
        for tid in set(cycle):
            if tid in self.nodes:
                path.addRoundedRect(
                    self.nodes[tid].sceneBoundingRect().adjusted(-3, -3, 3, 3), 10, 10
                )
        self.cycle_path.setPen(cosmetic_pen(REFUSE_COLOUR, 2.5, Qt.PenStyle.DashLine))
        self.cycle_path.setPath(path)

    def hide_cycle(self) -> None:
        self.cycle_path.setPath(QPainterPath())
        self.cycle_route = QPainterPath()

    def clear_feedback(self) -> None:
        self.show_rubber(None, None, None)
        self.target_ring.setPath(QPainterPath())
        self.hide_cycle()

    def can_gain_dependency(self, tid: str) -> bool:
        """Whether the engine lets ``tid`` wait for another task now (it has not
        started, or it is recurring)."""
        if self.scheduler is None:
            return False
        try:
            return Action.ADD_DEPENDENCY in self.scheduler.allowed_actions(tid)
        except KeyError:  # removed since this scene last heard of it
            return False

    def would_close_cycle(self, upstream: str, downstream: str) -> list[str] | None:
        """The cycle making ``downstream`` depend on ``upstream`` would close, as the
        engine sees it (``[downstream, ..., upstream, downstream]``), or None."""
        if self.scheduler is None:
            return None
        try:
            return self.scheduler.would_close_cycle(downstream, upstream)
        except KeyError:
            return None
