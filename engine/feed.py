"""The owner's side of watching: a live feed of the run in its store, and the
requests watchers send back (the control channel).

A run belongs to the one process that holds its store (``_store/lock.py``). Other
processes may *watch* it: they open the store read-only (SQLite's WAL lets them
read while the owner writes) and follow what the owner publishes here.

**Who watches.** A watcher holds a shared ``flock`` on ``<store>.watch`` while it
is open; the owner probes it (an exclusive non-blocking lock it drops at once)
every ``FEED_INTERVAL`` while watched, every ``UNWATCHED_INTERVAL`` while not.
Both sides open the file the path names again when it was deleted or replaced
(and never through a symbolic link). The kernel drops a dead watcher's lock, so
nothing goes stale. With nobody watching, the feed writes nothing; its listener
only keeps the newest ``HISTORY`` events, which a watcher that attaches gets first.

**What it writes** (tables ``feed_events``, ``feed_tasks``, ``feed_log``,
``feed_state``; see ``store.MIGRATIONS``). When watching starts: every task, the
owner's recent events, the upcoming timer entries, the dispatcher's pause and
the owner's clock. Watchers take task states from the journal (the ``events``
rows the engine writes anyway: see ``feed_reader``), so then, every
``FEED_INTERVAL`` with changes, the feed writes only what the journal lacks, one
``feed_log`` entry a round: the rows of tasks new to it, removed or with changed
edges (read from the engine); ``run_at`` of each event of a timed task; outcomes
an event's kind does not tell (``OUTCOME_OF_KIND``); the allowed actions re-read
for changed tasks within ``ACTIONS_BUDGET``; and the upcoming entries. Finding
those is a few C-level passes over the round's events: no Python call per event
or task. Every ``SYNC_INTERVAL`` the logged rows, run_at and actions go into
``feed_tasks`` (what a watcher that attaches reads, with the entries after). The
rows go through the store's writer (``SQLiteStore.put_feed``), in a small
transaction of their own: no second writer for SQLite's one write lock. Event
times stay on the owner's clock; ``feed_state`` says how to turn them into wall
time.

**The control channel** is the ``control`` table: a watcher inserts a request
(cancel, retry, run now, pause, resume, pause all, resume all, clear, clear with
downstream) and the owner, which polls it at each probe, applies it through the
``Scheduler``'s
public calls and writes the answer (done, refused with the reason, or expired)
into the same row. The watcher sees the effect through the normal events. The
table outlives both sides: a request made while the owner restarts is applied by
the next owner if it is at most ``CONTROL_TTL`` seconds old, and answered
``expired`` otherwise. Anyone who can write the store can write a row, so a row is
read with its size bounded (an action or task id over ``MAX_REQUEST_CHARS`` is
refused unread, and blanked), one that is not a well-formed request is answered
``refused``, and no row can stop a round: the others are applied and answered.
Answered rows are pruned every ``CONTROL_PRUNE_EVERY`` seconds: those older than
``CONTROL_KEEP``, and all but the newest ``CONTROL_KEEP_ROWS``.
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import operator
import os
import sqlite3
import threading
import time
import uuid
from collections import OrderedDict, deque
from pathlib import Path

from . import fold as folding
from .models import Event, TaskInfo
from .options import Outcome
from .states import TaskState

log = logging.getLogger("taskloom.feed")

FEED_INTERVAL = 0.1  # seconds between the owner's feed writes (and control polls)
# While nobody watches: seconds between looks for a watcher (and for requests a
# watcher left before it went); a window that starts watching waits at most this
# for its first picture, and a run nobody watches is not woken ten times a second.
UNWATCHED_INTERVAL = 0.5
HEARTBEAT = 0.5  # seconds between writes while nothing changes, so watchers see it live
FEED_TAIL = 500  # events a watcher delivers per read (feed_reader); it makes up the rest
UPCOMING_LIMIT = 200
HISTORY = 500  # recent events kept for a watcher that attaches
CONTROL_TTL = 60.0  # seconds a request waits for an owner before it expires
CONTROL_KEEP = 600.0  # seconds answered requests are kept (a watcher reads its answer in ~1 s)
CONTROL_KEEP_ROWS = 10_000  # answered requests kept at most (a flood is pruned sooner)
CONTROL_PRUNE_EVERY = 30.0  # seconds between prunes of answered requests
CONTROL_ROUND = 500  # pending requests read per round (a flood is served over rounds)
MAX_REQUEST_CHARS = 1024  # a longer action or task id is refused without being read
ACTIONS_BUDGET = 0.001  # seconds a round may spend asking what each changed task allows
SYNC_INTERVAL = 1.0  # seconds between folds of the feed_log entries into feed_tasks
FOLDS_KEPT = 5  # feed_log entries are kept this many folds (seconds) for slow watchers

# Each write is one statement over a JSON array of rows (json_each), not one
# executemany row each: binding a row takes the GIL, and with the owner's busy
# threads each of those thousands of takes was a wait (a round's write took up
# to 0.3 s on the store's writer thread; the engine's commits waited behind it).
# A task row keeps its allowed actions until they are read again (_action_rows).
# Task rows are [id, ord, info], actions rows [actions, id]; seq is the owner's
# event seq the task's reading covers.
# Rows here are [id, ord, info, seq].
_TASK_UPSERT = (
    "INSERT INTO feed_tasks (id, seq, ord, info) SELECT value ->> 0, value ->> 3, value ->> 1,"
    " value ->> 2 FROM json_each(?) WHERE true ON CONFLICT (id)"
    " DO UPDATE SET seq = excluded.seq, ord = excluded.ord, info = excluded.info"
)
# The newest run_at of each timed task since the last fold ([[id, run_at], ...]).
# Taken as JSON (->), so an infinite time stays 1e999 (SQLite 3.40 writes a REAL
# infinity as "Inf", which no JSON reader takes).
_RUNS_FOLD = (
    "UPDATE feed_tasks SET info = json_set(info, '$[5]', e.value -> 1) FROM json_each(?) AS e"
    " WHERE feed_tasks.id = e.value ->> 0 AND feed_tasks.info IS NOT NULL"
)
_ACTIONS_UPDATE = (
    "UPDATE feed_tasks SET actions = row.value ->> 0"
    " FROM json_each(?) AS row WHERE feed_tasks.id = row.value ->> 1"
)
_EVENTS_INSERT = (
    "INSERT OR REPLACE INTO feed_events SELECT "
    + ", ".join(f"value ->> {n}" for n in range(9))
    + " FROM json_each(?)"
)
_NO_RUN_AT_KINDS = frozenset({"removed", *folding.PAUSE_KINDS})  # events that leave run_at
# Events after which the feed reads the task afresh (besides a task new to it).
_READ_KINDS = frozenset({"removed", *folding.STRUCTURAL_KINDS})
_TASK_ID = operator.attrgetter("task_id")
# The outcome an event of each kind has when it ends an attempt the usual way: an
# event whose outcome is another (or none) is sent with it (watchers take the rest).
OUTCOME_OF_KIND = {
    "succeeded": Outcome.SUCCEEDED,
    "failed": Outcome.FAILED,
    "cancelled": Outcome.CANCELLED,
}

# Requests a watcher may send, and the verb its answer uses.
CONTROL_ACTIONS = {
    "cancel": "cancel",
    "retry": "retry",
    "run_now": "run now",
    "pause": "pause",
    "resume": "resume",
    "pause_all": "pause all",
    "resume_all": "resume all",
    "clear": "clear",  # Scheduler.clear: run a settled one-shot task again
    "clear_downstream": "clear",  # ... with the settled tasks downstream of it
}


def watch_path(store_path) -> Path:
    """The file whose shared locks say who watches the store."""
    path = Path(store_path)
    return path.with_name(path.name + ".watch")


# ---------------------------------------------------------------------- encoding
# A task row's info is the JSON list ``feed_reader.decode_info`` reads: [state,
# deps, dependents, priority, attempt, run_at, recurring, paused, error]. Made by
# hand, as text around a part encoded once per reading of the task, and rows and
# log entries are joined text too: under load the feed makes thousands a second,
# and each list or tuple made counts towards the owner's next garbage collection,
# which stops every thread (with 30k tasks a full one took 0.15 s; lists per row
# and a tuple per event made the owner collect a third more often).
def encode_info(info: TaskInfo) -> str:
    """A task's info as JSON text."""
    return _encode(_static_part(info), info, info.paused)


