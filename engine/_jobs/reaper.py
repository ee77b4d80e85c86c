"""No command outlives the Taskloom process that started it, however that process ends.

A clean stop terminates running commands itself. For the deaths that give no
warning (SIGKILL, the OOM killer, a crash), each process that starts commands
marks its process tree and keeps a small watcher process:

- ``ensure_started()`` puts ``TASKLOOM_OWNER=<token>`` in this process's
  environment, so every command, every process a command starts (even one that
  leaves the process group) and every process-pool worker inherits the mark;
- it starts a watcher (``python reaper.py PID TOKEN``) in its own session,
  which sleeps until this process is gone, then terminates every process that
  still carries the mark: SIGTERM, then SIGKILL after ``GRACE`` seconds.

A program that must outlive Taskloom on purpose (a server a task starts) can be
started with the mark removed (``env -u TASKLOOM_OWNER ...``).

The same scan (``marked_processes``) lets recovery end what an earlier owner of
a store left behind when it had no watcher (see ``survivors.py``).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
import uuid

ENV_KEY = "TASKLOOM_OWNER"
GRACE = 1.0  # seconds between SIGTERM and SIGKILL once the owner is gone

_lock = threading.Lock()  # guards _token and _watcher
_token: str | None = None
_watcher: subprocess.Popen | None = None
_owner_pid: int | None = None  # the pid _token belongs to (a forked child is not the owner)


def ensure_started() -> str:
    """Mark this process's future children and start its watcher, once per process.

    Returns this process's token (the value of ``TASKLOOM_OWNER`` its children get).
    """
    global _token, _watcher, _owner_pid
    with _lock:
        if _token is not None and _owner_pid == os.getpid():
            return _token
        _owner_pid = os.getpid()
        _token = f"{_owner_pid}-{uuid.uuid4().hex[:16]}"
        os.environ[ENV_KEY] = _token
        env = {k: v for k, v in os.environ.items() if k != ENV_KEY}  # the watcher is unmarked
        try:
            _watcher = subprocess.Popen(
                # Run as a script, not "-m engine.reaper": importing the package would
                # load the whole engine into a process that only waits.
                [sys.executable, "-I", __file__, str(_owner_pid), _token],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C or SIGHUP to our group must not stop it
                env=env,
                close_fds=True,
            )
        except OSError:  # no watcher: recovery still ends survivors on the next start
            _watcher = None
        return _token


def current_token() -> str | None:
    """This process's token, if ``ensure_started`` ran in it."""
    with _lock:
        return _token if _owner_pid == os.getpid() else None


# ---------------------------------------------------------------------- finding marked processes
def _environ_has(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return needle in handle.read().split(b"\0")
    except OSError:
        return False


def marked_processes(token: str, exclude: int | None = None) -> list[int]:
    """Pids of live processes (not zombies) whose environment carries ``token``."""
    needle = f"{ENV_KEY}={token}".encode()
    found = []
    if os.path.isdir("/proc"):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            marked = pid not in (exclude, os.getpid()) and _environ_has(pid, needle)
            if marked and not _is_zombie(pid):
                found.append(pid)
        return found
    try:  # elsewhere: psutil, if it is installed
        import psutil
    except ImportError:
        return found
    for proc in psutil.process_iter():
        try:
            if proc.pid in (exclude, os.getpid()):
                continue
            if proc.environ().get(ENV_KEY) == token and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return found


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return True  # gone
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] in (b"Z", b"X")


def terminate_marked(token: str, grace: float = GRACE, exclude: int | None = None) -> int:
    """SIGTERM every process marked with ``token``, SIGKILL what is left after ``grace``.

    Returns how many processes it found. Keeps looking until none is left, so a
    process started by a dying one is caught too (bounded to a few seconds).
    """
    seen: set[int] = set()
    deadline = time.monotonic() + grace
    hard_stop = deadline + 2.0
    while True:
        pids = marked_processes(token, exclude)
        if not pids:
            return len(seen)
        killing = time.monotonic() >= deadline
        for pid in pids:
            seen.add(pid)
            try:
                os.kill(pid, signal.SIGKILL if killing else signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        if time.monotonic() >= hard_stop:
            return len(seen)
        time.sleep(0.05)


# ---------------------------------------------------------------------- the watcher process
def _wait_for_exit(pid: int) -> None:
    """Block until process ``pid`` (our parent) has exited."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        select.select([fd], [], [])
        os.close(fd)
        return
    while os.getppid() == pid:  # re-parented once the owner is gone
        time.sleep(0.2)


def _watch(owner: int, token: str) -> None:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_IGN)  # only the owner's end ends us
    if os.getppid() == owner:  # else the owner is already gone (or the pid was reused)
        _wait_for_exit(owner)
    terminate_marked(token)


if __name__ == "__main__":
    _watch(int(sys.argv[1]), sys.argv[2])
