"""In-process attempts that are running, in a file that outlives the process.

A command's attempt is committed before the command starts (``dispatch.py``), but
in-process code starts at once: committing first would halve the store's speed on
short calls. Yet in-process code is the only code that can bring Taskloom down
(a crash in a C extension, an out-of-memory kill), and recovery can only count an
attempt as ``lost`` (and stop a task lost three times in a row) if it knows the
attempt began. So each worker writes its attempt's start row into its own slot of
``<store>-inflight`` with one ``pwrite`` (a few microseconds, no fsync) and blanks
it when the code returns. The page cache keeps what was written when the process
is killed or crashes, which is what this guards against; a power cut may lose it,
and then the attempt simply runs again (at-least-once).

The next owner replays the rows it finds (``left_behind``) into ``attempts``
unless a row for that attempt was committed, then empties the file.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

SLOT_BYTES = 1024  # a start row of a task id up to ~900 bytes fits; longer ones flush instead
_BLANK = b"\0"


def inflight_path(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + "-inflight")


class InflightSlots:
    """The owner's slots. ``_lock`` guards ``_free`` and ``_count``; the writes
    themselves need no lock (each slot belongs to one attempt at a time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self._lock = threading.Lock()
        self._free: list[int] = []
        self._count = 0

    def note(self, row: tuple) -> int | None:
        """Write ``row`` into a free slot; its index, or None if it does not fit."""
        data = json.dumps(row, separators=(",", ":")).encode()
        if len(data) >= SLOT_BYTES:
            return None
        with self._lock:
            if self._free:
                slot = self._free.pop()
            else:
                slot = self._count
                self._count += 1
        os.pwrite(self._fd, data.ljust(SLOT_BYTES, _BLANK), slot * SLOT_BYTES)
        return slot

    def ended(self, slot: int) -> None:
        """The attempt's code returned: blank the slot (its first byte is enough)."""
        os.pwrite(self._fd, _BLANK, slot * SLOT_BYTES)
        with self._lock:
            self._free.append(slot)

    def close(self, *, remove: bool) -> None:
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
            row = json.loads(chunk)
        except ValueError:  # a write cut short: the attempt had barely begun
            continue
        if isinstance(row, list):
            rows.append(row)
    return rows
