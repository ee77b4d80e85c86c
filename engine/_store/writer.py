"""The owner's writes: queued by the engine (no I/O under its lock) and committed
by one writer thread in batches (group commit).

Whatever queued while the last commit ran goes into the next transaction, at most
``MAX_BATCH`` engine ops; ``flush()`` waits until everything queued so far is
committed (a flushing caller commits the queue itself when no commit is under
way). The watchers' feed writes ride along in a transaction of their own, first.
A failed commit fails the store: every later write reports it, and the failure
listeners (the engine) hear it once, on the writer thread.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from .._jobs.survivors import start_time
from ..errors import StoreError
from .reads import StoreReads
from .records import ATTEMPT_WRITE, TASK_COLUMNS

log = logging.getLogger("taskloom.store")

LAZY_DELAY = 0.05  # seconds a lazy op may wait for a commit to ride along with
# Seconds the start row of in-process code is held back (``put_attempt(deferred=True)``):
# an attempt that ends by then is written once, its end row alone, not a start row
# and then its end. Its code is noted in the in-flight file meanwhile, so a crash
# still finds it; a flush writes held rows at once.
START_DELAY = 0.05
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

_ATTEMPT_UPSERT = (
    f"INSERT INTO attempts ({', '.join(ATTEMPT_WRITE)}) VALUES ({', '.join('?' * 12)})"
    " ON CONFLICT (run, task_id, number) DO UPDATE SET "
    + ", ".join(f"{c}=excluded.{c}" for c in ATTEMPT_WRITE[3:])
)

Op = tuple[Any, ...]  # (kind, ...): "task", "update", "attempt", "process", "delete", "feed"
FeedWrite = Callable[[sqlite3.Connection], object]


def _busy(exc: BaseException) -> bool:
    """Whether SQLite said that another connection holds the lock it needs."""
    return isinstance(exc, sqlite3.OperationalError) and (
        "locked" in str(exc) or "busy" in str(exc)
    )


def _write_feed(conn: sqlite3.Connection, write: FeedWrite) -> None:
    """A watcher's feed must never fail the owner's commit: its writes are undone
    on their own (a savepoint) and logged."""
    conn.execute("SAVEPOINT feed")
    try:
        write(conn)
    except Exception:
        log.exception("writing the watchers' feed failed")
        conn.execute("ROLLBACK TO feed")
    conn.execute("RELEASE feed")


class StoreWriter(StoreReads):
    """The queue, the writer thread and the commits (``start_writer`` sets them up)."""

    _failure: BaseException | None
    _closed: bool
    _thread: threading.Thread

    def start_writer(self) -> None:
        """The queue's state, and the writer thread started on it."""
        self._busy_told = False
        self._failure = None
        self._queue: deque[Op] = deque()
        # Ops that may wait up to LAZY_DELAY to ride along with the next commit, so
        # that they cost no commit of their own (see put_process).
        self._lazy: list[Op] = []
        self._lazy_due: float | None = None
        # Start rows held back (put_attempt(deferred=True)) by (task id, number), in
        # the order they came, with when each is due; counted with the lazy ops. An
        # end row that finds its start here takes its place (``_absorbed`` counts it
        # as committed with the end row's batch: the engine op index it rides with).
        self._starts: dict[tuple[str, int], tuple[float, Op]] = {}
        self._absorbed: deque[int] = deque()
        # What ``put_attempt(committed=)`` gave, once on disk (for the commit listeners).
        self.committed: deque[Any] = deque()
        # The tasks-row update that said a held start's attempt is running
        # (``update_task(hold=True)``), by task id: held with its start row, written
        # with it when it is due, and dropped (counted with that op, in ``_absorbed``)
        # when its end row, or any later row of the task, is queued first. A short
        # call's task row is then updated once (its outcome), not twice.
        # Each with the count of engine ops queued before it: written at the end of
        # the first batch, from when its start row is due, that took all of those
        # (``_due_updates``: the ids whose start row is gone).
        self._held_updates: dict[str, tuple[int, tuple]] = {}
        self._due_updates: dict[str, None] = {}
        self._taken = 0  # engine ops taken into batches so far
        # Rows sent to each table by the writer's commits (benchmarks/store_bench.py).
        self.rows_written = dict.fromkeys(("tasks", "attempts", "events"), 0)
        # Guards the queue, the counters, the failure and its listeners; never held
        # during a commit, nor together with _read_lock.
        self._queue_lock = threading.RLock()  # _put takes it directly: no Condition frames
        self._cond = threading.Condition(self._queue_lock)
        self._feeds: list[Op] = []  # the watchers' feed writes (put_feed): every commit takes all
        # Ops queued and committed so far: engine ops (committed in order), lazy ops
        # and feed writes. Each kind is committed in its own order, not all in one.
        self._queued = [0, 0, 0]
        self._committed = [0, 0, 0]
        self._closed = False
        self._committing = False  # one commit at a time, by the writer or a flushing caller
        self._failure_listeners: list[Callable[[StoreError], object]] = []
        self._commit_listeners: list[Callable[[], object]] = []
        self._failure_told = False
        self._thread = threading.Thread(target=self._writer, name="taskloom-store", daemon=True)
        self._thread.start()

    def stop_writer(self) -> None:
        """Commit what is queued and end the writer thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()

    # ------------------------------------------------------------------ queueing
    def _put(self, op: Op, lazy: bool = False) -> None:
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
        if self._starts and next(iter(self._starts.values()))[0] <= time.monotonic():
            return True
        return self._lazy_due is not None and time.monotonic() >= self._lazy_due

    def _next_due(self) -> float | None:
        """When the writer must wake for a lazy op or a held start row, if any waits."""
        due = self._lazy_due
        if self._starts:
            first = next(iter(self._starts.values()))[0]
            due = first if due is None else min(due, first)
        return due

    def put_task(self, row: tuple) -> None:
        """The whole row, every column of ``TASK_COLUMNS`` (``StateRow.task_row``)."""
        with self._queue_lock:
            if self._held_updates:
                self._drop_held(row[0])
            self._queued[0] += 1
            self._queue.append(("task", row))
            if len(self._queue) == 1:
                self._cond.notify_all()

    def update_task(self, row: tuple, event: tuple | None, hold: bool = False) -> None:
        """The state columns, then the id (``StateRow.update_row``), and the event
        (seq, task_id, kind, state, at, attempt, error) that caused it.

        ``hold``: the update that says an attempt whose start row is held
        (``put_attempt(deferred=True)``) is running. Its event is queued as usual;
        the row is held with the start row and dropped if the attempt's end row
        comes first (the task's next update says more). Recovery reads a task row
        older than its last attempt row as that attempt's (``_core/recovery.py``)."""
        task_id = row[-1]
        with self._queue_lock:
            queue = self._queue
            if hold and (task_id, row[1]) in self._starts:
                self._queued[1] += 1
                if task_id in self._held_updates:  # replaced: counted with this one
                    self._absorbed.append(self._queued[0])
                self._held_updates[task_id] = (self._queued[0], row)
                if event is None:
                    return
                op: Op = ("event", event)
            else:
                if self._held_updates:
                    self._drop_held(task_id)
                op = ("update", row, event)
            self._queued[0] += 1
            queue.append(op)
            if len(queue) == 1:
                self._cond.notify_all()

    def _drop_held(self, task_id: str) -> None:
        """Under the queue lock, before an op of ``task_id`` is queued: its held
        update, if any, is dropped and counted as committed with that op."""
        if self._held_updates.pop(task_id, None) is not None:
            self._due_updates.pop(task_id, None)
            self._absorbed.append(self._queued[0] + 1)

    def put_attempt(
        self,
        row: tuple,
        on_commit: Callable[[], object] | None = None,
        deferred: bool = False,
        committed: object = None,
    ) -> None:
        """The columns of ``ATTEMPT_WRITE`` after ``run`` (``Attempt.to_row``).
        ``on_commit()`` is called by the writer once it is on disk. ``committed``, if
        not None, is appended to ``self.committed`` then, before the commit listeners
        run: what they are to handle, without a callable made per row (each one
        outlives young garbage collections while it waits, and costs full ones).
        ``deferred``: a start row held back ``START_DELAY``, for the attempt's end
        row to replace."""
        op = ("attempt", row, on_commit, committed)
        key = (row[0], row[1])
        with self._queue_lock:
            if deferred:
                self._queued[1] += 1
                if not self._starts:
                    self._cond.notify_all()  # the writer sets its timer
                self._starts[key] = (time.monotonic() + START_DELAY, op)
                return
            if self._starts and self._starts.pop(key, None) is not None:
                # Written with this row, as this row: counted once that is committed.
                self._absorbed.append(self._queued[0] + 1)
            if self._held_updates:
                self._drop_held(key[0])
            self._queued[0] += 1
            self._queue.append(op)
            if len(self._queue) == 1:
                self._cond.notify_all()

    def put_process(self, task_id: str, number: int, pid: int, pgid: int) -> None:
        """The process attempt ``number`` of ``task_id`` started (see survivors.py).
        Lazy: committed with the next batch, at most ``LAZY_DELAY`` later. Its start
        time is read then, by the writer: read at once, /proc can make the caller
        wait for the new process's exec to finish."""
        self._put(("process", (pid, pgid, self.run, task_id, number)), lazy=True)

    def delete_task(self, task_id: str) -> None:
        with self._queue_lock:
            if self._held_updates:
                self._drop_held(task_id)
            self._put(("delete", task_id))

    def put_outputs(self, task_id: str, number: int, data: str) -> None:
        """What attempt ``number`` of ``task_id`` gave its dependents (a JSON object)."""
        self._put(("outputs", (task_id, number, data)))

    def put_jitter(self, task_id: str, number: int, delay: float) -> None:
        """The random delay (seconds) attempt ``number`` of ``task_id`` waited (jitter);
        queued after the attempt's row (which must not be a deferred one)."""
        self._put(("jitter", (delay, task_id, number)))

    def put_feed(self, write: FeedWrite) -> None:
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
                batch, counts = self._take_batch(everything=True)
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

    def add_failure_listener(self, callback: Callable[[StoreError], object]) -> None:
        """``callback(StoreError)`` is called once, on the writer thread, when writing
        fails (at once, on this thread, if it already has). It must not block on I/O."""
        with self._cond:
            self._failure_listeners.append(callback)
            told = self._failure_told
        if told:
            callback(self.failure_error())

    def add_commit_listener(self, callback: Callable[[], object]) -> None:
        """``callback()`` is called on the committing thread after each committed batch,
        once the batch's ``on_commit`` callbacks ran: what those only collected can be
        handled in one go (the engine finishes a batch's runs under one lock)."""
        with self._cond:
            self._commit_listeners.append(callback)

    def _fail(self, exc: BaseException) -> None:
        """Fail the store from outside a commit: the writer tells the listeners."""
        with self._cond:
            if self._failure is None:
                self._failure = exc
            self._cond.notify_all()

    def _covers(self, target: tuple) -> bool:
        """Under the condition: whether every op counted in ``target`` is committed."""
        return all(done >= wanted for done, wanted in zip(self._committed, target, strict=True))

    def _take_batch(self, everything: bool = False) -> tuple[list[Op], tuple[int, int, int]]:
        """Under the condition: claim the feed writes, the lazy ops, the start rows
        that are due (all of them for a flush, ``everything``) and at most
        ``MAX_BATCH`` engine ops, the oldest, for one commit; and how many of each
        (start rows that end rows of these ops replaced count as lazy ops)."""
        self._committing = True
        queue = self._queue
        if len(queue) <= MAX_BATCH:
            ops = list(queue)
            queue.clear()
        else:
            ops = [queue.popleft() for _ in range(MAX_BATCH)]
        self._taken += len(ops)
        starts = self._take_starts(everything or self._closed)
        absorbed = self._absorbed
        replaced = 0
        while absorbed and absorbed[0] <= self._taken:
            absorbed.popleft()
            replaced += 1
        updates = self._take_updates(everything or self._closed) if self._held_updates else []
        counts = (
            len(ops),
            len(self._lazy) + len(starts) + len(updates) + replaced,
            len(self._feeds),
        )
        # Held updates last: every op queued before them is in this batch or an
        # earlier one, and any later op of their task dropped them.
        batch = [*self._feeds, *self._lazy, *starts, *ops, *updates]
        self._feeds.clear()
        self._lazy.clear()
        self._lazy_due = None
        return batch, counts

    def _take_starts(self, everything: bool) -> list[Op]:
        """Under the condition: the held start rows that are due, or all of them."""
        held = self._starts
        if not held:
            return []
        if everything:
            taken = [op for _, op in held.values()]
            held.clear()
            return taken
        now = time.monotonic()
        due = []
        for key, (when, op) in held.items():
            if when > now:
                break
            due.append((key, op))
        for key, _ in due:
            del held[key]
        return [op for _, op in due]

    def _take_updates(self, everything: bool) -> list[Op]:
        """Under the condition, after ``_take_starts``: the held updates whose start
        row is gone (all of them for a flush) and whose older ops are all taken."""
        held, due = self._held_updates, self._due_updates
        if everything:
            due.update(dict.fromkeys(held))
        else:
            for task_id in held:
                if (task_id, held[task_id][1][1]) not in self._starts:
                    due[task_id] = None
        taken = []
        for task_id in list(due):
            index, row = held[task_id]
            if index <= self._taken:
                del held[task_id], due[task_id]
                taken.append(("update", row, None))
        return taken

    def _commit_batch(self, batch: list[Op], counts: tuple[int, int, int]) -> None:
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
        committed = self.committed
        for op in batch:
            if op[0] == "attempt":
                if op[3] is not None:
                    committed.append(op[3])
                if op[2] is not None:
                    try:
                        op[2]()
                    except Exception:
                        log.exception("store commit callback failed")
        for callback in self._commit_listeners:
            try:
                callback()
            except Exception:
                log.exception("store commit listener failed")

    def _patiently(self, write: Callable[[], Any]) -> Any:
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

    def set_meta(self, key: str, value: str) -> None:
        """Write a meta value now (not queued): it describes the run, not a task."""
        self.flush()
        with self._read_lock:
            self._patiently(
                lambda: self._conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value)
                )
            )

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
                        due = self._next_due()
                        if due is None or self._committing:  # idle
                            self._cond.wait(None)
                        else:
                            self._cond.wait(max(0.0, due - time.monotonic()))
                    if self._failure is not None:
                        break
                    if not (
                        self._queue
                        or self._lazy
                        or self._feeds
                        or self._starts
                        or self._held_updates
                    ):
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

    def _commit(self, batch: list[Op]) -> None:
        tasks: dict[str, tuple] = {}
        updates: dict[str, tuple] = {}
        attempts: dict[tuple, tuple] = {}
        events: list[tuple] = []
        deletes: dict[str, None] = {}  # a task put again later in the batch is not deleted
        processes: list[tuple] = []
        feeds: list[FeedWrite] = []
        outputs: list[tuple] = []
        jitters: list[tuple] = []
        for op in batch:  # coalesce: the latest row per task and per attempt wins
            kind = op[0]
            if kind == "update":
                updates[op[1][-1]] = op[1]
                if op[2] is not None:
                    events.append(op[2])
            elif kind == "event":
                events.append(op[1])
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
                written = self.rows_written
                written["tasks"] += len(tasks) + len(updates)
                written["attempts"] += len(attempts)
                written["events"] += len(events)
            except BaseException:
                # SQLite may have rolled back already (a disk I/O error does): a failed
                # ROLLBACK must not replace the cause.
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        log.warning("rollback after a failed commit failed too", exc_info=True)
                raise

    def _commit_feed(self, feeds: list[FeedWrite]) -> None:
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
