"""The timeline's model: lanes, upcoming entries and attempt bars (Qt-free but for colours)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from taskloom.engine import Entry, Event

from ..graph.groups import layers_of, natural_key
from ..run_history import WindowHistory
from ._common import GROUP_BARS, GROUP_LANE, MANY_LANES, SORT_AT_ONCE_UP_TO


def lane_order(lanes, deps: dict, names: dict) -> list[str]:
    """``lanes`` upstream first, then by name in natural order (any thread)."""
    layer = layers_of({tid: deps.get(tid, ()) for tid in lanes})
    return sorted(lanes, key=lambda tid: (layer[tid], natural_key(names.get(tid) or tid), tid))


class TimelineModel:
    """Lanes, upcoming entries and attempt bars; fed by the bridge, read by the painter."""

    def __init__(self, attempts_of=None):
        self.attempts_of = attempts_of  # tid -> list[Attempt], to seed history of known tasks
        self.lanes: list[str] = []
        self.lane_index: dict[str, int] = {}
        self._deps: dict[str, tuple] = {}  # what the lane order is computed from
        self._names: dict[str, str] = {}
        self.order_dirty = False  # lanes added since the last sort (many lanes: sorted later)
        self._seeded = False
        # tid -> the collapsed group whose lane it shares, or None (its own lane).
        self.lane_group = None
        self.folds_new = 0  # lanes folded in one by one, not all again (tests count them)
        self.grouped_lanes: list[str] | None = None  # lanes with groups folded in
        self.grouped_index: dict[str, int] = {}  # lane -> its place in grouped_lanes
        self.group_sizes: dict[str, int] = {}
        self.group_bars: dict[str, deque] = {}  # group -> deque[(tid, task bar)], by start
        self.entries: dict[str, list[Entry]] = {}
        self.later: dict[str, list[Entry]] = {}  # recurring tasks' occurrences after the next
        self.attempts_next: dict[str, int] = {}
        self.bars: dict[str, deque] = {}  # tid -> deque[[start, end|None, outcome, attempt]]
        self.history: WindowHistory | None = None  # stored attempts of the visible window
        # "By worker": lanes are the workers that ran attempts (known once one ends).
        self.by_worker = False
        self.active_lanes: list[str] = []  # the lanes shown when there are many tasks
        self.workers: list[str] = []
        self.worker_bars: dict[str, deque] = {}  # worker -> deque[[start, end, outcome, n, tid]]
        # The forecast's runs still to come (gui/forecast_view.py): tid -> [(start, end,
        # on the critical path)], on the scheduler clock; drawn as ghosts after now.
        self.ghosts: dict[str, list[tuple[float, float, bool]]] = {}
        # The forecast's collisions: tid -> [(at, kind, detail)], drawn as warnings.
        self.collisions: dict[str, list[tuple[float, str, str]]] = {}
        # Recurring tasks: tid -> "every 10 s" (or its cron), drawn as one band with
        # its occurrences as ticks, not a marker and a ghost bar per occurrence.
        self.recurring: dict[str, str] = {}
        # Where the forecast's ghosts end (scheduler clock), whether a forecast that may
        # reach further is being computed, and why they end there (a look-ahead of a
        # week must not stop silently at +2 d).
        self.forecast_reach: float | None = None
        self.forecast_filling = False
        self.forecast_end_note = ""
        # Tasks with jitter: tid -> its most delay (s), or None; read once per task. An
        # upcoming entry of one is drawn as the window it may start in, not a point.
        self.jitter: dict[str, float | None] = {}
        # Asked for a forecast ghost's jitter when it is first painted (not for every
        # task a forecast names: 10,000 engine calls on the GUI thread).
        self.jitter_of: Callable[[str], float | None] | None = None

    def jitter_window(self, tid: str) -> tuple[float, float] | None:
        """(earliest, latest) start of the task's next upcoming entry, if it has jitter."""
        jitter, entries = self.jitter.get(tid), self.entries.get(tid)
        if not jitter or not entries:
            return None
        return entries[0].run_at, entries[0].run_at + jitter

    def visible_lanes(self) -> list[str]:
        if self.by_worker:
            return self.workers
        lanes = self.grouped_lanes if self.grouped_lanes is not None else self.lanes
        if len(lanes) <= MANY_LANES:
            return lanes
        return self.active_lanes

    def set_lane_groups(self, lane_group) -> None:
        """One lane per collapsed group (``lane_group(tid)``: its group, or None)."""
        self.lane_group = lane_group
        self._fold_groups()

    def _fold_groups(self) -> None:
        """The lanes with each collapsed group's tasks folded into one (in the place of
        its first task), and the group lanes' bars gathered from their tasks' bars."""
        lane_group = self.lane_group
        self.group_bars, self.group_sizes = {}, {}
        if lane_group is None:
            self.grouped_lanes = None
            self.grouped_index = {}
            return
        lanes: list[str] = []
        sizes = self.group_sizes
        for tid in self.lanes:
            group = lane_group(tid)
            if group is None:
                lanes.append(tid)
            elif group in sizes:
                sizes[group] += 1
            else:
                sizes[group] = 1
                lanes.append(GROUP_LANE + group)
        self.grouped_lanes = lanes if sizes else None
        self.grouped_index = {lane: i for i, lane in enumerate(lanes)} if sizes else {}
        gathered: dict[str, list] = {}
        for tid, bars in self.bars.items():
            group = lane_group(tid)
            if group is not None:
                gathered.setdefault(group, []).extend((tid, bar) for bar in bars)
        for group, items in gathered.items():
            items.sort(key=lambda item: item[1][0])
            self.group_bars[group] = deque(items, maxlen=GROUP_BARS)

    def _fold_new(self, new: list[str]) -> None:
        """Lanes appended to ``lanes`` since the last fold, folded in at the end (work
        per new lane; ``_fold_groups`` goes over them all)."""
        lanes, sizes, lane_group = self.grouped_lanes, self.group_sizes, self.lane_group
        if lanes is None or lane_group is None:
            self._fold_groups()  # no group lane yet: the lanes are the tasks'
            return
        self.folds_new += 1
        index = self.grouped_index
        for tid in new:
            group = lane_group(tid)
            if group is None:
                index[tid] = len(lanes)
                lanes.append(tid)
            elif group in sizes:
                sizes[group] += 1
            else:
                sizes[group] = 1
                index[GROUP_LANE + group] = len(lanes)
                lanes.append(GROUP_LANE + group)

    def refresh_active(self, selected: str | None = None) -> bool:
        """With many tasks, lanes only for those with something to show: an attempt
        bar, an upcoming entry, or the selection. Returns whether the set changed."""
        lanes = self.grouped_lanes if self.grouped_lanes is not None else self.lanes
        if len(lanes) <= MANY_LANES:
            return False
        shown = set(self.bars) | set(self.entries) | set(self.ghosts)
        if self.history is not None:
            shown |= set(self.history.bars)
        if selected:
            shown.add(selected)
        grouped = self.grouped_lanes is not None
        if len(shown) + len(self.group_sizes) < len(lanes) // 8:
            # Few to show among many lanes (a big graph expanded): sorted by place, not a
            # pass over every lane at each refresh (30-90 ms at 50,000).
            index = self.grouped_index if grouped else self.lane_index
            picked = {tid for tid in shown if tid in index}
            if grouped:
                picked.update(GROUP_LANE + group for group in self.group_sizes)
            active = sorted(picked, key=index.__getitem__)
        else:
            active = [tid for tid in lanes if tid in shown or tid.startswith(GROUP_LANE)]
        changed = active != self.active_lanes
        self.active_lanes = active
        return changed

    def set_by_worker(self, on: bool) -> None:
        """Switch lanes; turning it on reads the recent attempts of every task once."""
        self.by_worker = on
        self.workers, self.worker_bars = [], {}
        if on and self.attempts_of is not None:
            finished = []
            for tid in self.lanes:
                for attempt in self.attempts_of(tid)[-20:]:
                    if attempt.ended is not None:
                        finished.append((attempt.ended, tid, attempt))
            for _, tid, attempt in sorted(finished, key=lambda item: item[0]):
                self._add_worker_bar(tid, attempt)

    def _add_worker_bar(self, tid: str, attempt) -> None:
        worker = attempt.worker or "(unknown worker)"
        bars = self.worker_bars.get(worker)
        if bars is None:
            bars = self.worker_bars[worker] = deque(maxlen=200)
            self.workers.append(worker)
            self.workers.sort()
        bars.append([attempt.started, attempt.ended, attempt.outcome, attempt.number, tid])

    def _attempt_ended(self, tid: str, number: int) -> None:
        """Put a finished attempt in its worker's lane (its worker is known now)."""
        if self.attempts_of is None:
            return
        for attempt in reversed(self.attempts_of(tid)):
            if attempt.number == number:
                if attempt.ended is not None:
                    self._add_worker_bar(tid, attempt)
                return

    def set_tasks(self, tasks) -> None:
        reorder = False
        new: list[str] = []
        # Only the first tasks (the snapshot) ran before the events started: a task
        # heard of later has its attempts in the event stream (reading them all took
        # the scheduler's lock 20,000 times while tasks streamed in).
        seed = self.attempts_of is not None and not self._seeded
        self._seeded = True
        for tid, info in tasks.items():
            if tid not in self.lane_index:
                self.lane_index[tid] = len(self.lanes)
                self.lanes.append(tid)
                new.append(tid)
                reorder = True
                if info.attempt and seed:
                    self._seed_bars(tid)
            if self._deps.get(tid) != info.deps or self._names.get(tid) != info.name:
                self._deps[tid], self._names[tid] = info.deps, info.name
                reorder = True
            self.attempts_next[tid] = info.attempt + 1
        if reorder:
            self.order_dirty = True
            if len(self.lanes) <= SORT_AT_ONCE_UP_TO:
                self.sort_lanes()
            elif self.lane_group is not None:
                # New tasks show now; in order at the next sort.
                self._fold_groups() if seed else self._fold_new(new)

    def sort_lanes(self) -> None:
        """Upstream first (topological layers), then by name in natural order (task-2
        before task-10): the order a person reads a workflow in. Linear in tasks + edges,
        plus the sort; only when tasks or edges were added."""
        self.apply_order(lane_order(self.lanes, self._deps, self._names))

    def order_inputs(self) -> tuple[list[str], dict, dict]:
        """Copies of what ``lane_order`` reads, for a worker thread."""
        return list(self.lanes), dict(self._deps), dict(self._names)

    def apply_order(self, order: list[str]) -> bool:
        """The lanes in ``order`` (from ``lane_order``), unless the lanes changed since
        its inputs were copied (False: sort again)."""
        if len(order) != len(self.lanes) or set(order) != self.lane_index.keys():
            return False
        self.lanes[:] = order
        self.lane_index = {tid: i for i, tid in enumerate(order)}
        self.order_dirty = False
        if self.lane_group is not None:
            self._fold_groups()
        return True

    def _seed_bars(self, tid: str) -> None:
        """Attempts that ran before we subscribed (the event stream starts at the snapshot)."""
        bars = self.bars.setdefault(tid, deque(maxlen=20))
        for attempt in self.attempts_of(tid)[-20:]:
            bars.append([attempt.started, attempt.ended, attempt.outcome, attempt.number])

    def remove(self, ids) -> None:
        gone = set(ids)
        self.lanes = [t for t in self.lanes if t not in gone]
        self.lane_index = {t: i for i, t in enumerate(self.lanes)}
        for tid in gone:
            self._deps.pop(tid, None)
            self._names.pop(tid, None)
            self.bars.pop(tid, None)
            self.entries.pop(tid, None)
            self.later.pop(tid, None)
            self.recurring.pop(tid, None)

    def set_upcoming(self, entries) -> None:
        grouped: dict[str, list[Entry]] = {}
        for entry in entries:
            grouped.setdefault(entry.task_id, []).append(entry)
        self.entries = grouped

    def add_events(self, events: list[Event]) -> None:
        # An attempt may already have its bar (seeded from attempts(), or an event
        # heard twice, as a watcher's replay of the run's recent past can be): each
        # event applies to its own attempt's bar, once.
        for event in events:
            if event.kind == "running":
                bars = self.bars.setdefault(event.task_id, deque(maxlen=20))
                if not any(bar[3] == event.attempt for bar in bars):
                    bar = [event.at, None, "running", event.attempt]
                    bars.append(bar)
                    group = self.lane_group(event.task_id) if self.lane_group else None
                    if group is not None:  # the same list: its end is filled in once
                        self.group_bars.setdefault(group, deque(maxlen=GROUP_BARS)).append(
                            (event.task_id, bar)
                        )
            elif event.outcome is not None:  # the engine says this event ended an attempt
                known = self.bars.get(event.task_id)
                if not known:
                    continue
                own = [bar for bar in known if bar[3] == event.attempt]
                bar = own[-1] if own else known[-1]
                if bar[1] is None:
                    bar[1] = event.at
                    bar[2] = event.outcome
                    if self.by_worker:
                        self._attempt_ended(event.task_id, bar[3])

    def stored_bars(self, tid: str):
        """Stored attempts of the task not also shown from the event stream."""
        if self.history is None:
            return ()
        rows = self.history.bars.get(tid, ())
        live = {bar[3] for bar in self.bars.get(tid, ())}
        run = self.history.run
        return [row for row in rows if not (row[4] == run and row[3] in live)]
