"""``SQLiteStore``, the owner's store, put together: opening (the lock first, then
the checks, the schema, the in-flight file and the take-over) and closing. What
it does is in the parts it is made of: ``reads.py`` (queries), ``writer.py``
(queued writes and group commit), ``retention.py`` (what it forgets) and
``ownership.py`` (heartbeat and take-over)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from ..errors import StoreError
from .inflight import InflightFileError, InflightSlots, inflight_path, replay
from .lock import StoreLock
from .opening import check_owned, create_private, identity, make_folder, store_error
from .ownership import Ownership
from .reads import StoreReader
from .retention import Retention
from .schema import check_existing, migrate, stored_run
from .writer import BUSY_TIMEOUT


class SQLiteStore(Ownership, Retention):
    """A run store. Opening one makes this process its owner (see ``_store/lock.py``):
    a second owner, in this process or another, gets ``StoreBusy`` naming the first.
    ``SQLiteStore.reader(path)`` opens one for reading only, beside a live owner."""

    close_problem: str | None = None  # what a clean close could not tidy (a read-only folder)

    def __init__(self, path: str | Path, *, durability: str = "normal") -> None:
        if durability not in ("normal", "full"):
            raise ValueError(f"durability is 'normal' or 'full', got {durability!r}")
        self.path = Path(path).expanduser()
        make_folder(self.path)
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
            raise store_error(self.path, exc) from exc
        except BaseException:
            self._owner_lock.release()
            raise
        self._beats.start()  # once the store is open: its heartbeat (see _beat_loop)

    @classmethod
    def reader(cls, path: str | Path) -> StoreReader:
        """The store at ``path`` opened read-only, without taking ownership: for
        ``taskloom history`` while a run may be going on. It has the queries only."""
        return StoreReader(path)

    def _open(self, durability: str) -> None:
        check_owned(self.path)
        check_existing(self.path)
        create_private(self.path)
        self._conn = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT
        )
        self._identity = identity(self.path)  # what the heartbeat checks the path still names
        self._held = []
        self._busy_told = False
        self._failure = None
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA synchronous={durability.upper()}")
        migrate(self._conn, self._begin)
        self.run = stored_run(self._conn)  # a workflow run: a fresh start counts up
        self._store_id = self._own_id()
        try:
            replay(self._conn, self.path, self._store_id, self._begin)
            self._inflight = InflightSlots(inflight_path(self.path), self._store_id)
        except InflightFileError as exc:
            self._conn.close()
            raise StoreError(f"{self.path}: in-flight file: {exc.strerror}") from None
        self._read_lock = threading.Lock()  # the writer's connection is shared for reads
        self.start_writer()
        self._stop_beats = threading.Event()
        self._beats = threading.Thread(target=self._beat_loop, name="taskloom-beat", daemon=True)
        self._take_over()

    def note_running(self, row: tuple) -> int | None:
        """In-process code is about to run the attempt whose start row (as queued by
        ``put_attempt``) is ``row``: a slot that outlives a crash says so until
        ``running_ended(slot)``. None when the row is too long to note (flush instead)."""
        return self._inflight.note((self.run, *row))

    def running_ended(self, slot: int) -> None:
        self._inflight.ended(slot)

    def close(self) -> None:
        self._stop_beats.set()
        if threading.current_thread() is not self._beats:
            self._beats.join()
        self.stop_writer()
        self._conn.close()
        # A clean close: nothing runs any more (a failed store leaves the file for
        # the next owner, which replays what is still noted).
        problem = self._inflight.close(remove=self._failure is None)
        if problem is not None:
            self.close_problem = problem
        from .._jobs import supervision

        supervisor = supervision.existing_client()
        if supervisor is not None and self.supervised_folder is not None:
            # Its records of this store are done with, unless commands were handed over.
            supervisor.release(self.supervised_folder)
        self._owner_lock.release()
        for lock in self._held:
            lock.release()
