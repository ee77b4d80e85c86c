"""No engine thread dies unnoticed: bookkeeping that once started tasks from the
wrong state, store failures, re-entrant calls, and a safety net around each loop.

Threads are real where the case needs them; time is a ManualClock, and the tests
wait on events (a Recorder, a marker task on a one-worker scheduler), never sleep.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import count

import pytest

from taskloom.engine import (
    CycleError,
    ManualClock,
    RetryPolicy,
    Scheduler,
    SyncExecutor,
    SystemClock,
    TaskState,
    current_run,
)
from taskloom.engine.store import SQLiteStore, StoreError

S = TaskState
NOOP = "tests.engine._store_jobs:noop"  # a task a store can keep


def flaky(times: int):
    """Fails its first ``times`` attempts."""

    def body():
        if current_run().attempt <= times:
            raise RuntimeError("flaky")

    return body


def settle_worker(s, rec, name: str) -> None:
    """With one worker: once a marker task ran, the worker handled everything before it."""
    s.add(lambda: None, name=name, priority=-100)
    rec.wait_kind(name, "succeeded")


# ---------------------------------------------------------------------- case 1
@pytest.mark.timeout(30)
@pytest.mark.parametrize("pause_all", [False, True])
def test_a_due_retry_of_a_task_sent_back_to_pending_does_not_start_it(
    make_sched, clock, recorder, pause_all
):
    s = make_sched(threads=True, workers=1)
    rec = recorder(s)
    policy = RetryPolicy(max_attempts=2, base=1.0, jitter=0.0)
    s.add(flaky(1), name="job", retry=policy)
    rec.wait_kind("job", "retry_wait")
    if pause_all:
        s.pause()
    s.pause("job")
    clock.advance(1.0)  # the retry comes due while held
    s.schedule(lambda: None, 10.0, name="gate")
    s.add_dependency("job", "gate")  # back to PENDING
    assert s.task("job").state is S.PENDING
    if pause_all:
        s.resume()
    s.resume("job")
    settle_worker(s, rec, "marker")
    assert s.task("job").state is S.PENDING
    assert s.task("job").attempt == 1
    clock.advance(9.0)
    assert s.wait(timeout=10)
    assert s.task("job").state is S.SUCCEEDED
    assert s.task("job").attempt == 2
    s.shutdown()


@pytest.mark.timeout(30)
def test_run_now_of_a_recurring_task_in_retry_wait_supersedes_its_retry(
    make_sched, clock, recorder
):
    s = make_sched(threads=True, workers=1)
    rec = recorder(s)
    policy = RetryPolicy(max_attempts=2, base=5.0, jitter=0.0)
    s.schedule_every(flaky(1), 10.0, name="tick", retry=policy, run_at=0.0)
    clock.advance(0.0)
    rec.wait_kind("tick", "retry_wait")
    assert s.run_now("tick") is True  # runs the retry now
    rec.wait_kind("tick", "succeeded")
    assert s.upcoming() and all(e.kind != "retry" for e in s.upcoming())
    clock.advance(5.0)  # when the old retry would have fired
    settle_worker(s, rec, "marker")
    assert s.task("tick").state is S.SCHEDULED
    assert s.task("tick").attempt == 2
    clock.advance(5.0)
    rec.wait_kind("tick", "succeeded", count=2)
    s.cancel("tick")
    closer = threading.Thread(target=s.shutdown)
    closer.start()
    closer.join(10)
    assert not closer.is_alive()


def test_a_ready_entry_for_a_task_that_cannot_start_is_dropped_not_fatal(sched, caplog):
    """The safety net under the bookkeeping: a stray ready entry is logged and dropped."""
    sched.schedule(lambda: None, 10.0, name="gate")
    sched.add(lambda: None, name="job", deps=["gate"])
    with sched._core.lock:  # what the old bookkeeping did: a PENDING task on the ready heap
        task = sched._graph.tasks["job"]
        task.retry_pending = True
        sched._dispatcher.push_ready(task)
    with caplog.at_level(logging.ERROR, logger="taskloom.engine"):
        sched.resume()  # dispatches
    assert sched.task("job").state is S.PENDING
    assert "cannot start" in caplog.text
    sched.clock.advance(10.0)
    assert sched.wait(timeout=0)
    assert sched.task("job").state is S.SUCCEEDED


# ---------------------------------------------------------------------- case 2
@pytest.mark.parametrize("edit", ["remove", "remove_dependency"])
def test_removing_the_recurring_upstream_re_evaluates_what_became_decidable(sched, edit):
    sched.schedule_every(lambda: None, 10.0, name="R", run_at=100.0)
    sched.add(flaky(5), name="F")
    sched.add(lambda: None, name="A", deps=["R", "F"])
    sched.add(lambda: None, name="B", deps=["A"])
    sched.add(lambda: None, name="C", deps=["B"])
    assert sched.task("A").state is S.SKIPPED
    assert sched.task("B").state is S.PENDING
    if edit == "remove":
        assert sched.remove("R") is True
    else:
        sched.remove_dependency("A", "R")
    assert sched.task("B").state is S.SKIPPED
    assert sched.task("C").state is S.SKIPPED
    assert sched.wait(timeout=0)


def test_removing_a_recurring_upstream_releases_a_dependent_whose_deps_succeeded(sched):
    sched.schedule_every(lambda: None, 10.0, name="R", run_at=100.0)
    sched.add(lambda: None, name="ok")
    sched.add(lambda: None, name="A", deps=["R", "ok"])
    assert sched.task("A").state is S.PENDING
    sched.remove("R")
    assert sched.task("A").state is S.SUCCEEDED
    assert sched.wait(timeout=0)


# ---------------------------------------------------------------------- case 3
class FailingConn:
    """Wraps a sqlite3 connection; once armed, COMMIT fails as a full disk makes it:
    SQLite has already rolled the transaction back when the error reaches Python."""

    def __init__(self, conn):
        self._conn = conn
        self.armed = False

    def execute(self, sql, *args):
        if self.armed and sql == "COMMIT":
            self._conn.execute("ROLLBACK")
            raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


class FailingStore(SQLiteStore):
    """Commits fail from the first batch holding an attempt row, a task row or an
    event with ``outcome`` (a short call's start row and its task's "running" row
    are replaced before they are written: its "running" event is what is committed
    before its code returns)."""

    def __init__(self, path, outcome=None):
        super().__init__(path)
        self.outcome = outcome
        self._conn = self.conn = FailingConn(self._conn)

    def _commit(self, batch):
        if any(
            (op[0] == "attempt" and op[1][4] == self.outcome)
            or (op[0] == "update" and op[1][0] == self.outcome)
            or (op[0] == "event" and op[1][3] == self.outcome)
            for op in batch
        ):
            self.conn.armed = True
        super()._commit(batch)


def failing_store(path, outcome=None) -> tuple[FailingStore, FailingConn]:
    store = FailingStore(path, outcome)
    return store, store.conn


def test_a_failed_commit_reports_its_cause_not_the_rollback(tmp_path):
    store, conn = failing_store(tmp_path / "t.db")
    conn.armed = True
    store.delete_task("x")
    for _ in range(2):  # every later flush reports the first cause
        with pytest.raises(StoreError) as info:
            store.flush()
        assert "disk I/O error" in str(info.value)
        assert "cannot rollback" not in str(info.value)
        assert str(store.path) in str(info.value)
    store.close()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("when", ["before_the_code", "the_durable_success"])
def test_a_store_failure_fails_the_attempt_and_stops_the_engine(make_sched, clock, tmp_path, when):
    outcome = "running" if when == "before_the_code" else "succeeded"
    store, conn = failing_store(tmp_path / "t.db", outcome)
    s = make_sched(threads=True, workers=2, store=store, start=False)
    s.add(NOOP, name="job")
    s.add(NOOP, name="after", deps=["job"])  # before start: a failure would refuse it
    s.start()
    with pytest.raises(StoreError, match="disk I/O error") as info:
        s.wait(timeout=10)
    assert str(store.path) in str(info.value)
    assert "cannot rollback" not in str(info.value)
    assert s.task("job").state is S.FAILED
    assert "disk I/O error" in s.task("job").error
    assert s.task("after").state is S.SKIPPED
    closer_error = []

    def close():
        try:
            s.shutdown()
        except StoreError as exc:
            closer_error.append(exc)

    closer = threading.Thread(target=close)
    closer.start()
    closer.join(10)
    assert not closer.is_alive(), "shutdown() did not return"
    assert closer_error and "disk I/O error" in str(closer_error[0])
    assert not any(t.is_alive() for t in s._dispatcher.threads)
    with pytest.raises(StoreError):  # no more scheduling calls
        s.add(NOOP)
    store.close()


@pytest.mark.timeout(30)
def test_a_store_failure_under_sync_executor_fails_the_attempt(make_sched, clock, tmp_path):
    store, conn = failing_store(tmp_path / "t.db", "succeeded")
    s = make_sched(store=store)
    s.add(NOOP, name="job")
    assert s.task("job").state is S.FAILED
    with pytest.raises(StoreError, match="disk I/O error"):
        s.wait(timeout=0)
    with pytest.raises(StoreError, match="disk I/O error"):
        s.shutdown()
    store.close()


# ---------------------------------------------------------------------- case 4
@pytest.mark.timeout(30)
@pytest.mark.parametrize("mode", ["workers", "sync", "thread_pool"])
@pytest.mark.parametrize("call", ["wait", "shutdown"])
def test_wait_or_shutdown_from_task_code_raises(make_sched, clock, mode, call):
    pool = ThreadPoolExecutor(2) if mode == "thread_pool" else None
    if mode == "workers":
        s = make_sched(threads=True, workers=2)
    else:
        s = Scheduler(workers=2, clock=clock, executor=pool or SyncExecutor())
        s.start()
    seen = []

    def body():
        try:
            getattr(s, call)()
        except RuntimeError as exc:
            seen.append(str(exc))

    s.add(body, name="job")
    assert s.wait(timeout=10)
    assert seen == [f"{call}() called from task code would wait for itself"]
    assert s.task("job").state is S.SUCCEEDED
    s.shutdown()
    if pool is not None:
        pool.shutdown()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("threads", [True, False])
def test_wait_from_a_listener_raises(make_sched, clock, threads):
    s = make_sched(threads=threads, workers=1)
    seen = []

    def listener(event):
        if event.task_id == "job" and event.kind == "succeeded":
            try:
                s.wait()
            except RuntimeError as exc:
                seen.append(str(exc))

    s.subscribe(listener)
    s.add(lambda: None, name="job")
    assert s.wait(timeout=10)
    assert seen == ["wait() called from a listener would wait for its own delivery"]


# ---------------------------------------------------------------------- case 5
@pytest.mark.timeout(30)
def test_an_engine_error_recording_an_outcome_fails_the_attempt_and_the_worker_goes_on(
    make_sched, clock, recorder, caplog
):
    s = make_sched(threads=True, workers=1)
    rec = recorder(s)
    record = s._lifecycle.record_outcome
    broken = []

    def record_once_broken(run, error, tb):
        if not broken:
            broken.append(run)
            raise ValueError("engine bug")
        record(run, error, tb)

    s._lifecycle.record_outcome = record_once_broken
    with caplog.at_level(logging.ERROR, logger="taskloom.engine"):
        s.add(lambda: None, name="job")
        rec.wait_kind("job", "failed")
        settle_worker(s, rec, "marker")
    info = s.task("job")
    assert info.error == "engine error: ValueError: engine bug"
    assert [a.outcome for a in s.attempts("job")] == ["failed"]
    logged = [r for r in caplog.records if r.exc_info and "engine bug" in str(r.exc_info[1])]
    assert len(logged) == 1
    assert s.wait(timeout=10)
    assert all(t.is_alive() for t in s._dispatcher.threads)
    s.shutdown()


@pytest.mark.timeout(30)
def test_an_engine_error_in_the_timer_thread_is_logged_and_it_goes_on(caplog):
    s = Scheduler(workers=2, clock=SystemClock())
    on_timeout = s._lifecycle.on_timeout
    broken = []

    def on_timeout_once_broken(run):
        if not broken:
            broken.append(run)
            raise ValueError("timer bug")
        on_timeout(run)

    s._lifecycle.on_timeout = on_timeout_once_broken
    gate = threading.Event()
    with caplog.at_level(logging.ERROR, logger="taskloom.engine"):
        s.start()
        s.add(lambda: gate.wait(10), name="slow", timeout=0.05)
        s.schedule(lambda: None, s.clock.now() + 0.2, name="later")
        done = threading.Event()
        s.on("succeeded", lambda e: e.task_id == "later" and done.set())
        assert done.wait(10)
    gate.set()
    assert s.wait(timeout=10)
    assert s.task("slow").state is S.FAILED
    assert "timer bug" in s.task("slow").error
    assert all(t.is_alive() for t in s._dispatcher.threads)
    s.shutdown()


@pytest.mark.timeout(30)
def test_a_listener_raising_system_exit_does_not_kill_delivery(make_sched, recorder):
    s = make_sched(threads=True, workers=1)
    s.on("running", lambda event: (_ for _ in ()).throw(SystemExit(1)))
    rec = recorder(s)
    s.add(lambda: None, name="a")
    rec.wait_kind("a", "succeeded")
    s.add(lambda: None, name="b")
    rec.wait_kind("b", "succeeded")
    assert s._delivery._thread.is_alive()
    assert s.wait(timeout=10)


@pytest.mark.timeout(30)
def test_keyboard_interrupt_in_task_code_does_not_kill_a_thread_pool_thread(clock):
    pool = ThreadPoolExecutor(1)
    s = Scheduler(workers=1, clock=clock, executor=pool)
    s.start()

    def interrupted():
        raise KeyboardInterrupt

    s.add(interrupted, name="a")
    s.add(lambda: None, name="b", deps=["a"], trigger_rule="all_done")
    assert s.wait(timeout=10)
    assert s.task("a").state is S.FAILED
    assert s.task("b").state is S.SUCCEEDED
    s.shutdown()
    pool.shutdown()


@pytest.mark.timeout(30)
def test_an_unexpected_error_in_the_store_writer_marks_the_store_failed(tmp_path):
    store = SQLiteStore(tmp_path / "t.db")
    failures = []
    store.add_failure_listener(failures.append)

    def broken(batch):
        raise MemoryError("writer bug")

    store._commit = broken
    store.delete_task("x")
    with pytest.raises(StoreError, match="writer bug"):
        store.flush()
    store._thread.join(10)
    assert not store._thread.is_alive()
    assert len(failures) == 1 and "writer bug" in str(failures[0])
    store.close()


# ---------------------------------------------------------------------- case 6
def unexplained_states(s) -> list[str]:
    """Tasks in a state no rule explains, looked at atomically under the engine lock."""
    found = []
    with s._core.lock:
        for t in s._graph.tasks.values():
            state = t.state
            if state is S.RUNNING and not t.runs:
                found.append(f"{t.id}: RUNNING with no run")
            if state is S.READY and t.ready is None and not (t.held or t.paused or t.runs):
                found.append(f"{t.id}: READY, not queued, held or paused")
            if state in (S.PENDING, S.SKIPPED) and (t.ready is not None or t.retry_pending):
                found.append(f"{t.id}: {state.name} with a queued start")
            if state in (S.PENDING, S.SKIPPED) and t.retry_timer is not None:
                found.append(f"{t.id}: {state.name} with a retry timer")
    return found


def hammer_body():
    run = current_run()
    pause = random.uniform(0.0, 0.01)
    if random.random() < 0.5:
        time.sleep(pause)  # stubborn: ignores cancel and timeout
    else:
        run.wait_cancelled(pause)
    if random.random() < 0.3:
        raise RuntimeError("flaky")


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize("seed", [11, 22, 33])
def test_an_eight_thread_api_hammer_kills_no_engine_thread_and_strands_no_task(monkeypatch, seed):
    crashes = []
    monkeypatch.setattr(threading, "excepthook", crashes.append)
    s = Scheduler(workers=4, clock=SystemClock())
    policy = RetryPolicy(max_attempts=3, base=0.005, jitter=0.0)
    names_lock = threading.Lock()
    names: list[str] = []
    serial = count()

    def new_task(rnd) -> None:
        with names_lock:
            known = list(names)
        deps = rnd.sample(known, k=min(len(known), rnd.choice((0, 0, 1, 2))))
        name = f"t{next(serial)}"
        kind = rnd.random()
        kw = {"name": name, "deps": deps, "retry": policy, "timeout": rnd.choice((None, 0.005))}
        if kind < 0.2:
            overlap = rnd.choice(("skip", "queue", "parallel"))
            kw["retry"] = None if overlap == "parallel" else policy  # see the report: RETRY_WAIT
            s.schedule_every(hammer_body, rnd.uniform(0.01, 0.05), overlap=overlap, **kw)
        elif kind < 0.3:
            s.schedule(hammer_body, s.clock.now() + rnd.uniform(0, 0.05), **kw)
        else:
            s.add(hammer_body, **kw)
        with names_lock:
            names.append(name)

    rnd0 = random.Random(seed)
    for _ in range(20):
        new_task(rnd0)
    s.start()
    engine_threads = [*s._dispatcher.threads, s._delivery._thread]
    stop, problems = threading.Event(), []

    def watchdog():
        while not stop.wait(0.01):
            problems.extend(f"{t.name} died" for t in engine_threads if not t.is_alive())
            problems.extend(unexplained_states(s))

    expected = (CycleError, KeyError, ValueError)  # refusals the API documents

    def hammer(thread_seed: int) -> None:
        rnd = random.Random(thread_seed)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            with names_lock:
                known = list(names)
            a, b = rnd.choice(known), rnd.choice(known)
            op = rnd.randrange(14)
            try:
                if op == 0:
                    new_task(rnd)
                elif op == 1:
                    if s.remove(a):
                        with names_lock:
                            if a in names:
                                names.remove(a)
                elif op == 2:
                    s.add_dependency(a, b)
                elif op == 3:
                    deps = s.task(a).deps
                    if deps:
                        s.remove_dependency(a, rnd.choice(deps))
                elif op == 4:
                    s.cancel(a)
                elif op in (5, 6):
                    s.retry(a)
                elif op in (7, 8):
                    s.run_now(a)
                elif op == 9:
                    s.pause(a)
                elif op == 10:
                    s.resume(a)
                elif op == 11:
                    s.pause()
                else:
                    s.resume()
            except expected:
                pass  # a task another thread removed, a cycle, a started task
            time.sleep(rnd.uniform(0, 0.001))

    watcher = threading.Thread(target=watchdog, daemon=True)
    watcher.start()
    threads = [threading.Thread(target=hammer, args=(seed * 100 + i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    s.resume()
    for info in s.tasks():  # recurring ones never settle: stop everything
        s.resume(info.id)
        s.cancel(info.id)
    settled = s.wait(timeout=10)
    stop.set()
    watcher.join(5)
    problems.extend(unexplained_states(s))
    closer = threading.Thread(target=s.shutdown)
    closer.start()
    closer.join(15)

    assert not closer.is_alive(), "shutdown() did not return"
    assert settled, {i.id: i.state for i in s.tasks() if not i.state.settled}
    assert not sorted(set(problems)), sorted(set(problems))[:20]
    assert not crashes, crashes


def test_a_parallel_occurrence_failing_beside_a_running_one_does_not_break_the_task():
    """overlap=parallel with a retry policy: occurrence 1 fails while occurrence 2 runs
    (the task stays RUNNING, no RETRY_WAIT under a live run), then 2 succeeds, then the
    retry of 1 runs. Before, the success raised RETRY_WAIT -> SUCCEEDED in the worker."""
    clock = ManualClock()
    s = Scheduler(workers=4, clock=clock)
    started: dict[int, threading.Event] = {1: threading.Event(), 2: threading.Event()}
    release = {1: threading.Event(), 2: threading.Event(), 3: threading.Event()}
    count = {"n": 0}
    count_lock = threading.Lock()

    def job():
        with count_lock:
            count["n"] += 1
            n = count["n"]
        if n in started:
            started[n].set()
        release[min(n, 3)].wait(10)
        if n == 1:
            raise RuntimeError("occurrence 1 fails")

    ended = threading.Event()
    s.on("succeeded", lambda e: ended.set())
    outcomes: list[str] = []
    third = threading.Event()

    def on_event(event):
        if event.outcome is not None:
            outcomes.append(str(event.outcome))
            if len(outcomes) >= 3:
                third.set()

    s.subscribe(on_event)
    policy = RetryPolicy(max_attempts=3, base=100, jitter=0)
    s.schedule_every(job, 10, overlap="parallel", retry=policy, name="p")
    s.start()
    clock.advance(10)
    assert started[1].wait(5)
    clock.advance(10)
    assert started[2].wait(5)
    failed = threading.Event()
    s.on("running", lambda e: failed.set() if e.error else None)
    release[1].set()
    assert failed.wait(5)
    assert s.task("p").state is TaskState.RUNNING  # occurrence 2 still runs
    release[2].set()
    assert ended.wait(5)
    assert s.task("p").state is TaskState.SCHEDULED
    release[3].set()
    clock.advance(100)  # the retry of occurrence 1 comes due (the next cadence too)
    assert third.wait(5), outcomes
    assert outcomes[:3] == ["failed", "succeeded", "succeeded"], outcomes
    assert all(t.is_alive() for t in s._dispatcher.threads)  # no worker died
    s.shutdown(wait=True, cancel_running=True)


def test_a_worker_waiting_politely_for_the_core_lock_blocks_after_a_bounded_number_of_tries(
    monkeypatch,
):
    """A holder that sleeps with the lock must not turn a waiting worker into a busy loop."""
    from taskloom.engine._core import dispatch

    yields = []
    monkeypatch.setattr(dispatch.time, "sleep", lambda s: yields.append(s))
    lock = threading.Lock()
    lock.acquire()
    got = threading.Event()

    def worker():
        dispatch._acquire_politely(lock)
        got.set()
        lock.release()

    thread = threading.Thread(target=worker)
    thread.start()
    assert not got.wait(0.2)  # still waiting: the holder has not released
    assert len(yields) == dispatch.POLITE_TRIES  # then blocked, not spinning on
    lock.release()
    assert got.wait(5)
    thread.join(5)
