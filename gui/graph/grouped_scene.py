"""The graph scene's groups and filters: which representatives it draws.

A mixin of ``GraphScene`` (kept apart so the scene stays about placing and drawing).
The scene asks ``_group_view()`` what to show on every structure change; groups
collapse and expand, and filters change, through the methods here, which rebuild
the view and lay it out again (a full relayout: the structure changed a lot).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate
from typing import TYPE_CHECKING, Any

import networkx as nx
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QFont, QPainterPath, QPalette

from taskloom.engine import TaskInfo

from .. import relay
from ..background import LatestWorker
from .filters import GraphFilter
from .group_item import GroupItem
from .groups import (
    COLLAPSE_ABOVE,
    GroupView,
    assign_groups,
    build_view,
    group_rep,
    is_group_rep,
)
from .items import routed_curve
from .layout import NODE_HEIGHT, NODE_WIDTH

if TYPE_CHECKING:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QGraphicsScene as _SceneBase

    from .bulk import BulkCards, NodeTable
    from .layout import Layout
else:
    _SceneBase = object  # a mixin of GraphScene, itself a QGraphicsScene

LABEL_FONT_SIZE = 11.0


BACKGROUND_VIEW_TASKS = 2000  # from this many tasks, the view is worked out off the GUI thread


class SearchIndex:
    """Find's lookups for one set of tasks, made with the view (off the GUI thread for a
    big graph): a task whose id or name is the text (any case), else the first in id
    order whose id or name contains it; one C-speed ``str.find`` instead of a walk."""

    def __init__(self, tasks: dict[str, TaskInfo]):
        exact: dict[str, str] = {}
        for tid, info in tasks.items():  # the first task in the table wins, as before
            exact.setdefault(tid.lower(), tid)
            exact.setdefault((info.name or "").lower(), tid)
        exact.pop("", None)
        self.exact = exact
        self.order = sorted(tasks)
        keys = [f"{tid.lower()}\x00{(tasks[tid].name or '').lower()}" for tid in self.order]
        self.starts = list(accumulate((len(k) + 1 for k in keys[:-1]), initial=0))
        self.text = "\n".join(keys)

    def find(self, needle: str) -> str | None:
        """The task ``needle`` (stripped, lower case, without line breaks) finds, or None."""
        found = self.exact.get(needle)
        if found is not None:
            return found
        at = self.text.find(needle)
        return None if at < 0 else self.order[bisect_right(self.starts, at) - 1]


class ViewWork:
    """What the scene should draw for a set of tasks: plain Python, run on any thread."""

    def __init__(
        self, tasks, group_source, collapsed, seen, graph_filter, collapse_above, known=None
    ):
        self.tasks = tasks
        self.group_source = group_source
        self.collapsed = collapsed
        self.seen = seen
        self.filter = graph_filter
        self.collapse_above = collapse_above
        # (groups, graph, search) already worked out for these very tasks (a group
        # opened or closed, a filter changed): only the view is worked out again.
        self.known = known
        self.version = 0  # the scene's tasks_version these tasks are

    def run(self) -> None:
        tasks = self.tasks
        if self.known is not None:
            self.groups, self.graph, self.search, self.edge_count = self.known
        else:
            self.groups = assign_groups(tasks, self.group_source)
        fresh = set(self.groups.values()) - self.seen
        big = self.collapse_above is not None and len(tasks) > self.collapse_above
        if fresh and big:  # a big graph starts as its groups
            self.collapsed |= fresh
        self.seen |= fresh
        self.view = build_view(tasks, self.groups, self.collapsed, self.filter.shown(tasks))
        if self.known is not None:
            return
        self.graph, self.edge_count = digraph_of(tasks)
        self.search = SearchIndex(tasks)


def digraph_of(tasks: dict[str, TaskInfo]) -> tuple[nx.DiGraph, int]:
    """(upstream -> downstream graph of ``tasks``, its number of edges), as networkx's
    add_edges_from would make it, in half its time (a second at 100,000 tasks): its
    adjacency dicts are filled directly (one data dict per edge, shared both ways)."""
    succ: dict[str, dict] = {tid: {} for tid in tasks}
    pred: dict[str, dict] = {tid: {} for tid in tasks}
    count = 0
    for tid, info in tasks.items():
        up_of = pred[tid]
        for dep in info.deps:
            down_of = succ.get(dep)
            if down_of is not None and tid not in down_of:
                down_of[tid] = up_of[dep] = {}
                count += 1
    graph: nx.DiGraph = nx.DiGraph()
    inner: Any = graph  # its private dicts (no stub has them)
    inner._node = {tid: {} for tid in tasks}
    inner._succ = inner._adj = succ  # networkx's own descriptors reset its cached views
    inner._pred = pred
    return graph, count


class GroupedScene(_SceneBase):
    """Groups (collapsed or not) and the filter of a GraphScene."""

    # Above this many tasks, groups start collapsed; None: never by themselves.
    collapse_above: int | None = COLLAPSE_ABOVE
    _labels: tuple[QPainterPath, QFont] | None = None  # bundle counts being drawn

    if TYPE_CHECKING:  # GraphScene's, which this is a part of (for the checker)
        tasks: dict[str, TaskInfo]
        nodes: NodeTable
        selected: list[str]
        kept: dict[str, tuple[float, float]]
        base: QColor
        layout: Layout | None
        _fresh: set[str]
        _unbuilt: list[str]
        _layout_waiting: Layout | None
        _place_timer: QTimer
        _edges_timer: QTimer
        _announce_timer: QTimer
        _move_job: list[str] | None
        bulk: BulkCards
        virtual: bool

        def set_tasks(self, tasks: dict[str, TaskInfo]) -> None: ...
        def _show_view(self) -> None: ...
        def _route(self, up: str, down: str) -> Any: ...
        def _anchor(self, rep: str) -> QPointF | None: ...
        def output_point(self, rep: str) -> QPointF: ...
        def input_point(self, rep: str) -> QPointF: ...
        def _update_halo(self) -> None: ...

    def _init_groups(self) -> None:
        # task id -> its file's ``group`` key, or None
        self.group_source: Callable[[str], str | None] | None = None
        self.groups: dict[str, str] = {}  # task id -> group
        self.collapsed: set[str] = set()
        self._seen_groups: set[str] = set()
        self.filter = GraphFilter()
        self.view_model = GroupView({}, {}, {})
        self.group_items: dict[str, GroupItem] = {}  # representative id -> item
        self.selected_group: str | None = None
        # Tasks to select once a layout shows them (found inside a collapsed group).
        self.reveal_waiting: list[str] = []
        self._view_waiting = False  # a worker is working out what to draw
        self.group_zoom = 1.0  # the view's zoom: group labels keep their size below 0.75
        self.regrouped = False  # the next view is laid out afresh (nothing kept in place)
        # Rests as long as a view took before the next (one per batch under a flood).
        self._view_worker = LatestWorker("taskloom-graph-view", rest=1.0)
        self.group_recounts = 0  # groups counted over all their members (tests count them)
        self.edge_count = 0  # the graph's edges (counted on the view's worker)
        # Bumped when the tasks' ids, names or edges change: groups, the edge graph and
        # Find's index of the view taken last stay good while it is the same.
        self.tasks_version = 0
        self._view_version = -1  # tasks_version the view taken last was worked out for
        self._view_group_source: object = None
        self.search: SearchIndex | None = None
        self._same_tasks = False  # set by a regroup: only the view changes

    # -- what to show ------------------------------------------------------------------
    def _work_out_view(self) -> bool:
        """Work out what to draw for ``self.tasks``: at once for a small graph (returns
        True: show it now), else on a worker thread (False: ``_show_view`` follows)."""
        self._view_generation = generation = getattr(self, "_view_generation", 0) + 1
        same, self._same_tasks = self._same_tasks, False
        known = None
        if (
            same
            and not self._view_waiting
            and self._view_version == self.tasks_version
            and self._view_group_source is self.group_source
            and self.search is not None
        ):
            known = (self.groups, self.graph, self.search, self.edge_count)
        work = ViewWork(
            dict(self.tasks),
            self.group_source,
            set(self.collapsed),
            set(self._seen_groups),
            self.filter,
            self.collapse_above,
            known,
        )
        work.version = self.tasks_version
        if len(work.tasks) < BACKGROUND_VIEW_TASKS:
            work.run()
            self._take_view(work)
            return True
        self._view_waiting = True

        def run() -> None:
            work.run()
            relay.post(self, "_on_view_ready", generation, work)  # if the scene still is

        self._view_worker.submit(run)  # no wait for a thread to start (the GIL)
        return False

    def _on_view_ready(self, generation: int, work: ViewWork) -> None:
        if generation != self._view_generation:
            return  # the tasks or the groups changed meanwhile: a newer one is coming
        self._view_waiting = False
        self._take_view(work)
        self._show_view()

    def _take_view(self, work: ViewWork) -> None:
        self.groups, self.collapsed, self._seen_groups = work.groups, work.collapsed, work.seen
        self.graph, self.view_model = work.graph, work.view
        self.search, self._view_version = work.search, work.version
        self._view_group_source = work.group_source
        self.edge_count = work.edge_count

    def _sync_group_items(self, view: GroupView) -> None:
        for rep in [r for r in self.group_items if r not in view.members]:
            self.removeItem(self.group_items.pop(rep))
        if self.selected_group is not None and group_rep(self.selected_group) not in view.members:
            self.selected_group = None
        ink = self._ink()
        for rep, members in view.members.items():
            if not is_group_rep(rep):
                continue
            item = self.group_items.get(rep)
            if item is None:
                item = self.group_items[rep] = GroupItem(rep, self.base, ink)
                item.set_zoom(self.group_zoom)
                item.setVisible(False)  # until the layout places it
                self.addItem(item)
            # Counted again only where the members changed: a batch that adds tasks
            # counts the new ones (a group's members come in the tasks' order, the new
            # at the end); the rest kept their counts from the state batches.
            seen = item.members
            if seen is not None and len(seen) <= len(members) and members[: len(seen)] == seen:
                if len(seen) < len(members):
                    counts = dict(item.counts)
                    for state, n in self._counts(members[len(seen) :]).items():
                        counts[state] = counts.get(state, 0) + n
                    item.set_counts(counts)
            else:
                self.group_recounts += 1
                item.set_counts(self._counts(members))
            item.members = members

    def _counts(self, members) -> dict:
        counts: dict = {}
        tasks = self.tasks
        for tid in members:
            state = tasks[tid].state
            counts[state] = counts.get(state, 0) + 1
        return counts

    def _ink(self) -> QColor:
        return QColor(self.palette_ink) if hasattr(self, "palette_ink") else QColor("black")

    def _recount_groups(self, changed: dict[str, TaskInfo], old_states: dict) -> None:
        """Keep the state bars of collapsed groups in step with a batch of state changes."""
        touched: dict[str, dict] = {}
        rep_of = self.view_model.rep_of
        for tid, info in changed.items():
            rep = rep_of.get(tid)
            item = self.group_items.get(rep) if rep is not None else None
            if rep is None or item is None:
                continue
            counts = touched.setdefault(rep, dict(item.counts))
            old = old_states.get(tid)
            if old is not None:
                counts[old] = counts.get(old, 0) - 1
            counts[info.state] = counts.get(info.state, 0) + 1
        for rep, counts in touched.items():
            self.group_items[rep].set_counts(counts)

    def item_of(self, rep: str):
        """The node or group item drawn for a representative, or None."""
        return self.nodes.get(rep) or self.group_items.get(rep)

    @property
    def view_pending(self) -> bool:
        """True while a worker thread works out what to draw (a big graph)."""
        return self._view_waiting

    @property
    def shown_items(self) -> int:
        """How many nodes and groups the scene draws."""
        return len(self.nodes) + len(self.group_items)

    def is_drawn(self) -> bool:
        """Every representative made and placed by the current layout (edges built)."""
        view = self.view_model
        return (
            self.layout is not None
            and not self._view_waiting
            and not self._unbuilt
            and self._layout_waiting is None
            and not self._edges_timer.isActive()
            and not self._place_timer.isActive()
            and self._move_job is None
            and not self._announce_timer.isActive()
            and not self.bulk.dirty
            and self._all_drawn(view)
        )

    def _all_drawn(self, view: GroupView) -> bool:
        """Every representative placed by the layout and drawn (an item, or a bulk
        card): set operations, not a call per task (50,000 of them)."""
        assert self.layout is not None
        members = view.members.keys()
        if not members <= self.layout.positions.keys():
            return False
        left = members - self.nodes.made.keys() - self.group_items.keys()
        return not left or (self.virtual and left <= self.bulk.where.keys())

    # -- collapse, expand, filter -----------------------------------------------------
    def group_of(self, tid: str) -> str | None:
        return self.groups.get(tid)

    def lane_group(self, tid: str) -> str | None:
        """The collapsed group ``tid`` is drawn in, or None (the timeline's lanes)."""
        group = self.groups.get(tid)
        return group if group in self.collapsed else None

    def expand(self, group: str) -> bool:
        if group not in self.collapsed:
            return False
        self.collapsed.discard(group)
        self._regroup()
        return True

    def collapse(self, group: str) -> bool:
        if group in self.collapsed or group not in self._seen_groups:
            return False
        self.collapsed.add(group)
        self.selected = [t for t in self.selected if self.groups.get(t) != group]
        self.selected_group = group
        self._regroup()
        return True

    def expand_all(self) -> None:
        self.collapsed.clear()
        self._regroup()

    def collapse_all(self) -> None:
        self.collapsed = set(self._seen_groups)
        self.selected = []
        self._regroup()

    def set_filter(self, graph_filter: GraphFilter) -> None:
        if graph_filter != self.filter:
            self.filter = graph_filter
            self._regroup()

    def reveal(self, ids: list[str]) -> bool:
        """Expand the collapsed groups holding ``ids``; True if the view must change
        first (the ids are selected once the new layout is applied)."""
        groups = {self.groups.get(t) for t in ids if t in self.tasks and t not in self.nodes}
        groups &= self.collapsed
        if not groups:
            return False
        self.collapsed -= groups
        self.reveal_waiting = list(ids)
        self._regroup()
        return True

    def refilter(self) -> None:
        """Tasks changed state under a state filter ("Failed only"): they enter or
        leave the view (a task that failed later stayed hidden)."""
        if self.filter.states:
            self._regroup()

    def _regroup(self) -> None:
        """The view changed a lot: lay it out afresh (edits' kept places are forgotten)."""
        self.kept.clear()
        self._fresh.clear()
        self.regrouped = True
        self._same_tasks = True  # the groups, edges and Find's index are kept
        self.set_tasks(self.tasks)

    def find_task(self, needle: str) -> tuple[bool, str | None]:
        """Find's answer from the index worked out with the view (``needle`` stripped and
        lower case): (True, task or None); (False, None) when the index is not of the
        current tasks (the caller walks them)."""
        search = self.search
        if search is None or self._view_version != self.tasks_version or self._view_waiting:
            return False, None
        if "\n" in needle or "\x00" in needle:
            return False, None
        return True, search.find(needle)

    # -- drawing -------------------------------------------------------------------------
    def bundle_labels(self, view: GroupView) -> QPainterPath:
        """The count on every bundled edge (one path: many labels, one C++ item)."""
        self._labels = None
        for (up, down), count in view.edges.items():
            if count >= 2:
                self.add_bundle_label(up, down, count)
        return self.take_bundle_labels()

    def add_bundle_label(self, up: str, down: str, count: int) -> None:
        """One bundled edge's count, into the path ``take_bundle_labels`` returns."""
        a, b = self._anchor(up), self._anchor(down)
        if a is None or b is None:
            return
        if self._labels is None:
            font = QFont()
            font.setPointSizeF(LABEL_FONT_SIZE)
            self._labels = (QPainterPath(), font)
        path, font = self._labels
        # Half way along the curve as drawn (long ones pass through reserved slots).
        curve = routed_curve(self.output_point(up), self.input_point(down), self._route(up, down))
        path.addText(curve.pointAtPercent(0.5) + QPointF(-4, -4), font, f"{count:,}")

    def take_bundle_labels(self) -> QPainterPath:
        labels, self._labels = self._labels, None
        return QPainterPath() if labels is None else labels[0]

    def group_halo(self, path: QPainterPath) -> None:
        if self.selected_group is None:
            return
        item = self.group_items.get(group_rep(self.selected_group))
        if item is not None:
            corner = item.pos()
            x, y = corner.x() - 4, corner.y() - 4
            path.addRoundedRect(x, y, NODE_WIDTH + 12, NODE_HEIGHT + 12, 11, 11)

    def set_group_zoom(self, zoom: float) -> None:
        self.group_zoom = zoom
        for item in self.group_items.values():
            item.set_zoom(zoom)

    def select_group(self, group: str | None) -> None:
        self.selected_group = group
        self.selected = []
        self._update_halo()

    def ink_from(self, palette: QPalette) -> None:
        self.palette_ink = palette.color(QPalette.ColorRole.Text)
        for item in self.group_items.values():
            item.set_colours(self.base, self.palette_ink)
