"""A SQLite store: every task definition, state change and attempt, on disk.

Writes are queued by the engine (no I/O under its lock) and committed by one
writer thread in batches (group commit): whatever queued while the last commit
ran goes into the next transaction. ``flush()`` waits until everything queued so
far is committed; the engine calls it before it reports a run SUCCEEDED.

The file is created readable by its owner only, in WAL mode. ``synchronous``
defaults to NORMAL: a commit survives the process being killed; after a power
loss the last commits may be lost (pass ``durability="full"`` to fsync each
batch). A file written by a newer schema, or one that is not a Taskloom store,
is refused with ``StoreError`` and left untouched.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
import uuid
from collections import deque
from pathlib import Path

from ._jobs.survivors import start_time
from ._store.inflight import InflightFileError, InflightSlots, inflight_path, left_behind
from ._store.lock import HEARTBEAT, StoreLock
from ._store.lock import WorkflowLock as WorkflowLock  # for runs.open_run
from ._store.lock import workflow_owner as workflow_owner  # for steering a run
from ._store.records import ATTEMPT_COLUMNS, ATTEMPT_WRITE, TASK_COLUMNS
from ._store.safe_files import UnsafeFile, check_existing, make_folders, open_private
from ._store.safe_files import private_folder as private_folder  # for log folders

log = logging.getLogger("taskloom.store")

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

# TASK_COLUMNS and ATTEMPT_COLUMNS live with the rows' conversions, in _store/records.py.
_ATTEMPT_UPSERT = (
    f"INSERT INTO attempts ({', '.join(ATTEMPT_WRITE)}) VALUES ({', '.join('?' * 12)})"
    " ON CONFLICT (run, task_id, number) DO UPDATE SET "
    + ", ".join(f"{c}=excluded.{c}" for c in ATTEMPT_WRITE[3:])
)


class StoreError(RuntimeError):
    """The store file cannot be used (newer schema, corrupt, not a store)."""


class StoreBusy(StoreError):
    """Another live process owns the store (``owner`` says who, when known)."""

    def __init__(self, message: str, owner=None):
        super().__init__(message)
        self.owner = owner


REQUIRED_TABLES = ("tasks", "attempts", "events", "meta")
LAZY_DELAY = 0.05  # seconds a lazy op may wait for a commit to ride along with
# Engine ops one transaction commits at most. Under saturation (thousands of tiny
# tasks a second) group commit let batches grow to tens of thousands of ops and
# commits to 0.4 s, and the watchers' feed, committed between them, waited that
# long. A few thousand ops make a commit of a few tens of ms; the rest follows at once.
MAX_BATCH = 2000
# Another process holding SQLite's write lock (a watcher frozen mid-insert, a sqlite3
# shell left in a transaction) must not fail the run: each try waits BUSY_TIMEOUT
# (SQLite's busy handler), then the owner tries again, up to BUSY_PATIENCE in all.
BUSY_TIMEOUT = 5.0
BUSY_PATIENCE = 600.0
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")  # SQLite's own files beside a store


def _make_folder(path: Path) -> None:
    """The store's folder, or a ``StoreError`` saying why it cannot be had."""
    try:
        make_folders(path.parent)  # the missing ones 0700; an existing one is the person's
        if not path.parent.is_dir():
            raise NotADirectoryError(path.parent)
    except (FileExistsError, NotADirectoryError):
        blocker = next(p for p in [path.parent, *path.parent.parents] if p.exists())
        raise StoreError(f"{path}: cannot create the store: {blocker} is not a folder") from None
    except PermissionError as exc:
        where = exc.filename or path.parent
        raise StoreError(f"{path}: cannot create the store: {where} is not writable") from None
    except OSError as exc:  # /proc/nope, a read-only file system, no space, ...
        where = exc.filename or path.parent
        reason = exc.strerror or str(exc)
        raise StoreError(f"{path}: cannot create the store: {where}: {reason}") from None


def _store_error(path: Path, exc: sqlite3.DatabaseError) -> StoreError:
    """One line for what SQLite said about a store."""
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return StoreError(f"{path}: the store is read-only; Taskloom needs to write to it")
    if "unable to open" in text:
        return StoreError(f"{path}: cannot open the store ({text})")
    if "disk I/O" in text or "full" in text:
        return StoreError(f"{path}: writing failed: {text}")
    return StoreError(f"{path}: the store is damaged ({text}); move it aside to start afresh")


