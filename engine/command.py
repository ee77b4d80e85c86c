"""External commands as tasks: a real subprocess per attempt, output captured to a file.

``Command(["python3", "etl.py"], cwd="/srv/etl", env={"MODE": "full"})`` is a
callable the engine runs like any task. Each call:

- starts the process in its own session, so it and every process it starts share
  one process group that can be stopped together;
- captures stdout and stderr into a log file in ``current_run().log_dir`` (else
  a private <user cache>/taskloom/logs): the first ``max_log_bytes`` in full, then
  a note of what was left out and the last ``tail_bytes``. It sets
  ``run.log_path``, ``run.output`` (the tail) and ``run.exit_code``;
- returns on exit code 0, else raises ``CommandFailed("exit code N: <last stderr line>")``;
- registers with ``run.on_cancel`` so a cancel or a timeout terminates the whole
  group: SIGTERM, then SIGKILL after ``grace`` seconds. When the main process
  ends, anything it left running in its group is terminated the same way, so no
  process outlives its attempt (one that starts its own session escapes, as with
  any process-group based runner).
"""

from __future__ import annotations

import collections
import ctypes
import os
import re
import shlex
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ._jobs import reaper
from ._jobs.context import attempt_env, current_run
from .errors import TaskCancelled

MAX_LOG_BYTES = 5 * 1024 * 1024
TAIL_BYTES = 4096
GRACE_SECONDS = 3.0


class CommandFailed(Exception):
    """The command exited non-zero, or was killed by a signal."""

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        self.exit_code = exit_code


class Command:
    """A subprocess to run as a task: an argv list, or a string with ``shell=True``."""

    def __init__(self, argv, shell: bool = False, cwd=None, env=None):
        if isinstance(argv, str):
            if not shell:
                raise ValueError(
                    f"Command({argv!r}): a command string needs shell=True; "
                    "pass an argv list to run a program directly"
                )
            if not argv.strip():
                raise ValueError("Command: empty command string")
        else:
            if shell:
                raise ValueError("Command: shell=True takes a command string, not an argv list")
            argv = [os.fspath(part) for part in argv]
            if not argv or not argv[0]:
                raise ValueError("Command: empty argv")
            if not all(isinstance(part, str) for part in argv):
                raise TypeError(f"Command: argv items must be strings, got {argv!r}")
        env = dict(env or {})
        for key, value in env.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError(f"Command: env must map str to str, got {key!r}={value!r}")
        self.argv = argv
        self.shell = bool(shell)
        self.cwd = None if cwd is None else os.fspath(cwd)
        self.env = env

    @property
    def __name__(self) -> str:  # short name for generated task ids
        first = shlex.split(self.argv)[0] if self.shell else self.argv[0]
        return os.path.basename(first) or first

    def __call__(self):
        _adopt_orphans()
        reaper.ensure_started()  # the command dies with this process, however it dies
        run = current_run()
        log_path = _new_log_path(run, self.__name__)
        capture = _Capture(log_path)
        if run is not None:
            run.log_path = str(log_path)
        try:
            process = subprocess.Popen(
                self.argv,
                shell=self.shell,
                cwd=self.cwd,
                env={**os.environ, **attempt_env(run), **self.env},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # own process group: stop it and its children
            )
        except OSError as exc:
            capture.note(f"cannot start {self!r}: {exc}")
            capture.close()
            if run is not None:
                run.output = capture.tail_text()
            raise CommandFailed(f"cannot start {self.__name__!r}: {exc.strerror or exc}") from exc

        group = process.pid  # == its process group id (start_new_session)
        if run is not None:
            try:
                run.process_started(process.pid, group)
            except BaseException:  # unrecorded, it must not run at all
                _signal_group(group, signal.SIGKILL)
                process.wait()
                raise
        readers = capture.start_readers(process.stdout, process.stderr)
        finished = threading.Event()
        if run is not None:
            run.on_cancel(lambda: _cancel_group(group, finished))
        try:
            returncode = process.wait()
        finally:
            _stop_group(group)  # whatever it left behind in its group
            finished.set()
        for reader in readers:
            reader.join(timeout=GRACE_SECONDS)  # a process outside the group may hold a pipe
        capture.close()

        if run is not None:
            run.exit_code = returncode
            run.output = capture.tail_text()
        if returncode == 0:
            return None
        if run is not None and run.cancelled:
            raise TaskCancelled(f"{self.__name__} terminated ({_describe_exit(returncode)})")
        last_line = capture.last_stderr_line()
        message = _describe_exit(returncode) + (f": {last_line}" if last_line else "")
        raise CommandFailed(message, returncode)

    def __eq__(self, other):
        if not isinstance(other, Command):
            return NotImplemented
        return (self.argv, self.shell, self.cwd, self.env) == (
            other.argv,
            other.shell,
            other.cwd,
            other.env,
        )

    def __hash__(self):
        argv = self.argv if isinstance(self.argv, str) else tuple(self.argv)
        return hash((argv, self.shell, self.cwd))

    def __repr__(self):
        extras = "".join(
            f", {name}={value!r}"
            for name, value in (("shell", self.shell), ("cwd", self.cwd), ("env", self.env))
            if value
        )
        return f"Command({self.argv!r}{extras})"


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


def _new_log_path(run, name: str) -> Path:
    folder = Path(run.log_dir) if run is not None and run.log_dir else None
    if folder is None:
        folder = _private_log_dir()
    folder.mkdir(parents=True, exist_ok=True)
    label = f"{run.task_id}-{run.attempt}" if run is not None else name
    label = re.sub(r"[^\w.-]+", "_", label)[:80] or "command"
    label = "_" + label[1:] if label.startswith(".") else label  # a task ".." is not hidden
    stamp = time.strftime("%Y%m%d-%H%M%S")
    handle, path = tempfile.mkstemp(prefix=f"{label}-{stamp}-", suffix=".log", dir=folder)
    os.close(handle)
    return Path(path)


