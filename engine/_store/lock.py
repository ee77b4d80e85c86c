"""One owner per run store: OS locks held for the owner's whole life.

The process that runs a workflow holds an exclusive ``flock`` on ``<store>.lock``
and another on a lock keyed by the store's resolved path in a fixed per-user
folder (``safe_files.user_lock_dir``). The kernel releases them when the process
dies, however it dies, so a crash never leaves a stale lock behind. A flock
guards a file, not a path: deleting ``<store>.lock`` (a cleaner, ``rm``) or
replacing the store's folder by a copy would let a second owner lock a new file
at the same path. Two locks in two places both have to go for that, each taker
checks that the path still names the file it locked, and the owner's heartbeat
(``beat``, every ``HEARTBEAT`` seconds) checks its lock paths again and locks
anew a lock file that was deleted.

The lock files also say who holds them (pid, host, since when, what program, its
PID namespace) and when the owner last beat, so that a second process can name
the owner when it is refused, and a watcher can tell a live owner from a stopped
or frozen one without probing its pid (``owner_record``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import StoreBusy, StoreError
from .safe_files import (
    UnsafeFile,
    fallback_lock_dir,
    lock_dir_path,
    open_private,
    own_folder,
    same_file,
    user_lock_dir,
)

HEARTBEAT = 1.0  # seconds between the owner's beats (lock files rewritten, paths checked)
RECORD_BYTES = 4096  # a lock file's record, padded: a beat overwrites it in place


@dataclass(frozen=True)
class Owner:
    """Who holds a store: read from its lock file."""

    pid: int
    host: str
    since: float  # epoch seconds
    program: str
    beat: float = 0.0  # epoch seconds of the owner's last heartbeat (0: not known)
    pidns: int = 0  # the owner's PID namespace (inode of /proc/PID/ns/pid; 0: not known)
    store: str = ""  # for a workflow's lock: the store the owner runs it on

    def describe(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return f"{self.program} (pid {self.pid} on {self.host}, since {since})"


def lock_path(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + ".lock")


def key_lock_path(kind: str, key: str) -> Path:
    """The per-user lock for ``key`` (a resolved path) in the fixed folder."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return user_lock_dir() / f"{kind}-{digest}.lock"


def store_key_path(store_path: Path) -> Path:
    return key_lock_path("store", str(Path(store_path).resolve()))


def pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


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


class _Busy(Exception):
    def __init__(self, path: Path):
        self.path = path


def _take(path: Path) -> int:
    """A descriptor of ``path`` holding its exclusive flock, ``path`` still naming
    it once locked; ``_Busy`` if another process holds it."""
    for _ in range(10):
        fd = open_private(path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise _Busy(path) from None
        except BaseException:
            os.close(fd)
            raise
        if same_file(fd, path):
            return fd
        os.close(fd)  # deleted or replaced between the open and the lock: again
    raise UnsafeFile(f"{path}: keeps being replaced; refusing to use it")


def _describe(path: Path) -> Owner:
    return _read_record(path) or Owner(0, "?", 0.0, "another process")


class OwnerLocks:
    """Exclusive locks on a set of files, taken together, with the owner's record
    in each, re-checked by ``beat()``. Not shared between threads, but ``beat``
    may run on a thread of its own."""

    def __init__(self, fds: dict[Path, int], record: dict, writable: bool = True):
        self._fds: dict[Path, int] | None = fds
        self._record = record
        self._writable = writable
        self._write()

    @property
    def path(self) -> Path:
        assert self._fds is not None
        return next(iter(self._fds))

    @classmethod
    def _take_all(cls, paths: list[Path], record: dict) -> OwnerLocks:
        fds: dict[Path, int] = {}
        try:
            for path in paths:
                fds[path] = _take(path)
        except BaseException:
            for fd in fds.values():
                os.close(fd)
            raise
        return cls(fds, record)

    def _write(self) -> None:
        if not self._writable or self._fds is None:
            return
        self._record["beat"] = time.time()
        data = json.dumps(self._record).encode()[: RECORD_BYTES - 1].ljust(RECORD_BYTES)
        for fd in self._fds.values():
            try:
                os.pwrite(fd, data, 0)
            except OSError:
                pass  # a full disk: the lock holds all the same

    def beat(self) -> str | None:
        """Rewrite the record (the heartbeat) and check that each path still names
        the file locked; one deleted or replaced is locked anew. None if all is
        well, else why this process may no longer be the owner."""
        if self._fds is None:
            return None
        for path, fd in list(self._fds.items()):
            try:
                there = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                there = None
            except OSError:  # cannot tell now (a folder made unsearchable): keep it
                continue
            here = os.fstat(fd)
            if there is not None and (there.st_dev, there.st_ino) == (here.st_dev, here.st_ino):
                continue
            try:
                if path.parent in (lock_dir_path(), fallback_lock_dir()):
                    own_folder(path.parent)  # the whole folder deleted (rm -rf /tmp/...)
                new = _take(path)
            except _Busy:
                who = _describe(path).describe()
                return f"{path} was replaced and is now held by {who}"
            except (OSError, UnsafeFile) as exc:
                return f"{path} was deleted or replaced and cannot be locked again: {exc}"
            os.close(fd)
            self._fds[path] = new
        self._write()
        return None

    def release(self) -> None:
        if self._fds is None:
            return
        fds, self._fds = self._fds, None
        shared = (lock_dir_path(), fallback_lock_dir())
        for path, fd in fds.items():
            try:
                if self._writable:
                    os.ftruncate(fd, 0)  # no owner now
                # A per-user lock goes with its owner, or the folder keeps one file for
                # every store ever opened. Safe while locked: a taker that opened this
                # file finds the path names another one once it locks (_take) and retries.
                if path.parent in shared and same_file(fd, path):
                    path.unlink()
            except OSError:
                pass
            finally:
                os.close(fd)  # closing the descriptor releases the flock


def _record(**extra: object) -> dict:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": time.time(),
        "program": _program(),
        "pidns": pid_namespace(),
        **extra,
    }


