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

PAUSE_KINDS = frozenset({"paused", "resumed"})
_STATE_FIELDS = (0, 4, 5, 7, 8)  # of a row: state, attempt, run_at, paused, error
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
        # Rows whose events changed them since they were decoded (decoded once a read).
        self._dirty: set[str] = set()
        # State fields of events for a task not read yet (its row comes after them).
        self._early: dict[str, dict[int, object]] = {}
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
                self._early = {}
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
                rows, actions, *rest = json.loads(body)
                if rest:  # the round's events first: its rows were read after them
                    self._fold_events(touched, rest[0])
                for tid, order, info in rows:
                    self._take_task(touched, tid, order, info, rebase=True)
                for text, tid in actions:
                    self._take_actions(touched, tid, text)
                self._log_id = log_id
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

    def _fold_events(self, touched: dict, events: list) -> None:
        """A round's events (``feed.event_row`` lists, oldest first) folded into the
        task rows as ``engine/fold.py`` does: a state event sets the state fields, a
        pause event the pause; the row is decoded once, after the read."""
        raw, early, dirty = self._raw, self._early, self._dirty
        for _seq, kind, tid, state, _at, attempt, run_at, error, _outcome in events:
            if not tid:
                continue
            info = raw.get(tid)
            if info is None:  # a task whose row comes with the round (new to the feed)
                fields = early.setdefault(tid, {})
                if kind in PAUSE_KINDS:
                    fields[7] = kind == "paused"
                elif state is not None and kind != "removed":
                    fields.update({0: state, 4: attempt, 5: run_at, 8: error})
                continue
            if kind in PAUSE_KINDS:  # pause events carry the state too: only the pause counts
                info[7] = kind == "paused"
            elif state is not None and kind != "removed":
                info[0], info[4], info[5], info[8] = state, attempt, run_at, error
            else:
                continue
            dirty.add(tid)
            touched[tid] = True

    def _take_task(
        self, touched: dict, tid: str, order: int, info: list | None, rebase: bool = False
    ) -> None:
        """A task row ([state, deps, ...] or None once removed); decoded only if it
        says something new (a row may be written again for its actions only). With
        ``rebase`` (a row read by the owner after the events before it), a task known
        here keeps the state fields its events gave (engine/fold.py's ``rebase``)."""
        if info is None:
            for table in (self._raw, self._infos, self._actions, self._early):
                table.pop(tid, None)
            self._dirty.discard(tid)
            touched[tid] = True
            return
        self._orders[tid] = order
        if rebase:
            old = self._raw.get(tid)
            if old is not None:
                for n in _STATE_FIELDS:
                    info[n] = old[n]
            for n, value in self._early.pop(tid, {}).items():
                info[n] = value
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
