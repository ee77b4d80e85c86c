"""Task functions for store tests: importable by reference from a fresh process."""

from __future__ import annotations

import os
import signal
import time

from taskloom.engine import current_run


def record(name: str, log: str, seconds: float = 0.0, fail_first: bool = False) -> None:
    """Append 'start'/'end' lines (with pid and attempt) to ``log``; optionally fail once."""
    run = current_run()
    attempt = run.attempt if run is not None else 0
    with open(log, "a") as f:
        f.write(f"start {name} {os.getpid()} {attempt}\n")
    if seconds:
        time.sleep(seconds)  # the work a real job would do
    if fail_first and attempt == 1:
        raise RuntimeError(f"{name} fails its first attempt")
    with open(log, "a") as f:
        f.write(f"end {name} {os.getpid()} {attempt}\n")


def block_until_cancelled(log: str) -> None:
    run = current_run()
    with open(log, "a") as f:
        f.write(f"start block {os.getpid()} {run.attempt}\n")
    run.wait_cancelled(60)


def noop() -> None:
    pass


def fail_then_block(log: str) -> None:
    """Attempt 1 fails; later attempts write 'start block' and wait to be cancelled."""
    run = current_run()
    if run.attempt == 1:
        raise RuntimeError("the first attempt fails")
    block_until_cancelled(log)


def bring_the_process_down() -> None:
    """In-process code that kills its owner at once, before any commit could land."""
    os.kill(os.getpid(), signal.SIGKILL)


def fill_folder(folder: str) -> None:
    """Fill the file system ``folder`` is on, to the last block (a full-disk test)."""
    with open(os.path.join(folder, "filler"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        except OSError:
            pass


def pause(seconds: float = 0.5) -> None:
    """In-process work that takes a while, so that many run at once."""
    time.sleep(seconds)
