"""The graph view: zoom, pan, fit, search-and-centre, selection, drag-to-connect.

The view only reports what the user wants (signals); the controller decides
and calls the engine, which is the judge of every edge.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QEvent, QPoint, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QMouseEvent, QPainter, QWheelEvent
from PySide6.QtWidgets import QApplication, QGraphicsView

from .group_item import ROLE_GROUP
from .groups import group_rep
from .items import PORT_RADIUS, ROLE_ID, ROLE_KIND
from .layout import NODE_HEIGHT, NODE_WIDTH
from .overview import Overview
from .scene import CHUNKED_NODES, GraphScene

DETAIL_SCALE = 0.45  # below this zoom the node text is unreadable: draw plain boxes
# Fit never goes below this for graphs up to READABLE_UP_TO tasks: names stay readable
# and the rest is a scroll (or a click on the overview) away. Ports keep at least
# PORT_SCREEN_RADIUS pixels on screen, so they can be hit at the zoom fit picks.
READABLE_SCALE = 0.6
READABLE_UP_TO = 300
PORT_SCREEN_RADIUS = 6.0
MIN_SCALE, MAX_SCALE = 0.02, 4.0
FULL_UPDATE_NODES = 1500
ARROWS = {
    Qt.Key.Key_Left: (-1, 0),
    Qt.Key.Key_Right: (1, 0),
    Qt.Key.Key_Up: (0, -1),
    Qt.Key.Key_Down: (0, 1),
}


class GraphView(QGraphicsView):
    selectionChanged = Signal(list)  # task ids
    edgeSelected = Signal(object)  # (upstream, downstream) or None
    # (upstream, downstream): the user wants downstream to run after upstream
    connectRequested = Signal(str, str)
    deleteEdgeRequested = Signal(str, str)
    activated = Signal(str)  # double-click on a task
    menuRequested = Signal(QPoint)  # right-click on a task (now selected); global position
    # What releasing here would do, while dragging a connection; "" once no hint holds
    # (the pointer left the target, the drag ended).
    connectHint = Signal(str)
    # One drag of nodes ended: {task id: (pin before or None, (x, y) now)}; already shown.
    nodesMoved = Signal(dict)
    deleteTasksRequested = Signal(list)  # Delete with tasks (and no edge) selected

    def __init__(self, scene: GraphScene, parent=None):
        super().__init__(scene, parent)
        self.setObjectName("graphView")
        self.graph_scene = scene
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)  # drag the background to pan
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._connect_from: str | None = None
        self._connect_target: str | None = None
        self._move: _NodeDrag | None = None
        self._fit_pending = True  # fit the first layout once it exists
        self._following_fit = True  # keep fitting on resize until the user zooms
        self._cycle_timer = QTimer(self)
        self._cycle_timer.setSingleShot(True)
        self._cycle_timer.timeout.connect(scene.clear_feedback)
        scene.layoutApplied.connect(self._on_layout)
        self.overview = Overview(self)
        self.horizontalScrollBar().valueChanged.connect(self._place_overview)
        self.verticalScrollBar().valueChanged.connect(self._place_overview)
        # A big graph's cards are drawn in bulk: at a legible zoom, the items of the
        # cards in sight are made, a slice at a time (scene.make_visible_nodes).
        self._sweep_timer = QTimer(self)
        self._sweep_timer.setSingleShot(True)
        self._sweep_timer.timeout.connect(self._sweep)
        self._reveal_timer = QTimer(self)
        self._reveal_timer.setSingleShot(True)
        self._reveal_timer.timeout.connect(self._reveal_slice)

    # -- zoom ---------------------------------------------------------------------
    def zoom_by(self, factor: float) -> None:
        self._following_fit = False
        current = self.transform().m11()
        factor = max(MIN_SCALE / current, min(MAX_SCALE / current, factor))
        self.scale(factor, factor)
        self._update_detail()

    def zoom_in(self) -> None:
        self.zoom_by(1.25)

    def zoom_out(self) -> None:
        self.zoom_by(0.8)

    def fit(self, readable: bool = True) -> None:
        """Show the graph: all of it at a readable zoom if it fits, else (``readable``,
        up to READABLE_UP_TO tasks) its start at READABLE_SCALE; ``readable=False``
        shows all of it however small (View > Fit graph)."""
        rect = self.graph_scene.sceneRect()
        if rect.isEmpty():
            return
        self._following_fit = True
        self.fitInView(rect, Qt.AspectRatioMode.KeepAspectRatio)
        if self.transform().m11() > 1.0:  # never blow a small graph up beyond 100 %
            self.resetTransform()
            self.centerOn(rect.center())
        elif (
            readable
            and self.transform().m11() < READABLE_SCALE
            and self.graph_scene.shown_items <= READABLE_UP_TO
        ):
            self.resetTransform()
            self.scale(READABLE_SCALE, READABLE_SCALE)
            # Start where the work starts: the upstream (left) end, vertically centred.
            half = self.viewport().width() / (2 * READABLE_SCALE)
            self.centerOn(rect.left() + half, rect.center().y())
        self._update_detail()

    def zoom_level(self) -> float:
        return self.transform().m11()

    def _update_detail(self) -> None:
        zoom = self.zoom_level()
        self.graph_scene.set_detail(zoom >= DETAIL_SCALE)
        self.graph_scene.set_group_zoom(zoom)
        self.graph_scene.set_port_scale(max(1.0, PORT_SCREEN_RADIUS / (PORT_RADIUS * zoom)))
        self._place_overview()

    def _place_overview(self, *_) -> None:
        # Scroll bars can still report while the window is being torn down.
        if shiboken6.isValid(self.graph_scene) and shiboken6.isValid(self.overview):
            self.overview.place()
            if self.graph_scene.virtual and not self._sweep_timer.isActive():
                self._sweep_timer.start(0)

    def _sweep(self) -> None:
        """Make the node items of the bulk cards in sight at a legible zoom."""
        scene = self.graph_scene
        if not shiboken6.isValid(scene) or not scene.virtual:
            return
        if self.zoom_level() < DETAIL_SCALE:
            return
        if not scene.slice_free():
            self._sweep_timer.start(0)
            return
        rect = self.mapToScene(self.viewport().rect()).boundingRect()
        done = scene.make_visible_nodes(rect)
        scene.slice_done()
        if not done:
            self._sweep_timer.start(0)

    def viewportEvent(self, event) -> bool:
        if event.type() == QEvent.Type.ToolTip and self.graph_scene.virtual:
            self._made_at(event.pos())  # the card's own item gives the tooltip
        return super().viewportEvent(event)

    def _made_at(self, pos) -> str | None:
        """The task of the bulk card at ``pos``, its item made now (or None)."""
        scene = self.graph_scene
        tid = scene.virtual_at(self.mapToScene(pos))
        if tid is not None:
            scene.nodes[tid]
        return tid

    def wheelEvent(self, event: QWheelEvent) -> None:
        delta = event.angleDelta().y()
        if delta:
            self.zoom_by(1.0015**delta)
        event.accept()

    def _on_layout(self) -> None:
        # Smart updates compute a minimal region per changed item: cheap for a few,
        # but with thousands of nodes recoloured per frame that search froze the
        # window (5,000 nodes); past this size one full repaint is faster.
        mode = (
            QGraphicsView.ViewportUpdateMode.FullViewportUpdate
            if len(self.graph_scene.nodes) > FULL_UPDATE_NODES
            else QGraphicsView.ViewportUpdateMode.SmartViewportUpdate
        )
        self.setViewportUpdateMode(mode)
        self._place_overview()
        if self._fit_pending and self.graph_scene.shown_items:
            self._fit_pending = False
            self.fit()
        if len(self.graph_scene.nodes) > CHUNKED_NODES:
            # A found task selected and centred in a slice of its own: the layout's
            # other listeners (the timeline's lanes) take theirs.
            self._reveal_timer.start(0)
        else:
            self._select_revealed()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._place_overview()
        if self._following_fit and not self._fit_pending and self.graph_scene.shown_items:
            self.fit()

    # -- search ---------------------------------------------------------------------
    def find(self, text: str) -> str | None:  # type: ignore[override]  # not Qt's find(WId)
        """Select and centre the first task whose id or name contains ``text`` (any case)."""
        needle = text.strip().lower()
        if not needle:
            return None
        indexed, found = self.graph_scene.find_task(needle)  # the index made with the view
        if indexed:
            if found is not None:
                self.select([found], centre=True)
            return found
        matches = [
            t
            for t, info in self.graph_scene.tasks.items()
            if needle == t.lower() or needle == (info.name or "").lower()
        ]
        if not matches:
            matches = sorted(
                t
                for t, info in self.graph_scene.tasks.items()
                if needle in t.lower() or needle in (info.name or "").lower()
            )
        if not matches:
            return None
        self.select([matches[0]], centre=True)
        return matches[0]

    def center_on(self, tid: str) -> None:
        node = self.graph_scene.nodes.get(tid)
        if node is None:
            return
        # Centred on a task: a resize (scroll bars appearing as a group opens) must not
        # fit the whole graph again and lose it.
        self._following_fit = False
        if self.zoom_level() < DETAIL_SCALE:
            self.resetTransform()
            self._update_detail()
        self.centerOn(node.sceneBoundingRect().center())

    # -- selection ------------------------------------------------------------------
    def select(self, ids: list[str], centre: bool = False) -> None:
        """Select these tasks; those inside a collapsed group are shown first (their
        group expands, and they are selected once the new layout is applied)."""
        scene = self.graph_scene
        if scene.reveal(ids):
            self._centre_revealed = centre
            return
        if ids != scene.selected:
            scene.set_selection(ids)
            self.selectionChanged.emit(list(scene.selected))
        if centre and ids:
            self.center_on(ids[0])

    def _reveal_slice(self) -> None:
        scene = self.graph_scene
        if not shiboken6.isValid(scene):
            return
        if not scene.slice_free():
            self._reveal_timer.start(0)
            return
        self._select_revealed()
        scene.slice_done()

    def _select_revealed(self) -> None:
        scene = self.graph_scene
        ids = [t for t in scene.reveal_waiting if t in scene.nodes]
        if ids:
            scene.reveal_waiting = []
            self.select(ids, centre=getattr(self, "_centre_revealed", False))

    # -- groups ---------------------------------------------------------------------
    def _group_at(self, pos) -> str | None:
        for item in self.items(pos):
            for candidate in (item, item.parentItem()):
                if candidate is not None and candidate.data(ROLE_KIND) == "group":
                    return candidate.data(ROLE_GROUP)
        return None

    def expand_selected(self) -> bool:
        """``+``: expand the selected group, in place (the view stays centred on it)."""
        group = self.graph_scene.selected_group
        return group is not None and self._expand(group)

    def _expand(self, group: str) -> bool:
        item = self.graph_scene.group_items.get(group_rep(group))
        if item is None:
            return False
        scene_x, scene_y = item.pos().x(), item.pos().y()
        self.graph_scene.expand(group)
        members = [t for t, g in self.graph_scene.groups.items() if g == group]
        self.graph_scene.reveal_waiting = []
        if members:
            self._centre_after_layout(members, (scene_x, scene_y))
        return True

    def _centre_after_layout(self, members, fallback) -> None:
        scene = self.graph_scene
        first = next((t for t in members if t in scene.nodes), None)
        made = scene.nodes.made.get(first) if first is not None else None
        anchor = scene._anchor(first) if first is not None else None
        if anchor is not None and (scene.virtual or (made is not None and made.isVisible())):
            self.centerOn(anchor + QPointF(NODE_WIDTH / 2, NODE_HEIGHT / 2))
        else:
            self.centerOn(*fallback)

    def collapse_selected(self) -> bool:
        """``-``: collapse the group of the selected task (or the selected group)."""
        scene = self.graph_scene
        group = next((scene.group_of(t) for t in scene.selected if scene.group_of(t)), None)
        if group is None:
            return False
        changed = scene.collapse(group)
        if changed:
            self.selectionChanged.emit([])
        return changed

    def selected(self) -> list[str]:
        return list(self.graph_scene.selected)

    # -- mouse -----------------------------------------------------------------------
    def _hit(self, pos) -> tuple[str | None, str | None]:
        for item in self.items(pos):
            kind = item.data(ROLE_KIND)
            if kind in ("node", "port"):
                return item.data(ROLE_ID), kind
            parent = item.parentItem()
            if parent is not None and parent.data(ROLE_KIND) == "node":
                return parent.data(ROLE_ID), "node"
        tid = self._made_at(pos)  # a card drawn in bulk
        return (tid, "node") if tid is not None else (None, None)

    read_only = False  # a past run is shown: no connecting, moving or deleting

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            super().mousePressEvent(event)
            return
        tid, kind = self._hit(event.position().toPoint())
        if kind == "port" and self.read_only:
            kind = "node"  # select the task; no edge is drawn
        if kind == "port" and tid is not None:
            self._start_connect(tid)
            event.accept()
            return
        group = self._group_at(event.position().toPoint()) if tid is None else None
        if group is not None:
            self._select_edge(None)
            self.select([])
            self.graph_scene.select_group(group)
            event.accept()
            return
        if tid is not None:
            self._select_edge(None)
            ids = self.selected()
            if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                ids = [t for t in ids if t != tid] if tid in ids else [*ids, tid]
            elif tid not in ids:
                ids = [tid]  # pressing on a selected node keeps the group, to drag it
            self.select(ids)
            if tid in ids and not self.read_only:
                self._move = _NodeDrag(self, event.position().toPoint(), ids)
            event.accept()
            return
        scene_point = self.mapToScene(event.position().toPoint())
        edge = self.graph_scene.edge_at(scene_point, tolerance=6.0 / max(self.zoom_level(), 0.01))
        if edge is not None:
            self._select_edge(edge)
            event.accept()
            return
        self._select_edge(None)
        self.select([])
        super().mousePressEvent(event)  # start panning

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._move is not None:
            self._move.to(event.position().toPoint())
            event.accept()
            return
        if self._connect_from is None:
            super().mouseMoveEvent(event)
            return
        self._update_connect(self.mapToScene(event.position().toPoint()))
        event.accept()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._move is not None:
            move, self._move = self._move, None
            move.to(event.position().toPoint())
            moves = move.finish()
            if moves:
                self.nodesMoved.emit(moves)
            elif not event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                self.select([move.pressed])  # a click (no drag) on a group selects just one
            event.accept()
            return
        if self._connect_from is None:
            super().mouseReleaseEvent(event)
            return
        self._update_connect(self.mapToScene(event.position().toPoint()))
        upstream, downstream = self._connect_from, self._connect_target
        self._end_connect()
        if downstream is not None:
            self.connectRequested.emit(upstream, downstream)
        event.accept()

    def keyboard_menu(self) -> bool:
        """The selected task's menu, at its card (Shift+F10, the Menu key)."""
        selected = self.selected()
        node = self.graph_scene.nodes.get(selected[0]) if selected else None
        if node is None:
            return False
        centre = self.mapFromScene(node.sceneBoundingRect().center())
        self.menuRequested.emit(self.viewport().mapToGlobal(centre))
        return True

    def contextMenuEvent(self, event) -> None:
        if event.reason() == event.Reason.Keyboard:
            if self.keyboard_menu():
                event.accept()
            return
        tid, _ = self._hit(event.pos())
        if tid is None:
            super().contextMenuEvent(event)
            return
        if tid not in self.selected():
            self.select([tid])
        self.menuRequested.emit(event.globalPos())
        event.accept()

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        tid, _ = self._hit(event.position().toPoint())
        group = self._group_at(event.position().toPoint()) if tid is None else None
        if tid is not None:
            self.activated.emit(tid)
        elif group is not None:
            self._expand(group)
        else:
            super().mouseDoubleClickEvent(event)

    def keyPressEvent(self, event) -> None:
        key = event.key()
        shifted = event.modifiers() & Qt.KeyboardModifier.ShiftModifier
        menu_key = key == Qt.Key.Key_Menu or (key == Qt.Key.Key_F10 and shifted)
        if menu_key and self.keyboard_menu():
            event.accept()
            return
        if key == Qt.Key.Key_Escape and self._connect_from is not None:
            self._end_connect()
            event.accept()
            return
        if key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal) and self.expand_selected():
            event.accept()
            return
        if key in (Qt.Key.Key_Minus, Qt.Key.Key_Underscore) and self.collapse_selected():
            event.accept()
            return
        if key in ARROWS and not event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self._step_selection(*ARROWS[key])
            event.accept()
            return
        if key == Qt.Key.Key_Escape and self._move is not None:
            self._move.cancel()
            self._move = None
            event.accept()
            return
        if key in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace) and self.read_only:
            event.accept()  # nothing is removed from a past run
            return
        if key in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace) and self.graph_scene.selected_edge:
            self.deleteEdgeRequested.emit(*self.graph_scene.selected_edge)
            event.accept()
            return
        if key in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace) and self.selected():
            self.deleteTasksRequested.emit(self.selected())
            event.accept()
            return
        super().keyPressEvent(event)

    def _step_selection(self, dx: int, dy: int) -> None:
        """Arrow keys: select the nearest task in that direction (keyboard-only use)."""
        nodes = self.graph_scene.nodes
        if not nodes:
            return
        current = self.selected()[0] if self.selected() else None
        where = {t: self.graph_scene._anchor(t) for t in nodes}  # no item made for it
        placed = {t: p for t, p in where.items() if p is not None}
        if not placed:
            return
        if current is None or current not in placed:
            first = min(placed, key=lambda t: (placed[t].x(), placed[t].y()))
            self.select([first])
            self.center_on(first)
            return
        here = placed[current]
        best, best_cost = None, float("inf")
        for tid, node in placed.items():
            along = (node.x() - here.x()) * dx + (node.y() - here.y()) * dy
            across = abs((node.x() - here.x()) * dy) + abs((node.y() - here.y()) * dx)
            if tid == current or along <= 0 or across > along * 2:
                continue  # behind us, or more sideways than ahead
            cost = along + 2 * across
            if cost < best_cost:
                best, best_cost = tid, cost
        if best is not None:
            self.select([best])
            self.ensureVisible(nodes[best].sceneBoundingRect(), 40, 40)

    def _select_edge(self, edge) -> None:
        if edge != self.graph_scene.selected_edge:
            self.graph_scene.select_edge(edge)
            self.edgeSelected.emit(edge)

    # -- drag-to-connect ------------------------------------------------------------
    def _start_connect(self, tid: str) -> None:
        self._connect_from = tid
        self._connect_target = None
        self._cycle_timer.stop()
        self.graph_scene.clear_feedback()
        self.viewport().setCursor(Qt.CursorShape.CrossCursor)

    def _update_connect(self, scene_point: QPointF) -> None:
        scene = self.graph_scene
        upstream = self._connect_from
        if upstream is None:
            return  # no drag from a port going on
        start = scene.nodes[upstream].output_point()
        target = scene.node_at(scene_point)
        if target == upstream:
            target = None
        self._connect_target = target
        if target is None:
            scene.show_rubber(start, scene_point, None)
            scene.show_target(None, True)
            scene.hide_cycle()
            self.connectHint.emit("")
            return
        cycle = scene.would_close_cycle(upstream, target)
        started = not scene.can_gain_dependency(target)
        ok = cycle is None and not started and not scene.graph.has_edge(upstream, target)
        # Backwards over a would-be cycle, the rubber band goes round the nodes too.
        curve = scene.closing_edge(upstream, target) if cycle else None
        scene.show_rubber(start, scene.nodes[target].input_point(), ok, curve)
        scene.show_target(target, ok)
        if cycle:
            scene.show_cycle(cycle)
            self.connectHint.emit("Would close a cycle: " + " → ".join(cycle))
        else:
            scene.hide_cycle()
            if started:
                self.connectHint.emit(f"{target} has already started: it cannot gain a dependency")
            elif not ok:
                self.connectHint.emit(f"{target} already runs after {upstream}")
            else:
                self.connectHint.emit(f"Release to make {target} run after {upstream}")

    def _end_connect(self) -> None:
        self._connect_from = None
        self._connect_target = None
        self.graph_scene.clear_feedback()
        self.connectHint.emit("")
        self.viewport().unsetCursor()

    def flash_cycle(self, cycle, ms: int = 2500) -> None:
        """Show a refused edge's cycle for a moment."""
        self.graph_scene.show_cycle(list(cycle))
        self._cycle_timer.start(ms)

    @property
    def connecting(self) -> bool:
        return self._connect_from is not None

    def visible_scene_rect(self) -> QRectF:
        return self.mapToScene(self.viewport().rect()).boundingRect()