def _static_part(info: TaskInfo) -> tuple[str, str, str]:
    """The fields only an edit changes, encoded once per reading: deps, dependents
    and priority; recurring; and the task's id as JSON."""
    middle = json.dumps([list(info.deps), list(info.dependents), info.priority])[1:-1]
    return middle, "true" if info.recurring else "false", json.dumps(info.id)


# Enum's .value is a descriptor call, and hashing a member a Python call: looked up
# by the state's plain ``kind`` attribute, once per row.
_STATE_TEXT = {state.kind: f'["{state.value}",' for state in TaskState}


def _encode(static: tuple[str, str, str], fields, paused: bool) -> str:
    """``fields``: the task's last event or reading (state, attempt, run_at, error)."""
    run_at = fields.run_at
    if run_at is None:
        when = "null"
    elif math.isfinite(run_at):
        when = repr(float(run_at))
    else:  # JSON has no word for it; SQLite and Python read 1e999 as an infinity
        when = "null" if math.isnan(run_at) else ("1e999" if run_at > 0 else "-1e999")
    error = fields.error
    why = "null" if error is None else json.dumps(error)
    return (
        f"{_STATE_TEXT[fields.state.kind]}{static[0]},{int(fields.attempt)},{when},{static[1]},"
        f"{'true' if paused else 'false'},{why}]"
    )


