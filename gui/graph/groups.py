"""Groups of tasks, for a graph that stays readable at any size (semantic zoom).

A task's group is its workflow file's ``group`` key, else its name's prefix before
the first ``.`` or ``/`` (``etl.extract`` -> ``etl``). A big graph whose tasks have
neither (``t0`` … ``t9999``) is grouped by topological layer instead, so a fitted
view never turns into a wall of boxes.

A collapsed group is drawn as one node (its *representative*); edges between
representatives are bundled, with the number of task edges they stand for. This
module is plain Python (no Qt), so the view's structure can be computed and tested
on its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

_DIGITS = re.compile(r"(\d+)")

GROUP_MARK = "\x01group:"  # representative id of a collapsed group; never a task id
# Above this many tasks, groups start collapsed (a person expands the ones wanted).
COLLAPSE_ABOVE = 300
# Above this many tasks with no group of their own, they are grouped by layer, in
# about LAYER_BANDS bands of consecutive layers: few enough to read when fitted.
LAYER_GROUPS_ABOVE = 300
LAYER_BANDS = 6


def group_rep(group: str) -> str:
    return GROUP_MARK + group


def is_group_rep(rep: str) -> bool:
    return rep.startswith(GROUP_MARK)


def group_name(rep: str) -> str:
    return rep[len(GROUP_MARK) :]


def prefix_group(name: str) -> str | None:
    """``etl.extract`` -> ``etl``; ``daily/report`` -> ``daily``; ``t7`` -> None."""
    cuts = [i for i in (name.find("."), name.find("/")) if i > 0]
    return name[: min(cuts)] if cuts else None


@lru_cache(maxsize=1 << 17)  # names repeat on every relayout and lane sort
def natural_key(text: str) -> tuple:
    """Sort key putting ``task-2`` before ``task-10``."""
    return tuple(int(part) if part.isdigit() else part.lower() for part in _DIGITS.split(text))


def layer_bands(layer: Mapping[str, int], bands: int = LAYER_BANDS) -> dict[str, str]:
    """{task: band name}: consecutive layers joined until a band holds about
    1/``bands`` of the tasks; a layer bigger than that alone is cut into parts."""
    by_layer: dict[int, list[str]] = {}
    for tid, number in layer.items():
        by_layer.setdefault(number, []).append(tid)
    share = max(1, -(-len(layer) // bands))
    names: dict[str, str] = {}
    band: list[int] = []
    held = 0

    def close() -> None:
        first, last = band[0] + 1, band[-1] + 1
        name = f"layer {first}" if first == last else f"layers {first}–{last}"
        for number in band:
            for tid in by_layer[number]:
                names[tid] = name

    for number in sorted(by_layer):
        tasks = by_layer[number]
        if len(tasks) > share:  # one huge layer (independent tasks): parts in name order
            if band:
                close()
                band, held = [], 0
            tasks.sort(key=natural_key)
            parts = -(-len(tasks) // share)
            for index in range(parts):
                chunk = tasks[index * share : (index + 1) * share]
                name = f"layer {number + 1}, part {index + 1}"
                for tid in chunk:
                    names[tid] = name
            continue
        band.append(number)
        held += len(tasks)
        if held >= share:
            close()
            band, held = [], 0
    if band:
        close()
    return names


def layers_of(tasks: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """Each task's topological layer (0 for tasks with no dependency), in O(tasks + edges).

    ``tasks`` maps a task to its dependencies; unknown dependencies are ignored. Tasks on
    a cycle (the engine refuses those) get the layer after their last known one.
    """
    ordered = _layers_in_order(tasks)
    if ordered is not None:
        return ordered
    waiting = {tid: 0 for tid in tasks}
    children: dict[str, list[str]] = {tid: [] for tid in tasks}
    for tid, deps in tasks.items():
        for dep in set(deps):
            if dep in children:
                children[dep].append(tid)
                waiting[tid] += 1
    layer = {tid: 0 for tid, count in waiting.items() if count == 0}
    ready = list(layer)
    while ready:
        tid = ready.pop()
        for child in children[tid]:
            layer[child] = max(layer.get(child, 0), layer[tid] + 1)
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    top = max(layer.values(), default=-1) + 1
    return {tid: layer.get(tid, top) for tid in tasks}


def _layers_in_order(tasks: Mapping[str, Iterable[str]]) -> dict[str, int] | None:
    """``layers_of`` in one pass when every task comes after its dependencies (a file's
    tasks are scheduled so, and the engine lists them as added); None if one does not.
    No lists of dependents: at 100,000 tasks the general walk took a second."""
    layer: dict[str, int] = {}
    get = layer.get
    for tid, deps in tasks.items():
        top = -1
        for dep in deps:
            number = get(dep)
            if number is None:
                if dep in tasks:
                    return None  # a dependency further on (or a cycle): the general walk
                continue
            if number > top:
                top = number
        layer[tid] = top + 1
    return layer


def assign_groups(
    tasks: Mapping[str, object], explicit: Callable[[str], str | None] | None = None
) -> dict[str, str]:
    """{task id: group} for every task that has a group (tasks may be TaskInfo)."""
    groups: dict[str, str] = {}
    loose: list[str] = []
    for tid, info in tasks.items():
        group = explicit(tid) if explicit is not None else None
        if not group:
            group = prefix_group(getattr(info, "name", None) or tid)
        if group:
            groups[tid] = group
        else:
            loose.append(tid)
    if len(loose) > LAYER_GROUPS_ABOVE:
        deps = {tid: getattr(tasks[tid], "deps", ()) for tid in loose}
        groups.update(layer_bands(layers_of(deps)))
    return groups


@dataclass
class GroupView:
    """What the scene shows: representatives, and the edges between them."""

    members: dict[str, list[str]]  # representative -> the shown tasks it stands for
    rep_of: dict[str, str]  # shown task -> its representative
    edges: dict[tuple[str, str], int] = field(default_factory=dict)  # -> task edges bundled

    @property
    def tasks_shown(self) -> list[str]:
        """Tasks drawn as nodes of their own (not inside a collapsed group)."""
        return [rep for rep in self.members if not is_group_rep(rep)]


def build_view(
    tasks: Mapping[str, object],
    groups: Mapping[str, str],
    collapsed: set[str],
    shown: set[str] | None = None,
) -> GroupView:
    """Collapse the tasks of every group in ``collapsed`` into one representative.

    ``shown`` (a filter's result) limits the view to those tasks; None shows all.
    A group with a single shown task is drawn as that task.
    """
    counts: dict[str, int] = {}
    for tid in tasks:
        if shown is None or tid in shown:
            group = groups.get(tid)
            if group in collapsed:
                counts[group] = counts.get(group, 0) + 1
    members: dict[str, list[str]] = {}
    rep_of: dict[str, str] = {}
    for tid in tasks:
        if shown is not None and tid not in shown:
            continue
        group = groups.get(tid)
        rep = group_rep(group) if group is not None and counts.get(group, 0) > 1 else tid
        rep_of[tid] = rep
        members.setdefault(rep, []).append(tid)
    edges: dict[tuple[str, str], int] = {}
    for tid, rep in rep_of.items():
        for dep in getattr(tasks[tid], "deps", ()):
            up = rep_of.get(dep)
            if up is not None and up != rep:
                edges[(up, rep)] = edges.get((up, rep), 0) + 1
    return GroupView(members, rep_of, edges)