def _private_log_dir() -> Path:
    """<user cache>/taskloom/logs, mode 0700: a shared temp folder would let others
    read the output or plant a symlink where the logs go."""
    from platformdirs import user_cache_path

    folder = user_cache_path("taskloom") / "logs"
    folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise CommandFailed(f"log folder {folder} is a symlink or not a folder: not using it")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise CommandFailed(f"log folder {folder} belongs to another user: not using it")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(folder, 0o700)
    return folder


class _Capture:
    """Writes both output streams into one capped log file and keeps the tails."""

    def __init__(self, path: Path, max_bytes: int | None = None, tail_bytes: int | None = None):
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close()
        self._lock = threading.Lock()  # guards _file, _written, _omitted and the tail
        self._max_bytes = MAX_LOG_BYTES if max_bytes is None else max_bytes
        self._written = 0
        self._omitted = 0
        # recent chunks, about tail_bytes in all
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0
        self._tail_bytes = TAIL_BYTES if tail_bytes is None else tail_bytes
        self._stderr_tail = b""

    def start_readers(self, stdout, stderr) -> list[threading.Thread]:
        readers = [
            threading.Thread(target=self._pump, args=(stdout, False), daemon=True),
            threading.Thread(target=self._pump, args=(stderr, True), daemon=True),
        ]
        for reader in readers:
            reader.start()
        return readers

    def _pump(self, stream, is_stderr: bool) -> None:
        # Whole lines only: stdout and stderr are two pipes, and a program's "warn" and
        # its "\n" may arrive as two writes with the other stream's output in between.
        pending = b""
        with stream:
            while chunk := stream.read1(65536):
                if is_stderr:
                    self._stderr_tail = (self._stderr_tail + chunk)[-self._tail_bytes :]
                pending += chunk
                cut = pending.rfind(b"\n") + 1
                if cut == 0 and len(pending) < 65536:
                    continue  # no line ended yet (a long one is passed on anyway)
                if cut == 0:
                    cut = len(pending)
                self._add(pending[:cut])
                pending = pending[cut:]
        if pending:
            self._add(pending)

    def _add(self, chunk: bytes) -> None:
        with self._lock:
            if self._file.closed:  # a straggler writing after the attempt ended
                return
            room = max(0, self._max_bytes - self._written)
            if room:
                self._file.write(chunk[:room])
                self._file.flush()  # readers (the inspector) follow the file as it fills
                self._written += min(room, len(chunk))
            self._omitted += max(0, len(chunk) - room)
            self._tail.append(chunk)
            self._tail_size += len(chunk)
            while self._tail_size - len(self._tail[0]) >= self._tail_bytes:
                self._tail_size -= len(self._tail.popleft())

    def note(self, text: str) -> None:
        self._add(f"[taskloom] {text}\n".encode())

    def tail(self) -> bytes:
        with self._lock:
            return b"".join(self._tail)[-self._tail_bytes :]

    def tail_text(self) -> str:
        return self.tail().decode("utf-8", errors="replace")

    def last_stderr_line(self) -> str:
        lines = self._stderr_tail.decode("utf-8", errors="replace").strip().splitlines()
        return lines[-1].strip() if lines else ""

    def close(self) -> None:
        with self._lock:
            if self._omitted:
                tail = b"".join(self._tail)[-self._tail_bytes :]
                self._file.write(
                    f"\n[taskloom] log capped at {self._max_bytes} bytes: {self._omitted} "
                    f"bytes left out; the last {len(tail)} bytes follow\n".encode()
                )
                self._file.write(tail)
            self._file.close()


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal_group(group: int, sig: int) -> None:
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reap_group(group: int) -> None:
    """Collect exited members that were re-parented to us (see ``_adopt_orphans``)."""
    try:
        while os.waitpid(-group, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _wait_group_gone(group: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while True:
        _reap_group(group)
        if not _group_alive(group):
            return True
        if time.monotonic() >= deadline:
            return False
        # Members that are not our children cannot be waited for: look again shortly.
        time.sleep(0.02)


def _stop_group(group: int) -> None:
    """After the leader was reaped: SIGTERM what is left of the group, SIGKILL after grace."""
    grace = GRACE_SECONDS
    _reap_group(group)
    if not _group_alive(group):
        return
    _signal_group(group, signal.SIGTERM)
    if not _wait_group_gone(group, grace):
        _signal_group(group, signal.SIGKILL)
        _wait_group_gone(group, 1.0)


def _cancel_group(group: int, finished: threading.Event) -> None:
    """Cancel callback: SIGTERM now; SIGKILL after ``grace`` unless the run finished.

    It runs on the canceller's thread (maybe the GUI), so the wait happens elsewhere.
    """
    _signal_group(group, signal.SIGTERM)
    grace = GRACE_SECONDS

    def kill_if_still_running():
        if not finished.wait(grace):
            _signal_group(group, signal.SIGKILL)

    threading.Thread(target=kill_if_still_running, daemon=True, name="kill-command").start()


_adopted = False


def _adopt_orphans() -> None:
    """Become the reaper of our orphaned grandchildren (Linux), once per process.

    A command's background children are re-parented when it exits. Where PID 1
    does not reap (some containers) a killed one would stay a zombie and keep its
    process group alive; as a subreaper we collect them ourselves.
    """
    global _adopted
    if _adopted:
        return
    _adopted = True
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass


_PR_SET_CHILD_SUBREAPER = 36
