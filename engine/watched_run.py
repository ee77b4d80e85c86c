"""A run another process owns, followed through its store's feed (see feed.py).

``WatchedRun`` implements the run interface (``run_api.RunInterface``) a window
and the command line use, so that the window's bridge and views do not care whose
run they show. It only reads the store (a read-only SQLite connection; WAL readers
never block the owner), except for the requests it sends: ``cancel``, ``retry``,
``run_now``, ``pause``, ``resume`` and ``clear`` (``request`` sends any) become
rows of the store's ``control`` table, which the owner applies and answers
(``take_answers``). Graph edits are refused with ``WatchOnly`` (a
``run_api.Refused``), which says how to edit.

Once attached, every read and write of the store happens on the watcher's own
thread: the calls a window makes (``attempts``, ``live_log``, the requests)
answer from memory or queue their work there, so that a store whose write lock
another connection holds never blocks the caller. ``attempts`` answers what it
has read and asks the thread to read the rest; ``on_attempts`` listeners hear
when it has. A request waits in memory until its row is in the store (retried
while the store is locked, up to ``SEND_TIMEOUT``; then its answer says it was
not sent).

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
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

from ._jobs.survivors import start_time
from ._store.lock import HEARTBEAT, owner_record, pid_namespace, read_owner
from ._store.safe_files import UnsafeFile, open_private, same_file
from .definitions import TaskDefinition
from .feed import CONTROL_ACTIONS, watch_path
from .feed_reader import STATES, FeedRead, FeedReader
from .fold import TaskFold
from .models import Action, Attempt, Entry, Event, MadeUpEvent, TaskInfo
from .options import Outcome
from .run_api import Refused, ordered_clear_plan, refusal_text
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
NO_FEED_GRACE = 1.0  # seconds a store's schema stands still without a feed: an older owner
STALE_BEATS = 4  # owner heartbeats missed before it counts as not answering
REPLAY = 500  # events a new listener is handed first
WANTED_ROUNDS = 50  # rounds an incomplete read of a task's attempts is tried again
SEND_WAIT = 0.25  # seconds one try to write a request waits for the store's write lock
SEND_TIMEOUT = 10.0  # seconds a request is tried before its answer says it was not sent
# What a watching window cannot do here: the owner's graph is edited in the file.
GRAPH_EDITS = frozenset({Action.EDIT, Action.REMOVE, Action.ADD_DEPENDENCY})


class WatchOnly(Refused):
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


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Whether the error is another connection's lock (it passes), not a fault."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


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
        answer_from_memory: bool = False,
    ):
        self.path = Path(path).expanduser()
        self.name = name or self.path.stem
        self.interval = interval
        # A window's run: ``attempts`` never reads the store on the caller's thread.
        self.answer_from_memory = answer_from_memory
        owner = read_owner(self.path)
        if owner is None:
            raise OwnerGone(f"{self.path}: no process owns the store")
        self.owner = owner
        self._owner_started: float | None = None  # the owner's start time (pid reuse)
        self.clock = FeedClock()
        self.definitions: dict[str, TaskDefinition] = {}  # the workflow file's, if known
        self.workers: int | None = None
        self.origin = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._lock = threading.RLock()  # the caches; listeners are called without it
        self._listeners: list[Callable[[Event], object]] = []
        self._tasks: dict[str, TaskInfo] = {}
        self._actions: dict[str, frozenset[Action]] = {}
        # Each task's attempts as last read, oldest first, with the task row they were
        # read for and whether they show all it says: read when asked for, again once
        # the row changed (reading every changed task's attempts each round was half a
        # watcher's work under load).
        self._attempts: dict[str, tuple[TaskInfo, list[Attempt], bool]] = {}
        # What listeners were told, folded from the events delivered (engine/fold.py).
        self._told = TaskFold()
        self._upcoming: list[Entry] = []
        self._paused = False
        self._seq = 0  # the last seq delivered: grows by at least one per event
        self._shift = 0  # delivered seq - the owner's, for the owner's events
        self._feed_seq = -1  # the owner's: the last one read
        self._run = 1
        self._answers: deque = deque()
        self._replay: deque[Event] = deque(maxlen=REPLAY)  # the newest events delivered
        self._asked: set[int] = set()  # our control rows not answered yet
        # Requests not in the store yet: (action, task id, monotonic time first asked).
        self._outbox: deque[tuple[str, str, float]] = deque()
        # Tasks whose attempts a caller asked for: the watcher's thread keeps them read.
        self._followed: set[str] = set()
        # Tasks whose attempts are to be read (again) on that thread -> rounds tried.
        self._wanted: dict[str, int] = {}
        self._attempt_listeners: list[Callable[[str], object]] = []
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
        try:  # for past runs' attempts (read on the window's history thread)
            self._store = StoreReader(self.path)
        except (StoreError, sqlite3.Error) as exc:
            log.warning("the watched run's past runs cannot be read: %s", exc)
        self._thread = threading.Thread(target=self._loop, name="taskloom-watch", daemon=True)
        self._thread.start()

    # -- attaching and polling ----------------------------------------------------------
    def _attach(self, since: float, timeout: float) -> None:
        """Wait until the owner has written its feed since ``since`` (it knows we watch)."""
        deadline = time.monotonic() + timeout
        # A store with no feed tables: an owner older than the feed, or one making the
        # store right now (its schema steps commit one by one). Named at once only once
        # the schema has stood still for NO_FEED_GRACE (a window opened the moment the
        # file appeared was told "an older Taskloom?").
        schema, still_since = self._reader.schema_version(), time.monotonic()
        while True:
            written = self._reader.written()
            if written is not None and written >= since:
                self._poll()
                return
            if not self._owner_alive():
                raise OwnerGone(f"{self.path}: the owner stopped")
            old_owner = False
            if not self._reader.has_feed():
                now_schema = self._reader.schema_version()
                if now_schema != schema:
                    schema, still_since = now_schema, time.monotonic()
                old_owner = time.monotonic() - still_since >= NO_FEED_GRACE
            if time.monotonic() >= deadline or old_owner:
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
        try:
            self._rounds()
        finally:
            if self._writer is not None:  # made and used on this thread only
                self._writer.close()
                self._writer = None

    def _rounds(self) -> None:
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
                self._send()
                quiet = 0 if self._poll() else quiet + 1
                self._read_wanted()
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
        self._read_ahead(read)
        self._apply(read)
        with self._lock:
            for row in read.answers:
                self._asked.discard(row[0])
                self._answers.append(row)
            waiting = bool(self._asked or self._outbox or self._wanted)
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
                self._told.reset(self._tasks.values(), 0)
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
        self._told.apply(event)

    def _catch_up(self, changed, at: float) -> list[Event]:
        """Events for the changed tasks whose latest events did not fit in the
        owner's batch (it writes the newest few hundred): a listener that applies
        events, as the window's bridge does, ends up with the task rows' states.
        They carry ``at``: the time of the owner's write, when those states held."""
        events = []
        now = at  # when the owner wrote the rows (its clock): the states held then
        for tid in changed:
            info = self._tasks.get(tid)
            told = self._told.brief(tid)
            if info is None:
                if told is not None:
                    events.append(self._removed(tid, now))
                    self._told.remove(tid)
                continue
            if told is None or (told[0], told[1]) != (info.state, info.attempt):
                kind = "dependency_added" if told is None else info.state.value  # new: read whole
                events.append(self._made_up(kind, tid, info, now))
            if told is not None and told[2] != info.paused:
                events.append(self._made_up("paused" if info.paused else "resumed", tid, info, now))
            self._told.put(info)
        return events

    def _made_up(self, kind: str, tid: str, info: TaskInfo, now: float) -> Event:
        """An event for a change the feed left out, saying what the task row says."""
        return MadeUpEvent(
            self._next_seq(), kind, tid, info.state, now, info.attempt, info.run_at, info.error
        )

    def _removed(self, tid: str, now: float) -> Event:
        return MadeUpEvent(self._next_seq(), "removed", tid, None, now, 0, None, None)

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
            None if state is None else STATES[state],
            at,
            attempt,
            run_at,
            error,
            None if outcome is None else _OUTCOMES.get(outcome, outcome),
        )

    def _engine_event(self, kind: str) -> Event:
        return MadeUpEvent(self._next_seq(), kind, "", None, self.clock.now(), 0, None, None)

    def _differences(self, old: dict[str, TaskInfo]) -> list[Event]:
        """Events that take a listener from ``old`` to the tasks a new owner published."""
        events = []
        now = self.clock.now()
        for tid in old:
            if tid not in self._tasks:
                events.append(self._removed(tid, now))
        for tid, info in self._tasks.items():
            before = old.get(tid)
            if before is None or before.deps != info.deps:
                kind = "dependency_added"
            elif before != info:
                kind = info.state.value
            else:
                continue
            events.append(self._made_up(kind, tid, info, now))
        return events

    # -- the Scheduler API a window uses ----------------------------------------------
    def subscribe(self, callback: Callable[[Event], object]) -> Callable[[], None]:
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

    def on(self, kind: str, callback: Callable[[Event], object]) -> Callable[[], None]:
        return self.subscribe(lambda event: callback(event) if event.kind == kind else None)

    def snapshot(self) -> tuple[int, list[TaskInfo], list[Entry]]:
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
        first. Once asked for, a task's attempts are read on the watcher's thread
        whenever its row changes, before its events are delivered. Attempts not read
        since the row changed are read here, or, with ``answer_from_memory`` (a
        window), asked of the watcher's thread, which tells ``on_attempts`` listeners
        once it has read them; until then the answer is the last one read (empty at
        first): the store is never read on the caller's thread."""
        with self._lock:
            info = self._tasks.get(task_id)
            if info is None:
                raise KeyError(task_id)
            self._followed.add(task_id)
            known = self._attempts.get(task_id)
            if known is not None and known[0] is info and (known[2] or self.answer_from_memory):
                return list(known[1])
            if info.attempt == 0:  # nothing to read
                self._attempts[task_id] = (info, [], True)
                return []
            if self.answer_from_memory:
                self._wanted.setdefault(task_id, 0)
        if not self.answer_from_memory:  # a command line: read here, now
            self._read_attempts(task_id, info)
            with self._lock:
                return list(self._attempts.get(task_id, (info, [], False))[1])
        self._hurry.set()
        return [] if known is None else list(known[1])

    def on_attempts(self, callback: Callable[[str], object]) -> Callable[[], None]:
        """Call ``callback(task_id)`` (on the watcher's thread) once attempts of the
        task that ``attempts`` answered without have been read. Returns a function
        that stops it."""
        with self._lock:
            self._attempt_listeners.append(callback)

        def stop() -> None:
            with self._lock:
                if callback in self._attempt_listeners:
                    self._attempt_listeners.remove(callback)

        return stop

    def _read_attempts(self, task_id: str, info: TaskInfo) -> bool:
        """Read the task's attempts for ``info`` into memory; whether they differ from
        the ones held. Attempts that do not show all ``info`` says (the feed commits
        ahead of the engine's rows: an attempt it mentions may not be on disk, or not
        ended, yet) are read again on the watcher's thread, for ``WANTED_ROUNDS``."""
        with self._lock:
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
        complete = _complete(info, found)
        with self._lock:
            if self._tasks.get(task_id, info) is not info:
                return False  # changed meanwhile: read again when asked
            before = self._attempts.get(task_id)
            self._attempts[task_id] = (info, found, complete)
            if complete:
                self._wanted.pop(task_id, None)
            elif self.answer_from_memory:
                self._wanted.setdefault(task_id, 0)
        return before is None or before[1] != found

    def _read_ahead(self, read: FeedRead) -> None:
        """Before the events of a read are delivered: the attempts of the changed tasks
        a caller follows, so that a listener asking for them gets them from memory."""
        if read.reload:
            with self._lock:
                for tid in self._followed:
                    self._wanted.setdefault(tid, 0)
            return
        with self._lock:
            changed = [
                (tid, info)
                for tid, _order, info, _actions, _changed in read.tasks
                if info is not None and info.attempt and tid in self._followed
            ]
        for tid, info in changed:
            self._read_attempts(tid, info)

    def _read_wanted(self) -> None:
        """Read the attempts asked for and not held, or not complete yet; tell the
        listeners about the ones that changed."""
        with self._lock:
            for tid in [tid for tid in self._wanted if tid not in self._tasks]:
                del self._wanted[tid]
            wanted = [(tid, self._tasks[tid]) for tid in self._wanted]
        changed = []
        for tid, info in wanted:
            if self._read_attempts(tid, info):
                changed.append(tid)
            with self._lock:
                if tid in self._wanted:  # still incomplete: once more, up to a limit
                    self._wanted[tid] += 1
                    if self._wanted[tid] >= WANTED_ROUNDS:
                        del self._wanted[tid]
        if not changed:
            return
        with self._lock:
            listeners = list(self._attempt_listeners)
        for tid in changed:
            for listener in listeners:
                try:
                    listener(tid)
                except Exception:
                    log.exception("a listener of the watched run failed")

    def live_log(self, task_id: str) -> str | None:
        """The log file the owner's newest attempt of the task still running is
        writing (the owner runs on this machine: the path can be read), or None."""
        for attempt in reversed(self.attempts(task_id)):
            if attempt.ended is None and attempt.log_path:
                return attempt.log_path
        return None

    def adoptions(self) -> dict[str, tuple[int, str]]:
        """{}: the owner's feed does not say what it adopted."""
        return {}

    def outputs(self, task_id: str) -> dict[str, Any] | None:
        """None: the owner does not publish what a task's success gave its dependents.
        ``KeyError`` if unknown."""
        self.task(task_id)
        return None

    def pool_usage(self) -> dict[str, tuple[int, int, list[str]]]:
        """{}: the owner does not publish its pools' use."""
        return {}

    def pool_wait(self, task_id: str) -> str | None:
        """None: the owner does not publish what its ready tasks wait for.
        ``KeyError`` if unknown."""
        self.task(task_id)
        return None

    def jitter_delays(self, task_id: str) -> dict[int, float]:
        """{}: the owner does not publish the jitter delays its attempts waited.
        ``KeyError`` if unknown."""
        self.task(task_id)
        return {}

    def allowed_actions(self, task_id: str) -> frozenset[Action]:
        """What the owner allows (as of its last feed write), less the graph edits this
        process refuses (``GRAPH_EDITS``); nothing once the owner stopped."""
        with self._lock:
            if task_id not in self._tasks:
                raise KeyError(task_id)
            if not self.owner_alive:
                return frozenset()
            return self._actions.get(task_id, frozenset()) - GRAPH_EDITS

    def why_not(self, task_id: str, action: Action) -> str | None:
        """Why ``action`` cannot be done to the task now (the owner's rules, as of its
        last feed write, in ``run_api.refusal_text``'s words), or None if it can."""
        with self._lock:
            info = self._tasks.get(task_id)
            if info is None:
                raise KeyError(task_id)
        if action in self.allowed_actions(task_id):
            return None
        if not self.owner_alive:
            return f"{self.name} has stopped: take the run over to steer it"
        if action in GRAPH_EDITS:
            return self.edit_refusal
        settled_retry = action is Action.RETRY and info.state in (
            TaskState.FAILED,
            TaskState.CANCELLED,
        )
        return refusal_text(
            info,
            action,
            in_flight=info.state is TaskState.RUNNING,
            upstream_rules_out=settled_retry,
        )

    def clear_plan(self, task_ids: str | Iterable[str], downstream: bool = False) -> list[str]:
        """What ``clear`` would ask the owner to reset (as of its last feed write), in
        the run's order; ``ValueError`` for a task ``clear`` refuses, ``KeyError`` for an
        unknown one."""
        with self._lock:
            tasks = dict(self._tasks)
            actions = dict(self._actions)
        return ordered_clear_plan(
            tasks, task_ids, downstream, lambda tid: Action.CLEAR in actions.get(tid, ())
        )

    def would_close_cycle(self, task_id: str, dep_id: str) -> list[str] | None:
        """None: edits are refused anyway (``WatchOnly``), with the reason."""
        return None

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def run(self) -> int:
        return self._run

    @property
    def store(self) -> StoreReader | None:
        """The store, read-only, for past runs' attempts (opened when watching began;
        None if it could not be read). Read it off the GUI thread."""
        return self._store

    @property
    def busy(self) -> int | None:
        """None: the owner does not publish how many of its workers are busy."""
        return None

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

    def clear(self, task_ids: str | Iterable[str], downstream: bool = False) -> list[str]:
        """Ask the owner to run settled one-shot tasks again (``Scheduler.clear``), with
        ``downstream`` the settled tasks downstream of them too; returns what it is
        asked to reset, as of its last feed write (``clear_plan``: same errors as
        ``Scheduler.clear``). The owner answers through ``take_answers``."""
        ids = [task_ids] if isinstance(task_ids, str) else list(task_ids)
        planned = self.clear_plan(ids, downstream)
        for tid in ids:
            self._request("clear_downstream" if downstream else "clear", tid)
        return planned

    def request(self, action: str, task_id: str = "") -> bool:
        """Send any request of ``feed.CONTROL_ACTIONS`` (``task_id`` "" for the
        whole run's ``pause_all``/``resume_all``); the answer comes through
        ``take_answers``. ``ValueError`` for an unknown action, ``KeyError`` for an
        unknown task, ``RuntimeError`` once the owner has stopped."""
        return self._request(action, task_id)

    def _request(self, action: str, task_id: str) -> bool:
        """Send a request to the owner: True once it is queued for the watcher's
        thread, which writes it to the store (the answer comes later, through
        ``take_answers`` and the owner's events)."""
        if action not in CONTROL_ACTIONS:
            raise ValueError(f"unknown request {action!r}")
        if task_id and task_id not in self._tasks:
            raise KeyError(task_id)
        if not self.owner_alive:
            raise RuntimeError(f"{self.name} has stopped: take the run over to steer it")
        if self._closed.is_set():
            raise RuntimeError(f"{self.name} is not watched any more")
        with self._lock:
            self._outbox.append((action, task_id, time.monotonic()))
        self._hurry.set()  # written, then its answer and its effect read, at once
        return True

    def _send(self) -> None:
        """Write the queued requests to the store (on the watcher's thread). One the
        store's write lock keeps out is tried again next round, until ``SEND_TIMEOUT``:
        then it is dropped, and its answer (status "failed") says it was not sent."""
        while True:
            with self._lock:
                if not self._outbox:
                    return
                action, task_id, since = self._outbox[0]
            rowid = None
            failure: sqlite3.Error | None = None
            try:
                if self._writer is None:
                    self._writer = sqlite3.connect(
                        self.path, timeout=SEND_WAIT, isolation_level=None, check_same_thread=False
                    )
                rowid = self._writer.execute(
                    "INSERT INTO control (action, task_id, requested, origin) VALUES (?,?,?,?)",
                    (action, task_id, time.time(), self.origin),
                ).lastrowid
            except sqlite3.OperationalError as exc:
                if time.monotonic() - since < SEND_TIMEOUT and _busy(exc):
                    return  # the write lock is held: next round
                failure = exc
            except sqlite3.Error as exc:
                failure = exc
            with self._lock:
                self._outbox.popleft()
                if rowid is not None:
                    self._asked.add(rowid)
                else:
                    text = f"cannot reach the owner through {self.path}: {failure}; not sent"
                    self._answers.append((None, action, task_id, "failed", text))

    @property
    def awaiting_answers(self) -> bool:
        """Whether a request we sent (or are sending) has no answer yet."""
        with self._lock:
            return bool(self._asked) or bool(self._answers) or bool(self._outbox)

    def take_answers(self) -> list[tuple]:
        """The owner's answers to our requests since the last call:
        (id, action, task_id, status, text), status "done", "refused" or "expired";
        or "failed" (id None) for a request that could not be written to the store."""
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

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise WatchOnly(self.edit_refusal)

    schedule = schedule_after = schedule_every = schedule_cron = add = _refuse
    add_dependency = remove_dependency = remove = restore = update = _refuse

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
        if self._writer is not None:  # the thread did not start, or was this one
            self._writer.close()
            self._writer = None
        if self._store is not None:
            self._store.close()
        self._release()

    def _release(self) -> None:
        if self._watch_fd is not None:
            os.close(self._watch_fd)  # drops the shared lock: one watcher fewer
            self._watch_fd = None
