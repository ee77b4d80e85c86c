"""The owner's side of the command supervisor (``supervisor.py``).

- ``client()`` is this process's supervisor connection, started on first use: a
  command asks it to ``start`` and waits for ``started`` then ``ended``; a cancel
  or a hand-over is one message or a flag, never a signal from this process.
- ``scan(folder)`` reads what supervisors recorded for one store (the folder
  ``<store>-supervised``): for each attempt they were asked to run, its start, its
  process and, once it is over, its end; and whether the supervisor still lives
  (it holds a lock on its file as long as it does).
- ``wait_end(attempt)`` follows a living supervisor's file until the attempt's end
  is in it: how a later owner adopts a command it did not start.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import supervisor as _script

log = logging.getLogger("taskloom.engine")

SUPERVISED_WORKER = "supervisor"  # the start row's worker: the attempt is a supervised command
FOLDER_SUFFIX = "-supervised"
FOLLOW_FIRST = 0.02  # seconds between looks at a living supervisor's file, at first
FOLLOW_MOST = 0.5  # ... backing off to this while nothing happens


def supervised_folder(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + FOLDER_SUFFIX)


def prepare_folder(folder: Path, owner_token: str) -> None:
    """Make the store's supervised folder (0700, ours, not a link) and name its owner.

    Written before the new owner reads any record: a supervisor checks it after
    writing an attempt's start and before starting the program (see supervisor.py)."""
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if not os.path.isdir(folder) or os.path.islink(folder):
        raise OSError(errno.ENOTDIR, f"{folder} is not a folder")
    if info.st_uid != os.getuid():
        raise PermissionError(errno.EPERM, f"{folder} belongs to another user")
    if info.st_mode & 0o077:
        os.chmod(folder, 0o700)
    temporary = folder / f".owner-{os.getpid()}-{os.urandom(4).hex()}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, owner_token.encode())
    finally:
        os.close(fd)
    os.replace(temporary, folder / _script.OWNER_FILE)


# ---------------------------------------------------------------------- this process's supervisor
class Pending:
    """One command asked of the supervisor: its process once started, its end once over."""

    __slots__ = ("id", "client", "on_started", "ended", "pid", "pgid", "proc_started", "end")

    def __init__(
        self, id: int, client: SupervisorClient, on_started: Callable[[Pending], None] | None
    ) -> None:
        self.id = id
        self.client = client
        # Called on the reader thread once the program runs (its pid is known), so the
        # waiting worker wakes only once, for the end.
        self.on_started = on_started
        self.ended = threading.Event()
        self.pid: int | None = None
        self.pgid: int | None = None
        self.proc_started: float | None = None
        self.end: dict | None = None

    def cancel(self) -> None:
        """End the command's process group (SIGTERM, SIGKILL after the grace)."""
        self.client.send({"op": "cancel", "id": self.id})

    def detach(self) -> None:
        """Stop waiting: the command goes on, and its end is for the store's next owner."""
        self.client.forget(self)
        self.end = {"detached": True}
        self.ended.set()