def _create_private(path: Path) -> None:
    os.close(open_private(path, os.O_RDONLY | os.O_CREAT))


def _check_owned(path: Path) -> None:
    """Refuse a store (or SQLite's files beside it) another user owns or can write:
    it could be made to run that user's commands as this one."""
    try:
        check_existing(path, "store")
        for suffix in SIDE_SUFFIXES:
            check_existing(path.with_name(path.name + suffix), "store's file")
    except UnsafeFile as exc:
        raise StoreError(str(exc)) from None


def _busy(exc: BaseException) -> bool:
    """Whether SQLite said that another connection holds the lock it needs."""
    return isinstance(exc, sqlite3.OperationalError) and (
        "locked" in str(exc) or "busy" in str(exc)
    )


def _check_existing(path: Path) -> None:
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


def _write_feed(conn, write) -> None:
    """A watcher's feed must never fail the owner's commit: its writes are undone
    on their own (a savepoint) and logged."""
    conn.execute("SAVEPOINT feed")
    try:
        write(conn)
    except Exception:
        log.exception("writing the watchers' feed failed")
        conn.execute("ROLLBACK TO feed")
    conn.execute("RELEASE feed")


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def damaged(path: Path, what: str) -> StoreError:
    return StoreError(f"{path}: the store is damaged ({what}); move it aside to start afresh")


