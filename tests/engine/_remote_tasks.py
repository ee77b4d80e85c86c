"""Task functions for the process-pool and Dask tests.

They live in an importable module because code sent to another process travels
by reference ("tests.engine._remote_tasks:name"), never as a lambda.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from taskloom.engine import current_run


def record_pid(path: str) -> None:
    """Write the id of the process that ran this task, and what the run knew of itself."""
    run = current_run()
    Path(path).write_text(f"{os.getpid()} {run.task_id} {run.attempt}")


def fail(message: str) -> None:
    raise ValueError(message)


def exit_process(code: int = 3) -> None:
    """Die without returning, as a segfault or an OOM kill would."""
    os._exit(code)


def exit_process_once(marker: str) -> None:
    """Die on the first attempt (leaving ``marker``); succeed on the next."""
    if not os.path.exists(marker):
        Path(marker).write_text(str(os.getpid()))
        os._exit(1)


def kill_own_process_once(marker: str) -> None:
    """SIGKILL the worker process running this, on the first attempt only."""
    if not os.path.exists(marker):
        Path(marker).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)


def unpicklable_result():
    return lambda: None


# ---------------------------------------------------------------------- test helpers
def announcing_sleeper(fifo: str, seconds: int = 60):
    """A Command that writes its pid into ``fifo`` (opened by the test), then sleeps.

    The test's blocking read of the fifo returns once the command really runs, so
    no test has to poll for "has it started yet".
    """
    from taskloom.engine.command import Command

    return Command(["sh", "-c", f'echo "$$" > "{fifo}"; exec sleep {seconds}'])


def read_announced_pid(fifo: str) -> int:
    with open(fifo) as stream:  # blocks until the command opens it for writing
        return int(stream.read().strip())


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def engine_submits_in_run_context() -> bool:
    """Whether the engine makes the run's context current while it calls submit()."""
    from concurrent.futures import Executor

    from taskloom.engine import Scheduler, SyncExecutor

    seen = []

    class Probe(Executor):
        def submit(self, fn, /, *args, **kwargs):
            seen.append(current_run())
            return SyncExecutor().submit(fn, *args, **kwargs)

    with Scheduler(workers=1, executor=Probe()) as s:
        s.schedule(os.getpid, name="probe")
        s.wait(10)
    return bool(seen) and seen[0] is not None and seen[0].task_id == "probe"


def cancel_a_running_sleeper(executor, workers: int, tmp_path: Path):
    """Start a 60 s command on ``executor``, cancel it once it runs, wait until it settled.

    Returns (TaskInfo, its last Attempt, the command's pid, seconds the cancel took);
    the executor tests of pools and of Dask assert on these.
    """
    import time

    from taskloom.engine import Scheduler

    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    with Scheduler(workers=workers, executor=executor) as s:
        s.add(announcing_sleeper(str(fifo)), name="sleeper")
        s.start()
        pid = read_announced_pid(str(fifo))
        assert process_exists(pid)
        started = time.monotonic()
        assert s.cancel("sleeper")
        assert s.wait(30)
        took = time.monotonic() - started
        return s.task("sleeper"), s.attempts("sleeper")[-1], pid, took
