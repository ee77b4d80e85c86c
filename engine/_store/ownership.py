"""The owner's side of one owner per store (section 5.4 of the design doc): the
heartbeat that checks the store and its locks are still ours, and the take-over
that ends or adopts what an earlier owner left running."""

from __future__ import annotations

import logging
import os
import threading
import uuid
from pathlib import Path

from ..errors import StoreError
from .lock import HEARTBEAT, OwnerLocks, StoreLock
from .writer import StoreWriter

log = logging.getLogger("taskloom.store")


class Ownership(StoreWriter):
    """The heartbeat thread (``_beats``) and what a new owner does first."""

    _owner_lock: StoreLock
    _held: list[OwnerLocks]  # more locks kept until close (hold)
    _identity: tuple[int, int] | None  # what the heartbeat checks the path still names
    _stop_beats: threading.Event
    _beats: threading.Thread
    owner_token: str
    supervised_folder: Path | None
    supervised: dict

    def hold(self, lock: OwnerLocks) -> None:
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

    def _own_id(self) -> str:
        """This store's id (made once, kept in meta): it tags the in-flight rows, so
        that a file left by another store at this path is not replayed here."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        if row:
            return str(row[0])
        store_id = uuid.uuid4().hex
        self._conn.execute("INSERT INTO meta (key, value) VALUES ('store_id', ?)", (store_id,))
        return store_id

    def _take_over(self) -> None:
        """As the new owner: claim the supervised folder, read what supervisors recorded
        (commands that outlived their owner are adopted by recovery, not ended), end
        whatever else an earlier owner left running, and mark the store with this
        process's token so that a later owner can do the same."""
        from .._jobs import reaper, supervision, survivors

        own = reaper.ensure_started()
        self.owner_token = own
        self.supervised_folder = supervision.supervised_folder(self.path)
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