def encode_actions(actions) -> str:
    return ",".join(sorted(action.value for action in actions))


def event_row(event: Event) -> tuple:
    state = None if event.state is None else event.state.value
    outcome = None if event.outcome is None else str(event.outcome)
    return (
        event.seq,
        event.kind,
        event.task_id,
        state,
        event.at,
        event.attempt,
        event.run_at,
        event.error,
        outcome,
    )


def _json(rows: list) -> str:
    """Rows as one JSON array, for a statement over json_each (see _TASK_UPSERT).
    Floats keep every digit (Python's repr)."""
    try:
        return json.dumps(rows, allow_nan=False)
    except ValueError:  # an infinite time: rare enough to take the slow way
        text = json.dumps([_finite(row) for row in rows], allow_nan=False)
        # JSON has no word for an infinity; SQLite reads 1e999 as one
        return text.replace(f'"{_INF}"', "1e999").replace(f'"-{_INF}"', "-1e999")


_INF = "\\u0000inf"  # as json.dumps writes the stand-in _finite puts in a row


def _finite(value):
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if not isinstance(value, float) or math.isfinite(value):
        return value
    if math.isnan(value):
        return None
    return "\x00inf" if value > 0 else "-\x00inf"


def entry_rows(entries) -> str:
    return json.dumps([[e.run_at, e.priority, e.task_id, e.kind] for e in entries])


