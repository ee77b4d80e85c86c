"""A run another process owns, followed through its store's feed (see feed.py).

``WatchedRun`` answers the part of the ``Scheduler`` API a window uses (events
through ``subscribe``, ``snapshot``, ``tasks``, ``task``, ``upcoming``,
``attempts``, ``allowed_actions``, ``paused``, ``clock``, ``workers``, ``store``),
so that the window's bridge and views do not care whose run they show. It only
reads the store (a read-only SQLite connection; WAL readers never block the
owner), except for the requests it sends: ``cancel``, ``retry``, ``run_now``,
``pause``, ``resume`` and ``clear`` (``request`` sends any) become rows of the
store's ``control`` table, which the owner applies and answers (``take_answers``).
Graph edits are refused with ``WatchOnly``, which says how to edit.

Events keep the owner's fields, times on the owner's clock (``clock`` is that
clock as seen from here), and its ``seq`` unless that would not grow (a new
owner numbers from elsewhere; a pause noticed without its event gets one made
here): then it is shifted, so that nothing looks like the past to a listener.
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections import deque
from datetime import UTC, datetime
from pathlib import Path

from ._jobs.survivors import start_time
from ._store.lock import HEARTBEAT, owner_record, pid_namespace, read_owner
from ._store.safe_files import UnsafeFile, open_private, same_file
from .definitions import TaskDefinition
from .feed import CONTROL_ACTIONS, watch_path
from .feed_reader import FeedRead, FeedReader
from .models import Action, Attempt, Entry, Event, TaskInfo
from .options import Outcome
from .states import TaskState
from .store import StoreBusy, StoreError, StoreReader

log = logging.getLogger("taskloom.watch")
_OUTCOMES = {o.value: o for o in Outcome}

POLL_INTERVAL = 0.1  # seconds between reads of the feed
# A run that has been quiet for QUIET_POLLS reads (no event, no task row, no answer
# awaited) is read every IDLE_POLL_INTERVAL instead, until something comes or we ask.
QUIET_POLLS = 10
IDLE_POLL_INTERVAL = 0.5
OWNER_CHECK = 0.25  # seconds between looks at whether the owner still holds the store
ATTACH_TIMEOUT = 5.0  # seconds to wait for the owner to notice us and publish its run
STALE_BEATS = 4  # owner heartbeats missed before it counts as not answering
REPLAY = 500  # events a new listener is handed first


class WatchOnly(RuntimeError):
    """A graph edit asked of a run this process only watches."""


class OwnerGone(StoreError):
    """The store has no live owner (any more): open it as its owner instead."""


class FeedClock:
    """The owner's scheduler clock, seen from here: the feed says how far it is
    from wall time. Same machine, so wall time is shared."""

    manual = False

    def __init__(self, offset: float = 0.0):
        self.offset = offset  # wall = owner clock + offset

    def now(self) -> float:
        return time.time() - self.offset

    def wall(self) -> datetime:
        return datetime.now(UTC)


def _zombie(pid: int) -> bool:
    """Whether ``pid`` has exited and waits to be reaped (Linux; False elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in (b"Z", b"X")


def _complete(info: TaskInfo, attempts: list[Attempt]) -> bool:
    """Whether ``attempts`` (read from the store) show everything ``info`` (the feed's
    row, which may be ahead of them) says: its current attempt, ended unless it runs."""
    if not attempts:
        return info.attempt == 0
    last = attempts[-1]
    if last.number < info.attempt:
        return False
    return info.state == TaskState.RUNNING or last.outcome != Outcome.RUNNING


OWNER_GONE = "owner gone"  # the start of the error of a task its dead owner left unknown

_ENDED_STATES = {
    Outcome.SUCCEEDED.value: TaskState.SUCCEEDED,
    Outcome.FAILED.value: TaskState.FAILED,
    Outcome.CANCELLED.value: TaskState.CANCELLED,
}


def state_after_owner(
    info: TaskInfo, newest: tuple | None, alive: bool
) -> tuple[TaskState, str | None]:
    """What a task the dead owner last showed RUNNING is, from the store's word alone:
    ``newest`` is its newest attempt row (number, outcome, error), ``alive`` whether
    that attempt's process still runs (a command its supervisor kept going is running).

    An attempt with an outcome settles it as the outcome says; one without an outcome
    whose process runs is RUNNING; any other is not known to run: READY (what taking
    the run over makes of it) with an error that starts with ``OWNER_GONE``."""
    if newest is not None:
        number, outcome, error = newest
        if outcome in _ENDED_STATES:
            return _ENDED_STATES[outcome], error
        if outcome == Outcome.RUNNING.value and alive:
            return TaskState.RUNNING, info.error
        what = f"attempt #{number} has no outcome" if outcome == "running" else outcome
        return TaskState.READY, f"{OWNER_GONE}: {what} (nothing runs it now)"
    return TaskState.READY, f"{OWNER_GONE}: it was about to start (nothing runs it now)"


def _process_alive(pid: int | None, started: float | None) -> bool:
    """Whether the attempt's process (as its row recorded it) still runs here."""
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if _zombie(pid):
        return False
    return started is None or start_time(pid) == started


def _told(info: TaskInfo) -> tuple:
    return (info.state, info.attempt, info.paused)


class WatchedRun:
    """Follows the run in the store at ``path``, owned by another live process.

    Raises ``OwnerGone`` if nobody owns the store (open it instead), and
    ``StoreError`` if the owner does not publish its run within ``attach_timeout``.
    """

    def __init__(
        self,
        path,
        *,
        interval: float = POLL_INTERVAL,
        attach_timeout: float = ATTACH_TIMEOUT,
        name: str = "",
    ):
        self.path = Path(path).expanduser()
        self.name = name or self.path.stem
        self.interval = interval
        owner = read_owner(self.path)
        if owner is None:
            raise OwnerGone(f"{self.path}: no process owns the store")
        self.owner = owner
        self._owner_started: float | None = None  # the owner's start time (pid reuse)
        self.clock = FeedClock()
        self.definitions: dict[str, TaskDefinition] = {}  # the workflow file's, if known
        self.workers = None
        self.origin = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._lock = threading.RLock()  # the caches; listeners are called without it
        self._listeners: list = []
        self._tasks: dict[str, TaskInfo] = {}
        self._actions: dict[str, frozenset[Action]] = {}
        # Each task's attempts as last read, oldest first, with the task row they were
        # read for: read when asked for, again once the row changed (reading every
        # changed task's attempts each round was half a watcher's work under load).
        self._attempts: dict[str, tuple[TaskInfo, list[Attempt]]] = {}
        self._told: dict[str, tuple] = {}  # tid -> (state, attempt, paused) listeners know
        self._upcoming: list[Entry] = []
        self._paused = False
        self._seq = 0  # the last seq delivered: grows by at least one per event
        self._shift = 0  # delivered seq - the owner's, for the owner's events
        self._feed_seq = -1  # the owner's: the last one read
        self._run = 1
        self._answers: deque = deque()
        self._replay: deque[Event] = deque(maxlen=REPLAY)  # the newest events delivered
        self._asked: set[int] = set()  # our control rows not answered yet
        self.owner_alive = True
        # False while the owner is alive but misses its heartbeats (stopped with
        # SIGSTOP, frozen): it applies nothing and writes nothing until it resumes.
        self.owner_answering = True
        self.stopped_at: float | None = None  # wall time the owner was seen gone
        self.polls = 0
        self._writer: sqlite3.Connection | None = None
        self._closed = threading.Event()
        self._hurry = threading.Event()  # a request was sent: read at once, then often
        self._watch_fd: int | None = None
        self._watch()  # the owner starts publishing
        try:
            self._reader = FeedReader(self.path)
        except BaseException:
            self._release()
            raise
        try:
            self._attach(time.time(), attach_timeout)
        except BaseException:
            self._reader.close()
            self._release()
            raise
        self._store: StoreReader | None = None
        self._thread = threading.Thread(target=self._loop, name="taskloom-watch", daemon=True)
        self._thread.start()

    # -- attaching and polling ----------------------------------------------------------
    def _attach(self, since: float, timeout: float) -> None:
        """Wait until the owner has written its feed since ``since`` (it knows we watch)."""
        deadline = time.monotonic() + timeout
        while True:
            written = self._reader.written()
            if written is not None and written >= since:
                self._poll()
                return
            if not self._owner_alive():
                raise OwnerGone(f"{self.path}: the owner stopped")
            if time.monotonic() >= deadline or not self._reader.has_feed():
                who = self.owner.describe()
                raise StoreBusy(
                    f"{self.path} is in use by {who}, which does not publish its run for "
                    "watching (an older Taskloom?); stop it to open the workflow here",
                    self.owner,
                )
            self._closed.wait(0.02)

    def _watch(self) -> None:
        """Hold a shared lock on the file ``<store>.watch`` names now: one deleted or
        replaced (a cleaner) is made anew, so that the owner still sees us."""
        path = watch_path(self.path)
        if self._watch_fd is not None and same_file(self._watch_fd, path):
            return
        try:
            fd = open_private(path, os.O_RDWR | os.O_CREAT)
        except UnsafeFile as exc:
            raise StoreError(str(exc)) from None
        fcntl.flock(fd, fcntl.LOCK_SH)
        self._release()
        self._watch_fd = fd

    def _loop(self) -> None:
        next_owner_check = 0.0
        quiet = 0  # reads in a row that found nothing new
        while True:
            idle = quiet >= QUIET_POLLS
            self._hurry.wait(max(self.interval, IDLE_POLL_INTERVAL) if idle else self.interval)
            if self._closed.is_set():
                return
            if self._hurry.is_set():
                self._hurry.clear()
                quiet = 0
            try:
                quiet = 0 if self._poll() else quiet + 1
                if time.monotonic() >= next_owner_check:
                    next_owner_check = time.monotonic() + OWNER_CHECK
                    if self.owner_alive:
                        self._watch()  # a .watch deleted or replaced: lock the new one
                    if self.owner_alive and not self._owner_alive():
                        self._owner_stopped()
                    if not self.owner_alive:
                        self._judge_after_owner()
            except sqlite3.Error as exc:
                log.warning("reading the watched run failed: %s", exc)
            except Exception:
                log.exception("watching the run failed a round")

    def _owner_alive(self) -> bool:
        """Whether the owner is still there, by its heartbeat (the record in its lock
        files, rewritten every ``HEARTBEAT``), not by its pid alone: a pid means
        nothing from another PID namespace (a container sharing the folder). A fresh
        beat of another owner means ours has gone. When the beats stop, the owner is
        gone if its lock is free (a probe: only then, as a probe held at the wrong
        moment would refuse an owner just starting), else alive but not answering
        (``owner_answering``: stopped with SIGSTOP, frozen). On this host and in this
        PID namespace a dead or reused pid says "gone" at once."""
        owner = self.owner
        record = owner_record(self.path)
        fresh = record is not None and time.time() - record.beat <= STALE_BEATS * HEARTBEAT
        ours = record is not None and (record.pid, record.since) == (owner.pid, owner.since)
        if fresh and not ours:
            return False  # another process owns the store now
        if self._pid_gone(record if ours else owner):
            return False
        if fresh:
            self.owner_answering = True
            return True
        held = read_owner(self.path)
        if held is None or (held.pid, held.since) != (owner.pid, owner.since):
            return False
        self.owner_answering = False
        return True

    def _pid_gone(self, owner) -> bool:
        """Whether ``owner``'s process has certainly ended: only said on this host, in
        this PID namespace (when the owner recorded its own): gone, a zombie (killed,
        not reaped yet), or its pid reused (a start time other than at attach)."""
        if owner.host != socket.gethostname() or owner.pid <= 0:
            return False
        if owner.pidns and owner.pidns != pid_namespace():
            return False
        pid = owner.pid
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass
        if _zombie(pid):
            return True
        started = start_time(pid)
        if self._owner_started is None:
            self._owner_started = started
        return started != self._owner_started

    def _owner_stopped(self, at: float | None = None) -> None:
        if self.owner_alive:
            self.stopped_at = at or time.time()
            self.owner_alive = False

    def _judge_after_owner(self) -> None:
        """The owner is gone: each task it showed running is what the store says now
        (``state_after_owner``); listeners hear every change, as events."""
        with self._lock:
            running = [
                (tid, info)
                for tid, info in self._tasks.items()
                if info.state is TaskState.RUNNING
                or (info.state is TaskState.READY and (info.error or "").startswith(OWNER_GONE))
            ]
            run = self._run
        if not running:
            return
        deliver = []
        for tid, info in running:
            row = self._reader.newest_attempt(run, tid)
            newest = None if row is None else row[:3]
            alive = row is not None and _process_alive(row[3], row[4])
            state, error = state_after_owner(info, newest, alive)
            if (state, error) == (info.state, info.error):
                continue
            new = info._replace(state=state, error=error)
            with self._lock:
                if self._tasks.get(tid) is not info:
                    continue
                self._tasks[tid] = new
                self._actions[tid] = frozenset()
                self._attempts.pop(tid, None)
                event = self._made_up(state.value, tid, new, self.clock.now())
                self._hear(event)
                self._replay.append(event)
                deliver.append(event)
        with self._lock:
            listeners = list(self._listeners)
        for event in deliver:
            for listener in listeners:
                try:
                    listener(event)
                except Exception:
                    log.exception("a listener of the watched run failed")

    def _poll(self) -> bool:
        """One read of the feed; whether it brought something or an answer is awaited."""
        with self._lock:
            asked = tuple(self._asked)
        read = self._reader.read(self._feed_seq, asked)
        self.polls += 1
        self._apply(read)
        with self._lock:
            for row in read.answers:
                self._asked.discard(row[0])
                self._answers.append(row)
            waiting = bool(self._asked)
        if read.state.get("stopped"):
            self._owner_stopped(read.state["stopped"])
        return bool(read.reload or read.events or read.tasks or read.answers or waiting)

    def _apply(self, read: FeedRead) -> None:
        state, event_rows, task_rows, reload = read.state, read.events, read.tasks, read.reload
        deliver: list[Event] = []
        with self._lock:
            if "offset" in state:
                self.clock.offset = state["offset"]
            self.workers = state.get("workers", self.workers)
            self._run = state.get("run", self._run)
            old = self._tasks
            if reload:
                self._tasks, self._actions = {}, {}
            for tid, _order, info, actions, _changed in sorted(task_rows, key=lambda r: r[1]):
                if info is None:
                    self._tasks.pop(tid, None)
                    self._actions.pop(tid, None)
                    self._attempts.pop(tid, None)
                else:
                    self._tasks[tid] = info
                    self._actions[tid] = actions
            if reload:
                self._attempts = {}
            if "upcoming" in state:
                self._upcoming = [Entry(*e) for e in state["upcoming"]]
            paused = bool(state.get("paused", self._paused))
            if not reload or self._feed_seq < 0:  # a new owner's past is not ours
                for event_row in event_rows:
                    event = self._event(event_row)
                    deliver.append(event)
                    self._hear(event)
            if reload:
                if self._feed_seq >= 0:  # a new owner: say what changed
                    deliver.extend(self._differences(old))
                self._told = {tid: _told(info) for tid, info in self._tasks.items()}
            else:  # the events the owner left out of a busy batch: what they led to
                written = state.get("written", time.time()) - self.clock.offset
                deliver.extend(self._catch_up((r[0] for r in task_rows if r[4]), written))
            if paused != self._paused and not any(not e.task_id for e in deliver):
                deliver.append(self._engine_event("paused" if paused else "resumed"))
            self._paused = paused
            self._feed_seq = state.get("seq", self._feed_seq)
            self._replay.extend(deliver)
            listeners = list(self._listeners)
        for event in deliver:
            for listener in listeners:
                try:
                    listener(event)
                except Exception:
                    log.exception("a listener of the watched run failed")

    def _hear(self, event: Event) -> None:
        """What a listener now believes about the event's task."""
        tid = event.task_id
        if not tid:
            return
        if event.kind == "removed":
            self._told.pop(tid, None)
        elif event.kind in ("paused", "resumed"):
            state, attempt, _ = self._told.get(tid, (None, 0, False))
            self._told[tid] = (state, attempt, event.kind == "paused")
        elif event.state is not None:
            paused = self._told.get(tid, (None, 0, False))[2]
            self._told[tid] = (event.state, event.attempt, paused)

    def _catch_up(self, changed, at: float) -> list[Event]:
        """Events for the changed tasks whose latest events did not fit in the
        owner's batch (it writes the newest few hundred): a listener that applies
        events, as the window's bridge does, ends up with the task rows' states.
        They carry ``at``: the time of the owner's write, when those states held."""
        events = []
        now = at  # when the owner wrote the rows (its clock): the states held then
        for tid in changed:
            info = self._tasks.get(tid)
            told = self._told.get(tid)
            if info is None:
                if told is not None:
                    events.append(Event(self._next_seq(), "removed", tid, None, now, 0, None, None))
                    self._told.pop(tid, None)
                continue
            if told is None or (told[0], told[1]) != (info.state, info.attempt):
                kind = "dependency_added" if told is None else info.state.value  # new: read whole
                events.append(self._made_up(kind, tid, info, now))
            if told is not None and told[2] != info.paused:
                events.append(self._made_up("paused" if info.paused else "resumed", tid, info, now))
            self._told[tid] = _told(info)
        return events

    def _made_up(self, kind: str, tid: str, info: TaskInfo, now: float) -> Event:
        """An event for a change the feed left out, saying what the task row says."""
        return Event(
            self._next_seq(), kind, tid, info.state, now, info.attempt, info.run_at, info.error
        )

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _event(self, row) -> Event:
        owner_seq, kind, tid, state, at, attempt, run_at, error, outcome = row
        # The owner's number when it can be kept (the event log shows it), shifted
        # when needed to stay above what was delivered (a new owner, our own events).
        seq = owner_seq + self._shift
        if seq <= self._seq:
            seq = self._seq + 1
            self._shift = seq - owner_seq
        self._seq = seq
        return Event(
            seq,
            kind,
            tid,
            None if state is None else TaskState(state),
            at,
            attempt,
            run_at,
            error,
            None if outcome is None else _OUTCOMES.get(outcome, outcome),
        )

    def _engine_event(self, kind: str) -> Event:
        return Event(self._next_seq(), kind, "", None, self.clock.now(), 0, None, None)

    def _differences(self, old: dict[str, TaskInfo]) -> list[Event]:
        """Events that take a listener from ``old`` to the tasks a new owner published."""
        events = []
        now = self.clock.now()
        for tid in old:
            if tid not in self._tasks:
                events.append(Event(self._next_seq(), "removed", tid, None, now, 0, None, None))
        for tid, info in self._tasks.items():
            before = old.get(tid)
            if before is None or before.deps != info.deps:
                kind = "dependency_added"
            elif before != info:
                kind = info.state.value
            else:
                continue
            events.append(
                Event(
                    self._next_seq(),
                    kind,
                    tid,
                    info.state,
                    now,
                    info.attempt,
                    info.run_at,
                    info.error,
                )
            )
        return events

    # -- the Scheduler API a window uses ----------------------------------------------
    def subscribe(self, callback):
        """Listen to the run's events. The newest ones already seen (the owner's
        recent past at attach, then everything since, up to ``REPLAY``) are handed
        to ``callback`` first, on this thread: with ``snapshot()``'s tasks, which
        they end at, a window's log and timeline start with the run's recent past."""
        with self._lock:
            self._listeners.append(callback)
            for event in self._replay:  # under the lock: nothing newer can come first
                try:
                    callback(event)
                except Exception:
                    log.exception("a listener of the watched run failed")

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._listeners:
                    self._listeners.remove(callback)

        return unsubscribe

    def on(self, kind: str, callback):
        return self.subscribe(lambda event: callback(event) if event.kind == kind else None)

    def snapshot(self):
        """(seq, tasks, upcoming): ``seq`` is just below the replayed events (see
        ``subscribe``), which end at these tasks' states."""
        with self._lock:
            floor = self._replay[0].seq - 1 if self._replay else self._seq
            return floor, list(self._tasks.values()), list(self._upcoming[:100])

    def tasks(self) -> list[TaskInfo]:
        with self._lock:
            return list(self._tasks.values())

    def definition(self, task_id: str) -> TaskDefinition:
        """The task's definition as the workflow file says (``definitions``, given by
        whoever opened the file): the owner does not publish its own. KeyError if the
        file has no such task."""
        return self.definitions[task_id]

    def task(self, task_id: str) -> TaskInfo:
        with self._lock:
            return self._tasks[task_id]

    def upcoming(self, limit: int = 100) -> list[Entry]:
        with self._lock:
            return list(self._upcoming[:limit])

    def attempts(self, task_id: str) -> list[Attempt]:
        """The task's newest attempts in this run (at most ``ATTEMPTS_KEPT``), oldest
        first: read from the store on the first call after its row changed."""
        with self._lock:
            info = self._tasks.get(task_id)
            if info is None:
                raise KeyError(task_id)
            known = self._attempts.get(task_id)
            if known is not None and known[0] is info:
                return list(known[1])
            run, offset = self._run, self.clock.offset
        rows = self._reader.attempts(run, task_id)
        found = [Attempt.from_row(row, offset) for row in rows]
        if (info.error or "").startswith(OWNER_GONE):  # not running: what a take-over finds
            found = [
                a._replace(outcome=Outcome.LOST, error=info.error)
                if a.outcome == Outcome.RUNNING
                else a
                for a in found
            ]
        with self._lock:
            # The feed commits ahead of the engine's rows: an attempt it mentions may
            # not be on disk yet, or not ended yet; then it is read again next call.
            if _complete(info, found) and self._tasks.get(task_id) is info:
                self._attempts[task_id] = (info, found)
        return list(found)

    def live_log(self, task_id: str) -> str | None:
        """The log file the owner's newest attempt of the task still running is
        writing (the owner runs on this machine: the path can be read), or None."""
        for attempt in reversed(self.attempts(task_id)):
            if attempt.ended is None and attempt.log_path:
                return attempt.log_path
        return None

    def allowed_actions(self, task_id: str) -> frozenset[Action]:
        """What the owner allows (as of its last feed write); nothing once it stopped."""
        with self._lock:
            if task_id not in self._tasks:
                raise KeyError(task_id)
            return self._actions.get(task_id, frozenset()) if self.owner_alive else frozenset()

    def would_close_cycle(self, task_id: str, dep: str):
        return None  # edits are refused anyway (WatchOnly), with the reason

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def run(self) -> int:
        return self._run

    @property
    def store(self):
        """The store, read-only, for past runs' attempts (opened on first use)."""
        if self._store is None:
            self._store = StoreReader(self.path)
        return self._store

    def start(self) -> None:
        """Nothing to start: the owner runs the run."""

    # -- steering: requests to the owner ----------------------------------------------
    def cancel(self, task_id: str) -> bool:
        return self._request("cancel", task_id)

    def retry(self, task_id: str) -> bool:
        return self._request("retry", task_id)

    def run_now(self, task_id: str) -> bool:
        return self._request("run_now", task_id)

    def pause(self, task_id: str | None = None) -> None:
        self._request("pause" if task_id else "pause_all", task_id or "")

    def resume(self, task_id: str | None = None) -> None:
        self._request("resume" if task_id else "resume_all", task_id or "")

    def clear(self, task_id: str, downstream: bool = False) -> bool:
        """Ask the owner to run a settled one-shot task again (``Scheduler.clear``),
        with ``downstream`` the settled tasks downstream of it too."""
        return self._request("clear_downstream" if downstream else "clear", task_id)

    def request(self, action: str, task_id: str = "") -> bool:
        """Send any request of ``feed.CONTROL_ACTIONS`` (``task_id`` "" for the
        whole run's ``pause_all``/``resume_all``); the answer comes through
        ``take_answers``. ``ValueError`` for an unknown action, ``KeyError`` for an
        unknown task, ``RuntimeError`` once the owner has stopped."""
        return self._request(action, task_id)

    def _request(self, action: str, task_id: str) -> bool:
        """Send a request to the owner; True once it is in the store (the answer
        comes later, through ``take_answers`` and the owner's events)."""
        if action not in CONTROL_ACTIONS:
            raise ValueError(f"unknown request {action!r}")
        if task_id and task_id not in self._tasks:
            raise KeyError(task_id)
        if not self.owner_alive:
            raise RuntimeError(f"{self.name} has stopped: take the run over to steer it")
        try:
            if self._writer is None:
                self._writer = sqlite3.connect(
                    self.path, timeout=2.0, isolation_level=None, check_same_thread=False
                )
            cursor = self._writer.execute(
                "INSERT INTO control (action, task_id, requested, origin) VALUES (?,?,?,?)",
                (action, task_id, time.time(), self.origin),
            )
        except sqlite3.Error as exc:
            raise RuntimeError(f"cannot reach the owner through {self.path}: {exc}") from exc
        with self._lock:
            if cursor.lastrowid is not None:
                self._asked.add(cursor.lastrowid)
        self._hurry.set()  # its answer and its effect are read at the watching rate
        return True

    @property
    def awaiting_answers(self) -> bool:
        """Whether a request we sent has no answer yet."""
        with self._lock:
            return bool(self._asked) or bool(self._answers)

    def take_answers(self) -> list[tuple]:
        """The owner's answers to our requests since the last call:
        (id, action, task_id, status, text), status "done", "refused" or "expired"."""
        answers = []
        while self._answers:
            answers.append(self._answers.popleft())
        return answers

    # -- graph edits: refused ----------------------------------------------------------
    @property
    def edit_refusal(self) -> str:
        who = self.owner.describe() if self.owner else "another process"
        return (
            f"{self.name} is run by {who}; this window only watches it. To change the "
            "graph, edit the workflow file (the owner runs what it says when it next "
            "starts), or stop the owner and take the run over here"
        )

    def _refuse(self, *args, **kwargs):
        raise WatchOnly(self.edit_refusal)

    schedule = schedule_after = schedule_every = schedule_cron = add = _refuse
    add_dependency = remove_dependency = remove = _refuse

    # -- end -------------------------------------------------------------------------
    def shutdown(self, wait: bool = True, *, cancel_running: bool = False) -> None:
        """Stop watching (the owner's run goes on)."""
        self.close()

    def close(self) -> None:
        """Stop reading and let the owner stop publishing. Idempotent."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._hurry.set()  # the reading thread stops waiting
        if threading.current_thread() is not self._thread:
            self._thread.join()
        self._reader.close()
        if self._writer is not None:
            self._writer.close()
        if self._store is not None:
            self._store.close()
        self._release()

    def _release(self) -> None:
        if self._watch_fd is not None:
            os.close(self._watch_fd)  # drops the shared lock: one watcher fewer
            self._watch_fd = None
