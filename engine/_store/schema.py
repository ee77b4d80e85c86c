"""The store's tables: their migrations, the checks a file passes before it is
opened for writing, and the run number it keeps.

``MIGRATIONS[n]`` takes a store from schema version n to n + 1, each in one
transaction; ``PRAGMA user_version`` says where a file is. The columns the rows
fill are listed next to their conversions, in ``records.py``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from ..errors import StoreError

SCHEMA_VERSION = 5

# MIGRATIONS[n] takes a store from schema version n to n + 1.
MIGRATIONS: dict[int, list[str]] = {
    0: [
        """CREATE TABLE tasks (
            id TEXT PRIMARY KEY,
            ord INTEGER NOT NULL,
            spec TEXT NOT NULL,
            state TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            budget_base INTEGER NOT NULL,
            next_wall REAL,
            successes INTEGER NOT NULL,
            consumed TEXT,
            error TEXT,
            paused INTEGER NOT NULL
        )""",
        """CREATE TABLE attempts (
            run INTEGER NOT NULL,
            task_id TEXT NOT NULL,
            number INTEGER NOT NULL,
            started REAL NOT NULL,
            ended REAL,
            outcome TEXT NOT NULL,
            error TEXT,
            traceback TEXT,
            output TEXT,
            log_path TEXT,
            exit_code INTEGER,
            worker TEXT,
            PRIMARY KEY (run, task_id, number)
        )""",
        "CREATE INDEX attempts_started ON attempts (started)",
        """CREATE TABLE events (
            run INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            task_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            state TEXT NOT NULL,
            at REAL NOT NULL,
            attempt INTEGER NOT NULL,
            error TEXT
        )""",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
    ],
    # The process an attempt started, recorded before it does any work, so that a
    # later owner can end it if it outlived its owner (see survivors.py).
    1: [
        "ALTER TABLE attempts ADD COLUMN pid INTEGER",
        "ALTER TABLE attempts ADD COLUMN pgid INTEGER",
        "ALTER TABLE attempts ADD COLUMN proc_started REAL",
    ],
    # What a watcher needs to follow the run live, and the requests it sends the
    # owner (see feed.py): written only while somebody watches.
    2: [
        """CREATE TABLE feed_events (
            seq INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            task_id TEXT NOT NULL,
            state TEXT,
            at REAL NOT NULL,
            attempt INTEGER NOT NULL,
            run_at REAL,
            error TEXT,
            outcome TEXT
        )""",
        """CREATE TABLE feed_tasks (
            id TEXT PRIMARY KEY,
            seq INTEGER NOT NULL,
            ord INTEGER NOT NULL,
            info TEXT,
            actions TEXT
        )""",
        "CREATE TABLE feed_state (key TEXT PRIMARY KEY, value TEXT)",
        """CREATE TABLE control (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            action TEXT NOT NULL,
            task_id TEXT NOT NULL,
            requested REAL NOT NULL,
            origin TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending',
            answer TEXT,
            answered REAL
        )""",
    ],
    # The feed's changed task rows, one entry a round (feed.py): one row to write
    # where there was one per task; feed_tasks takes them in every second or so.
    3: ["CREATE TABLE feed_log (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"],
    # What a succeeded attempt gave its dependents (TASKLOOM_OUTPUT, a call's return
    # value): a JSON object, engine/outputs.py; and the random delay an attempt's
    # occurrence waited before it started (jitter).
    4: [
        "ALTER TABLE attempts ADD COLUMN jitter REAL",
        """CREATE TABLE outputs (
            run INTEGER NOT NULL,
            task_id TEXT NOT NULL,
            number INTEGER NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run, task_id, number)
        )""",
    ],
}

REQUIRED_TABLES = ("tasks", "attempts", "events", "meta")


def check_existing(path: Path) -> None:
    """Refuse a file we must not touch, before opening it for writing."""
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            ok = conn.execute("PRAGMA quick_check").fetchone()[0]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not a readable Taskloom store ({exc}); left untouched") from exc
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path}: written by a newer Taskloom (schema {version}, this one reads up to "
            f"{SCHEMA_VERSION}); left untouched"
        )
    if ok != "ok":
        raise StoreError(f"{path}: the database is corrupt ({ok}); left untouched")
    if version == 0 and tables:
        raise StoreError(f"{path}: a SQLite file that is not a Taskloom store; left untouched")
    missing = [name for name in REQUIRED_TABLES if version and name not in tables]
    if missing:
        raise StoreError(
            f"{path}: the store is damaged (no table {', '.join(map(repr, missing))}); "
            "move it aside to start afresh"
        )


def migrate(conn: sqlite3.Connection, begin: Callable[[], None]) -> None:
    """Bring the open store to ``SCHEMA_VERSION``; ``begin()`` opens each step's
    transaction (waiting out another process's write lock)."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    while version < SCHEMA_VERSION:
        begin()
        for statement in MIGRATIONS[version]:
            conn.execute(statement)
        version += 1
        conn.execute(f"PRAGMA user_version={version}")
        conn.execute("COMMIT")


def stored_run(conn: sqlite3.Connection) -> int:
    """The run number the store is at (a fresh store is at run 1)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'run'").fetchone()
    return int(row[0]) if row else 1
