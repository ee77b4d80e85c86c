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

from .models import Action, TaskInfo
from .records import ATTEMPT_COLUMNS
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
    """A task row's info (feed.encode_info) as a TaskInfo."""
    state, deps, dependents, priority, attempt, run_at, recurring, paused, error = json.loads(text)
    return TaskInfo(
        tid,
        tid,
        TaskState(state),
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
        self._texts: dict[str, str] = {}  # tid -> its info text as last read
        self._infos: dict[str, TaskInfo] = {}  # and decoded
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
        generation); ``asked`` the control rows whose answers it waits for. Not the
        attempts: those are read when asked for (``attempts``)."""
        conn = self._conn
        conn.execute("BEGIN")  # one consistent read of everything the owner wrote
        try:
            state = {k: json.loads(v) for k, v in conn.execute("SELECT * FROM feed_state")}
            reload = state.get("generation") != self._generation
            if reload:  # the events are the owner's recent past, up to its snapshot
                self._generation = state.get("generation")
                self._texts, self._infos = {}, {}
                events = conn.execute(
                    "SELECT * FROM feed_events WHERE seq <= ? ORDER BY seq", (state.get("seq", 0),)
                ).fetchall()
                rows = conn.execute("SELECT * FROM feed_tasks").fetchall()
            else:
                events = conn.execute(
                    "SELECT * FROM feed_events WHERE seq > ? ORDER BY seq", (since_seq,)
                ).fetchall()
                rows = conn.execute(
                    "SELECT * FROM feed_tasks WHERE seq > ?", (since_seq,)
                ).fetchall()
            tasks = self._decode(rows)
            answers = self._answers(asked) if asked else []
        finally:
            conn.execute("COMMIT")
        return FeedRead(state, reload, events, tasks, answers)

    def _decode(self, rows) -> list[tuple]:
        """(id, ord, TaskInfo or None, actions, changed); a row whose info text is what
        it was (only its actions changed) is not decoded again."""
        decoded = []
        for tid, _seq, order, text, actions in rows:
            changed = text != self._texts.get(tid)
            if text is None:
                info = None
                self._texts.pop(tid, None)
                self._infos.pop(tid, None)
            elif changed:
                info = self._infos[tid] = decode_info(tid, text)
                self._texts[tid] = text
            else:
                info = self._infos[tid]
            decoded.append((tid, order, info, decode_actions(actions), changed))
        return decoded

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
