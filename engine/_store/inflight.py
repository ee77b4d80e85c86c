"""In-process attempts that are running, in a file that outlives the process.

A command's attempt is committed before the command starts (``dispatch.py``), but
in-process code starts at once: committing first would halve the store's speed on
short calls. Yet in-process code is the only code that can bring Taskloom down
(a crash in a C extension, an out-of-memory kill), and recovery can only count an
attempt as ``lost`` (and stop a task lost three times in a row) if it knows the
attempt began. So each worker copies its attempt's start row into its own slot of
``<store>-inflight``, a file mapped into memory (``MAP_SHARED``), and blanks it when
the code returns: a memory copy, no system call (a ``pwrite`` per attempt let the
worker drop the GIL twice per task and cost 40% of the with-store rate of no-op
calls). The mapped pages belong to the file, so they outlive the process however
it dies, which is what this guards against; a power cut may lose them, and then
the attempt simply runs again (at-least-once).

The next owner replays the rows it finds (``left_behind``) into ``attempts``
unless a row for that attempt was committed, then makes the file afresh.

The file must not bring the owner down (issue 21):

- Its pages are allocated for real (``posix_fallocate``) before they are mapped:
  a mapped page of a sparse file that a full disk cannot back kills the process
  with SIGBUS. A full disk at the start is a ``StoreError``; one when the slots
  must grow makes ``note`` return None, and the row is committed instead (the
  store's own full-disk path: one line, exit 2).
- It is made afresh with ``O_EXCL | O_NOFOLLOW`` and then made read-only (0400):
  the owner's descriptor still writes, but another process of the same user
  cannot truncate it under the mapping (a truncated mapping is a SIGBUS too).
  Deleting it is harmless: the mapping keeps the deleted file (root, or a chmod
  first, can still truncate it).
- Reading it back takes only a regular file of ours, not followed through a link,
  opened without blocking (a FIFO hung the start), and at most ``MAX_SLOTS``
  slots of it (a 2 GiB file was read whole). A slot is replayed only if it holds a
  row of the right shape and types, tagged with this store's id: a store moved
  aside leaves its file behind, and the next store at that path must not take
  its rows for its own.
"""

from __future__ import annotations

import ast
import errno
import logging
import math
import mmap
import os
import sqlite3
import stat
import threading
from collections.abc import Callable
from pathlib import Path

from .records import ATTEMPT_WRITE

SLOT_BYTES = 1024  # a start row of a task id up to ~900 bytes fits; longer ones flush instead
INITIAL_SLOTS = 64  # one per attempt running in this process at once; doubled when short
MAX_SLOTS = 4096  # 4 MiB at most: more attempts at once are committed instead
_BLANK = b"\0"
_INT64 = 1 << 63
log = logging.getLogger("taskloom.store")


class InflightFileError(OSError):
    """The in-flight file cannot be used (not a regular file of ours, a full disk):
    the store turns it into a one-line ``StoreError``."""


def inflight_path(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + "-inflight")


class InflightSlots:
    """The owner's slots. ``_lock`` guards ``_free``, ``_count`` and the mapping's
    growth; copying into a slot needs no lock (each slot belongs to one attempt)."""

    def __init__(self, path: Path, tag: str = "") -> None:
        self.path = path
        self.tag = tag  # the store's id, first in every row (see left_behind)
        try:
            os.unlink(path)  # replayed already (left_behind refused anything odd)
        except FileNotFoundError:
            pass
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            self._fd = os.open(path, flags, 0o600)
        except OSError as exc:
            raise InflightFileError(exc.errno, f"{path}: {exc.strerror}") from None
        self._lock = threading.Lock()
        self._free: list[int] = []
        self._count = 0
        self._capacity = 0
        self._map: mmap.mmap | None = None
        self._old_maps: list[mmap.mmap] = []  # still written by a slot taken before a growth
        try:
            self._grow(INITIAL_SLOTS)
            os.fchmod(self._fd, 0o400)  # our descriptor writes on; nobody can truncate it
        except OSError as exc:
            os.close(self._fd)
            path.unlink(missing_ok=True)
            raise InflightFileError(exc.errno, f"{path}: {exc.strerror}") from None

    def _grow(self, slots: int) -> None:
        """Under ``_lock`` (or in ``__init__``): room for ``slots`` slots, on pages the
        disk holds for real (``OSError`` if it cannot: ENOSPC)."""
        _allocate(self._fd, self._capacity * SLOT_BYTES, slots * SLOT_BYTES)
        if self._map is not None:
            self._old_maps.append(self._map)  # a writer may still hold it: not closed
        self._map = mmap.mmap(self._fd, slots * SLOT_BYTES)
        self._capacity = slots

    def note(self, row: tuple) -> int | None:
        """Copy ``row`` into a free slot; its index, or None if it does not fit."""
        data = repr((self.tag, *row)).encode()  # plain values: 1 µs, json takes 2.4
        if len(data) >= SLOT_BYTES:
            return None
        with self._lock:
            if self._free:
                slot = self._free.pop()
            else:
                slot = self._count
                if slot >= self._capacity:
                    if 2 * self._capacity > MAX_SLOTS:
                        return None
                    try:
                        self._grow(2 * self._capacity)
                    except OSError:  # a full disk: committed instead (and failing there)
                        return None
                self._count += 1
            mapped = self._map
        assert mapped is not None
        offset = slot * SLOT_BYTES
        mapped[offset : offset + SLOT_BYTES] = data.ljust(SLOT_BYTES, _BLANK)
        return slot

    def ended(self, slot: int) -> None:
        """The attempt's code returned: blank the slot (its first byte is enough)."""
        mapped = self._map
        assert mapped is not None
        mapped[slot * SLOT_BYTES] = 0
        with self._lock:
            self._free.append(slot)

    def close(self, *, remove: bool) -> str | None:
        """Unmap and close; with ``remove``, delete the file. Returns why it could not
        be deleted (a folder made read-only during the run), or None: harmless, the
        next owner replays nothing from it (every slot is blank)."""
        for mapped in (*self._old_maps, self._map):
            if mapped is not None:
                mapped.close()
        os.close(self._fd)
        if remove:
            try:
                self.path.unlink(missing_ok=True)
            except OSError as exc:
                problem = f"cannot remove {self.path}: {exc.strerror}"
                log.warning("%s", problem)
                return problem
        return None


