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
unless a row for that attempt was committed, then empties the file.
"""

from __future__ import annotations

import ast
import mmap
import os
import threading
from pathlib import Path

SLOT_BYTES = 1024  # a start row of a task id up to ~900 bytes fits; longer ones flush instead
INITIAL_SLOTS = 64  # one per attempt running in this process at once; doubled when short
_BLANK = b"\0"


def inflight_path(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + "-inflight")


class InflightSlots:
    """The owner's slots. ``_lock`` guards ``_free``, ``_count`` and the mapping's
    growth; copying into a slot needs no lock (each slot belongs to one attempt)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self._lock = threading.Lock()
        self._free: list[int] = []
        self._count = 0
        self._capacity = 0
        self._map: mmap.mmap | None = None
        self._old_maps: list[mmap.mmap] = []  # still written by a slot taken before a growth
        self._grow(INITIAL_SLOTS)

    def _grow(self, slots: int) -> None:
        """Under ``_lock`` (or in ``__init__``): room for ``slots`` slots."""
        os.ftruncate(self._fd, slots * SLOT_BYTES)
        if self._map is not None:
            self._old_maps.append(self._map)  # a writer may still hold it: not closed
        self._map = mmap.mmap(self._fd, slots * SLOT_BYTES)
        self._capacity = slots

    def note(self, row: tuple) -> int | None:
        """Copy ``row`` into a free slot; its index, or None if it does not fit."""
        data = repr(row).encode()  # numbers, strings and None: 1 µs, json takes 2.4
        if len(data) >= SLOT_BYTES:
            return None
        with self._lock:
            if self._free:
                slot = self._free.pop()
            else:
                slot = self._count
                self._count += 1
                if slot >= self._capacity:
                    self._grow(2 * self._capacity)
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

    def close(self, *, remove: bool) -> None:
        for mapped in (*self._old_maps, self._map):
            if mapped is not None:
                mapped.close()
        os.close(self._fd)
        if remove:
            self.path.unlink(missing_ok=True)


def left_behind(path: Path) -> list[list]:
    """The start rows an earlier owner's slots still hold (attempts it was running)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    rows = []
    for offset in range(0, len(data), SLOT_BYTES):
        chunk = data[offset : offset + SLOT_BYTES].rstrip(_BLANK)
        if not chunk or chunk[:1] == _BLANK:
            continue
        try:
            row = ast.literal_eval(chunk.decode())
        except (ValueError, SyntaxError, UnicodeDecodeError):  # not a row we wrote
            continue
        if isinstance(row, tuple):
            rows.append(list(row))
    return rows
