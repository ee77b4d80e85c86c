"""The command supervisor: the process that starts commands and outlives their owner.

One supervisor serves one Taskloom process (the owner: ``taskloom run``, a window),
started on its first command and run as a plain script (``python -I supervisor.py``),
so it imports nothing of the engine. It is the parent of every command the owner
runs, in a session of its own, so a signal to the owner's process group, a closed
terminal or the owner's death does not reach it. For each command it:

- starts the program in its own session (one process group to stop together);
- writes the program's stdout and stderr into the attempt's log file (whole lines,
  capped at ``max_log_bytes`` then a note and the last ``tail_bytes``), so the owner
  pumps no output;
- ends the group on request (``cancel``: SIGTERM, SIGKILL after the grace), at its
  timeout, and ends what the leader left behind in its group when it exits;
- appends what happens to its records file, ``<store>-supervised/<token>.jsonl``,
  before telling the owner: ``start`` before the program starts, ``pid`` once it
  runs, ``end`` (exit status or signal, end time, output tail) once it and its group
  are gone. The file is flock-ed for the supervisor's whole life: a later owner that
  can lock it knows the supervisor is gone and the file is complete.

When the owner goes without a word (SIGKILL, a crash), commands of a run store go on
to their end, each end recorded, and their timeouts are enforced here; the next owner
of the store adopts them from the records (``supervision.py``). Commands without a
store (nobody could adopt them) are ended, as the owner would have done. The
supervisor exits once its owner is gone and its last command has ended.

Before starting a command it checks, after writing ``start``, that the store has not
changed owner meanwhile (``<store>-supervised/owner`` names the current owner's
token): a start asked by an owner that died is never carried out once its successor
has looked at the records, so nothing runs twice.

Protocol (one JSON object per line over the socket inherited as fd ``argv[1]``):
owner -> supervisor ``start``, ``cancel``, ``release``; supervisor -> owner
``started``, ``ended``.
"""

from __future__ import annotations

import collections
import errno
import fcntl
import json
import os
import queue
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

GRACE = 3.0  # seconds between SIGTERM and SIGKILL of a group
PIPE_GRACE = 3.0  # after the group is gone, how long a stray holder of a pipe is waited for
BACKSTOP = 2.0  # with its owner there, the owner times out first; this is the backstop
POLL = 0.02  # how often a stopping group is looked at
SPAWNERS = 4  # threads that start programs at once
OWNER_FILE = "owner"
MARK = "TASKLOOM_OWNER"  # the environment variable every command and its children carry
_PR_SET_CHILD_SUBREAPER = 36


def _now() -> float:
    return time.time()


