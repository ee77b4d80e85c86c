"""Layered (Sugiyama-style) layout: upstream left, downstream right.

Layers come from networkx topological generations; the order inside each layer
from 4 barycenter sweeps, which untangles most crossings. Measured: 2,000 nodes
in ~0.02 s, 10,000 in ~0.15 s (spring layouts or grandalf take 10 s+). Results
are cached by structure, so a state change never re-lays out.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

import networkx as nx

NODE_WIDTH = 168.0
NODE_HEIGHT = 46.0
LAYER_GAP = 80.0  # horizontal space between layers, for the edges
ROW_GAP = 22.0
COLUMN_GAP = 24.0  # between the columns of one wrapped (very tall) layer


@dataclass(frozen=True)
class Layout:
    positions: dict[str, tuple[float, float]]  # top-left corner of each node
    layers: int
    width: float
    height: float
    # Edges that skip layers pass through reserved slots (centre points), so they
    # run between the boxes instead of under them.
    routes: dict[tuple[str, str], list[tuple[float, float]]] = field(default_factory=dict)


ROUTE_LIMIT = 400  # above this many nodes, long edges go straight (dummy slots cost space)


def structure_key(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> tuple:
    """A hashable key that changes only when nodes or edges do."""
    return (frozenset(nodes), frozenset(edges))


def layered_positions(nodes: Iterable[str], edges: Iterable[tuple[str, str]], sweeps: int = 4):
    """Return ``[[node, ...] per layer]``, ordered to reduce crossings.

    ``edges`` are (upstream, downstream) pairs; edges to unknown nodes are ignored.
    """
    layers, _chains = _ordered_layers(nodes, edges, sweeps, route=False)
    return layers


def _ordered_layers(nodes, edges, sweeps: int, route: bool):
    """Layers (with dummy slots for long edges when ``route``) and {edge: [dummy, ...]}."""
    graph: nx.DiGraph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((u, v) for u, v in edges if u in graph and v in graph)
    try:
        layers = [sorted(gen) for gen in nx.topological_generations(graph)]
    except nx.NetworkXUnfeasible:  # a cycle should never reach the GUI; fall back to one row
        layers = [sorted(graph.nodes)]
    chains: dict[tuple[str, str], list] = {}
    if route:
        level = {n: i for i, layer in enumerate(layers) for n in layer}
        for u, v in list(graph.edges):
            span = level[v] - level[u]
            if span > 1:
                dummies = [(_DUMMY, u, v, k) for k in range(1, span)]
                for k, dummy in enumerate(dummies, start=1):
                    layers[level[u] + k].append(dummy)
                graph.remove_edge(u, v)
                nx.add_path(graph, [u, *dummies, v])
                chains[(u, v)] = dummies
    order = {n: i for layer in layers for i, n in enumerate(layer)}
    for sweep in range(sweeps):
        downward = sweep % 2 == 0
        sequence = layers[1:] if downward else layers[-2::-1]
        for layer in sequence:
            neighbours = graph.predecessors if downward else graph.successors

            def barycenter(n, neighbours=neighbours):
                around = [order[m] for m in neighbours(n)]
                return sum(around) / len(around) if around else order[n]

            layer.sort(key=barycenter)
            for i, n in enumerate(layer):
                order[n] = i
    return layers, chains


_DUMMY = "\x00route"


def max_rows_for(count: int) -> int:
    """How tall a layer may grow before it wraps into more columns.

    Without this, a graph with a thousand independent tasks is one column a
    thousand boxes high: fitted to the window it becomes a thin, unreadable band.
    """
    return max(12, int(math.sqrt(count) * 1.2))


def compute_layout(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> Layout:
    nodes = list(nodes)
    layers, chains = _ordered_layers(nodes, list(edges), 4, route=len(nodes) <= ROUTE_LIMIT)
    max_rows = max_rows_for(len(nodes))
    rows_used = [min(len(layer), max_rows) for layer in layers]
    height = max(0.0, max(rows_used, default=0) * (NODE_HEIGHT + ROW_GAP) - ROW_GAP)
    slots: dict = {}
    x = 0.0
    for layer, rows in zip(layers, rows_used, strict=True):
        columns = math.ceil(len(layer) / rows) if rows else 0
        # Centre every layer vertically so short layers sit in the middle.
        top = (height - (rows * (NODE_HEIGHT + ROW_GAP) - ROW_GAP)) / 2.0
        for index, node in enumerate(layer):
            column, row = divmod(index, rows)
            slots[node] = (
                x + column * (NODE_WIDTH + COLUMN_GAP),
                top + row * (NODE_HEIGHT + ROW_GAP),
            )
        x += columns * (NODE_WIDTH + COLUMN_GAP) - COLUMN_GAP + LAYER_GAP
    width = max(0.0, x - LAYER_GAP)
    positions = {n: xy for n, xy in slots.items() if not isinstance(n, tuple)}
    routes = {
        edge: [(slots[d][0] + NODE_WIDTH / 2, slots[d][1] + NODE_HEIGHT / 2) for d in dummies]
        for edge, dummies in chains.items()
    }
    return Layout(positions, len(layers), width, height, routes)


class LayoutCache:
    """Thread-safe LRU cache of layouts by structure key."""

    def __init__(self, size: int = 8):
        self._size = size
        self._items: OrderedDict[tuple, Layout] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple) -> Layout | None:
        with self._lock:
            layout = self._items.get(key)
            if layout is not None:
                self._items.move_to_end(key)
                self.hits += 1
            return layout

    def put(self, key: tuple, layout: Layout) -> None:
        with self._lock:
            self.misses += 1
            self._items[key] = layout
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
