"""One owner per run store: an OS lock held for the owner's whole life.

The process that runs a workflow holds an exclusive ``flock`` on ``<store>.lock``.
The kernel releases it when the process dies, however it dies, so a crash never
leaves a stale lock behind. The lock file also says who holds it (pid, host,
since when, what program), so a second process can name the owner when it is
refused.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Owner:
    """Who holds a store: read from its lock file."""

    pid: int
    host: str
    since: float  # epoch seconds
    program: str

    def describe(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return f"{self.program} (pid {self.pid} on {self.host}, since {since})"


def lock_path(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + ".lock")


def _program() -> str:
    """What a person would call this process: "taskloom run", "taskloom", "pytest"."""
    first = sys.argv[0] if sys.argv and sys.argv[0] else "python"
    name = os.path.basename(first)
    if name == "__main__.py":  # python -m PACKAGE
        name = os.path.basename(os.path.dirname(first))
    elif name in ("-c", ""):
        name = "python"
    subcommand = [a for a in sys.argv[1:2] if not a.startswith("-") and "/" not in a]
    return " ".join([name, *subcommand])[:80]


class StoreLock:
    """An exclusive lock on a store, held until ``release()`` or the process ends.

    ``StoreLock.acquire(path)`` returns the lock, or raises ``StoreBusy`` naming
    the live owner. Not shared between threads: one owner object per store.
    """

    def __init__(self, path: Path, fd: int, writable: bool = True):
        self.path = path
        self._fd: int | None = fd
        self._writable = writable

    @classmethod
    def acquire(cls, store_path: Path) -> StoreLock:
        from ..store import StoreBusy

        path = lock_path(store_path)
        writable = True
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except PermissionError:
            if not path.exists():
                raise
            # A read-only lock file still locks; the store itself will say it is read-only.
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            writable = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            owner = read_owner(store_path)
            who = owner.describe() if owner is not None else "another process"
            raise StoreBusy(f"{store_path} is in use by {who}", owner) from None
        except BaseException:
            os.close(fd)
            raise
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.time(),
            "program": _program(),
        }
        if writable:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
        return cls(path, fd, writable)

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if self._writable:
                os.ftruncate(fd, 0)  # no owner now
        finally:
            os.close(fd)  # closing the descriptor releases the flock


def read_owner(store_path: Path) -> Owner | None:
    """The recorded owner of a store, or None if nobody holds it (or it cannot be read)."""
    path = lock_path(Path(store_path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:  # a lock we can take has no live owner, whatever the file says
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass
        else:
            return None
        data = json.loads(os.read(fd, 4096) or b"{}")
        return Owner(int(data["pid"]), str(data["host"]), float(data["since"]), data["program"])
    except (ValueError, KeyError, TypeError, OSError):
        return Owner(0, "?", 0.0, "another process")
    finally:
        os.close(fd)