def _allocate(fd: int, start: int, end: int) -> None:
    """Make bytes ``start`` to ``end`` of the file real blocks on the disk (``OSError``,
    ENOSPC, if it has no room): mapped pages of a sparse file would be a SIGBUS."""
    try:
        os.posix_fallocate(fd, start, end - start)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
        # A file system without fallocate: write the zeros (which allocates them too).
        os.pwrite(fd, bytes(end - start), start)


def left_behind(path: Path, tag: str = "") -> list[list]:
    """The start rows an earlier owner of the store tagged ``tag`` left in its slots
    (attempts it was running), without the tag. ``InflightFileError`` if the path is
    a link, not a regular file, or not the user's."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return []
    except OSError as exc:  # ELOOP: a symlink
        raise InflightFileError(exc.errno, f"{path}: {_refused(exc)}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InflightFileError(0, f"{path}: not a regular file; remove it to go on")
        if info.st_uid != os.geteuid():
            raise InflightFileError(0, f"{path}: owned by another user; remove it to go on")
        data = _read_at_most(fd, MAX_SLOTS * SLOT_BYTES)
    finally:
        os.close(fd)
    rows = []
    for offset in range(0, len(data), SLOT_BYTES):
        chunk = data[offset : offset + SLOT_BYTES].rstrip(_BLANK)
        if not chunk or chunk[:1] == _BLANK:
            continue
        try:
            row = ast.literal_eval(chunk.decode())
        except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError):
            continue  # not a row we wrote
        if _plain_row(row) and row[0] == tag:
            rows.append(list(row[1:]))
    return rows


def _refused(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "a symbolic link; remove it to go on"
    return exc.strerror or str(exc)


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, left = [], limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _plain_row(row: object) -> bool:
    """A tuple of a tag, a run number, a task id, an attempt number and values SQLite
    takes as they are (None, str, finite floats, 64-bit ints)."""
    if not isinstance(row, tuple) or len(row) < 4:
        return False
    tag, run, task_id, number = row[:4]
    if not (isinstance(tag, str) and isinstance(task_id, str)):
        return False
    if type(run) is not int or type(number) is not int:
        return False
    for value in row[1:]:
        if value is None or isinstance(value, str):
            continue
        if type(value) is int:
            if not -_INT64 <= value < _INT64:
                return False
        elif type(value) is float:
            if not math.isfinite(value):
                return False
        else:
            return False
    return True


def replay(conn: sqlite3.Connection, store_path: Path, tag: str, begin: Callable[[], None]) -> None:
    """Attempts an earlier owner was running in-process when it died, whose start
    row never reached the disk: put into ``attempts`` (recovery counts them lost),
    unless a row of that attempt was committed (even its end wins)."""
    rows = left_behind(inflight_path(store_path), tag)
    if not rows:
        return
    # Only attempts of tasks the store has: a row of a task it no longer keeps
    # would stay "running" for ever (nothing would ever end it).
    known = {r[0] for r in conn.execute("SELECT id FROM tasks")}
    rows = [row for row in rows if len(row) == len(ATTEMPT_WRITE) and row[1] in known]
    columns = ", ".join(ATTEMPT_WRITE)
    marks = ",".join("?" * len(ATTEMPT_WRITE))
    begin()
    try:
        conn.executemany(f"INSERT OR IGNORE INTO attempts ({columns}) VALUES ({marks})", rows)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
