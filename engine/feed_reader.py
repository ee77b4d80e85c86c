"""Reading an owner's run from another process: one consistent read a round of
everything new since the last one. Task states come from the journal (each
task's newest ``events`` rows after the last one read; ``tasks`` rows on attach); the
rest from the owner's feed (feed.py): new tasks and edges, run_at, outcomes,
allowed actions, upcoming entries.

Only reads: a read-only SQLite connection, and WAL readers never block the
owner's writer. ``WatchedRun`` (watched_run.py) turns what is read into its
caches and events.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
from typing import NamedTuple

from . import feed as _feed
from ._store.records import ATTEMPT_COLUMNS
from .feed import OUTCOME_OF_KIND
from .models import Action, TaskInfo
from .states import TaskState

ATTEMPTS_KEPT = 50  # attempts per task read at (re)load, and kept by the watcher


class FeedRead(NamedTuple):
    """What one round read."""

    state: dict  # feed_state, decoded
    reload: bool  # a new generation (a new owner, or watching started anew): all of it
    events: list[tuple]  # feed_events rows after the seq asked for (on a reload: the
    # owner's recent events up to its snapshot), oldest first
    tasks: list[tuple]  # (id, ord, TaskInfo or None once removed, actions, changed)
    answers: list[tuple]  # (id, action, task_id, status, answer) of the requests asked


def decode_info(tid: str, text: str) -> TaskInfo:
    """A task row's info text (feed.encode_info, as JSON) as a TaskInfo."""
    return info_from_list(tid, json.loads(text))


# By value, as a dict: calling TaskState(value) is a Python-level call per row.
STATES: dict[str, TaskState] = {state.value: state for state in TaskState}


def info_from_list(tid: str, info: list) -> TaskInfo:
    state, deps, dependents, priority, attempt, run_at, recurring, paused, error = info
    return TaskInfo(
        tid,
        tid,
        STATES[state],
        tuple(deps),
        tuple(dependents),
        priority,
        attempt,
        run_at,
        recurring,
        paused,
        error,
    )


@functools.lru_cache(maxsize=256)  # a few distinct sets, met over and over
def decode_actions(text: str | None) -> frozenset[Action]:
    return frozenset(Action(v) for v in (text or "").split(",") if v)


