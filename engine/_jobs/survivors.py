"""Ending what an earlier owner of a store left running, before anything runs again.

The second line of defence behind ``reaper.py``: a process may have escaped the
watcher (the watcher itself was killed, the machine lost power mid-way). Each
attempt's row records the pid, process group and start time of its command
before the command does any work, and the store records its owner's mark.
Recovery ends any process that still matches, so a task never runs beside the
orphan of its previous attempt.

A pid alone is not enough: after a reboot or a long time it may belong to an
unrelated process. The start time (in clock ticks since boot on Linux) tells
the process that was recorded from a newcomer with the same pid.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Iterable

from . import reaper

log = logging.getLogger("taskloom.engine")


def _stat_fields(pid: int) -> list[bytes] | None:
    """/proc/PID/stat from field 3 (state) on, or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()


def start_time(pid: int) -> float | None:
    """When process ``pid`` started, as an opaque number stable for its lifetime."""
    if os.path.isdir("/proc"):
        fields = _stat_fields(pid)
        try:
            return None if fields is None else float(fields[19])  # field 22: starttime
        except (IndexError, ValueError):
            return None
    try:
        import psutil

        return psutil.Process(pid).create_time()
    except Exception:  # psutil missing, or no such process
        return None


def _group_alive(pgid: int) -> bool:
    """Whether any member of the group still runs. A zombie does not count: a killed
    owner's children are re-parented to whoever reaps them, maybe never."""
    if not os.path.isdir("/proc"):
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    wanted = str(pgid).encode()
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat_fields(int(name))
            if fields and fields[2] == wanted and fields[0] not in (b"Z", b"X"):
                return True
    return False


def terminate_survivors(
    records: Iterable[tuple[int | None, int | None, float | None]],
    tokens: str | Iterable[str | None] | None,
    grace: float = 3.0,
) -> int:
    """End the recorded commands that still run, and every process carrying one of
    ``tokens`` (an earlier owner's mark, or a killed supervisor's).

    ``records`` are (pid, pgid, start time) of attempts that were running when their
    owner stopped. Returns how many process groups or processes it ended.
    """
    groups = []
    for pid, pgid, started in records:
        if pid is None or pgid is None:
            continue
        if started is not None and start_time(pid) == started and _group_alive(pgid):
            groups.append(pgid)  # the very process we started, still there
        elif started is None and _group_alive(pgid):
            groups.append(pgid)
    ended = len(groups)
    for pgid in groups:
        log.warning("ending process group %d left running by an earlier owner", pgid)
        try:
            os.killpg(pgid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + grace
    while groups and time.monotonic() < deadline:
        groups = [g for g in groups if _group_alive(g)]
        if groups:
            time.sleep(0.05)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    # A SIGKILL lands when the process is next scheduled: on a loaded machine a moment
    # later. The caller is told they are ended once they are (at most another second).
    deadline = time.monotonic() + 1.0
    while groups and time.monotonic() < deadline:
        groups = [g for g in groups if _group_alive(g)]
        if groups:
            time.sleep(0.01)
    if tokens is None or isinstance(tokens, str):
        tokens = [tokens]
    for token in tokens:
        if token:
            ended += reaper.terminate_marked(token, grace=min(grace, reaper.GRACE))
    return ended
