"""The one place where engine events cross into the Qt thread.

The engine calls our listener on its delivery thread. The listener only stores
the event under a lock (latest event per task wins, plus a bounded tail of raw
events); the first event after a drain wakes the GUI thread (one queued call
through ``relay``), which drains ~33 ms later and emits one batched signal. One
queued signal per event would flood the event loop (measured 2 s lag at 50,000
events/s); coalescing keeps it near one frame. With no events, no timer runs: an
idle window is not woken 30 times a second to find nothing.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from itertools import islice

from PySide6.QtCore import QCoreApplication, QObject, QThread, QTimer, Signal

from taskloom.engine import Event, TaskInfo, TaskState
from taskloom.engine import fold as folding
from taskloom.engine.fold import PAUSE_KINDS, STRUCTURAL_KINDS, TaskFold
from taskloom.engine.run_api import RunInterface

from . import relay

FINISH_KINDS = frozenset({"succeeded", "failed"})
# Tasks re-read from the engine per drain at most (each read takes the scheduler's
# lock): 20,000 tasks added at once were read in one 300+ ms slice; the rest wait
# for the next drains, 33 ms apart.
REREADS_PER_DRAIN = 400
# The rest of a drain's work is bounded too, so that no GUI-thread slice is long
# under a flood (20,000 tasks added by another thread made drains of 230-580 ms:
# the fold of 20,000 latest events, ~10,000 events through the log and timeline,
# and the window's slots for all of it). Per drain at most FOLD_PER_DRAIN tasks'
# latest events are folded and at most EVENTS_PER_DRAIN raw events handed to the
# log and timeline; what is left waits for the next drain, in order.
FOLD_PER_DRAIN = 2000
EVENTS_PER_DRAIN = 1000
# ...or, for the fold and the re-reads, a quarter of the tasks the window already
# has when that is more: every batch costs the window's views some work per task
# they show (lanes sorted, groups counted, the graph's view worked out), so a fixed
# budget made 20,000 new tasks 50 batches of ever longer slices (10-20 s to catch
# up); growing with the window, they come in about fifteen, and the whole catch-up
# costs the views a small multiple of one batch's work.
SHARE_OF_KNOWN = 0.25
# ...but never more than these: a share of 20,000 known tasks was 5,000 re-reads in
# one drain (a 280 ms slice on a loaded machine); the views now work per task changed,
# so more, smaller batches cost them little.
MOST_REREADS_PER_DRAIN = 1000
MOST_FOLD_PER_DRAIN = 3000
# ...and the re-reads stop READ_SLICE_S after the drain began (at least
# FEWEST_REREADS are read): each read takes the engine's lock and, while another
# thread adds tasks at full speed, waits for the GIL, so a count alone made slices of
# 100-300 ms on a loaded machine. The rest wait for the next drain.
READ_SLICE_S = 0.012
FEWEST_REREADS = 50
# While a run is busy the window shows it a few times a second, not at every 33 ms:
# each batch costs the window's views a frame of Python and painting, all of it taken
# from the engine's threads (the GIL) and cores. A drain that handed on at least
# BUSY_CHANGES task changes or events makes the next wake wait BUSY_INTERVAL_MS if it
# comes within that time (the burst goes on); a quiet drain, or the first change after
# a burst, goes back to the bridge's interval, so a single change still shows at once.
# 2,000 ``true`` commands: the run 4.4-4.9 s in the window against 2.9-3.0 s headless
# at 33 ms, 3.8-4.0 s at 250 ms (lag p99 44 -> 31 ms). A backlog (a flood's re-reads)
# keeps the short interval: it is the window catching up, not the engine's pace.
BUSY_CHANGES = 16
BUSY_INTERVAL_MS = 250


class EarlyEvents:
    """Records a scheduler's events from before the window exists (its tasks being
    added), so that the event log shows every event from the
    first. Attach it before any task is added; the bridge takes what its snapshot
    covers and then detaches it."""

    def __init__(self, limit: int = 5000):
        self.limit = limit
        self._lock = threading.Lock()
        self._events: deque[Event] = deque(maxlen=limit)  # the log keeps no more
        self.last_seq = 0
        self._unsubscribe: Callable[[], object] | None = None
        # (seq, tasks, upcoming, fold) made by prepare(), for the bridge to take
        self._prepared: tuple[int, list[TaskInfo], list, TaskFold] | None = None

    def prepare(self, scheduler: RunInterface) -> None:
        """The bridge's snapshot of every task and its fold, made now on this thread (a
        big file's worker): on the GUI thread they took ~0.6 s at 100,000 tasks. Only for
        a run nothing changes until its window exists (not started yet): the bridge
        takes them only if no event came after the snapshot (``take_prepared``; one
        still on its way to this recorder then would be missed)."""
        seq, tasks, upcoming = scheduler.snapshot()
        self._prepared = (seq, tasks, upcoming, TaskFold(tasks, floor=seq))

    def take_prepared(self) -> tuple[int, list[TaskInfo], list, TaskFold] | None:
        """What ``prepare`` made, once; None if nothing was, or an event has come since."""
        prepared, self._prepared = self._prepared, None
        if prepared is None:
            return None
        with self._lock:
            moved = self.last_seq > prepared[0]
        return None if moved else prepared

    def attach(self, scheduler) -> None:
        self._unsubscribe = scheduler.subscribe(self._on_event)

    @property
    def listener(self):
        """For ``Scheduler(listeners=[early.listener])``: recording starts before the
        store is restored, so a resumed run's restore events are kept too; then
        ``adopt(scheduler)``."""
        return self._on_event

    def adopt(self, scheduler) -> None:
        """The scheduler was made with ``listeners=[self.listener]``: detach there."""
        self._unsubscribe = lambda: scheduler.unsubscribe(self._on_event)

    def _on_event(self, event: Event) -> None:  # the engine's delivery thread
        with self._lock:
            self._events.append(event)
            self.last_seq = event.seq

    def take(self, up_to: int) -> tuple[list[Event], bool]:
        """(events with seq <= ``up_to`` not taken yet, whether all of them arrived);
        once they all have, the recorder stops listening."""
        with self._lock:
            taken = []
            while self._events and self._events[0].seq <= up_to:
                taken.append(self._events.popleft())
            complete = self.last_seq >= up_to
        if complete:
            self.detach()
        return taken, complete

    def detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None


class EngineBridge(QObject):
    """Coalesces engine events and re-emits them in batches in the GUI thread.

    Signals:
      tasksChanged(dict)    {task_id: TaskInfo} for tasks that changed since the last batch
      tasksRemoved(list)    ids that left the engine
      structureChanged()    tasks or edges were added or removed (the graph needs a new layout)
      eventsArrived(list)   raw events in seq order (at most ``max_events`` per batch)
      upcomingChanged(list) the scheduler's upcoming() entries, refreshed after changes
      pausedChanged(bool)   the whole dispatcher was paused or resumed
    """

    # ``object``, not ``dict``/``list``: a dict or list signal converts its payload to a
    # QVariantMap/List and back for every connected slot (9 ms per 5,000 tasks per
    # slot); an object is handed to each slot as it is. Slots must not change it.
    tasksChanged = Signal(object)
    tasksRemoved = Signal(object)
    structureChanged = Signal()
    eventsArrived = Signal(object)
    upcomingChanged = Signal(object)
    pausedChanged = Signal(bool)

    def __init__(
        self,
        scheduler: RunInterface,
        parent: QObject | None = None,
        interval_ms: int = 33,
        max_events: int = 2000,
        upcoming_limit: int = 200,
        early: EarlyEvents | None = None,
    ):
        super().__init__(parent)
        app = QCoreApplication.instance()
        assert app is not None, "create the QApplication before the EngineBridge"
        assert QThread.currentThread() is app.thread(), "EngineBridge must live in the GUI thread"
        self.scheduler = scheduler
        self.upcoming_limit = upcoming_limit
        self._lock = threading.Lock()
        self._latest: dict[str, Event] = {}  # written by the engine's delivery thread
        self._tail: deque[Event] = deque(maxlen=max_events)
        # GUI thread only: what drains took from the engine side and have not handed
        # on yet (latest event per key, in arrival order; raw events in seq order,
        # bounded like the log: the oldest are dropped first).
        self._pending: dict[str, Event] = {}
        self._pending_tail: deque[Event] = deque()
        self._pending_limit = max(max_events, early.limit if early is not None else 0)
        self._received = 0
        self._dispatcher_paused: bool | None = None
        self.dropped_events = 0  # raw events that did not fit in a batch (states are never lost)
        self.batches = 0
        self.paused = False
        self._finished_times: deque[tuple[float, int]] = deque()
        self.snapshot_seq = -1  # set below; the drain filters on it, the listener never reads it
        self._reread_later: dict[str, None] = {}  # tasks to re-read, over the budget (in order)
        # Tasks whose attempts a watched run has read since it answered without them:
        # they go out in the next batch as changed, so that the views ask again.
        self._attempts_read: set[str] = set()

        # Before subscribing: an event may come at once (a worker's, or a watched run's
        # replay on this thread) and post a wake, which does nothing until we are built.
        self._wake_posted = False  # a wake is on its way to the GUI thread (under _lock)
        self._unsubscribe = None
        relay.install()
        # Subscribe before the snapshot so nothing falls between the two; events
        # the snapshot already covers (seq <= its seq) are dropped.
        self._unsubscribe = scheduler.subscribe(self._on_event)
        self._stop_attempts = scheduler.on_attempts(self._on_attempts)
        # A big file's worker made the snapshot and its fold (EarlyEvents.prepare);
        # taken if nothing happened since, else made here.
        prepared = early.take_prepared() if early is not None else None
        self.prepared = prepared is not None  # tests ask
        if prepared is not None:
            seq, tasks, upcoming, fold = prepared
        else:
            seq, tasks, upcoming = scheduler.snapshot()
        self.snapshot_seq = seq
        # Events before we subscribed (the snapshot covers their effect): for the log.
        self._early = early
        # The run's one fold of events (engine/fold.py); ``tasks`` is kept equal to
        # its snapshots after every drain.
        self.fold = fold if prepared is not None else TaskFold(tasks, floor=seq)
        self.tasks: dict[str, TaskInfo] = {t.id: t for t in tasks}
        # Tasks per state, kept up to date per task changed (state_counts was a pass
        # over every task per batch: 20,000 enum hashes, 10 ms, several times a batch).
        # The same for the one-shot tasks alone, and how many recur (the run header's
        # "12/17 done · 3 recurring").
        self._state_of: dict[str, tuple[TaskState, bool]] = {}
        self._counts: dict[TaskState, int] = dict.fromkeys(TaskState, 0)
        self._one_shot: dict[TaskState, int] = dict.fromkeys(TaskState, 0)
        self._recurring = 0
        self._recount({t.id: t for t in tasks}, [])
        self.upcoming = list(upcoming)
        self._upcoming_dirty = False

        # Armed by the first event after a drain (``_wake``), not running all the time.
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.drain)
        # QTimer.start(ms) sets the timer's interval: the intervals are kept here.
        self._interval_ms = interval_ms
        self._wake_ms = interval_ms  # the next wake's wait: BUSY_INTERVAL_MS after a busy drain
        self._busy_until = 0.0  # ...while events come before this (monotonic): the burst goes on
        self._timer.start()  # a first drain: the early recorder's events
        # The heap only changes with events; re-read it at most 4 times a second, and
        # only after a drain applied some.
        self._upcoming_timer = QTimer(self)
        self._upcoming_timer.setSingleShot(True)
        self._upcoming_timer.setInterval(250)
        self._upcoming_timer.timeout.connect(self._refresh_upcoming)

    # -- engine delivery thread -------------------------------------------------
    def _on_event(self, event: Event) -> None:
        with self._lock:
            self._received += 1
            if event.kind in PAUSE_KINDS and not event.task_id:
                self._dispatcher_paused = event.kind == "paused"
            elif event.kind in PAUSE_KINDS:
                # Kept apart so a later state event in the same batch cannot hide it.
                self._latest[_PAUSE_PREFIX + event.task_id] = event
            else:
                self._latest[event.task_id] = event
                if event.kind in STRUCTURAL_KINDS:
                    # Keep the structural event even if a state event follows it.
                    self._latest[_structural_key(event.task_id)] = event
            if len(self._tail) == self._tail.maxlen:
                self.dropped_events += 1
            self._tail.append(event)
            if self._wake_posted:
                return
            self._wake_posted = True
        relay.post(self, "_wake")  # once per drain, however many events come

    def _on_attempts(self, task_id: str) -> None:  # a watched run's thread
        with self._lock:
            self._attempts_read.add(task_id)
            if self._wake_posted:
                return
            self._wake_posted = True
        relay.post(self, "_wake")

    # -- GUI thread ---------------------------------------------------------------
    def _wake(self) -> None:
        """Events arrived: drain them a moment from now, with whatever else comes."""
        if self._unsubscribe is not None and not self._timer.isActive():
            # Once a burst is over, the first change after it shows at the quiet pace.
            going_on = time.monotonic() < self._busy_until
            self._timer.start(self._wake_ms if going_on else self._interval_ms)

    def drain(self) -> None:
        """Apply what was received since the last call and emit one batch, at most
        ``FOLD_PER_DRAIN`` tasks' states, ``REREADS_PER_DRAIN`` re-reads and
        ``EVENTS_PER_DRAIN`` raw events of it; the rest goes in the next drains, one
        interval apart, event or not."""
        began = time.monotonic()
        early = self._take_early()
        if self._early is not None:
            self._timer.start(self._interval_ms)  # more to take next time, event or not
        with self._lock:
            self._wake_posted = False  # an event from now on wakes us again
            latest, self._latest = self._latest, {}
            attempts_read, self._attempts_read = self._attempts_read, set()
            tail = list(self._tail)
            self._tail.clear()
            dispatcher_paused, self._dispatcher_paused = self._dispatcher_paused, None
        floor = self.snapshot_seq
        if latest:
            if self._pending:
                self._pending.update(latest)  # a newer event of a waiting key replaces it
            else:
                self._pending = latest
        if early or tail:
            self._queue_events(early + [e for e in tail if e.seq > floor])
        if (
            not self._pending
            and not self._pending_tail
            and dispatcher_paused is None
            and not self._reread_later
            and not attempts_read
        ):
            return
        batch = self._take_pending()
        tail = self._take_events()
        changed: dict[str, TaskInfo] = {}
        removed: list[str] = []
        requery: set[str] = set()
        pauses = []
        for key, event in batch:
            if event.seq <= floor:
                continue
            if key.startswith(_STRUCT_PREFIX):
                requery.add(event.task_id)
            elif key.startswith(_PAUSE_PREFIX):
                pauses.append(event)
            else:
                self._apply(event, changed, removed, requery)
        for event in pauses:  # after the state events, whatever their order
            self._apply(event, changed, removed, requery)
        structure = bool(removed)
        later = self._reread_later
        later.update(dict.fromkeys(requery))
        stop = began + READ_SLICE_S
        neighbours: set[str] = set()
        # One walk to the first waiting ids (``next(iter())`` after each delete walked
        # over every id deleted before it: quadratic in a flood's 20,000).
        for i, tid in enumerate(
            list(islice(later, self._budget(REREADS_PER_DRAIN, MOST_REREADS_PER_DRAIN)))
        ):
            if i >= FEWEST_REREADS and time.monotonic() > stop:
                break
            del later[tid]
            structure = True
            self._reload(tid, changed, removed, neighbours)
        # The tasks at the other ends of the re-read ones' edges, once each per drain
        # (3,000 tasks added under one root read the root, and its 3,000 dependents,
        # 3,000 times).
        for other in neighbours:
            other_info = self._read(other)
            if other_info is not None:
                self.fold.put(other_info)
                self.tasks[other] = changed[other] = other_info
        for tid in attempts_read:  # the same task, with more of its attempts known
            if tid in self.tasks and tid not in changed:
                changed[tid] = self.tasks[tid]
        if changed or removed:
            self._recount(changed, removed)
        finished = sum(1 for e in tail if e.kind in FINISH_KINDS)
        if finished:
            self._finished_times.append((time.monotonic(), finished))
        self.batches += 1
        busy = len(changed) + len(tail) >= BUSY_CHANGES
        self._wake_ms = max(BUSY_INTERVAL_MS, self._interval_ms) if busy else self._interval_ms
        self._busy_until = time.monotonic() + self._wake_ms / 1000
        if changed:
            self.tasksChanged.emit(changed)
        if removed:
            self.tasksRemoved.emit(removed)
        if structure:
            self.structureChanged.emit()
        if tail:
            self.eventsArrived.emit(tail)
        if dispatcher_paused is not None and dispatcher_paused != self.paused:
            self.paused = dispatcher_paused
            self.pausedChanged.emit(dispatcher_paused)
        self._upcoming_dirty = True
        if (
            self._reread_later or self._pending or self._pending_tail
        ) and not self._timer.isActive():
            # The rest, event or not, one interval after this drain began.
            took = int((time.monotonic() - began) * 1000)
            self._timer.start(max(0, self._interval_ms - took))
        if not self._upcoming_timer.isActive():
            self._upcoming_timer.start()

    def reading(self) -> bool:
        """Whether events taken from the engine wait to be applied (tasks heard of, not
        read yet): until they are, nobody may say the run finished."""
        return bool(self._pending or self._reread_later)

    def pending(self) -> int:
        """Latest events and raw events taken from the engine, not handed on yet."""
        return len(self._pending) + len(self._pending_tail)

    def _recount(self, changed: dict[str, TaskInfo], removed: list[str]) -> None:
        counts, one_shot, state_of = self._counts, self._one_shot, self._state_of
        for tid in removed:
            old = state_of.pop(tid, None)
            if old is not None:
                self._uncount(old)
        tasks = self.tasks
        for tid, info in changed.items():
            if tid not in tasks:  # changed, then found gone in the same drain
                continue
            old, new = state_of.get(tid), (info.state, info.recurring)
            if old == new:
                continue
            if old is not None:
                self._uncount(old)
            state_of[tid] = new
            counts[info.state] += 1
            if info.recurring:
                self._recurring += 1
            else:
                one_shot[info.state] += 1

    def _uncount(self, old: tuple[TaskState, bool]) -> None:
        state, recurring = old
        self._counts[state] -= 1
        if recurring:
            self._recurring -= 1
        else:
            self._one_shot[state] -= 1

    def _queue_events(self, events: list[Event]) -> None:
        queue = self._pending_tail
        queue.extend(events)
        over = len(queue) - self._pending_limit
        if over > 0:  # the log keeps no more: the oldest go
            self.dropped_events += over
            for _ in range(over):
                queue.popleft()

    def _budget(self, least: int, most: int) -> int:
        return min(max(least, most), max(least, int(len(self.tasks) * SHARE_OF_KNOWN)))

    def _take_pending(self) -> list[tuple[str, Event]]:
        pending = self._pending
        budget = self._budget(FOLD_PER_DRAIN, MOST_FOLD_PER_DRAIN)
        if len(pending) <= budget:
            self._pending = {}
            return list(pending.items())
        batch = list(islice(pending.items(), budget))
        for key, _ in batch:
            del pending[key]
        return batch

    def _take_events(self) -> list[Event]:
        queue = self._pending_tail
        if len(queue) <= EVENTS_PER_DRAIN:
            events = list(queue)
            queue.clear()
            return events
        return [queue.popleft() for _ in range(EVENTS_PER_DRAIN)]

    def _take_early(self) -> list[Event]:
        """Events the early recorder has that the snapshot covers (they only go to the
        log and the timeline: the snapshot already holds their effect)."""
        if self._early is None:
            return []
        events, complete = self._early.take(self.snapshot_seq)
        if complete:
            self._early = None
        return events

    def _apply(self, event, changed, removed, requery) -> None:
        tid = event.task_id
        old = self.tasks.get(tid)
        what = self.fold.apply(event)
        if what == folding.REMOVED:
            if old is not None:
                del self.tasks[tid]
                removed.append(tid)
                changed.pop(tid, None)
                requery.update(d for d in _neighbours_of(old) if d in self.tasks)
            return
        if what == folding.UNKNOWN:  # a task we have not seen: read it whole
            requery.add(tid)
            return
        info = self.fold.info(tid)
        if info is None:
            return
        self.tasks[tid] = info
        changed[tid] = info

    def _reload(self, tid, changed, removed, neighbours: set[str]) -> None:
        """Re-read a task whose edges changed; the tasks at both ends of them go in
        ``neighbours`` (read once the drain's re-reads are done)."""
        old = self.tasks.get(tid)
        info = self._read(tid)
        if info is None:
            self.fold.remove(tid)
            if old is not None:
                del self.tasks[tid]
                removed.append(tid)
            return
        self.fold.put(info)
        self.tasks[tid] = changed[tid] = info
        neighbours.update(_neighbours_of(old))
        neighbours.update(_neighbours_of(info))

    def _read(self, tid: str) -> TaskInfo | None:
        try:
            return self.scheduler.task(tid)
        except (KeyError, RuntimeError):
            return None

    def _refresh_upcoming(self) -> None:
        if not self._upcoming_dirty:
            return
        try:
            self.upcoming = self.scheduler.upcoming(self.upcoming_limit)
        except RuntimeError:  # the scheduler was shut down
            self._upcoming_timer.stop()
            return
        self._upcoming_dirty = False
        self.upcomingChanged.emit(self.upcoming)

    # -- queries for views -----------------------------------------------------
    def state_counts(self) -> dict[TaskState, int]:
        """Tasks per state (kept per task changed, not counted again per batch)."""
        return dict(self._counts)

    def running_split(self) -> tuple[int, int]:
        """(running, recording) of the RUNNING tasks: a task whose code returned waits in
        RUNNING for its success to reach the disk. Every view says it the same way,
        rather than show more tasks running than there are workers."""
        running = self._counts[TaskState.RUNNING]
        busy = self.scheduler.busy
        busy = running if busy is None else min(busy, running)
        return busy, running - busy

    def one_shot_counts(self) -> tuple[dict[TaskState, int], int]:
        """(one-shot tasks per state, how many tasks recur), kept as ``state_counts``."""
        return dict(self._one_shot), self._recurring

    def throughput(self, window: float = 3.0) -> float:
        """Runs finished per second over the last ``window`` seconds."""
        now = time.monotonic()
        while self._finished_times and self._finished_times[0][0] < now - window:
            self._finished_times.popleft()
        return sum(n for _, n in self._finished_times) / window

    def attempts(self, tid: str) -> list:
        try:
            return list(self.scheduler.attempts(tid))
        except (KeyError, RuntimeError):
            return []

    def clock_now(self) -> float:
        """Now on the scheduler's clock (the time base of run_at and event times)."""
        return self.scheduler.clock.now()

    def clock_to_wall(self, at: float) -> float:
        """A scheduler-clock time as a POSIX timestamp, for display."""
        return time.time() - (self.clock_now() - at)

    def received(self) -> int:
        with self._lock:
            return self._received

    def close(self) -> None:
        """Stop listening to the engine (idempotent)."""
        if self._early is not None:
            self._early.detach()
            self._early = None
        self._timer.stop()
        self._upcoming_timer.stop()
        self._stop_attempts()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None


_STRUCT_PREFIX = "\x00struct:"
_PAUSE_PREFIX = "\x00pause:"


def _structural_key(tid: str) -> str:
    return _STRUCT_PREFIX + tid


def _neighbours_of(info: TaskInfo | None) -> tuple[str, ...]:
    return () if info is None else tuple(info.deps) + tuple(info.dependents)