class SupervisorClient:
    """The connection to this process's supervisor. ``_lock`` guards ``_pending``,
    ``_next_id`` and sending; the reader thread sets each ``Pending``'s events."""

    def __init__(self) -> None:
        mine, theirs = socket.socketpair()
        self.token = f"sup-{os.getpid()}-{os.urandom(6).hex()}"
        env = {k: v for k, v in os.environ.items() if k != _script.MARK}
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    _script.__file__,
                    str(theirs.fileno()),
                    self.token,
                    str(os.getpid()),
                ],  # fmt: skip
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # a signal to our group or a closed terminal spares it
                env=env,
            )
        finally:
            theirs.close()
        self.pid = self.process.pid
        self.owner_pid = os.getpid()  # a forked child needs a supervisor of its own
        self._sock = mine
        self._lock = threading.Lock()
        self._pending: dict[int, Pending] = {}
        self._next_id = 0
        self._last_env: dict | None = None  # the supervisor keeps it for starts without one
        self.alive = True
        self._reader = threading.Thread(target=self._read, name="taskloom-supervisor", daemon=True)
        self._reader.start()

    def start(self, request: dict, on_started: Callable[[Pending], None] | None = None) -> Pending:
        """Ask for a command; ``request["env"]`` is sent only when it differs from the
        last one sent (most commands share the owner's)."""
        with self._lock:
            self._next_id += 1
            pending = Pending(self._next_id, self, on_started)
            self._pending[pending.id] = pending
            request["id"] = pending.id
            request["op"] = "start"
            if request["env"] == self._last_env:
                request["env"] = None
            else:
                self._last_env = request["env"]
            self._send_locked(request)
        return pending

    def send(self, message: dict) -> None:
        with self._lock:
            self._send_locked(message)

    def _send_locked(self, message: dict) -> None:
        try:
            self._sock.sendall((json.dumps(message, separators=(",", ":")) + "\n").encode())
        except OSError:
            pass  # the reader sees the supervisor gone and ends what waits on it

    def forget(self, pending: Pending) -> None:
        with self._lock:
            self._pending.pop(pending.id, None)

    def release(self, folder: Path) -> None:
        """The store closed: the supervisor drops its records file once no command of
        the store runs (commands handed over keep it, for the next owner)."""
        self.send({"op": "release", "folder": str(folder)})

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                data = self._sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                message = json.loads(line)
                with self._lock:
                    pending = self._pending.get(message["id"])
                    if pending is not None and message["op"] == "ended":
                        del self._pending[message["id"]]
                if pending is None:
                    continue  # handed over: its end is in the records for the next owner
                if message["op"] == "started":
                    pending.pid = message["pid"]
                    pending.pgid = message["pgid"]
                    pending.proc_started = message["proc_started"]
                    if pending.on_started is not None:
                        try:
                            pending.on_started(pending)
                        except BaseException:  # unrecorded, it must not run on
                            log.exception("recording command %d's process failed", pending.id)
                            pending.cancel()
                else:
                    pending.end = message
                    pending.ended.set()
        self._gone()

    def _gone(self) -> None:
        """The supervisor died (killed on its own): its commands' ends cannot be known.
        They are ended here (nobody supervises them any more) and fail."""
        with self._lock:
            self.alive = False
            pending, self._pending = list(self._pending.values()), {}
        self._sock.close()
        if pending:
            log.error("the command supervisor (pid %d) stopped; ending its commands", self.pid)
        for each in pending:
            if each.pgid is not None and _same_process(each.pid, each.proc_started):
                _script.signal_group(each.pgid, signal.SIGKILL)
            each.end = {"lost": True}  # the attempt is lost: it runs again
            each.ended.set()
        try:
            self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass


_client_lock = threading.Lock()  # guards _client
_client: SupervisorClient | None = None


def client() -> SupervisorClient:
    """This process's supervisor, started on first use (again if it died, or after a fork)."""
    global _client
    with _client_lock:
        current = _client
        if current is None or not current.alive or current.owner_pid != os.getpid():
            current = _client = SupervisorClient()
        return current


def existing_client() -> SupervisorClient | None:
    """The supervisor if this process started one (and it still lives)."""
    with _client_lock:
        current = _client
        if current is None or not current.alive or current.owner_pid != os.getpid():
            return None
        return current


# ---------------------------------------------------------------------- what supervisors recorded
Key = tuple[int, str, int]  # (run, task id, attempt number)


@dataclass
class SupervisedAttempt:
    """What a supervisor recorded of one attempt."""

    key: Key
    records: Path
    alive: bool  # its supervisor still runs (and so may still record its end)
    started_at: float | None = None  # wall-clock
    log_path: str | None = None
    timeout: float | None = None
    pid: int | None = None
    pgid: int | None = None
    proc_started: float | None = None
    end: dict | None = None
    token: str = field(default="")


