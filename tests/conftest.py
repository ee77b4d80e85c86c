"""Shared fixtures: deterministic schedulers, a graph builder, an event recorder.

Everything here goes through the engine's public API. The autouse guard shuts
down every Scheduler a test creates, so a failing test never leaks threads into
the next one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping

import pytest

SHUTDOWN_GRACE = 15.0  # seconds a leftover scheduler gets to shut down


@pytest.fixture(autouse=True)
def shutdown_every_scheduler(monkeypatch):
    """Track Schedulers built during the test and shut each one down afterwards."""
    from taskloom.engine import Scheduler

    created = []
    original_init = Scheduler.__init__

    def tracking_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        created.append(self)

    monkeypatch.setattr(Scheduler, "__init__", tracking_init)
    yield
    stuck = [s for s in created if not _shutdown_within(s, SHUTDOWN_GRACE)]
    if stuck:
        pytest.fail(f"{len(stuck)} scheduler(s) did not shut down within {SHUTDOWN_GRACE}s")


def _shutdown_within(scheduler, seconds: float) -> bool:
    # shutdown() runs in a helper thread so a stuck engine fails the test instead of hanging it
    worker = threading.Thread(target=scheduler.shutdown, daemon=True)
    worker.start()
    worker.join(seconds)
    return not worker.is_alive()


@pytest.fixture
def clock():
    from taskloom.engine import ManualClock

    return ManualClock()


@pytest.fixture
def make_sched(clock):
    """Factory: ``make_sched(start=True, threads=False, workers=4, clock=...)``.

    Without ``threads`` the scheduler uses the ``clock`` fixture and a SyncExecutor,
    so every run happens inside the call that made it due.
    """
    from taskloom.engine import Scheduler, SyncExecutor

    def make(*, start=True, threads=False, workers=4, clock=clock, **kwargs):
        executor = None if threads else SyncExecutor()
        s = Scheduler(workers=workers, clock=clock, executor=executor, **kwargs)
        if start:
            s.start()
        return s

    return make


@pytest.fixture
def sched(make_sched):
    """A started Scheduler(ManualClock(), SyncExecutor()); shut down after the test."""
    s = make_sched()
    yield s
    s.shutdown()


@pytest.fixture
def unstarted(make_sched):
    """Like ``sched`` but not started: nothing runs until the test calls start()."""
    s = make_sched(start=False)
    yield s
    s.shutdown()


class Runs:
    """Task functions that record each run; a mutable ``fail`` set decides who raises."""

    def __init__(self, clock=None):
        self.clock = clock
        self.order: list[str] = []  # names, in run order
        self.log: list[tuple[str, int | None, float | None]] = []  # (name, attempt, now)
        self.fail: set[str] = set()
        self._lock = threading.Lock()

    def fn(self, name: str, body: Callable[[], object] | None = None):
        """A task function for ``name``; ``body`` runs inside it (e.g. to block)."""
        from taskloom.engine import current_run

        def task():
            run = current_run()
            with self._lock:
                self.order.append(name)
                now = self.clock.now() if self.clock is not None else None
                self.log.append((name, run.attempt if run else None, now))
            result = body() if body is not None else None
            if name in self.fail:
                raise RuntimeError(f"{name} failed")
            return result

        task.__name__ = f"task_{name}"
        return task

    def count(self, name: str) -> int:
        return self.order.count(name)

    def times(self, name: str) -> list[float | None]:
        return [now for n, _, now in self.log if n == name]

    def attempts(self, name: str) -> list[int | None]:
        return [attempt for n, attempt, _ in self.log if n == name]


@pytest.fixture
def runs(clock):
    return Runs(clock)


class Graph:
    """What ``build`` made: ``ids[name]`` -> task id, plus the shared ``runs``."""

    def __init__(self, scheduler, runs: Runs, ids: dict[str, str]):
        self.s = scheduler
        self.runs = runs
        self.ids = ids

    @property
    def ran(self) -> list[str]:
        return self.runs.order

    @property
    def fail(self) -> set[str]:
        return self.runs.fail

    def state(self, name: str):
        return self.s.task(self.ids[name]).state

    def states(self) -> dict[str, object]:
        return {name: self.s.task(tid).state for name, tid in self.ids.items()}


@pytest.fixture
def build(runs):
    """``build(s, {"a": [], "b": ["a"]}, fail={"b"}, rules={"b": "all_done"},
    run_at={"a": 5.0}, priority={"a": 1}, retry={"a": RetryPolicy(...)})`` -> Graph.

    Task ids are the names. Tasks are added upstream first, so no dependency is
    ever unknown.
    """

    def make(
        s,
        graph: Mapping[str, Iterable[str]],
        *,
        fail: Iterable[str] = (),
        rules: Mapping[str, str] | None = None,
        run_at: Mapping[str, float] | None = None,
        priority: Mapping[str, int] | None = None,
        retry: Mapping[str, object] | None = None,
    ) -> Graph:
        runs.fail.update(fail)
        rules, run_at, priority, retry = rules or {}, run_at or {}, priority or {}, retry or {}
        ids: dict[str, str] = {}
        for name in _upstream_first(graph):
            kwargs = {}
            if name in rules:
                kwargs["trigger_rule"] = rules[name]
            if name in retry:
                kwargs["retry"] = retry[name]
            ids[name] = s.schedule(
                runs.fn(name),
                run_at=run_at.get(name),
                name=name,
                deps=tuple(graph[name]),
                priority=priority.get(name, 0),
                **kwargs,
            )
        return Graph(s, runs, ids)

    return make


def _upstream_first(graph: Mapping[str, Iterable[str]]) -> list[str]:
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name not in graph:  # an unknown dep is the test's business
            return
        seen.add(name)
        for dep in graph.get(name, ()):
            visit(dep)
        order.append(name)

    for name in graph:
        visit(name)
    return order


class Recorder:
    """Collects every event of a scheduler; thread tests wait on it instead of sleeping."""

    def __init__(self, scheduler):
        self.events: list = []
        self._cond = threading.Condition()
        self.unsubscribe = scheduler.subscribe(self._on_event)

    def _on_event(self, event) -> None:
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def of(self, task_id: str) -> list:
        with self._cond:
            return [e for e in self.events if e.task_id == task_id]

    def kinds(self, task_id: str) -> list[str]:
        return [e.kind for e in self.of(task_id)]

    def wait_for(self, predicate: Callable[[object], bool], timeout: float = 10.0):
        """The first event matching ``predicate``, waiting for it if need be."""
        found = []

        def match() -> bool:
            found[:] = [e for e in self.events if predicate(e)][:1]
            return bool(found)

        with self._cond:
            if not self._cond.wait_for(match, timeout):
                raise AssertionError(f"no matching event within {timeout}s")
            return found[0]

    def wait_kind(self, task_id: str, kind: str, count: int = 1, timeout: float = 10.0):
        """Wait until ``task_id`` has had ``count`` events of ``kind``; return the count-th."""

        def enough() -> bool:
            return sum(1 for e in self.events if e.task_id == task_id and e.kind == kind) >= count

        with self._cond:
            if not self._cond.wait_for(enough, timeout):
                raise AssertionError(
                    f"{task_id!r} had no {count}x {kind!r} within {timeout}s: "
                    f"{[e.kind for e in self.events if e.task_id == task_id]}"
                )
            return [e for e in self.events if e.task_id == task_id and e.kind == kind][count - 1]


@pytest.fixture
def recorder():
    """``recorder(s)`` -> Recorder subscribed to ``s``."""
    return Recorder


@pytest.fixture(autouse=True)
def private_data_dir(tmp_path_factory, monkeypatch):
    """Run stores (``taskloom run``, the window) go to a fresh dir per test."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
