"""Process-table helpers shared by the tests that start real processes."""

from __future__ import annotations

import os


def group_exists(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still there."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for(predicate, timeout: float = 20.0, what: str = "condition") -> None:
    """Poll ``predicate`` (a real process's doing: no event to wait on) until true."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs: there, and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` runs: a zombie does not count (a killed
    owner's children are re-parented to whoever reaps them, maybe never)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False
