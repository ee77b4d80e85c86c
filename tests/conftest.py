"""Shared fixtures: deterministic schedulers, a graph builder, an event recorder.

Everything here goes through the engine's public API. The autouse guard shuts
down every Scheduler a test creates, so a failing test never leaks threads into
the next one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

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


# -- Nothing outside the temporary folders -------------------------------------------------
#
# HOME and the XDG folders point into the session's temp dir for the whole run (the
# processes tests start inherit them): the command logs of a run without a log folder
# (<user cache>/taskloom/logs), the run stores, the window's settings, zsh's
# completion dump all land there. An audit hook watches this process's own writes
# (files opened for writing, folders made, SQLite files opened) and fails the test
# that wrote outside the temp folders; at the end the repository's tree must be as
# it was (the processes tests start write only where they are told).

REPO = Path(__file__).resolve().parent.parent
_TEMP = os.path.realpath(tempfile.gettempdir())
_REPO_REAL = os.path.realpath(REPO)
_home = Path()
_outside: list[str] = []  # paths this process wrote outside the temp folders


def _written_outside(path) -> str | None:
    if isinstance(path, int):
        return None
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str) or not path or path.startswith(("file:", ":memory:")):
        return None
    full = os.path.realpath(path)
    if full == os.devnull or full.startswith(("/dev/", "/proc/")):
        return None
    in_repo = full == _REPO_REAL or full.startswith(_REPO_REAL + os.sep)
    if not in_repo and (full == _TEMP or full.startswith(_TEMP + os.sep)):
        return None  # (a clone under /tmp, as CI's, is still the repository)
    if f"{os.sep}__pycache__{os.sep}" in full:  # Python's own byte-code cache
        return None
    if f"{os.sep}.pytest_cache{os.sep}" in full:  # pytest's own (and its plugins')
        return None
    return full


def _audit(event: str, args: tuple) -> None:
    if event == "open":
        path, mode, flags = args
        writing = (mode is not None and any(c in mode for c in "wax+")) or (
            mode is None and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        )
        found = _written_outside(path) if writing else None
    elif event in ("os.remove", "os.rmdir", "os.mkdir", "os.rename"):
        # (path, [mode,] dir_fd): a path relative to a folder's fd (shutil.rmtree
        # walks so) was checked when that folder was opened
        dir_fd = {"os.mkdir": 2, "os.rename": 2}.get(event, 1)
        found = _written_outside(args[0]) if args[dir_fd] is None else None
    elif event in ("shutil.rmtree", "sqlite3.connect"):
        found = _written_outside(args[0])
    else:
        return
    if found is not None:
        _outside.append(f"{event}: {found}")


def _repo_changes() -> set[str]:
    """The repository's untracked files (ignored ones too, but not the virtualenv,
    byte-code and tool caches the run itself makes)."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    except OSError:  # no git: nothing to compare
        return set()
    skip = (".venv/", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/", ".hypothesis/")
    return {  # new files only: a tracked file edited while the tests run is someone's work
        line
        for line in out.splitlines()
        if line[:2] in ("??", "!!")
        and not line[3:].startswith(skip)
        and "__pycache__/" not in line
        and ".egg-info/" not in line
    }


_saved_environ: dict[str, str] = {}
_repo_before: set[str] = set()


def pytest_configure(config):
    """Before any test module is imported (some copy ``os.environ`` at import): the
    session's own HOME and XDG folders in a temp folder; the pip configuration of the
    real home is kept (the wheel builds read it)."""
    global _home
    _saved_environ.update(os.environ)
    _home = Path(tempfile.mkdtemp(prefix="taskloom-tests-home-"))
    real_home = Path.home()
    pip_config = [real_home / ".config/pip/pip.conf", real_home / ".pip/pip.conf"]
    found = [path for path in pip_config if path.is_file()]
    if found and "PIP_CONFIG_FILE" not in os.environ:
        os.environ["PIP_CONFIG_FILE"] = str(found[0])
    os.environ["HOME"] = str(_home)
    for name, sub in (
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_RUNTIME_DIR", "runtime"),
    ):
        folder = _home / sub
        folder.mkdir(mode=0o700, parents=True)
        os.environ[name] = str(folder)
    # Hypothesis caches the constants it finds in our sources under ./.hypothesis
    # (read lazily, on first use): a fresh clone would write into the repository.
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = str(_home / ".hypothesis")
    _repo_before.update(_repo_changes())


def pytest_unconfigure(config):
    os.environ.clear()
    os.environ.update(_saved_environ)
    shutil.rmtree(_home, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def nothing_written_outside_temp():
    """At the end: the repository's tree as it was, and no write outside the temp
    folders between tests."""
    yield
    changed = _repo_changes() - _repo_before
    assert not changed, f"the tests wrote into the repository: {sorted(changed)}"
    assert not _outside, f"written outside the temporary folders between tests: {_outside}"


sys.addaudithook(_audit)


@pytest.fixture(scope="session")
def source_tree(tmp_path_factory) -> Path:
    """A copy of the repository's working tree (no virtualenv, caches or git) for the
    tests that build a wheel or an sdist: the builds write ``build/`` and
    ``*.egg-info`` beside the sources, and must not into the repository."""
    copy = tmp_path_factory.mktemp("source") / "taskloom"
    shutil.copytree(
        REPO,
        copy,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
        ),
    )
    return copy


# Hypothesis: the same examples every run, and no example database in the repository.
try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # pragma: no cover
    pass
else:
    _hypothesis_settings.register_profile("taskloom", derandomize=True, database=None)
    _hypothesis_settings.load_profile("taskloom")


@pytest.fixture(autouse=True)
def writes_stay_in_temp():
    """Fails a test that wrote outside the temp folders (this process's writes)."""
    found, _outside[:] = list(_outside), []
    assert not found, f"written outside the temporary folders before this test: {found}"
    yield
    found, _outside[:] = list(_outside), []
    assert not found, f"the test wrote outside its temporary folders: {found}"