def proc_start_time(pid: int) -> float | None:
    """Field 22 of /proc/PID/stat (clock ticks since boot): a process's identity with its pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        return float(stat[stat.rfind(b")") + 2 :].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


class Capture:
    """Both output streams of one command into one capped log file, with the tails."""

    def __init__(self, path: str, max_bytes: int, tail_bytes: int, mask: Any = ()) -> None:
        # secret_env values, longest first: each is written as *** (engine/secret_env.py)
        self._mask = [value.encode() for value in mask if value]
        flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        self._fd = os.open(path, flags)
        self._max_bytes = max_bytes
        self._tail_bytes = tail_bytes
        self._written = 0
        self._omitted = 0
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0
        self.stderr_tail = b""
        self._pending = {False: b"", True: b""}  # per stream: the part of a line not ended yet

    def feed(self, chunk: bytes, is_stderr: bool) -> None:
        # Whole lines only: stdout and stderr are two pipes, and a program's "warn" and
        # its "\n" may arrive as two writes with the other stream's output in between.
        if is_stderr:
            self.stderr_tail = (self.stderr_tail + chunk)[-self._tail_bytes :]
        pending = self._pending[is_stderr] + chunk
        cut = pending.rfind(b"\n") + 1
        if cut == 0 and len(pending) < 65536:
            self._pending[is_stderr] = pending
            return
        if cut == 0:
            cut = len(pending)  # a long line without an end is passed on anyway
        self._add(pending[:cut])
        self._pending[is_stderr] = pending[cut:]

    def stream_ended(self, is_stderr: bool) -> None:
        rest, self._pending[is_stderr] = self._pending[is_stderr], b""
        if rest:
            self._add(rest)

    def _add(self, chunk: bytes) -> None:
        for value in self._mask:  # whole lines come here: a value is not cut in two
            chunk = chunk.replace(value, b"***")
        room = max(0, self._max_bytes - self._written)
        if room:
            _write_all(self._fd, chunk[:room])
            self._written += min(room, len(chunk))
        self._omitted += max(0, len(chunk) - room)
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        while self._tail_size - len(self._tail[0]) >= self._tail_bytes:
            self._tail_size -= len(self._tail.popleft())

    def note(self, text: str) -> None:
        self._add(f"[taskloom] {text}\n".encode())

    def tail_text(self) -> str:
        return b"".join(self._tail)[-self._tail_bytes :].decode("utf-8", errors="replace")

    def last_stderr_line(self) -> str:
        tail = self.stderr_tail
        for value in self._mask:
            tail = tail.replace(value, b"***")
        lines = tail.decode("utf-8", errors="replace").strip().splitlines()
        return lines[-1].strip() if lines else ""

    def close(self) -> None:
        for is_stderr in (False, True):
            self.stream_ended(is_stderr)
        if self._omitted:
            tail = b"".join(self._tail)[-self._tail_bytes :]
            _write_all(
                self._fd,
                f"\n[taskloom] log capped at {self._max_bytes} bytes: {self._omitted} "
                f"bytes left out; the last {len(tail)} bytes follow\n".encode()
                + tail,
            )
        os.close(self._fd)


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:  # a full disk loses output, never the command's end
        pass


class Records:
    """One store's records file of this supervisor: append-only JSON lines, flock-ed."""

    def __init__(self, folder: str, token: str) -> None:
        self.folder = folder
        self.path = os.path.join(folder, token + ".jsonl")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        self.fd = os.open(self.path, flags, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # new and ours: never contended
        self.users = 0  # commands of this store still running

    def append(self, record: dict) -> None:
        _write_all(self.fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())

    def current_owner(self) -> str | None:
        try:
            with open(os.path.join(self.folder, OWNER_FILE), encoding="utf-8") as handle:
                return handle.read().strip()
        except OSError:
            return None

    def close(self, remove: bool) -> None:
        if remove:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        os.close(self.fd)


class Command:
    """One command the supervisor runs."""

    def __init__(self, request: dict, records: Records | None) -> None:
        self.id = request["id"]
        self.key = request.get("key")
        self.records = records
        self.argv = request["argv"]
        self.timeout = request.get("timeout")
        self.grace = request.get("grace", GRACE)
        self.started_wall = _now()
        self.started_mono = time.monotonic()
        self.capture: Capture | None = None
        self.process: subprocess.Popen | None = None
        self.pgid = 0
        self.pidfd: int | None = None
        self.returncode: int | None = None
        self.open_streams = 0
        self.kill_at: float | None = None  # SIGKILL the group then
        self.group_gone_at: float | None = None
        self.timed_out = False
        self.cancelled = False
        self.registered: list[Any] = []  # what the selector watches for it (pipes, pidfd)


class Spawners:
    """A few threads that start programs: a fork and exec takes a millisecond or two,
    and the loop must not wait for each in turn (the owner used to start commands on
    all its workers at once). Results come back to the loop through ``results`` and a
    byte on the wake-up pipe."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.results: queue.SimpleQueue = queue.SimpleQueue()
        self.wake_read, self.wake_write = os.pipe()
        os.set_blocking(self.wake_read, False)
        self.threads: list[threading.Thread] = []

    def submit(self, command: Command, request: dict, env: dict) -> None:
        if len(self.threads) < self.count:
            thread = threading.Thread(target=self._work, daemon=True)
            thread.start()
            self.threads.append(thread)
        self.jobs.put((command, request, env))

    def _work(self) -> None:
        while True:
            command, request, env = self.jobs.get()
            proc_started = None
            try:
                process: Any = subprocess.Popen(
                    request["argv"],
                    shell=request["shell"],
                    cwd=request.get("cwd"),
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,  # own process group: stop it and its children
                    close_fds=True,
                )
                proc_started = proc_start_time(process.pid)
            except OSError as exc:
                process = exc
            self.results.put((command, process, proc_started))
            os.write(self.wake_write, b"x")


class Supervisor:
    def __init__(self, sock: socket.socket, token: str, owner_pid: int) -> None:
        self.sock = sock
        self.token = token
        self.owner_pid = owner_pid
        self.owner_there = True
        self.selector = selectors.DefaultSelector()
        self.commands: dict[int, Command] = {}
        self.records: dict[str, Records] = {}
        self.inbox = b""
        self.outbox = b""
        self.env: dict[str, str] = {}  # the environment of the last start that sent one
        sock.setblocking(False)
        self.selector.register(sock, selectors.EVENT_READ, ("owner", None))
        self.spawners = Spawners(SPAWNERS)
        self.selector.register(self.spawners.wake_read, selectors.EVENT_READ, ("spawned", None))

    # ------------------------------------------------------------------ the loop
    def loop(self) -> None:
        while self.owner_there or self.commands:
            timeout = self._next_wake()
            for key, mask in self.selector.select(timeout):
                what, command = key.data
                if what == "owner":
                    if mask & selectors.EVENT_READ:
                        self._read_owner()
                    if mask & selectors.EVENT_WRITE:
                        self._flush_owner()
                elif what == "exit":
                    self._leader_exited(command)
                elif what == "spawned":
                    self._take_spawned()
                else:
                    self._read_stream(command, key.fileobj, what == "stderr")
            self._tick()
        for records in self.records.values():  # ends a later owner may still need
            records.close(remove=False)

    def _next_wake(self) -> float | None:
        now = time.monotonic()
        wakes = []
        for command in self.commands.values():
            if command.process is None:
                continue  # a spawner is starting it: its result wakes the loop
            if command.returncode is not None or command.pidfd is None:
                wakes.append(now + POLL)
            elif command.kill_at is not None:
                wakes.append(command.kill_at)
            elif command.timeout is not None:
                limit = command.timeout + (BACKSTOP if self.owner_there else 0.0)
                wakes.append(command.started_mono + limit)
        return None if not wakes else max(0.0, min(wakes) - now)

    def _tick(self) -> None:
        now = time.monotonic()
        for command in list(self.commands.values()):
            if command.process is None:
                continue  # a spawner is starting it
            no_pidfd = command.pidfd is None and command.returncode is None
            if no_pidfd and command.process.poll() is not None:
                self._leader_exited(command)
            if command.returncode is None:
                if command.kill_at is not None and now >= command.kill_at:
                    signal_group(command.pgid, signal.SIGKILL)
                    command.kill_at = None
                elif command.timeout is not None and command.kill_at is None:
                    limit = command.timeout + (BACKSTOP if self.owner_there else 0.0)
                    if now >= command.started_mono + limit and not command.timed_out:
                        command.timed_out = True
                        self._stop(command)
            else:
                self._after_leader(command, now)

    # ------------------------------------------------------------------ the owner
    def _read_owner(self) -> None:
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._owner_gone()
            return
        self.inbox += data
        *lines, self.inbox = self.inbox.split(b"\n")
        for line in lines:
            if line:
                self._handle(json.loads(line))

    def _handle(self, request: dict) -> None:
        op = request["op"]
        if op == "start":
            self._start(request)
        elif op == "cancel":
            command = self.commands.get(request["id"])
            if command is not None:
                command.cancelled = True
                self._stop(command)
        elif op == "release":  # the store closed with every end of ours taken in
            records = self.records.get(request["folder"])
            if records is not None and records.users == 0:
                records.close(remove=True)
                del self.records[request["folder"]]

    def _send(self, message: dict) -> None:
        if not self.owner_there:
            return
        self.outbox += (json.dumps(message, separators=(",", ":")) + "\n").encode()
        self._flush_owner()

    def _flush_owner(self) -> None:
        try:
            sent = self.sock.send(self.outbox)
        except BlockingIOError:
            sent = 0
        except OSError:
            self._owner_gone()
            return
        self.outbox = self.outbox[sent:]
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self.outbox else 0)
        self.selector.modify(self.sock, events, ("owner", None))

    def _owner_gone(self) -> None:
        """No warning: commands of a store go on (the next owner adopts them); the
        others are ended, as their owner would have done."""
        if not self.owner_there:
            return
        self.owner_there = False
        self.outbox = b""
        self.selector.unregister(self.sock)
        self.sock.close()
        for command in self.commands.values():
            if command.records is None:
                command.cancelled = True
                self._stop(command)

    # ------------------------------------------------------------------ commands
    def _records(self, folder: str | None) -> Records | None:
        if folder is None:
            return None
        records = self.records.get(folder)
        if records is None:
            records = self.records[folder] = Records(folder, self.token)
        return records

    def _start(self, request: dict) -> None:
        try:
            records = self._records(request.get("folder"))
        except OSError as exc:
            self._send({"op": "ended", "id": request["id"], "error": f"cannot record: {exc}"})
            return
        command = Command(request, records)
        if records is not None:
            records.users += 1
            key = command.key
            records.append({"key": key, "ev": "start", "at": command.started_wall,
                            "log": request["log"], "timeout": command.timeout})  # fmt: skip
            # A start asked by an owner that has died is not carried out once the store
            # has a new owner: it may have looked at these records already.
            if records.current_owner() != request.get("owner"):
                self._end(command, error="not started: the store has a new owner")
                return
        try:
            command.capture = Capture(
                request["log"], request["max_log_bytes"], request["tail_bytes"],
                request.get("mask", ()),
            )  # fmt: skip
        except OSError as exc:
            self._end(command, error=f"cannot write its log {request['log']}: {exc.strerror}")
            return
        if request.get("env") is not None:  # sent when it changed, else the last one
            self.env = dict(request["env"])
            self.env[MARK] = self.token  # what a later owner finds survivors by (survivors.py)
        env = {**self.env, **request["env_extra"]} if request.get("env_extra") else self.env
        self.commands[command.id] = command
        self.spawners.submit(command, request, env)

    def _take_spawned(self) -> None:
        try:
            while os.read(self.spawners.wake_read, 4096):
                pass
        except BlockingIOError:
            pass
        results = self.spawners.results
        while not results.empty():
            self._spawned(*results.get())

    def _spawned(self, command: Command, process: Any, proc_started: float | None) -> None:
        """On the loop: a spawner started the command (``process``) or could not (an
        ``OSError``)."""
        assert command.capture is not None
        if isinstance(process, OSError):
            command.capture.note(f"cannot start {command.argv!r}: {process}")
            self._end(command, error=f"cannot start: {process.strerror or process}")
            return
        command.process = process
        command.pgid = process.pid  # == its process group id (start_new_session)
        if command.records is not None:
            pid = {"pid": process.pid, "pgid": command.pgid, "proc_started": proc_started}
            command.records.append({"key": command.key, "ev": "pid", **pid})
        for stream, name in ((process.stdout, "stdout"), (process.stderr, "stderr")):
            assert stream is not None
            os.set_blocking(stream.fileno(), False)
            self.selector.register(stream, selectors.EVENT_READ, (name, command))
            command.registered.append(stream)
            command.open_streams += 1
        try:
            command.pidfd = os.pidfd_open(process.pid)
            self.selector.register(command.pidfd, selectors.EVENT_READ, ("exit", command))
            command.registered.append(command.pidfd)
        except (AttributeError, OSError):  # no pidfd (not Linux): polled in _tick
            command.pidfd = None
        self._send({"op": "started", "id": command.id, "pid": process.pid, "pgid": command.pgid,
                    "proc_started": proc_started})  # fmt: skip
        if command.cancelled:  # asked to stop (or its owner left) while it was starting
            self._stop(command)

    def _read_stream(self, command: Command, stream: Any, is_stderr: bool) -> None:
        try:
            chunk = os.read(stream.fileno(), 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            assert command.capture is not None
            command.capture.feed(chunk, is_stderr)
            return
        self._forget(command, stream)
        command.open_streams -= 1
        assert command.capture is not None
        command.capture.stream_ended(is_stderr)

    def _leader_exited(self, command: Command) -> None:
        assert command.process is not None
        if command.pidfd is not None:
            self._forget(command, command.pidfd)
            command.pidfd = None
        command.returncode = command.process.wait()
        self._reap_group(command.pgid)
        if group_alive(command.pgid):  # whatever it left behind in its group
            signal_group(command.pgid, signal.SIGTERM)
            command.kill_at = time.monotonic() + command.grace

    def _stop(self, command: Command) -> None:
        """SIGTERM the group now, SIGKILL after the grace unless it is gone."""
        if command.pgid and command.kill_at is None:
            signal_group(command.pgid, signal.SIGTERM)
            command.kill_at = time.monotonic() + command.grace

    def _after_leader(self, command: Command, now: float) -> None:
        """The leader was reaped: wait for the rest of the group and the pipes, then end."""
        self._reap_group(command.pgid)
        if group_alive(command.pgid):
            if command.kill_at is not None and now >= command.kill_at:
                signal_group(command.pgid, signal.SIGKILL)
                command.kill_at = now + 1.0
            return
        if command.group_gone_at is None:
            command.group_gone_at = now
        if command.open_streams and now - command.group_gone_at < PIPE_GRACE:
            return  # a process outside the group may hold a pipe a little longer
        self._end(command)

    @staticmethod
    def _reap_group(pgid: int) -> None:
        """Collect exited members re-parented to us (we are a child subreaper)."""
        try:
            while os.waitpid(-pgid, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass

    def _forget(self, command: Command, fileobj: Any) -> None:
        self.selector.unregister(fileobj)
        command.registered.remove(fileobj)
        if isinstance(fileobj, int):
            os.close(fileobj)
        else:
            fileobj.close()

    def _end(self, command: Command, error: str | None = None) -> None:
        self.commands.pop(command.id, None)
        for fileobj in list(command.registered):
            self._forget(command, fileobj)
        tail = err_line = ""
        if command.capture is not None:
            command.capture.close()
            tail, err_line = command.capture.tail_text(), command.capture.last_stderr_line()
        end = {"rc": command.returncode, "at": _now(), "tail": tail, "err_line": err_line,
               "timed_out": command.timed_out, "cancelled": command.cancelled,
               "error": error}  # fmt: skip
        records = command.records
        if records is not None:
            records.append({"key": command.key, "ev": "end", **end})
            records.users -= 1  # the file stays: its owner may not have this end yet
        self._send({"op": "ended", "id": command.id, **end})


def main(argv: list[str]) -> None:
    fd, token, owner_pid = int(argv[1]), argv[2], int(argv[3])
    # No signal is ignored here: in a session of its own no terminal signals it, and
    # an ignored signal would be inherited by every command through exec.
    if sys.platform.startswith("linux"):
        try:  # orphaned grandchildren are re-parented to us and reaped (no zombie groups)
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    sock = socket.socket(fileno=fd)
    supervisor = Supervisor(sock, token, owner_pid)
    try:
        supervisor.loop()
    except OSError as exc:  # pragma: no cover - nothing to tell but the exit status
        if exc.errno != errno.EBADF:
            raise


if __name__ == "__main__":
    main(sys.argv)