def _supervisor_alive(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def _read_records(path: Path, offset: int = 0) -> tuple[list[dict], int, bool]:
    """The whole records after ``offset``, the offset after the last whole line, and
    whether the supervisor still lives (asked before reading, so a dead one's file
    is read complete)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        alive = _supervisor_alive(fd)
        os.lseek(fd, offset, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    whole = data.rfind(b"\n") + 1
    records = []
    for line in data[:whole].splitlines():
        try:
            record = json.loads(line)
            record["key"] = tuple(record["key"])
        except (ValueError, TypeError, KeyError):
            continue  # not a line a supervisor wrote
        records.append(record)
    return records, offset + whole, alive


def _fold(attempt: SupervisedAttempt, record: dict) -> None:
    kind = record.get("ev")
    if kind == "start":
        attempt.started_at = record.get("at")
        attempt.log_path = record.get("log")
        attempt.timeout = record.get("timeout")
    elif kind == "pid":
        attempt.pid, attempt.pgid = record.get("pid"), record.get("pgid")
        attempt.proc_started = record.get("proc_started")
    elif kind == "end":
        attempt.end = record


def scan(folder: Path, running: set[Key] | None = None) -> dict[Key, SupervisedAttempt]:
    """Every attempt the supervisors of this store recorded. With ``running`` (the keys
    of attempts the store still has as running), a dead supervisor's file that none of
    them needs any more is removed."""
    found: dict[Key, SupervisedAttempt] = {}
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return found
    for name in names:
        if not name.endswith(".jsonl"):
            continue
        path = folder / name
        try:
            records, _, alive = _read_records(path)
        except OSError:
            continue
        keys = set()
        for record in records:
            key = record["key"]
            keys.add(key)
            attempt = found.get(key)
            if attempt is None or attempt.records != path:
                attempt = found[key] = SupervisedAttempt(key, path, alive, token=name[:-6])
            _fold(attempt, record)
        if running is not None and not alive and not keys & running:
            try:
                path.unlink()
            except OSError:
                pass
    return found


def _same_process(pid: int | None, proc_started: float | None) -> bool:
    return pid is not None and (
        proc_started is None or _script.proc_start_time(pid) == proc_started
    )


def signal_adopted(attempt: SupervisedAttempt, sig: int) -> None:
    """Signal an adopted command's group, if its leader is still the process recorded."""
    if attempt.pgid is not None and (
        _same_process(attempt.pid, attempt.proc_started) or _script.group_alive(attempt.pgid)
    ):
        _script.signal_group(attempt.pgid, sig)


def wait_end(
    attempt: SupervisedAttempt,
    stopped: Callable[[], bool] = lambda: False,
) -> dict:
    """The attempt's end record, following a living supervisor's file until it comes.

    Returns ``{"detached": True}`` once ``stopped()`` says this owner hands it over,
    and ``{"lost": True}`` if the supervisor died without recording an end."""
    if attempt.end is not None:
        return attempt.end
    offset = 0
    pause = FOLLOW_FIRST
    while True:
        try:
            records, offset, alive = _read_records(attempt.records, offset)
        except FileNotFoundError:
            records, alive = [], False
        for record in records:
            if record["key"] == attempt.key:
                _fold(attempt, record)
        if attempt.end is not None:
            return attempt.end
        if not alive:
            return {"lost": True}
        if stopped():
            return {"detached": True}
        time.sleep(pause)  # a file offers nothing to wait on; back off while idle
        pause = min(FOLLOW_MOST, pause * 2)


def end_as_row(attempt: SupervisedAttempt) -> dict:
    """The attempt's columns as its supervisor's records tell them, for a reader of a
    store whose owner died: its end once recorded, else that it still runs."""
    end = attempt.end
    if end is None:
        if attempt.alive:
            return {
                "error": f"its owner is gone; still running under its supervisor ({attempt.token})"
            }
        return {}
    rc = end.get("rc")
    failed = rc != 0 or bool(end.get("error"))
    if end.get("error") or rc is None:
        detail = end.get("error") or "ended"
    elif rc == 0:
        detail = None
    else:
        detail = _script.describe_exit(rc) + (f": {end['err_line']}" if end.get("err_line") else "")
    note = "recorded by its supervisor after its owner died"
    return {
        "outcome": "failed" if failed else "succeeded",
        "ended": end.get("at"),
        "exit_code": rc,
        "output": end.get("tail") or None,
        "error": f"{detail} ({note})" if detail else f"({note})",
    }
