"""Reading an owner's feed (feed.py) from another process: one consistent read a
round of everything new since the last one.

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

from ._store.records import ATTEMPT_COLUMNS
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
        # For the attempts a window asks for, on its thread: a connection of their own.
        self._lookup: sqlite3.Connection | None = None
        self._lookup_lock = threading.Lock()

    def has_feed(self) -> bool:
        """Whether the store has the feed's tables (an owner older than schema 3 has not)."""
        found = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'feed_state'"
        ).fetchone()
        return found is not None

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
        """Everything new after the owner's ``since_seq`` (all of it after a new
        generation, or once the log entries after the last one read are gone);
        ``asked`` the control rows whose answers it waits for. Not the attempts:
        those are read when asked for (``attempts``)."""
        conn = self._conn
        conn.execute("BEGIN")  # one consistent read of everything the owner wrote
        try:
            state = {k: json.loads(v) for k, v in conn.execute("SELECT * FROM feed_state")}
            synced = state.get("synced", 0)
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
                events = conn.execute(
                    "SELECT * FROM feed_events WHERE seq <= ? ORDER BY seq", (state.get("seq", 0),)
                ).fetchall()
                for tid, _seq, order, text, actions in conn.execute("SELECT * FROM feed_tasks"):
                    self._take_task(touched, tid, order, None if text is None else json.loads(text))
                    self._take_actions(touched, tid, actions)
                entries = conn.execute(
                    "SELECT id, body FROM feed_log WHERE id > ? ORDER BY id", (synced,)
                ).fetchall()
                self._log_id = synced
            else:
                events = conn.execute(
                    "SELECT * FROM feed_events WHERE seq > ? ORDER BY seq", (since_seq,)
                ).fetchall()
            for log_id, body in entries:
                rows, actions = json.loads(body)
                for tid, order, info in rows:
                    self._take_task(touched, tid, order, info)
                for text, tid in actions:
                    self._take_actions(touched, tid, text)
                self._log_id = log_id
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

    def _take_task(self, touched: dict, tid: str, order: int, info: list | None) -> None:
        """A task row ([state, deps, ...] or None once removed); decoded only if it
        says something new (a row may be written again for its actions only)."""
        if info is None:
            for table in (self._raw, self._infos, self._actions):
                table.pop(tid, None)
            touched[tid] = True
            return
        self._orders[tid] = order
        if info != self._raw.get(tid):
            self._raw[tid] = info
            self._infos[tid] = info_from_list(tid, info)
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