class SQLiteStore:
    """A run store. Opening one makes this process its owner (see ``_store/lock.py``):
    a second owner, in this process or another, gets ``StoreBusy`` naming the first.
    ``SQLiteStore.reader(path)`` opens one for reading only, beside a live owner."""

    _owner_lock: StoreLock | None  # None for a reader
    close_problem: str | None = None  # what a clean close could not tidy (a read-only folder)
    _thread: threading.Thread | None  # the writer; None for a reader

    def __init__(self, path, *, durability: str = "normal"):
        if durability not in ("normal", "full"):
            raise ValueError(f"durability is 'normal' or 'full', got {durability!r}")
        self.path = Path(path).expanduser()
        _make_folder(self.path)
        try:
            self._owner_lock = StoreLock.acquire(self.path)  # before anything is read or written
        except PermissionError as exc:
            raise StoreError(
                f"{self.path}: cannot create the store: {self.path.parent} is not writable"
            ) from exc
        except OSError as exc:  # its lock file cannot be made there (/proc, a full disk)
            reason = exc.strerror or str(exc)
            raise StoreError(f"{self.path}: cannot use the store: {reason}") from exc
        try:
            self._open(durability)
        except sqlite3.DatabaseError as exc:
            self._owner_lock.release()
            raise _store_error(self.path, exc) from exc
        except BaseException:
            self._owner_lock.release()
            raise
        self._beats.start()  # once the store is open: its heartbeat (see _beat_loop)

    def _open(self, durability: str) -> None:
        _check_owned(self.path)
        _check_existing(self.path)
        try:
            _create_private(self.path)
        except UnsafeFile as exc:
            raise StoreError(str(exc)) from None
        self._conn = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT
        )
        self._identity = _identity(self.path)  # what the heartbeat checks the path still names
        self._held: list = []  # more locks kept until close (hold)
        self._busy_told = False
        self._failure: BaseException | None = None
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA synchronous={durability.upper()}")
        self._migrate()
        self.run = self._stored_run()  # a workflow run: a fresh start counts up
        self._store_id = self._own_id()
        try:
            self._replay_inflight()
            self._inflight = InflightSlots(inflight_path(self.path), self._store_id)
        except InflightFileError as exc:
            self._conn.close()
            raise StoreError(f"{self.path}: in-flight file: {exc.strerror}") from None
        self._read_lock = threading.Lock()  # the writer's connection is shared for reads
        self._queue: deque = deque()
        # Ops that may wait up to LAZY_DELAY to ride along with the next commit, so
        # that they cost no commit of their own (see put_process).
        self._lazy: list = []
        self._lazy_due: float | None = None
        # Guards the queue, the counters, the failure and its listeners; never held
        # during a commit, nor together with _read_lock.
        self._queue_lock = threading.RLock()  # _put takes it directly: no Condition frames
        self._cond = threading.Condition(self._queue_lock)
        self._feeds: list = []  # the watchers' feed writes (put_feed): every commit takes all
        # Ops queued and committed so far: engine ops (committed in order), lazy ops
        # and feed writes. Each kind is committed in its own order, not all in one.
        self._queued = [0, 0, 0]
        self._committed = [0, 0, 0]
        self._closed = False
        self._committing = False  # one commit at a time, by the writer or a flushing caller
        self._failure_listeners: list = []
        self._commit_listeners: list = []
        self._failure_told = False
        self._thread = threading.Thread(target=self._writer, name="taskloom-store", daemon=True)
        self._thread.start()
        self._stop_beats = threading.Event()
        self._beats = threading.Thread(target=self._beat_loop, name="taskloom-beat", daemon=True)
        self._take_over()

    def hold(self, lock) -> None:
        """Keep ``lock`` (an ``OwnerLocks``: a workflow's lock) until the store closes;
        the heartbeat re-checks it with the store's own."""
        self._held.append(lock)

    def _beat_loop(self) -> None:
        """The owner's heartbeat: its lock files say it is alive (watchers read it),
        and a store deleted or replaced under it, or a lock another process took,
        stops the run (as a failed write does), with one line saying so."""
        while not self._stop_beats.wait(HEARTBEAT):
            try:
                problem = self.check_owner()
            except Exception:
                log.exception("the owner's heartbeat failed")
                continue
            if problem is not None:
                log.error("%s", problem)
                self._fail(StoreError(problem))
                return

    def check_owner(self) -> str | None:
        """One beat: None while this process still owns the store at its path, else
        why it does not (the heartbeat stops the run then)."""
        gone = None
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            gone = "deleted"
        except OSError:  # cannot tell now (a folder made unsearchable): not a reason to stop
            st = None
        if gone is None and st is not None and (st.st_dev, st.st_ino) != self._identity:
            gone = "replaced"
        if gone is not None and self._identity is not None:
            return f"{self.path}: the store was {gone} under its owner; nothing more is scheduled"
        for lock in (self._owner_lock, *self._held):
            problem = lock.beat() if lock is not None else None
            if problem is not None:
                return f"{self.path}: the store's lock {problem}; stopping this run"
        return None

    def _fail(self, exc: BaseException) -> None:
        """Fail the store from outside a commit: the writer tells the listeners."""
        with self._cond:
            if self._failure is None:
                self._failure = exc
            self._cond.notify_all()

    def _own_id(self) -> str:
        """This store's id (made once, kept in meta): it tags the in-flight rows, so
        that a file left by another store at this path is not replayed here."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        if row:
            return str(row[0])
        store_id = uuid.uuid4().hex
        self._conn.execute("INSERT INTO meta (key, value) VALUES ('store_id', ?)", (store_id,))
        return store_id

    def _replay_inflight(self) -> None:
        """Attempts an earlier owner was running in-process when it died, whose start
        row never reached the disk (``_store/inflight.py``): recovery counts them lost."""
        rows = left_behind(inflight_path(self.path), self._store_id)
        if not rows:
            return
        # Only attempts of tasks the store has: a row of a task it no longer keeps
        # would stay "running" for ever (nothing would ever end it).
        known = {r[0] for r in self._conn.execute("SELECT id FROM tasks")}
        rows = [row for row in rows if len(row) == len(ATTEMPT_WRITE) and row[1] in known]
        columns = ", ".join(ATTEMPT_WRITE)
        marks = ",".join("?" * len(ATTEMPT_WRITE))
        self._begin()
        try:
            self._conn.executemany(  # a committed row of the attempt (even its end) wins
                f"INSERT OR IGNORE INTO attempts ({columns}) VALUES ({marks})", rows
            )
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def note_running(self, row: tuple) -> int | None:
        """In-process code is about to run the attempt whose start row (as queued by
        ``put_attempt``) is ``row``: a slot that outlives a crash says so until
        ``running_ended(slot)``. None when the row is too long to note (flush instead)."""
        return self._inflight.note((self.run, *row))

    def running_ended(self, slot: int) -> None:
        self._inflight.ended(slot)

    def _take_over(self) -> None:
        """As the new owner: claim the supervised folder, read what supervisors recorded
        (commands that outlived their owner are adopted by recovery, not ended), end
        whatever else an earlier owner left running, and mark the store with this
        process's token so that a later owner can do the same."""
        from ._jobs import reaper, supervision, survivors

        own = reaper.ensure_started()
        self.owner_token = own
        self.supervised_folder: Path | None = supervision.supervised_folder(self.path)
        running = self.running_attempts()
        try:
            # First: from now on no supervisor starts what an earlier owner asked for.
            supervision.prepare_folder(self.supervised_folder, own)
        except OSError as exc:  # a read-only folder: commands end with their owner
            log.warning("%s: commands cannot be handed on (%s)", self.supervised_folder, exc)
            self.supervised_folder = None
            self.supervised = {}
        else:
            self.supervised = supervision.scan(self.supervised_folder, {k for k, _ in running})
            try:  # now, so that its interpreter has started by the first command
                supervision.client()
            except OSError as exc:  # the first command tries again, and says why
                log.warning("cannot start the command supervisor: %s", exc)
        earlier = self.meta("owner_token")
        claimed = {
            key for key, attempt in self.supervised.items()
            if attempt.alive or attempt.end is not None
        }  # fmt: skip
        left = [process for key, process in running if key not in claimed]
        tokens = [] if earlier == own else [earlier]
        for key, attempt in self.supervised.items():  # supervisors killed with their owner
            if key not in claimed and key in dict(running) and attempt.pid is not None:
                left.append((attempt.pid, attempt.pgid, attempt.proc_started))
                tokens.append(attempt.token)
        # The mark is per process: if this process owned the store before, its mark is
        # also on every command its other stores run now (two windows). The recorded
        # processes (pid, group, start time) still find what that earlier owner left.
        survivors.terminate_survivors(left, tokens)
        self.set_meta("owner_token", own)

    @classmethod
    def reader(cls, path) -> SQLiteStore:
        """The store at ``path`` opened read-only, without taking ownership: for
        ``taskloom history`` while a run may be going on. Its write methods must not
        be called."""
        self = cls.__new__(cls)
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise StoreError(f"{self.path}: no such store")
        _check_existing(self.path)
        self._owner_lock = None
        self._thread = None
        self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        self._read_lock = threading.Lock()
        try:
            self.run = self._stored_run()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise StoreError(f"{self.path}: not a readable Taskloom store ({exc})") from exc
        return self

    def _stored_run(self) -> int:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'run'").fetchone()
        return int(row[0]) if row else 1

    def _migrate(self) -> None:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        while version < SCHEMA_VERSION:
            self._begin()
            for statement in MIGRATIONS[version]:
                self._conn.execute(statement)
            version += 1
            self._conn.execute(f"PRAGMA user_version={version}")
            self._conn.execute("COMMIT")

    # ------------------------------------------------------------------ queueing
    def _put(self, op, lazy: bool = False) -> None:
        with self._queue_lock:
            if op[0] == "feed":
                self._queued[2] += 1
                self._feeds.append(op)
                if len(self._feeds) == 1:
                    self._cond.notify_all()
                return
            if lazy:
                self._queued[1] += 1
                self._lazy.append(op)
                if self._lazy_due is None:
                    self._lazy_due = time.monotonic() + LAZY_DELAY
                    self._cond.notify_all()  # the writer sets its timer
                return
            self._queued[0] += 1
            self._queue.append(op)
            if len(self._queue) == 1:
                self._cond.notify_all()

    def _lazy_ready(self) -> bool:
        return self._lazy_due is not None and time.monotonic() >= self._lazy_due

    def put_task(self, row: tuple) -> None:
        """The whole row, every column of ``TASK_COLUMNS`` (``StateRow.task_row``)."""
        self._put(("task", row))

    def update_task(self, row: tuple, event: tuple | None) -> None:
        """The state columns, then the id (``StateRow.update_row``), and the event
        (seq, task_id, kind, state, at, attempt, error) that caused it."""
        self._put(("update", row, event))

    def put_attempt(self, row: tuple, on_commit=None) -> None:
        """The columns of ``ATTEMPT_WRITE`` after ``run`` (``Attempt.to_row``).
        ``on_commit()`` is called by the writer once it is on disk."""
        self._put(("attempt", row, on_commit))

    def put_process(self, task_id: str, number: int, pid: int, pgid: int) -> None:
        """The process attempt ``number`` of ``task_id`` started (see survivors.py).
        Lazy: committed with the next batch, at most ``LAZY_DELAY`` later. Its start
        time is read then, by the writer: read at once, /proc can make the caller
        wait for the new process's exec to finish."""
        self._put(("process", (pid, pgid, self.run, task_id, number)), lazy=True)

    def delete_task(self, task_id: str) -> None:
        self._put(("delete", task_id))

    def put_outputs(self, task_id: str, number: int, data: str) -> None:
        """What attempt ``number`` of ``task_id`` gave its dependents (a JSON object)."""
        self._put(("outputs", (task_id, number, data)))

    def put_jitter(self, task_id: str, number: int, delay: float) -> None:
        """The random delay (seconds) attempt ``number`` of ``task_id`` waited (jitter);
        queued after the attempt's row."""
        self._put(("jitter", (delay, task_id, number)))

    def jitter_delays(self, run: int | None = None) -> dict[str, dict[int, float]]:
        """The jitter delays of a run's attempts (default: this run): task -> {attempt: s}."""
        found: dict[str, dict[int, float]] = {}
        with self._read_lock:
            rows = self._conn.execute(
                "SELECT task_id, number, jitter FROM attempts WHERE run = ? AND jitter IS NOT NULL",
                (self.run if run is None else run,),
            ).fetchall()
        for task_id, number, delay in rows:
            found.setdefault(task_id, {})[number] = delay
        return found

    def outputs(self, run: int | None = None) -> dict[str, dict[int, str]]:
        """The outputs kept for a run (default: this one): task id -> {attempt: JSON}."""
        found: dict[str, dict[int, str]] = {}
        with self._read_lock:
            rows = self._conn.execute(
                "SELECT task_id, number, data FROM outputs WHERE run = ? ORDER BY number",
                (self.run if run is None else run,),
            ).fetchall()
        for task_id, number, data in rows:
            found.setdefault(task_id, {})[number] = data
        return found

    def put_feed(self, write) -> None:
        """``write(connection)`` runs in the writer's next batch, in a transaction of
        its own just before the engine's rows: the watchers' feed (feed.py) needs no
        second writer (SQLite has one write lock), goes ahead of engine ops queued
        before it, and waits for one commit of at most ``MAX_BATCH`` ops."""
        self._put(("feed", write))

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything queued so far is committed.

        Leader/follower group commit: if no commit is under way, the caller commits
        the queue itself (no hand-off to the writer thread); otherwise it waits for
        the commit under way, then commits what is left, if its ops are still queued.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            target = tuple(self._queued)
        while True:
            with self._cond:
                while not self._covers(target) and self._committing:
                    if self._failure is not None:
                        break
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    self._cond.wait(remaining)
                if self._failure is not None:
                    raise self.failure_error() from self._failure
                if self._covers(target):
                    return True
                batch, counts = self._take_batch()
            try:
                self._commit_batch(batch, counts)
            except Exception:  # logged by _commit_batch; callers see StoreError
                raise self.failure_error() from self._failure

    @property
    def failed(self) -> bool:
        return self._failure is not None

    def failure_error(self) -> StoreError:
        """The error every write reports once one commit failed: the store and the first cause."""
        cause = self._failure
        if isinstance(cause, StoreError):  # said already, with the store's path
            return StoreError(str(cause))
        return StoreError(f"{self.path}: writing failed: {type(cause).__name__}: {cause}")

    def add_failure_listener(self, callback) -> None:
        """``callback(StoreError)`` is called once, on the writer thread, when writing
        fails (at once, on this thread, if it already has). It must not block on I/O."""
        with self._cond:
            self._failure_listeners.append(callback)
            told = self._failure_told
        if told:
            callback(self.failure_error())

    def add_commit_listener(self, callback) -> None:
        """``callback()`` is called on the committing thread after each committed batch,
        once the batch's ``on_commit`` callbacks ran: what those only collected can be
        handled in one go (the engine finishes a batch's runs under one lock)."""
        with self._cond:
            self._commit_listeners.append(callback)

    def _covers(self, target: tuple) -> bool:
        """Under the condition: whether every op counted in ``target`` is committed."""
        return all(done >= wanted for done, wanted in zip(self._committed, target, strict=True))

    def _take_batch(self) -> tuple[list, tuple]:
        """Under the condition: claim the feed writes, the lazy ops and at most
        ``MAX_BATCH`` engine ops, the oldest, for one commit; and how many of each."""
        self._committing = True
        queue = self._queue
        if len(queue) <= MAX_BATCH:
            ops = list(queue)
            queue.clear()
        else:
            ops = [queue.popleft() for _ in range(MAX_BATCH)]
        counts = (len(ops), len(self._lazy), len(self._feeds))
        batch = [*self._feeds, *self._lazy, *ops]
        self._feeds.clear()
        self._lazy.clear()
        self._lazy_due = None
        return batch, counts

    def _commit_batch(self, batch: list, counts: tuple) -> None:
        try:
            self._patiently(lambda: self._commit(batch))
        except BaseException as exc:  # a full disk must not pass silently
            log.exception("store write failed")
            with self._cond:
                self._failure = exc
                self._committing = False
                self._cond.notify_all()
            raise
        with self._cond:
            for kind, count in enumerate(counts):
                self._committed[kind] += count
            self._committing = False
            self._cond.notify_all()
        for op in batch:
            if op[0] == "attempt" and op[2] is not None:
                try:
                    op[2]()
                except Exception:
                    log.exception("store commit callback failed")
        for callback in self._commit_listeners:
            try:
                callback()
            except Exception:
                log.exception("store commit listener failed")

    def _patiently(self, write):
        """``write()``, tried again while another process holds SQLite's write lock
        (each try waits ``BUSY_TIMEOUT``), up to ``BUSY_PATIENCE``; logged once."""
        deadline = time.monotonic() + BUSY_PATIENCE
        pause = 0.05
        while True:
            try:
                return write()
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() >= deadline or self._failure is not None:
                    raise
                if not self._busy_told:
                    self._busy_told = True
                    log.warning(
                        "%s: another process holds the store's write lock (%s); waiting for it",
                        self.path,
                        exc,
                    )
            time.sleep(pause)  # backoff between tries of a busy store; no work waits on it
            pause = min(pause * 2, 1.0)

    def _begin(self) -> None:
        """BEGIN IMMEDIATE, waiting out another process's write lock (``_patiently``)."""
        self._patiently(lambda: self._conn.execute("BEGIN IMMEDIATE"))

    # ------------------------------------------------------------------ writer
    def _writer(self) -> None:
        while True:
            try:
                with self._cond:
                    while not (
                        self._failure is not None
                        or (
                            not self._committing
                            and (self._queue or self._feeds or self._closed or self._lazy_ready())
                        )
                    ):
                        due = self._lazy_due
                        if due is None or self._committing:  # idle
                            self._cond.wait(None)
                        else:
                            self._cond.wait(max(0.0, due - time.monotonic()))
                    if self._failure is not None:
                        break
                    if not (self._queue or self._lazy or self._feeds):
                        return  # closed and drained
                    batch, counts = self._take_batch()
                self._commit_batch(batch, counts)
            except BaseException as exc:  # the store is failed, not the thread lost
                with self._cond:
                    if self._failure is None:
                        log.error("store writer failed", exc_info=exc)
                        self._failure = exc
                    self._committing = False
                    self._cond.notify_all()
                break
        self._tell_failure()

    def _tell_failure(self) -> None:
        """On the writer thread (never under an engine lock): tell listeners once."""
        with self._cond:
            listeners = list(self._failure_listeners)
            self._failure_told = True
        error = self.failure_error()
        for callback in listeners:
            try:
                callback(error)
            except Exception:
                log.exception("store failure listener failed")

    def _commit(self, batch: list) -> None:
        tasks: dict[str, tuple] = {}
        updates: dict[str, tuple] = {}
        attempts: dict[tuple, tuple] = {}
        events: list[tuple] = []
        deletes: dict[str, None] = {}  # a task put again later in the batch is not deleted
        processes: list[tuple] = []
        feeds: list = []
        outputs: list[tuple] = []
        jitters: list[tuple] = []
        for op in batch:  # coalesce: the latest row per task and per attempt wins
            kind = op[0]
            if kind == "update":
                updates[op[1][-1]] = op[1]
                if op[2] is not None:
                    events.append(op[2])
            elif kind == "attempt":
                attempts[op[1][0], op[1][1]] = op[1]
            elif kind == "task":
                tasks[op[1][0]] = op[1]
                updates.pop(op[1][0], None)
                deletes.pop(op[1][0], None)  # INSERT OR REPLACE: removed, then put back
            elif kind == "process":
                pid, pgid, *where = op[1]
                processes.append((pid, pgid, start_time(pid), *where))
            elif kind == "feed":
                feeds.append(op[1])
            elif kind == "outputs":
                outputs.append(op[1])
            elif kind == "jitter":
                jitters.append(op[1])
            else:
                deletes[op[1]] = None
                tasks.pop(op[1], None)
                updates.pop(op[1], None)
        conn = self._conn
        run = self.run
        if feeds:  # first, on their own: watchers need not wait for a big batch
            self._commit_feed(feeds)
        with self._read_lock:
            conn.execute("BEGIN")
            try:
                if tasks:
                    conn.executemany(
                        f"INSERT OR REPLACE INTO tasks ({TASK_COLUMNS})"
                        " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                        tasks.values(),
                    )
                if updates:
                    conn.executemany(
                        "UPDATE tasks SET state=?, attempt=?, budget_base=?, next_wall=?,"
                        " successes=?, consumed=?, error=?, paused=? WHERE id=?",
                        updates.values(),
                    )
                if attempts:
                    conn.executemany(_ATTEMPT_UPSERT, [(run, *row) for row in attempts.values()])
                if processes:
                    conn.executemany(
                        "UPDATE attempts SET pid=?, pgid=?, proc_started=?"
                        " WHERE run=? AND task_id=? AND number=?",
                        processes,
                    )
                if jitters:  # after the attempts' rows: their start rows come first
                    conn.executemany(
                        "UPDATE attempts SET jitter=? WHERE run=? AND task_id=? AND number=?",
                        [(delay, run, task_id, number) for delay, task_id, number in jitters],
                    )
                if outputs:
                    conn.executemany(
                        "INSERT OR REPLACE INTO outputs VALUES (?,?,?,?)",
                        [(run, *row) for row in outputs],
                    )
                if events:
                    conn.executemany(
                        "INSERT INTO events VALUES (?,?,?,?,?,?,?,?)",
                        [(run, *event) for event in events],
                    )
                for task_id in deletes:
                    conn.execute("DELETE FROM tasks WHERE id=?", (task_id,))
                conn.execute("COMMIT")
            except BaseException:
                # SQLite may have rolled back already (a disk I/O error does): a failed
                # ROLLBACK must not replace the cause.
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        log.warning("rollback after a failed commit failed too", exc_info=True)
                raise

    def _commit_feed(self, feeds: list) -> None:
        """The watchers' feed in a transaction of its own; a failure is logged (the
        engine's commit that follows reports a disk that fails for good)."""
        conn = self._conn
        with self._read_lock:
            try:
                conn.execute("BEGIN")
                for write in feeds:
                    _write_feed(conn, write)
                conn.execute("COMMIT")
            except sqlite3.Error:
                log.exception("committing the watchers' feed failed")
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        log.warning("rollback of the watchers' feed failed too", exc_info=True)

    def close(self) -> None:
        if self._thread is None:  # a reader
            self._conn.close()
            return
        self._stop_beats.set()
        if threading.current_thread() is not self._beats:
            self._beats.join()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        self._conn.close()
        # A clean close: nothing runs any more (a failed store leaves the file for
        # the next owner, which replays what is still noted).
        problem = self._inflight.close(remove=self._failure is None)
        if problem is not None:
            self.close_problem = problem
        from ._jobs import supervision

        supervisor = supervision.existing_client()
        if supervisor is not None and self.supervised_folder is not None:
            # Its records of this store are done with, unless commands were handed over.
            supervisor.release(self.supervised_folder)
        if self._owner_lock is not None:
            self._owner_lock.release()
        for lock in self._held:
            lock.release()

    # ------------------------------------------------------------------ reading
    def _query(self, sql: str, args=()) -> list[tuple]:
        with self._read_lock:
            try:
                return self._conn.execute(sql, args).fetchall()
            except sqlite3.DatabaseError as exc:
                raise _store_error(self.path, exc) from exc

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
    ):
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
        if self._thread is None and any(row["outcome"] == "running" for row in rows):
            self._supervised_ends(rows)
        return rows

    def _supervised_ends(self, rows: list[dict]) -> None:
        """A reader's view of attempts still running in the store: the end a command's
        supervisor recorded after its owner died, before a next owner took it in."""
        from ._jobs import supervision

        found = supervision.scan(supervision.supervised_folder(self.path))
        for row in rows:
            attempt = found.get((row["run"], row["task_id"], row["number"]))
            if row["outcome"] == "running" and attempt is not None:
                row.update(supervision.end_as_row(attempt))

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

    def new_run(self) -> None:
        """Start the workflow afresh: forget task states, keep every past attempt."""
        self.flush()
        with self._cond:
            self.run += 1
            run = self.run
        with self._read_lock:
            self._begin()
            self._conn.execute("DELETE FROM tasks")
            self._conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('run', ?)", (str(run),)
            )
            self._conn.execute("COMMIT")

    def prune_runs(self, keep_runs: int, keep_logs: int) -> list[str]:
        """Forget all but the last ``keep_runs`` runs (the current one included): their
        attempts and events are deleted. The attempts of runs before the last
        ``keep_logs`` lose their ``log_path``. Returns those log paths, for the
        caller to delete the files (the store does not touch files it did not write).
        Freed pages are reused, so a store pruned at every run stops growing."""
        for name, value in (("keep_runs", keep_runs), ("keep_logs", keep_logs)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        self.flush()
        first_run = self.run - keep_runs + 1
        first_logged = self.run - min(keep_logs, keep_runs) + 1
        with self._read_lock:
            self._begin()
            try:
                paths = [
                    row[0]
                    for row in self._conn.execute(
                        "SELECT log_path FROM attempts WHERE run < ? AND log_path IS NOT NULL",
                        (first_logged,),
                    )
                ]
                self._conn.execute(
                    "UPDATE attempts SET log_path = NULL WHERE run < ? AND log_path IS NOT NULL",
                    (first_logged,),
                )
                self._conn.execute("DELETE FROM attempts WHERE run < ?", (first_run,))
                self._conn.execute("DELETE FROM events WHERE run < ?", (first_run,))
                self._conn.execute("DELETE FROM outputs WHERE run < ?", (first_run,))
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return paths

    def prune_attempts(self, keep: int) -> list[str]:
        """Within the current run, keep each task's last ``keep`` attempts and the
        events of those attempts; older ones are deleted (a task every 10 ms would
        otherwise add about 300 bytes a run for as long as the run lasts). Safe while
        the engine runs: it is serialized with the writer's commits. Returns the log
        paths of the deleted attempts, for the caller to delete the files."""
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"keep must be an integer >= 1, got {keep!r}")
        run = self.run
        with self._read_lock:
            self._begin()
            try:
                limits = self._conn.execute(
                    "SELECT task_id, MAX(number) - ? FROM attempts WHERE run = ?"
                    " GROUP BY task_id HAVING MAX(number) - ? >= MIN(number)",
                    (keep, run, keep),
                ).fetchall()
                paths: list[str] = []
                for task_id, last_dropped in limits:
                    where = (run, task_id, last_dropped)
                    paths += [
                        row[0]
                        for row in self._conn.execute(
                            "SELECT log_path FROM attempts WHERE run = ? AND task_id = ?"
                            " AND number <= ? AND log_path IS NOT NULL",
                            where,
                        )
                    ]
                    self._conn.execute(
                        "DELETE FROM attempts WHERE run = ? AND task_id = ? AND number <= ?", where
                    )
                    self._conn.execute(
                        "DELETE FROM events WHERE run = ? AND task_id = ?"
                        " AND attempt > 0 AND attempt <= ?",
                        (run, task_id, last_dropped),
                    )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return paths

    # ------------------------------------------------------------------ owner's records
    def meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Write a meta value now (not queued): it describes the run, not a task."""
        self.flush()
        with self._read_lock:
            self._patiently(
                lambda: self._conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value)
                )
            )

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

    def forget_tasks(self, task_ids, ended: float, error: str) -> None:
        """Drop tasks from the current run (their attempts stay): the workflow file
        defines them anew. An attempt of theirs still marked running is ``lost``."""
        self.flush()
        ids = [(task_id,) for task_id in task_ids]
        with self._read_lock:
            self._begin()
            try:
                self._conn.executemany(
                    "UPDATE attempts SET outcome = 'lost', ended = ?, error = ?"
                    " WHERE run = ? AND task_id = ? AND outcome = 'running'",
                    [(ended, error, self.run, task_id) for (task_id,) in ids],
                )
                self._conn.executemany("DELETE FROM tasks WHERE id = ?", ids)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

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
        return rows[0][0]
