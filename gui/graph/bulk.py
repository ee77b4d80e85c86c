"""Big expanded graphs: cards drawn in bulk, real node items made only where needed.

A ``NodeItem`` (a path item with three children) costs about 20 KB; Expand all on
50,000 tasks made 200,000 Qt items (1.1 GiB). Above ``GraphScene.virtual_above`` shown tasks
the scene makes no item per task: every card not made is one rounded rect in a few
shared path items (one per tile of the scene and state look, all C++ paint), and a
``NodeItem`` is made on first use through ``NodeTable`` (``scene.nodes[tid]``): the
selected, found, hovered, clicked or dragged task, and every card in the view at a
zoom where text is legible (the view asks for those). Made items past a cap that are
out of sight go back to the bulk. The table still answers ``tid in scene.nodes`` and
``len(scene.nodes)`` for every task shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF
from PySide6.QtGui import QPainterPath
from PySide6.QtWidgets import QGraphicsPathItem

from .layout import NODE_HEIGHT, NODE_WIDTH

if TYPE_CHECKING:
    from .items import NodeItem

TILE = 2400.0  # scene units a side: a recolour redraws the cards of its tiles only
# The hit-test grid: a card is filed under the cell of its top-left corner, and (no
# bigger than a cell) covers points of that cell and the next ones right and down.
CELL_W = NODE_WIDTH
CELL_H = NODE_HEIGHT
BULK_Z = 0.95  # under made node items (z 1), over edges


class NodeTable(Mapping[str, "NodeItem"]):
    """``scene.nodes``: every task shown is a key; its item is made on first lookup.

    ``made`` holds the items that exist. Iterating values or items makes them all (it
    is correct, and slow for a big view): the scene walks ``made`` instead.
    """

    def __init__(self, make: Callable[[str], NodeItem]):
        self._make = make
        self.shown: dict[str, None] = {}
        self.made: dict[str, NodeItem] = {}
        self.made_count = 0  # items made on demand (tests count them)

    def __getitem__(self, tid: str) -> NodeItem:
        node = self.made.get(tid)
        if node is not None:
            return node
        if tid not in self.shown:
            raise KeyError(tid)
        self.made_count += 1
        node = self.made[tid] = self._make(tid)
        return node

    def get(self, tid, default=None):
        if tid in self.made:
            return self.made[tid]
        return self[tid] if tid in self.shown else default

    def __contains__(self, tid: object) -> bool:
        return tid in self.shown

    def __iter__(self) -> Iterator[str]:
        return iter(self.shown)

    def __len__(self) -> int:
        return len(self.shown)

    def put(self, tid: str, node: NodeItem) -> None:
        self.shown[tid] = None
        self.made[tid] = node

    def is_made(self, tid: str) -> bool:
        return tid in self.made

    def pop(self, tid: str, default=None):
        self.shown.pop(tid, None)
        return self.made.pop(tid, default)

    def set_keys(self, tids) -> list[NodeItem]:
        """Show exactly ``tids``; returns the made items of tasks no longer shown."""
        self.shown = dict.fromkeys(tids)
        gone = [t for t in self.made if t not in self.shown]
        return [self.made.pop(t) for t in gone]


class BulkCards:
    """The cards of tasks with no item, as rounded rects in path items per tile and look."""

    def __init__(self, scene):
        self.scene = scene
        self.items: dict[tuple, QGraphicsPathItem] = {}  # (tile, look key) -> item
        self.tile_of: dict[str, tuple[int, int]] = {}  # task -> its tile
        self.members: dict[tuple[int, int], dict[str, None]] = {}  # tile -> tasks
        self.where: dict[str, tuple[float, float]] = {}  # task -> top-left drawn at
        self.grid: dict[tuple[int, int], list[str]] = {}  # cell of a top-left -> tasks
        self.dirty: set[tuple[int, int]] = set()
        self.rebuilt_tiles = 0  # tiles drawn again (tests count them)

    @property
    def active(self) -> bool:
        return bool(self.where)

    def clear(self) -> None:
        for item in self.items.values():
            self.scene.removeItem(item)
        self.items.clear()
        self.tile_of.clear()
        self.members.clear()
        self.where.clear()
        self.grid.clear()
        self.dirty.clear()

    def place(self, positions: dict[str, tuple[float, float]]) -> None:
        """Every task's card at these top-left corners (a new layout): all tiles afresh."""
        self.clear()
        for tid, (x, y) in positions.items():
            self.add(tid, x, y)

    def add(self, tid: str, x: float, y: float) -> None:
        """A card at (x, y) (top-left), filed in its tile and cell; drawn with its tile."""
        tile = (int(x // TILE), int(y // TILE))
        self.tile_of[tid] = tile
        tasks = self.members.get(tile)
        if tasks is None:
            tasks = self.members[tile] = {}
        tasks[tid] = None
        self.grid.setdefault((int(x // CELL_W), int(y // CELL_H)), []).append(tid)
        self.where[tid] = (x, y)
        self.dirty.add(tile)

    def move(self, tid: str, x: float, y: float) -> None:
        """One card stands elsewhere now (pinned, kept after an edit)."""
        old = self.where.get(tid)
        if old is None or old == (x, y):
            return
        cell_list = self.grid.get(_cell(*old))
        if cell_list is not None and tid in cell_list:
            cell_list.remove(tid)
        self.grid.setdefault(_cell(x, y), []).append(tid)
        self.where[tid] = (x, y)
        self.touch(tid)
        tile = (int(x // TILE), int(y // TILE))
        if tile != self.tile_of[tid]:
            self.members[self.tile_of[tid]].pop(tid, None)
            self.members.setdefault(tile, {})[tid] = None
            self.tile_of[tid] = tile
            self.dirty.add(tile)

    def touch(self, tid: str) -> None:
        """``tid``'s card changed (its state, or it was made or given back): redraw its tile."""
        tile = self.tile_of.get(tid)
        if tile is not None:
            self.dirty.add(tile)

    def at(self, x: float, y: float) -> str | None:
        """The task whose card (made or not) covers scene point (x, y), or None."""
        cx, cy = _cell(x, y)
        grid, where = self.grid, self.where
        for cell in ((cx, cy), (cx - 1, cy), (cx, cy - 1), (cx - 1, cy - 1)):
            for tid in grid.get(cell, ()):
                left, top = where[tid]
                if left <= x <= left + NODE_WIDTH and top <= y <= top + NODE_HEIGHT:
                    return tid
        return None

    def inside(self, rect: QRectF) -> list[str]:
        """Tasks whose cards meet ``rect`` (the view's visible part)."""
        found: dict[str, None] = {}
        left, top = int(rect.left() // CELL_W) - 1, int(rect.top() // CELL_H) - 1
        right, bottom = int(rect.right() // CELL_W) + 1, int(rect.bottom() // CELL_H) + 1
        grid = self.grid
        if (right - left) * (bottom - top) > 4 * len(self.where) + 64:
            return list(self.where)  # a rect bigger than the graph: every card
        for cx in range(left, right + 1):
            for cy in range(top, bottom + 1):
                for tid in grid.get((cx, cy), ()):
                    found[tid] = None
        return list(found)

    def redraw(self, limit: int | None = None) -> bool:
        """Draw the dirty tiles again (tiles of at most ``limit`` cards in all, at least
        one tile); True when none is left."""
        scene = self.scene
        made, tasks, base = scene.nodes.made, scene.tasks, scene.base
        from .items import _look

        done = 0
        while self.dirty and (limit is None or done < limit):
            tile = self.dirty.pop()
            done += len(self.members.get(tile, ())) + 1
            self.rebuilt_tiles += 1
            paths: dict[object, QPainterPath] = {}
            where = self.where
            for tid in self.members.get(tile, ()):
                info = tasks.get(tid)
                if info is None or tid in made:
                    continue
                path = paths.get(info.state)
                if path is None:
                    path = paths[info.state] = QPainterPath()
                x, y = where[tid]
                path.addRoundedRect(x, y, NODE_WIDTH, NODE_HEIGHT, 8.0, 8.0)
            for key in [k for k in self.items if k[0] == tile and k[1] not in paths]:
                scene.removeItem(self.items.pop(key))
            for state, path in paths.items():
                item = self.items.get((tile, state))
                if item is None:
                    item = self.items[(tile, state)] = QGraphicsPathItem()
                    item.setZValue(BULK_Z)
                    scene.addItem(item)
                look = _look(state, base)
                item.setBrush(look.brush)
                item.setPen(look.pen)
                item.setPath(path)
        return not self.dirty

    def recolour_all(self) -> None:
        """A new palette: every tile's looks again."""
        self.dirty = set(self.members)


def _cell(x: float, y: float) -> tuple[int, int]:
    return (int(x // CELL_W), int(y // CELL_H))