class FeedReader:
    """Reads the feed in the store at ``path``; one thread at a time."""

    def __init__(self, path):
        self.path = path
        self._conn = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
        )
        self._generation = None
        self._log_id = 0  # the last feed_log entry read
        self._raw: dict[str, list] = {}  # tid -> its info as last read
        self._infos: dict[str, TaskInfo] = {}  # and as a TaskInfo
        self._orders: dict[str, int] = {}
        self._actions: dict[str, str | None] = {}  # tid -> its allowed actions, as written
        # Rows the journal changed since they were decoded (decoded once a read).
        self._dirty: set[str] = set()
        # The owner's event seq each task's row was read at: the journal's events up
        # to it are in the row already (the row may be ahead of them).
        self._floors: dict[str, int] = {}
        self._rowid = 0  # the last journal events row read
        # What the journal's events rows lack, by the event's seq, until delivered.
        self._runs: dict[int, float | None] = {}
        self._outcomes: dict[int, str | None] = {}
        # For the attempts a window asks for, on its thread: a connection of their own.
        self._lookup: sqlite3.Connection | None = None
        self._lookup_lock = threading.Lock()

    def has_feed(self) -> bool:
        """Whether the store has the feed's tables (an owner older than schema 3 has not)."""
        found = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'feed_state'"
        ).fetchone()
        return found is not None

    def schema_version(self) -> int:
        """The store's schema version (``PRAGMA user_version``; 0 while it is being made)."""
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def written(self) -> float | None:
        """When the owner last wrote its feed (wall clock), or None if it never did
        (or the store has no feed: an older owner)."""
        try:
            row = self._conn.execute(
                "SELECT value FROM feed_state WHERE key = 'written'"
            ).fetchone()
        except sqlite3.Error:
            return None
        return None if row is None else json.loads(row[0])

    def read(self, since_seq: int, asked: tuple) -> FeedRead:
        """Everything new since the last read (all of it after a new generation, or
        once the log entries after the last one read are gone); ``asked`` the
        control rows whose answers it waits for. Not the attempts: those are read
        when asked for (``attempts``).

        The tasks' states come from the journal: the ``events`` rows after the last
        one read (by rowid, the order the owner's writer committed them, up to the
        feed's ``seq``, whose run_at and outcomes the feed has written), each task's
        newest state and pause events among them. The feed gives the rest (new
        tasks and changed edges, run_at, allowed actions). ``since_seq`` is unused
        (the journal's rowid is the cursor), kept for callers."""
        conn = self._conn
        conn.execute("BEGIN")  # one consistent read of everything the owner wrote
        try:
            state = {k: json.loads(v) for k, v in conn.execute("SELECT * FROM feed_state")}
            synced = state.get("synced", 0)
            feed_seq = state.get("seq", 0)
            run = state.get("run", 1)
            reload = state.get("generation") != self._generation
            if not reload:
                entries = conn.execute(
                    "SELECT id, body FROM feed_log WHERE id > ? ORDER BY id", (self._log_id,)
                ).fetchall()
                # a gap: the entries after ours were folded into feed_tasks and dropped
                ids = [entry[0] for entry in entries]
                expected = list(range(self._log_id + 1, self._log_id + 1 + len(ids)))
                reload = ids != expected or (not ids and synced > self._log_id)
            touched: dict[str, bool] = {}  # tid -> its info changed
            if reload:  # the events are the owner's recent past, up to its snapshot
                self._generation = state.get("generation")
                self._raw, self._infos, self._orders, self._actions = {}, {}, {}, {}
                self._floors, self._runs, self._outcomes = {}, {}, {}
                events = conn.execute(
                    "SELECT * FROM feed_events WHERE seq <= ? ORDER BY seq", (feed_seq,)
                ).fetchall()
                for tid, seq, order, text, actions in conn.execute("SELECT * FROM feed_tasks"):
                    self._take_task(touched, tid, order, None if text is None else json.loads(text))
                    self._take_actions(touched, tid, actions)
                    self._floors[tid] = seq
                entries = conn.execute(
                    "SELECT id, body FROM feed_log WHERE id > ? ORDER BY id", (synced,)
                ).fetchall()
                self._log_id = synced
            else:
                events = []
            for log_id, body in entries:
                self._take_entry(touched, json.loads(body))
                self._log_id = log_id
            if reload:
                self._journal_now(touched, run, feed_seq)
            else:
                events = self._journal_since(touched, run, feed_seq, state.get("offset", 0.0))
            for tid in self._dirty:
                self._infos[tid] = info_from_list(tid, self._raw[tid])
            self._dirty.clear()
            answers = self._answers(asked) if asked else []
        finally:
            conn.execute("COMMIT")
        tasks = [
            (
                tid,
                self._orders.get(tid, 0),
                self._infos.get(tid),
                decode_actions(self._actions.get(tid)),
                changed,
            )
            for tid, changed in touched.items()
        ]
        return FeedRead(state, reload, events, tasks, answers)

    def _take_entry(self, touched: dict, entry: list) -> None:
        """One feed_log entry: [seq, rows, actions, runs, outcomes] (feed.py)."""
        seq, rows, actions, runs, outcomes = entry
        raw, dirty = self._raw, self._dirty
        for event_seq, tid, run_at in runs:
            self._runs[event_seq] = run_at
            info = raw.get(tid)
            if info is not None and info[5] != run_at:
                info[5] = run_at
                dirty.add(tid)
                touched[tid] = True
        for tid, order, info in rows:  # read after the entry's events: newer than them
            self._take_task(touched, tid, order, info)
            self._floors[tid] = seq
        for text, tid in actions:
            self._take_actions(touched, tid, text)
        for event_seq, outcome in outcomes:
            self._outcomes[event_seq] = outcome

    def _journal_now(self, touched: dict, run: int, feed_seq: int) -> None:
        """At a (re)load: every task's state as the journal's ``tasks`` rows say, where
        the journal is as new as the task's row, and the cursor after every event."""
        conn = self._conn
        top, last = conn.execute(
            "SELECT max(seq), max(rowid) FROM events WHERE run = ?", (run,)
        ).fetchone()
        # Events up to here are in the tasks rows: none is delivered after them.
        self._rowid = last or 0
        floors = self._floors
        for tid, state, attempt, error, paused in conn.execute(
            "SELECT id, state, attempt, error, paused FROM tasks"
        ):
            if tid in self._raw and (top or 0) >= floors.get(tid, 0):
                self._take_state(touched, tid, state, attempt, error)
                self._take_pause(touched, tid, bool(paused))

    def _journal_since(self, touched: dict, run: int, feed_seq: int, offset: float) -> list:
        """The journal's events after the cursor, up to the feed's ``seq``: each
        task they name takes its ``tasks`` row's state; the newest ``FEED_TAIL``
        are the events to deliver, as ``feed.event_row``s (the watcher makes up
        events for the rest, as for a busy feed)."""
        conn, cursor = self._conn, (self._rowid, run, feed_seq)
        # The newest events first, as many as are delivered (the rest are made up).
        tail = conn.execute(
            "SELECT rowid, seq, kind, task_id, state, at, attempt, error FROM events"
            " WHERE rowid > ? AND run = ? AND seq <= ? ORDER BY rowid DESC LIMIT ?",
            (*cursor, _feed.FEED_TAIL),
        ).fetchall()
        if not tail:
            return []
        # Each task's newest state event and newest pause event among them (SQLite
        # groups them): the fold's rules (engine/fold.py), so the rows say what the
        # delivered events say. A task whose row the feed read after its newest
        # event here has that row's state already (the journal may be behind).
        floors = self._floors
        for tid, state, attempt, error, seq in conn.execute(
            "SELECT task_id, state, attempt, error, max(seq) FROM events"
            " WHERE rowid > ? AND run = ? AND seq <= ? AND kind NOT IN ('paused', 'resumed')"
            " GROUP BY task_id",
            cursor,
        ):
            if seq > floors.get(tid, -1):
                self._take_state(touched, tid, state, attempt, error)
        for tid, kind, seq in conn.execute(
            "SELECT task_id, kind, max(seq) FROM events WHERE rowid > ? AND run = ?"
            " AND seq <= ? AND kind IN ('paused', 'resumed') GROUP BY task_id",
            cursor,
        ):
            if seq > floors.get(tid, -1):
                self._take_pause(touched, tid, kind == "paused")
        self._rowid, last = tail[0][0], tail[0][1]
        tail.reverse()
        runs, outcomes, outcome_of = self._runs, self._outcomes, OUTCOME_OF_KIND.get
        events = [
            (
                seq,
                kind,
                tid,
                state,
                at - offset,
                attempt,
                runs.get(seq),
                error,
                outcomes.get(seq, outcome_of(kind)),
            )
            for _rowid, seq, kind, tid, state, at, attempt, error in tail
        ]
        if runs:
            self._runs = {k: v for k, v in runs.items() if k > last}
        if outcomes:
            self._outcomes = {k: v for k, v in outcomes.items() if k > last}
        return events

    def _take_state(self, touched, tid, state, attempt, error) -> None:
        """A task's state fields, as its newest state event (or its tasks row) has them."""
        info = self._raw.get(tid)
        if info is None:  # its row has not come yet (the journal is ahead of the feed)
            return
        if info[0] != state or info[4] != attempt or info[8] != error:
            info[0], info[4], info[8] = state, attempt, error
            self._dirty.add(tid)
            touched[tid] = True
        else:
            touched.setdefault(tid, False)

    def _take_pause(self, touched, tid, paused: bool) -> None:
        info = self._raw.get(tid)
        if info is None:
            return
        if info[7] != paused:
            info[7] = paused
            self._dirty.add(tid)
            touched[tid] = True
        else:
            touched.setdefault(tid, False)

    def _take_task(self, touched: dict, tid: str, order: int, info: list | None) -> None:
        """A task row ([state, deps, ...] or None once removed); decoded only if it
        says something new (a row may be written again for its actions only)."""
        if info is None:
            for table in (self._raw, self._infos, self._actions):
                table.pop(tid, None)
            self._dirty.discard(tid)
            touched[tid] = True
            return
        self._orders[tid] = order
        if info != self._raw.get(tid):
            self._raw[tid] = info
            self._infos[tid] = info_from_list(tid, info)
            self._dirty.discard(tid)
            touched[tid] = True
        else:
            touched.setdefault(tid, False)

    def _take_actions(self, touched: dict, tid: str, actions: str | None) -> None:
        if tid in self._infos:
            self._actions[tid] = actions
            touched.setdefault(tid, False)

    def attempts(self, run: int, tid: str) -> list[dict]:
        """The newest ``ATTEMPTS_KEPT`` attempts of ``tid`` in ``run``, oldest first,
        by column name: one primary-key range, read when a window asks (any thread)."""
        columns = ", ".join(ATTEMPT_COLUMNS)
        with self._lookup_lock:
            if self._lookup is None:
                self._lookup = sqlite3.connect(
                    f"file:{self.path}?mode=ro", uri=True, check_same_thread=False
                )
            found = self._lookup.execute(
                f"SELECT {columns} FROM attempts WHERE run = ? AND task_id = ?"
                " ORDER BY number DESC LIMIT ?",
                (run, tid, ATTEMPTS_KEPT),
            ).fetchall()
        return [dict(zip(ATTEMPT_COLUMNS, r, strict=True)) for r in reversed(found)]

    def newest_attempt(self, run: int, tid: str) -> tuple | None:
        """(number, outcome, error, pid, proc_started) of ``tid``'s newest attempt in
        ``run``, or None: what is known of it once its owner is gone."""
        with self._lookup_lock:
            if self._lookup is None:
                self._lookup = sqlite3.connect(
                    f"file:{self.path}?mode=ro", uri=True, check_same_thread=False
                )
            return self._lookup.execute(
                "SELECT number, outcome, error, pid, proc_started FROM attempts"
                " WHERE run = ? AND task_id = ? ORDER BY number DESC LIMIT 1",
                (run, tid),
            ).fetchone()

    def _answers(self, asked: tuple) -> list[tuple]:
        marks = ",".join("?" * len(asked))
        return self._conn.execute(
            f"SELECT id, action, task_id, status, answer FROM control"
            f" WHERE id IN ({marks}) AND status != 'pending'",
            asked,
        ).fetchall()

    def close(self) -> None:
        self._conn.close()
        with self._lookup_lock:
            if self._lookup is not None:
                self._lookup.close()
                self._lookup = None
