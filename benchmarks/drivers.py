"""One small adapter per system, so every workload drives them the same way.

A driver wraps one scheduler instance: ``schedule`` (a one-shot timer; ``run_at``
in ``time.monotonic()`` seconds, None = now), ``add`` (a graph task), ``cancel``,
``start``, ``run_until`` (block until the workload says it is done) and
``shutdown``. ``on_done(ok)`` is each system's own listener mechanism, called once
per finished task. A driver lists the workloads it can take part in.
"""

from __future__ import annotations

import itertools
import sched
import threading
import time
from datetime import UTC, datetime

ALL = frozenset({"W1", "W2", "W3", "W4", "W5", "W6"})


class Driver:
    name = ""
    label = ""
    supports: frozenset[str] = frozenset()
    timers = True  # schedule() accepts a run_at

    def schedule(self, fn, run_at=None, priority=0):
        raise NotImplementedError

    def add(self, fn, name, deps=()):
        raise NotImplementedError

    def cancel(self, handle) -> None:
        raise NotImplementedError

    def remove_cancelled(self) -> bool:
        """Drop cancelled tasks from the scheduler entirely; False if it cannot."""
        return False

    def start(self) -> None:
        pass

    def run_until(self, done: threading.Event, timeout: float) -> bool:
        return done.wait(timeout)

    def shutdown(self) -> None:
        pass


class TaskloomDriver(Driver):
    name = "taskloom"
    label = "Taskloom"
    supports = ALL
    _FINISHED = {"succeeded": True, "failed": False, "skipped": False}

    def __init__(self, workers: int, on_done=None):
        from taskloom.engine import Scheduler

        self.s = Scheduler(workers=workers)
        if on_done is not None:
            finished = self._FINISHED

            def listener(event):
                ok = finished.get(event.kind)
                if ok is not None:
                    on_done(ok)

            self.s.subscribe(listener)

    def schedule(self, fn, run_at=None, priority=0):
        return self.s.schedule(fn, run_at, priority=priority)

    def add(self, fn, name, deps=()):
        return self.s.add(fn, name=name, deps=deps)

    def cancel(self, handle) -> None:
        self.s.cancel(handle)

    def remove_cancelled(self) -> bool:
        # A cancelled task stays queryable (state CANCELLED) until remove() is called.
        from taskloom.engine import TaskState

        for info in self.s.tasks():
            if info.state is TaskState.CANCELLED:
                self.s.remove(info.id)
        return True

    def start(self) -> None:
        self.s.start()

    def shutdown(self) -> None:
        self.s.shutdown(wait=True)


class TaskloomBeforeDriver(TaskloomDriver):
    """Taskloom from an earlier checkout (``engine_bench --before DIR``): the runner
    in that checkout drives it; this class only names the column."""

    name = "taskloom_before"
    label = "Taskloom before"


class TextbookTimerDriver(Driver):
    name = "textbook_timer"
    label = "textbook timer"
    supports = frozenset({"W1", "W2", "W4", "W5", "W6"})

    def __init__(self, workers: int, on_done=None):
        from .peers.textbook_timer import TextbookTimer

        self.s = TextbookTimer(workers=workers, listener=on_done)

    def schedule(self, fn, run_at=None, priority=0):
        return self.s.schedule(fn, run_at, priority)

    def cancel(self, handle) -> None:
        self.s.cancel(handle)

    def start(self) -> None:
        self.s.start()

    def shutdown(self) -> None:
        self.s.shutdown(wait=True)


class TextbookDagDriver(Driver):
    name = "textbook_dag"
    label = "textbook DAG"
    supports = frozenset({"W1", "W3", "W6"})
    timers = False

    def __init__(self, workers: int, on_done=None):
        from .peers.textbook_dag import TextbookDag

        self.s = TextbookDag(workers=workers, listener=on_done)
        self._names = itertools.count()

    def schedule(self, fn, run_at=None, priority=0):
        if run_at is not None:
            raise ValueError("the textbook DAG scheduler has no timers")
        return self.s.add(fn, f"task-{next(self._names)}", (), priority)

    def add(self, fn, name, deps=()):
        return self.s.add(fn, name, deps)

    def start(self) -> None:
        self.s.start()

    def shutdown(self) -> None:
        self.s.shutdown(wait=True)


class APSchedulerDriver(Driver):
    name = "apscheduler"
    label = "APScheduler 3"
    supports = frozenset({"W1", "W2", "W4", "W5"})

    def __init__(self, workers: int, on_done=None):
        from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, EVENT_JOB_MISSED
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.jobstores.memory import MemoryJobStore
        from apscheduler.schedulers.background import BackgroundScheduler

        self.s = BackgroundScheduler(
            jobstores={"default": MemoryJobStore()},
            executors={"default": ThreadPoolExecutor(workers)},
            # No misfire window and no coalescing: every job runs however late.
            job_defaults={"misfire_grace_time": None, "coalesce": False},
            timezone="UTC",
        )
        # Converts monotonic run times to the aware datetimes APScheduler wants.
        self._wall_offset = time.time() - time.monotonic()
        if on_done is not None:
            self.s.add_listener(
                lambda event: on_done(event.code == EVENT_JOB_EXECUTED),
                EVENT_JOB_EXECUTED | EVENT_JOB_ERROR | EVENT_JOB_MISSED,
            )

    def schedule(self, fn, run_at=None, priority=0):
        if run_at is None:
            return self.s.add_job(fn)
        run_date = datetime.fromtimestamp(run_at + self._wall_offset, UTC)
        return self.s.add_job(fn, "date", run_date=run_date)

    def cancel(self, handle) -> None:
        self.s.remove_job(handle.id)

    def start(self) -> None:
        self.s.start()

    def shutdown(self) -> None:
        self.s.shutdown(wait=True)


class SchedDriver(Driver):
    """The standard library's ``sched``: runs in the calling thread, so 1 worker."""

    name = "sched"
    label = "stdlib sched"
    supports = frozenset({"W1", "W2", "W4", "W5", "W6"})

    def __init__(self, workers: int, on_done=None):
        self.s = sched.scheduler(time.monotonic, time.sleep)
        self._on_done = on_done

    def schedule(self, fn, run_at=None, priority=0):
        when = time.monotonic() if run_at is None else run_at
        if self._on_done is not None:
            return self.s.enterabs(when, -priority, self._call, (fn,))
        return self.s.enterabs(when, -priority, fn)  # sched: a lower number runs first

    def _call(self, fn) -> None:
        try:
            fn()
            ok = True
        except Exception:
            ok = False
        self._on_done(ok)

    def cancel(self, handle) -> None:
        self.s.cancel(handle)

    def run_until(self, done: threading.Event, timeout: float) -> bool:
        self.s.run()  # returns when the queue is empty
        return done.is_set()


DRIVERS: dict[str, type[Driver]] = {
    d.name: d
    for d in (
        TaskloomDriver,
        TaskloomBeforeDriver,
        TextbookTimerDriver,
        TextbookDagDriver,
        APSchedulerDriver,
        SchedDriver,
    )
}
