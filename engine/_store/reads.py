"""Reading a store: what ``history``, the inspector, the forecast and recovery ask.

``StoreReads`` holds the queries; ``SQLiteStore`` (the owner) has them, and so
does ``StoreReader``, a store opened read-only beside a live owner, which has
nothing else: a write on it is a type error, not a surprise at run time.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from ..errors import StoreError
from .opening import damaged, store_error
from .records import ATTEMPT_COLUMNS, TASK_COLUMNS
from .schema import check_existing, stored_run

RUN_LABELS_KEY = "run_labels"  # store meta: {run: label} of the runs not the workflow's own


class StoreReads:
    """The queries, over ``_conn`` (shared with the owner's writer, under
    ``_read_lock``). ``run`` is the store's current run."""

    path: Path
    run: int
    _conn: sqlite3.Connection
    _read_lock: threading.Lock

    def _query(self, sql: str, args: tuple | list = ()) -> list[tuple]:
        with self._read_lock:
            try:
                return self._conn.execute(sql, args).fetchall()
            except sqlite3.DatabaseError as exc:
                raise store_error(self.path, exc) from exc

    def _running_rows(self, rows: list[dict]) -> None:
        """Attempts ``attempts()`` found still running: the owner's own are as stored."""

    def load_tasks(self) -> list[dict]:
        """Every stored task, in creation order, with its last attempt."""
        rows = self._query(f"SELECT {TASK_COLUMNS} FROM tasks ORDER BY ord")
        last = {
            r[0]: r
            for r in self._query(
                "SELECT task_id, number, outcome FROM attempts a WHERE run = ? AND number ="
                " (SELECT MAX(number) FROM attempts b WHERE b.run = a.run"
                " AND b.task_id = a.task_id)",
                (self.run,),
            )
        }
        names = TASK_COLUMNS.split(", ")
        result = []
        for row in rows:
            record = dict(zip(names, row, strict=True))
            try:
                record["spec"] = json.loads(record["spec"])
                record["consumed"] = json.loads(record["consumed"]) if record["consumed"] else None
            except (TypeError, ValueError) as exc:
                raise damaged(self.path, f"task {record['id']!r}: {exc}") from exc
            attempt = last.get(record["id"])
            record["last_attempt"] = None if attempt is None else (attempt[1], attempt[2])
            result.append(record)
        return result

    def attempts(
        self,
        task_id: str | None = None,
        since: float | None = None,
        limit: int = 200,
        until: float | None = None,
        run: int | None = None,
        outcomes: tuple[str, ...] = (),
    ) -> list[dict[str, Any]]:
        """Stored attempts of every run (or of ``run``), newest first, as dicts (times
        are wall-clock epoch seconds); ``since``/``until`` bound their start time,
        ``outcomes`` (e.g. ``("failed", "lost")``) keeps only those."""
        sql = f"SELECT {', '.join(ATTEMPT_COLUMNS)} FROM attempts WHERE 1=1"
        args: list = []
        if run is not None:
            sql += " AND run = ?"
            args.append(run)
        if outcomes:
            sql += f" AND outcome IN ({', '.join('?' * len(outcomes))})"
            args.extend(outcomes)
        if task_id is not None:
            sql += " AND task_id = ?"
            args.append(task_id)
        if since is not None:
            sql += " AND started >= ?"
            args.append(since)
        if until is not None:
            sql += " AND started <= ?"
            args.append(until)
        sql += " ORDER BY started DESC, number DESC LIMIT ?"
        args.append(limit)
        columns = ATTEMPT_COLUMNS
        rows = [dict(zip(columns, row, strict=True)) for row in self._query(sql, args)]
        if any(row["outcome"] == "running" for row in rows):
            self._running_rows(rows)
        return rows

    def recent_attempts(self, keep: int) -> dict[str, list[dict]]:
        """The last ``keep`` attempts of every task, oldest first, keyed by task id."""
        columns = ATTEMPT_COLUMNS
        rows = self._query(
            f"SELECT {', '.join(columns)} FROM (SELECT *, ROW_NUMBER() OVER"
            " (PARTITION BY task_id ORDER BY number DESC) AS rn FROM attempts WHERE run = ?)"
            " WHERE rn <= ? ORDER BY task_id, number",
            (self.run, keep),
        )
        result: dict[str, list[dict]] = {}
        for row in rows:
            result.setdefault(row[1], []).append(dict(zip(columns, row, strict=True)))
        return result

    def succeeded_durations(self, keep: int) -> dict[str, list[float]]:
        """Seconds each of the last ``keep`` successful attempts of every task took, over
        every run, oldest first, keyed by task id (the forecast's durations model)."""
        rows = self._query(
            "SELECT task_id, ended - started FROM (SELECT task_id, started, ended,"
            " ROW_NUMBER() OVER (PARTITION BY task_id ORDER BY started DESC) AS rn"
            " FROM attempts WHERE outcome = 'succeeded' AND ended IS NOT NULL)"
            " WHERE rn <= ? ORDER BY task_id, started",
            (keep,),
        )
        result: dict[str, list[float]] = {}
        for task_id, seconds in rows:
            result.setdefault(task_id, []).append(seconds)
        return result

    def failure_rates(self, keep: int) -> dict[str, float]:
        """Of the last ``keep`` finished attempts of every task (succeeded or failed,
        every run), the share that failed, keyed by task id (the forecast samples
        failures with it; cancelled, interrupted and lost attempts say nothing)."""
        rows = self._query(
            "SELECT task_id, AVG(outcome = 'failed') FROM (SELECT task_id, outcome,"
            " ROW_NUMBER() OVER (PARTITION BY task_id ORDER BY started DESC) AS rn"
            " FROM attempts WHERE outcome IN ('succeeded', 'failed')) WHERE rn <= ?"
            " GROUP BY task_id",
            (keep,),
        )
        return {task_id: float(rate) for task_id, rate in rows}

    def jitter_delays(self, run: int | None = None) -> dict[str, dict[int, float]]:
        """The jitter delays of a run's attempts (default: this run): task -> {attempt: s}."""
        found: dict[str, dict[int, float]] = {}
        rows = self._query(
            "SELECT task_id, number, jitter FROM attempts WHERE run = ? AND jitter IS NOT NULL",
            (self.run if run is None else run,),
        )
        for task_id, number, delay in rows:
            found.setdefault(task_id, {})[number] = delay
        return found

    def outputs(self, run: int | None = None) -> dict[str, dict[int, str]]:
        """The outputs kept for a run (default: this one): task id -> {attempt: JSON}."""
        found: dict[str, dict[int, str]] = {}
        rows = self._query(
            "SELECT task_id, number, data FROM outputs WHERE run = ? ORDER BY number",
            (self.run if run is None else run,),
        )
        for task_id, number, data in rows:
            found.setdefault(task_id, {})[number] = data
        return found

    def meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def run_labels(self) -> dict[int, str]:
        """The runs that are not the workflow's own (a backfill), by number, with what
        they are ("backfill 2026-11-01 to 2026-11-07"); store meta ``run_labels``, so
        a store without it (an older one) has none and every run is the workflow's."""
        try:
            stored = json.loads(self.meta(RUN_LABELS_KEY) or "{}")
            return {int(run): str(label) for run, label in stored.items()}
        except (TypeError, ValueError, AttributeError):
            return {}  # a damaged entry labels nothing: the runs read as the workflow's

    def running_processes(self) -> list[tuple]:
        """(pid, pgid, proc_started) of every attempt still marked running."""
        return [process for _, process in self.running_attempts() if process[0] is not None]

    def running_attempts(self) -> list[tuple[tuple[int, str, int], tuple]]:
        """((run, task id, number), (pid, pgid, proc_started)) of every attempt still
        marked running."""
        rows = self._query(
            "SELECT run, task_id, number, pid, pgid, proc_started FROM attempts"
            " WHERE outcome = 'running'"
        )
        return [((r[0], r[1], r[2]), (r[3], r[4], r[5])) for r in rows]

    def last_attempt_numbers(self) -> dict[str, int]:
        """The highest attempt number of each task in the current run."""
        rows = self._query(
            "SELECT task_id, MAX(number) FROM attempts WHERE run = ? GROUP BY task_id",
            (self.run,),
        )
        return dict(rows)

    def events(self, task_id: str | None = None, limit: int = 1000) -> list[tuple]:
        """(seq, task_id, kind, state, at, attempt, error) of the current run, oldest first."""
        sql = "SELECT seq, task_id, kind, state, at, attempt, error FROM events WHERE run = ?"
        args: list = [self.run]
        if task_id is not None:
            sql += " AND task_id = ?"
            args.append(task_id)
        sql += " ORDER BY rowid DESC LIMIT ?"
        args.append(limit)
        return self._query(sql, args)[::-1]

    def max_seq(self) -> int:
        rows = self._query("SELECT COALESCE(MAX(seq), 0) FROM events WHERE run = ?", (self.run,))
        return int(rows[0][0])


class StoreReader(StoreReads):
    """The store at ``path`` opened read-only, without taking ownership: for
    ``taskloom history`` or a watcher while a run may be going on. It has the
    queries and ``close()``; nothing here writes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise StoreError(f"{self.path}: no such store")
        check_existing(self.path)
        self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        self._read_lock = threading.Lock()
        try:
            self.run = stored_run(self._conn)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise StoreError(f"{self.path}: not a readable Taskloom store ({exc})") from exc

    def _running_rows(self, rows: list[dict]) -> None:
        """A reader's view of attempts still running in the store: the end a command's
        supervisor recorded after its owner died, before a next owner took it in."""
        from .._jobs import supervision

        found = supervision.scan(supervision.supervised_folder(self.path))
        for row in rows:
            attempt = found.get((row["run"], row["task_id"], row["number"]))
            if row["outcome"] == "running" and attempt is not None:
                row.update(supervision.end_as_row(attempt))

    def close(self) -> None:
        self._conn.close()