class StoreLock(OwnerLocks):
    """An exclusive lock on a store, held until ``release()`` or the process ends.

    ``StoreLock.acquire(path)`` returns the lock, or raises ``StoreBusy`` naming
    the live owner. Not shared between threads: one owner object per store.
    """

    @classmethod
    def acquire(cls, store_path: Path) -> StoreLock:
        beside = lock_path(store_path)
        try:
            paths = [beside, store_key_path(store_path)]
            return cls._take_all(paths, _record())  # type: ignore[return-value]
        except _Busy as busy:
            owner = _describe(busy.path)
            raise StoreBusy(f"{store_path} is in use by {owner.describe()}", owner) from None
        except UnsafeFile as exc:
            raise StoreError(str(exc)) from None
        except PermissionError:
            if not beside.exists():
                raise
            return cls._read_only(store_path)

    @classmethod
    def _read_only(cls, store_path: Path) -> StoreLock:
        """A read-only lock file (ours) still locks; the store itself will say it is
        read-only."""

        path = lock_path(store_path)
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            from .safe_files import check_mine

            check_mine(path, os.fstat(fd))
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            owner = _describe(path)
            raise StoreBusy(f"{store_path} is in use by {owner.describe()}", owner) from None
        except UnsafeFile as exc:
            os.close(fd)
            raise StoreError(str(exc)) from None
        except BaseException:
            os.close(fd)
            raise
        return cls({path: fd}, _record(), writable=False)


class WorkflowLock(OwnerLocks):
    """One owner per workflow file, whatever the environment (``XDG_DATA_HOME``
    differs under cron and systemd) and ``--db``: a per-user lock keyed by the
    file's resolved path, in the fixed folder. Its record names the store."""

    @classmethod
    def acquire(cls, workflow_path: Path, store_path: Path, kind: str = "workflow") -> WorkflowLock:
        source = str(Path(workflow_path).resolve())
        try:
            path = key_lock_path(kind, source)
            return cls._take_all([path], _record(store=str(store_path)))  # type: ignore[return-value]
        except _Busy as busy:
            owner = _describe(busy.path)
            where = f", on the store {owner.store}" if owner.store else ""
            raise StoreBusy(
                f"{workflow_path} is in use by {owner.describe()}{where}", owner
            ) from None
        except UnsafeFile as exc:
            raise StoreError(str(exc)) from None


def workflow_owner(workflow_path: Path, kind: str = "workflow") -> Owner | None:
    """Who runs the workflow file now (its ``WorkflowLock``, with the store it runs
    on in ``store``), or None if nobody does."""
    try:
        path = key_lock_path(kind, str(Path(workflow_path).resolve()))
    except (OSError, UnsafeFile):
        return None
    return _describe(path) if _held(path) else None


def _read_record(path: Path) -> Owner | None:
    """The owner record in the lock file ``path`` (no probe of its lock), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        for _ in range(3):  # a beat may be rewriting it right now
            try:
                data = json.loads(os.pread(fd, RECORD_BYTES, 0) or b"null")
                if data is None:
                    return None
                return Owner(
                    int(data["pid"]),
                    str(data["host"]),
                    float(data["since"]),
                    str(data["program"]),
                    float(data.get("beat", 0.0)),
                    int(data.get("pidns", 0)),
                    str(data.get("store", "")),
                )
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
            except OSError:
                return None
        return None
    finally:
        os.close(fd)


def _held(path: Path) -> bool | None:
    """Whether somebody holds the lock ``path`` (None: no such file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False
    finally:
        os.close(fd)


def _lock_files(store_path: Path) -> list[Path]:
    paths = [lock_path(Path(store_path))]
    try:
        paths.append(store_key_path(Path(store_path)))
    except (OSError, UnsafeFile):
        pass
    return paths


def read_owner(store_path: Path) -> Owner | None:
    """The recorded owner of a store, or None if nobody holds it (or it cannot be read)."""
    for path in _lock_files(Path(store_path)):
        if _held(path):  # a lock we can take has no live owner, whatever the file says
            return _describe(path)
    return None


def owner_record(store_path: Path) -> Owner | None:
    """What the store's owner last wrote (its heartbeat), without probing any lock;
    None when no lock file has a record."""
    for path in _lock_files(Path(store_path)):
        owner = _read_record(path)
        if owner is not None:
            return owner
    return None