class _NodeDrag:
    """Moving the selected nodes with the mouse: shown live, pinned on release."""

    def __init__(self, view: GraphView, press: QPoint, ids: list[str]):
        self.view, self.press = view, press
        self.pressed = view.graph_scene.node_at(view.mapToScene(press)) or ids[0]
        scene = view.graph_scene
        self.ids = [t for t in ids if t in scene.nodes]
        self.origin = {t: (scene.nodes[t].x(), scene.nodes[t].y()) for t in self.ids}
        self.before = {t: scene.pins.get(t) for t in self.ids}
        self.moving = False

    def to(self, point: QPoint) -> None:
        if not self.moving:
            if (point - self.press).manhattanLength() < QApplication.startDragDistance():
                return  # still a click
            self.moving = True
            self.view.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
        delta = self.view.mapToScene(point) - self.view.mapToScene(self.press)
        scene = self.view.graph_scene
        scene.preview_positions(
            {
                t: (x + delta.x(), y + delta.y())
                for t, (x, y) in self.origin.items()
                if t in scene.nodes  # a task removed mid-drag drops out
            }
        )

    def finish(self) -> dict:
        """Pin the dragged nodes where they are; {id: (pin before, pin now)} if they moved."""
        if not self.moving:
            return {}
        self.view.viewport().unsetCursor()
        scene = self.view.graph_scene
        now = {t: (scene.nodes[t].x(), scene.nodes[t].y()) for t in self.ids if t in scene.nodes}
        scene.end_preview(rebuild=False)
        scene.pin_many(now)
        return {t: (self.before[t], xy) for t, xy in now.items()}

    def cancel(self) -> None:
        self.view.viewport().unsetCursor()
        scene = self.view.graph_scene
        scene.preview_positions({t: xy for t, xy in self.origin.items() if t in scene.nodes})
        scene.end_preview()