class WatcherPresence:
    """Whether any watcher holds ``<store>.watch`` (a shared flock) right now. A
    ``.watch`` file deleted or replaced is opened anew (watchers lock the file the
    path names), so that new windows can still be seen."""

    def __init__(self, store_path):
        self._path = watch_path(store_path)
        self._fd = -1
        self._told = False  # a refusal is logged once, not every round
        self._open()

    def _open(self) -> None:
        from ._store.safe_files import UnsafeFile, open_private, same_file

        if self._fd >= 0 and same_file(self._fd, self._path):
            return
        try:
            fd = open_private(self._path, os.O_RDWR | os.O_CREAT)
        except (OSError, UnsafeFile) as exc:
            if not self._told:
                self._told = True
                log.warning("cannot open %s to see who watches: %s", self._path, exc)
            return
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = fd

    def any(self) -> bool:
        self._open()
        if self._fd < 0:
            return False
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(self._fd, fcntl.LOCK_UN)  # at once: a watcher may be waiting for it
        return False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class FeedWriter:
    """Publishes ``scheduler``'s run in ``store`` for watchers, and applies their
    requests. ``start()`` after the scheduler is built (before it starts, so no
    event is missed); ``close()`` after it has shut down and before the store closes.
    """

    def __init__(self, scheduler, store, interval: float = FEED_INTERVAL):
        self.scheduler = scheduler
        self.store = store
        self.interval = interval
        self._lock = threading.Lock()  # guards _events (the delivery thread appends)
        self._events: list[Event] = []
        self._watched = False  # somebody watches: the feed listens and writes
        self._seq = 0  # the last engine seq the feed covers
        # Each task as the feed last read it (the snapshot, or a new task or changed
        # edges since): only its edges are used, to read the other ends again.
        self._readings: dict[str, TaskInfo] = {}
        # Tasks whose allowed actions are to be read, the longest waiting first. An
        # OrderedDict: taking a plain dict's first key walks past every key deleted
        # before it, and this one is taken from the front thousands of times a second.
        self._stale: OrderedDict[str, None] = OrderedDict()
        self._order: dict[str, int] = {}
        self._upcoming_json = ""
        self._last_write = 0.0
        # The round's changed rows go to feed_log, one entry a round (one row to
        # write, not one per task); every SYNC_INTERVAL the rows since are folded
        # into feed_tasks, each task once, and the entries before the last fold go.
        self._log_id = 0  # the last feed_log entry written
        self._synced = 0  # the last entry feed_tasks covers
        self._folds: deque[int] = deque(maxlen=FOLDS_KEPT)  # the last entry of each fold
        self._unsynced: dict[str, str] = {}  # tid -> its row (JSON) not in feed_tasks yet
        self._unsynced_actions: dict[str, str] = {}
        # Tasks with a time (run_at) now or since the feed read them: their events
        # carry run_at to watchers (the journal's rows do not), and the newest of
        # each not in feed_tasks yet.
        self._timed: set[str] = set()
        self._unsynced_runs: dict[str, float | None] = {}
        self._last_sync = 0.0
        self._applied: set[int] = set()  # control rows applied, answer not yet read back
        self._last_prune = 0.0  # when answered control rows were last pruned
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.writes = 0  # feed batches queued (for tests and the benchmark)
        self._presence = WatcherPresence(store.path)
        self._reader = sqlite3.connect(
            f"file:{store.path}?mode=ro", uri=True, check_same_thread=False
        )
        # The newest events, kept even while nobody watches: a window that attaches
        # shows them (its event log and timeline start with the run's recent past).
        self._recent: deque[Event] = deque(maxlen=HISTORY)
        self._unsubscribe = scheduler.subscribe(self._on_event)
        self._closed = False

    def start(self) -> FeedWriter:
        self._thread = threading.Thread(target=self._loop, name="taskloom-feed", daemon=True)
        self._thread.start()
        return self

    # -- the engine's delivery thread ----------------------------------------------
    def _on_event(self, event: Event) -> None:
        with self._lock:
            self._recent.append(event)
            if self._watched:
                self._events.append(event)

    # -- the feed thread -------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            try:
                self._tick()
            except Exception:  # the run must go on without its feed
                log.exception("the watchers' feed failed a round")
            wait = self.interval if self._watched else max(self.interval, UNWATCHED_INTERVAL)
            if self._stop.wait(wait):
                return

    def _tick(self) -> None:
        watched = self._presence.any()
        if not watched:
            if self._watched:
                with self._lock:
                    self._watched = False
                    self._events.clear()
        elif not self._watched:
            with self._lock:
                self._watched = True  # first, so no event falls between this and the snapshot
            self._write_snapshot()
        else:
            self._write_changes()
        self._serve_control()

    def _state_rows(self, **extra) -> list[tuple]:
        clock = self.scheduler.clock
        now = time.time()
        offset = clock.wall().timestamp() - clock.now()
        rows = {
            "seq": self._seq,
            "paused": int(self.scheduler.paused),
            "offset": offset,
            "workers": self.scheduler.workers,
            "run": getattr(self.store, "run", 1),
            "written": now,
            "pid": os.getpid(),
            "synced": self._synced,
            **extra,
        }
        return [(key, json.dumps(value)) for key, value in rows.items()]

    def _write_snapshot(self) -> None:
        seq, tasks, _ = self.scheduler.snapshot()
        upcoming = self.scheduler.upcoming(UPCOMING_LIMIT)
        with self._lock:
            self._events = [e for e in self._events if e.seq > seq]
            history = [event_row(e) for e in self._recent if e.seq <= seq]
        self._seq = seq
        self._order = {info.id: n for n, info in enumerate(tasks)}
        self._readings = {info.id: info for info in tasks}
        self._stale = OrderedDict.fromkeys(info.id for info in tasks)
        rows = [
            f"[{json.dumps(info.id)},{n},{encode_info(info)},{seq}]" for n, info in enumerate(tasks)
        ]
        actions = self._action_rows()
        self._upcoming_json = entry_rows(upcoming)
        self._log_id = self._synced = 0
        self._folds.clear()
        self._unsynced, self._unsynced_actions, self._unsynced_runs = {}, {}, {}
        self._timed = {info.id for info in tasks if info.run_at is not None}
        self._last_sync = time.time()
        state = self._state_rows(
            generation=uuid.uuid4().hex, upcoming=json.loads(self._upcoming_json), stopped=None
        )

        answered_before = time.time() - CONTROL_KEEP

        history_json, rows_json = _json(history), "[" + ",".join(rows) + "]"
        actions_json = self._actions_json(actions)

        def write(conn) -> None:
            conn.execute("DELETE FROM feed_events")
            conn.execute(_EVENTS_INSERT, (history_json,))
            conn.execute("DELETE FROM feed_log")
            conn.execute("DELETE FROM feed_tasks")
            conn.execute(  # answers nobody waits for any more
                "DELETE FROM control WHERE status != 'pending' AND answered < ?",
                (answered_before,),
            )
            conn.execute(_TASK_UPSERT, (rows_json,))
            conn.execute(_ACTIONS_UPDATE, (actions_json,))
            conn.executemany("INSERT OR REPLACE INTO feed_state VALUES (?,?)", state)

        self._queue(write)

    def _info_row(self, tid: str) -> str:
        """``[id, ord, info]`` of a task read from the engine now, as JSON; info null
        once it is gone. Only for a task new to the feed or whose edges changed: the
        state of every other task travels as its events (see ``_write_changes``)."""
        try:
            info = self.scheduler.task(tid)
        except KeyError:
            self._readings.pop(tid, None)
            self._stale.pop(tid, None)
            return f"[{json.dumps(tid)},{self._order.get(tid, 0)},null]"
        self._readings[tid] = info
        if info.run_at is not None or tid in self._timed:  # its reading is the newest
            self._timed.add(tid)
            self._unsynced_runs[tid] = info.run_at
        order = self._order.setdefault(tid, len(self._order))
        return f"[{json.dumps(tid)},{order},{encode_info(info)}]"

    def _actions_json(self, actions: dict[str, str]) -> str:
        """``[[actions, id], ...]`` as JSON."""
        return json.dumps([[text, tid] for tid, text in actions.items()])

    def _action_rows(self) -> dict[str, str]:
        """id -> allowed actions of the tasks whose allowed actions may have changed,
        the longest waiting first, for at most ``ACTIONS_BUDGET`` seconds a round:
        under load a watcher's buttons may follow a round or two behind the states
        (and the owner refuses what is no longer allowed, saying why)."""
        deadline = time.perf_counter() + ACTIONS_BUDGET
        rows: dict[str, str] = {}
        while self._stale and (not rows or time.perf_counter() < deadline):
            tid = self._stale.popitem(last=False)[0]
            try:
                actions = self.scheduler.allowed_actions(tid)
            except KeyError:
                continue
            rows[tid] = encode_actions(actions)
        return rows

    def _write_changes(self, **extra) -> None:
        """One round. A watcher reads each task's state from the journal (the
        ``events`` rows and the ``tasks`` row they name, written by the engine
        anyway), so the feed sends only what the journal lacks: the rows of the
        tasks it must read (new ones, changed edges, removed), ``run_at`` of timed
        tasks, outcomes an event's kind does not tell, the allowed actions read this
        round and the upcoming entries. For a round of untimed tasks that end the
        usual way that is a few C-level passes over its events: no Python call per
        event or task."""
        with self._lock:
            events, self._events = self._events, []
        if events and events[0].seq <= self._seq:  # delivered before the snapshot's seq
            events = [e for e in events if e.seq > self._seq]
        now = time.time()
        if not (events or extra or self._stale) and now - self._last_write < HEARTBEAT:
            return
        runs: list[tuple] = []  # (seq, id, run_at) of each event of a timed task
        outcomes: list[tuple] = []  # (seq, outcome) where its kind does not tell it
        rows: dict[str, str] = {}
        if events:
            self._seq = events[-1].seq
            # every task an event names may allow other actions now (C-level update)
            self._stale.update(dict.fromkeys(map(_TASK_ID, events)))
            self._stale.pop("", None)
            timed, unsynced_runs, skip = self._timed, self._unsynced_runs, _NO_RUN_AT_KINDS
            for e in [e for e in events if e.run_at is not None or e.task_id in timed]:
                if e.kind not in skip:  # a pause event leaves run_at (engine/fold.py)
                    timed.add(e.task_id)
                    runs.append((e.seq, e.task_id, e.run_at))
                    unsynced_runs[e.task_id] = e.run_at
            # (subscripts, not .get(): no call per event)
            usual = OUTCOME_OF_KIND
            outcomes = [
                (e.seq, e.outcome)
                for e in events
                if (e.outcome is None) is (e.kind in usual)
                or (e.outcome is not None and e.outcome is not usual[e.kind])
            ]
            # The tasks to read: new to the feed, removed, or with changed edges (and
            # the other ends of those edges, before and after).
            order = self._order
            wanted = [e.task_id for e in events if e.kind in _READ_KINDS or e.task_id not in order]
            if wanted:
                self._read_rows(wanted, rows)
        actions = self._action_rows()
        upcoming = entry_rows(self.scheduler.upcoming(UPCOMING_LIMIT)) if events else None
        state_extra = dict(extra)
        if upcoming is not None and upcoming != self._upcoming_json:
            self._upcoming_json = upcoming
            state_extra["upcoming"] = json.loads(upcoming)
        entry = None
        seq = self._seq
        if rows or actions or runs or outcomes:
            self._log_id += 1
            body = (
                f"[{seq},[{','.join(rows.values())}],{self._actions_json(actions)},"
                f"{_json(runs)},{_json(outcomes)}]"
            )
            entry = (self._log_id, body)
            for tid, text in rows.items():  # with the seq it was read at
                self._unsynced[tid] = f"{text[:-1]},{seq}]"
            self._unsynced_actions.update(actions)
        sync = None
        if self._log_id > self._synced and now - self._last_sync >= SYNC_INTERVAL:
            # the entries up to the fold FOLDS_KEPT folds ago go: a watcher further
            # behind reads feed_tasks again (a busy one must not fall into reloads)
            before = self._folds[0] if len(self._folds) == self._folds.maxlen else 0
            self._folds.append(self._log_id)
            sync = (
                "[" + ",".join(self._unsynced.values()) + "]",
                _json(list(self._unsynced_runs.items())),
                self._actions_json(self._unsynced_actions),
                before,
            )
            self._synced = self._log_id
            self._unsynced, self._unsynced_actions, self._unsynced_runs = {}, {}, {}
            self._last_sync = now
        state = self._state_rows(**state_extra)

        def write(conn) -> None:
            if entry is not None:
                conn.execute("INSERT INTO feed_log (id, body) VALUES (?, ?)", entry)
            if sync is not None:
                rows_json, runs_json, actions_json, before = sync
                conn.execute(_TASK_UPSERT, (rows_json,))
                conn.execute(_RUNS_FOLD, (runs_json,))
                conn.execute(_ACTIONS_UPDATE, (actions_json,))
                conn.execute("DELETE FROM feed_log WHERE id <= ?", (before,))
            conn.executemany("INSERT OR REPLACE INTO feed_state VALUES (?,?)", state)

        self._queue(write)

    def _read_rows(self, wanted: list[str], rows: dict[str, str]) -> None:
        """The rows of ``wanted`` tasks read from the engine now, with the other ends
        of their edges before and after (an edge change changes both ends)."""
        readings = self._readings
        todo: list[str] = []

        def want(tid: str) -> None:
            if tid and tid not in rows:
                rows[tid] = ""
                todo.append(tid)

        for tid in wanted:
            if tid and tid not in rows:
                want(tid)
                base = readings.get(tid)
                for other in () if base is None else base.deps + base.dependents:
                    want(other)
        for tid in todo:  # in order (a new task's ord is its place here); grows as it goes
            rows[tid] = self._info_row(tid)
            base = readings.get(tid)
            for other in () if base is None else base.deps + base.dependents:
                want(other)

    def _queue(self, write) -> None:
        self._last_write = time.time()
        self.writes += 1
        self.store.put_feed(write)

    # -- control ---------------------------------------------------------------------
    def _serve_control(self) -> None:
        limit = MAX_REQUEST_CHARS
        try:
            rows = self._reader.execute(
                "SELECT id, typeof(action), substr(action, 1, ?), length(action),"
                " typeof(task_id), substr(task_id, 1, ?), length(task_id),"
                " CASE WHEN typeof(requested) IN ('integer', 'real') THEN requested END"
                " FROM control WHERE status = 'pending' ORDER BY id LIMIT ?",
                (limit + 1, limit + 1, CONTROL_ROUND),
            ).fetchall()
        except sqlite3.Error as exc:
            log.warning("cannot read watcher requests: %s", exc)
            return
        pending = {row[0] for row in rows}
        self._applied &= pending  # answered rows are no longer pending
        answers, oversized = [], []
        for rid, action_type, action, action_len, tid_type, tid, tid_len, requested in rows:
            if rid in self._applied:
                continue
            self._applied.add(rid)
            if (action_len or 0) > limit or (tid_len or 0) > limit:
                oversized.append((rid,))
                text = f"not applied: a request is at most {limit} characters"
                answers.append(("refused", text, time.time(), rid))
                continue
            try:  # one bad row must not keep the others unanswered
                status, text = self._answer(action_type, action, tid_type, tid, requested)
            except Exception as exc:
                log.exception("a watcher request could not be applied")
                status, text = "refused", f"not applied: {type(exc).__name__}"
            answers.append((status, text, time.time(), rid))
        answered_before = time.time() - CONTROL_KEEP
        prune = False
        if time.time() - self._last_prune >= CONTROL_PRUNE_EVERY:
            self._last_prune = time.time()
            prune = self._answered_to_prune(answered_before)
        if not answers and not prune:
            return

        def write(conn) -> None:
            conn.executemany(
                "UPDATE control SET status = ?, answer = ?, answered = ? WHERE id = ?", answers
            )
            conn.executemany(  # what it said is not kept: only that it was refused
                "UPDATE control SET action = substr(action, 1, 64),"
                " task_id = substr(task_id, 1, 64) WHERE id = ?",
                oversized,
            )
            if prune:
                conn.execute(
                    "DELETE FROM control WHERE status != 'pending' AND answered < ?",
                    (answered_before,),
                )
                conn.execute(
                    "DELETE FROM control WHERE status != 'pending' AND id < (SELECT id FROM"
                    " control WHERE status != 'pending' ORDER BY id DESC LIMIT 1 OFFSET ?)",
                    (CONTROL_KEEP_ROWS - 1,),
                )

        self._queue(write)

    def _answered_to_prune(self, answered_before: float) -> bool:
        """Whether answered requests are old enough, or many enough, to be pruned."""
        try:
            count, old = self._reader.execute(
                "SELECT count(*), EXISTS (SELECT 1 FROM control WHERE status != 'pending'"
                " AND answered < ?) FROM control WHERE status != 'pending'",
                (answered_before,),
            ).fetchone()
        except sqlite3.Error:
            return False
        return bool(count > CONTROL_KEEP_ROWS or old)

    def _answer(
        self, action_type: str, action: object, tid_type: str, tid: object, requested: object
    ) -> tuple[str, str]:
        """The answer to one pending request, as read (types as SQLite names them)."""
        if action_type != "text" or tid_type != "text":
            return "refused", "not applied: a request names its action and task in text"
        assert isinstance(action, str) and isinstance(tid, str)
        if not isinstance(requested, (int, float)) or not math.isfinite(requested):
            return "refused", "not applied: the request has no time it was made"
        age = time.time() - requested
        if age > CONTROL_TTL:
            return "expired", f"not applied: asked {age:.0f}s ago, before this owner was there"
        return self.apply(action, tid)

    def apply(self, action: str, tid: str) -> tuple[str, str]:
        """Apply one watcher request through the Scheduler's public calls: ("done" |
        "refused", what happened), in words a person can read in the watcher."""
        s = self.scheduler
        verb = CONTROL_ACTIONS.get(action)
        if verb is None:
            return "refused", f"unknown request {action!r}"
        try:
            if action == "pause_all":
                s.pause()
                return "done", "paused the whole run"
            if action == "resume_all":
                s.resume()
                return "done", "resumed the whole run"
            if action in ("pause", "resume"):
                getattr(s, action)(tid)
                return "done", f"{action}d {tid}"
            if action in ("clear", "clear_downstream"):
                cleared = s.clear(tid, downstream=action == "clear_downstream")
                return "done", f"cleared {', '.join(cleared)}"
            if getattr(s, action)(tid):
                return "done", f"{verb}: {tid}"
            state = s.task(tid).state.name.lower()
            return "refused", f"cannot {verb} {tid}: it is {state}"
        except KeyError:
            return "refused", f"cannot {verb} {tid}: the run has no such task"
        except (ValueError, RuntimeError) as exc:
            return "refused", f"cannot {verb} {tid}: {exc}"

    # -- end -------------------------------------------------------------------------
    def close(self) -> None:
        """Stop publishing; watchers are told the owner stopped. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            if self._watched:
                self._write_changes(stopped=time.time())
        except Exception:
            log.exception("the watchers' feed could not say the owner stopped")
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._presence.close()
        self._reader.close()
