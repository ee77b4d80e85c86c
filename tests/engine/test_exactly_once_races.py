"""An attempt ends before its successor starts; and two races around outcomes and cancel.

- After a timeout the outcome is recorded at once, but the task's next start (retry,
  run now, manual retry, next occurrence) waits until the timed-out code returned.
- Race A: a run whose code returns as its timeout fires is stored with the
  engine's outcome, never "succeeded" while the engine says FAILED.
- Race B: a cancel (or timeout) that lands while a run is being submitted to an
  executor reaches the future attached afterwards.

Each interleaving is forced with Events (a blocking submit, a hook after the code
returned, a held store commit), with a ManualClock wherever time matters.
"""

from __future__ import annotations

import random
import sys
import textwrap
import threading
import time
from concurrent.futures import Executor, Future

import pytest

from taskloom.engine import (
    RemoteResult,
    RetryPolicy,
    Scheduler,
    SystemClock,
    TaskState,
    current_run,
)
from taskloom.engine.command import Command
from taskloom.engine.errors import TaskCancelled
from taskloom.engine.store import SQLiteStore

S = TaskState
NOOP = "tests.engine._store_jobs:noop"  # a task a store can keep


class Concurrency:
    """Task bodies enter and leave here; it keeps the most copies of each task at once."""

    def __init__(self):
        self._lock = threading.Lock()
        self.now: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.started: dict[str, int] = {}

    def enter(self, task_id: str) -> None:
        with self._lock:
            n = self.now[task_id] = self.now.get(task_id, 0) + 1
            self.most[task_id] = max(self.most.get(task_id, 0), n)
            self.started[task_id] = self.started.get(task_id, 0) + 1

    def leave(self, task_id: str) -> None:
        with self._lock:
            self.now[task_id] -= 1


def blocking_body(conc: Concurrency, gates: list[threading.Event]):
    """Attempt n blocks on gates[n-1] (ignoring cancel, as stubborn code does)."""

    def body():
        run = current_run()
        conc.enter(run.task_id)
        try:
            if run.attempt <= len(gates):
                assert gates[run.attempt - 1].wait(10), "test never released the attempt"
        finally:
            conc.leave(run.task_id)

    return body


# ---------------------------------------------------------------------- the rule
@pytest.mark.timeout(30)
@pytest.mark.parametrize("next_start", ["retry_timer", "run_now", "cancel_then_retry"])
def test_the_next_attempt_waits_for_the_timed_out_one_to_return(
    make_sched, clock, recorder, next_start
):
    s = make_sched(threads=True, workers=2)
    rec = recorder(s)
    conc = Concurrency()
    first = threading.Event()
    policy = RetryPolicy(max_attempts=3, base=1.0, jitter=0.0)
    s.schedule(blocking_body(conc, [first]), name="job", timeout=5.0, retry=policy)
    rec.wait_kind("job", "running")

    clock.advance(5.0)  # the timeout fires; attempt 1 still runs
    assert s.task("job").state is S.RETRY_WAIT  # the outcome shows at once
    assert s.attempts("job")[0].outcome == "failed"
    if next_start == "retry_timer":
        clock.advance(1.0)
    elif next_start == "run_now":
        assert s.run_now("job") is True
    else:
        assert s.cancel("job") is True
        assert s.task("job").state is S.CANCELLED
        assert s.retry("job") is True
    assert s.task("job").state is S.READY  # due, but held for the lingering attempt
    assert conc.started["job"] == 1

    first.set()
    assert s.wait(timeout=10)
    assert s.task("job").state is S.SUCCEEDED
    assert conc.started["job"] == 2
    assert conc.most["job"] == 1


@pytest.mark.timeout(30)
@pytest.mark.parametrize("overlap", ["skip", "queue"])
def test_a_recurring_occurrence_waits_for_a_timed_out_run(make_sched, clock, recorder, overlap):
    s = make_sched(threads=True, workers=1)
    rec = recorder(s)
    conc = Concurrency()
    first = threading.Event()
    s.schedule_every(
        blocking_body(conc, [first]), 10.0, name="tick", overlap=overlap, timeout=2.0, run_at=0.0
    )
    clock.advance(0.0)
    rec.wait_kind("tick", "running")
    clock.advance(2.0)  # timed out, back on the timer heap; the code still runs
    assert s.task("tick").state is S.SCHEDULED
    clock.advance(8.0)  # the next occurrence comes due while the old run lingers
    assert conc.started["tick"] == 1
    first.set()
    if overlap == "queue":  # queued, and started once the old run returned
        rec.wait_kind("tick", "succeeded")
        assert conc.started["tick"] == 2
    else:  # skipped, as for a run still in flight
        s.add(lambda: None, name="marker")  # the one worker takes it after the old run
        rec.wait_kind("marker", "succeeded")
        assert conc.started["tick"] == 1
        clock.advance(10.0)
        rec.wait_kind("tick", "succeeded")
    assert conc.most["tick"] == 1


@pytest.mark.timeout(30)
def test_parallel_occurrences_may_overlap_a_timed_out_run_but_its_retry_waits(
    make_sched, clock, recorder
):
    s = make_sched(threads=True, workers=3)
    rec = recorder(s)
    conc = Concurrency()
    gates = [threading.Event(), threading.Event()]
    policy = RetryPolicy(max_attempts=2, base=1.0, jitter=0.0)
    s.schedule_every(
        blocking_body(conc, gates),
        10.0,
        name="tick",
        overlap="parallel",
        timeout=2.0,
        retry=policy,
        run_at=0.0,
    )
    clock.advance(0.0)
    rec.wait_kind("tick", "running")
    assert s.run_now("tick") is True  # a second occurrence, in parallel (attempt 2)
    rec.wait_kind("tick", "running", count=2)
    assert conc.most["tick"] == 2
    gates[1].set()
    rec.wait_kind("tick", "succeeded")
    clock.advance(2.0)  # attempt 1 times out: a retry in 1 s
    assert s.task("tick").state is S.RETRY_WAIT
    clock.advance(1.0)
    assert conc.started["tick"] == 2  # the retry waits for attempt 1 to return
    gates[0].set()
    rec.wait_kind("tick", "running", count=3)
    rec.wait_kind("tick", "succeeded", count=2)
    assert conc.started["tick"] == 3


# ---------------------------------------------------------------------- a real command
LINGERER = textwrap.dedent(
    """
    import os, signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # takes ~1 s to go after SIGTERM
    def note(what):
        with open(sys.argv[1], "a") as f:
            f.write(f"{what} {os.getpid()} {time.monotonic()}\\n")
    note("start")
    time.sleep(1.0)
    note("end")
    """
)


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_copies_of_a_command_that_lingers_after_sigterm_never_overlap(tmp_path, executor):
    ledger = tmp_path / "ledger"
    pool = None
    if executor == "processes":
        from taskloom.engine.pools import RecoveringProcessPool

        pool = RecoveringProcessPool(1)
    if pool is not None:  # children and the cancel manager up before the timeouts start
        pool.submit(Command(["true"])).result(timeout=30)
    started = time.monotonic()
    try:
        with Scheduler(workers=2, executor=pool) as s:
            s.add(
                Command([sys.executable, "-c", LINGERER, str(ledger)]),
                name="slow",
                timeout=0.3,
                retry=RetryPolicy(max_attempts=3, base=0.05, jitter=0.0),
            )
            assert s.wait(timeout=30)
            info = s.task("slow")
    finally:
        if pool is not None:
            pool.shutdown()
    assert time.monotonic() - started < 20
    assert info.state is S.FAILED
    assert info.error.startswith("TaskTimeout:")
    spans: dict[str, list[float]] = {}
    for line in ledger.read_text().splitlines():
        what, pid, at = line.split()
        spans.setdefault(pid, []).append(float(at))
    assert len(spans) == 3
    intervals = sorted(spans.values())
    assert all(len(span) == 2 for span in intervals)  # each copy ran to its own end
    for (_, end), (start, _) in zip(intervals, intervals[1:], strict=False):
        assert end <= start, f"copies overlapped: {intervals}"


# ---------------------------------------------------------------------- Race A
@pytest.mark.timeout(30)
def test_code_returning_as_its_timeout_fires_is_stored_as_the_engine_decided(
    make_sched, clock, recorder, tmp_path
):
    """The timeout lands between the code returning and the worker taking the lock."""
    store = SQLiteStore(tmp_path / "t.db")
    s = make_sched(threads=True, workers=1, store=store)
    rec = recorder(s)
    returned, go_on = threading.Event(), threading.Event()
    invoke = s._dispatcher.invoke

    def invoke_then_pause(run):
        result = invoke(run)
        returned.set()
        assert go_on.wait(10)
        return result

    s._dispatcher.invoke = invoke_then_pause
    s.add(NOOP, name="job", timeout=1.0)
    assert returned.wait(10)
    clock.advance(1.0)  # times out after the code returned, before its outcome is taken
    go_on.set()
    rec.wait_kind("job", "failed")
    assert s.wait(timeout=10)
    store.flush()
    assert s.task("job").state is S.FAILED
    assert [a.outcome for a in s.attempts("job")] == ["failed"]
    assert [a["outcome"] for a in store.attempts("job")] == ["failed"]


class ThreadExecutor(Executor):
    """Runs each call on a thread of its own (not a local executor to the engine)."""

    def submit(self, fn, /, *args, **kwargs):
        future = Future()

        def run():
            future.set_running_or_notify_cancel()
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        threading.Thread(target=run, daemon=True).start()
        return future


@pytest.mark.timeout(30)
@pytest.mark.parametrize("mode", ["workers", "executor"])
def test_a_timeout_cannot_land_between_choosing_a_durable_success_and_queueing_it(
    clock, tmp_path, mode
):
    """The timeout fires at the moment the engine starts making the success durable.

    If that moment is outside the engine lock (the race), the timeout is applied
    right there; if inside, it can only apply once the choice is made, and then the
    run no longer times out. Either way store and engine must agree.
    """
    store = SQLiteStore(tmp_path / "t.db")
    executor = ThreadExecutor() if mode == "executor" else None
    s = Scheduler(workers=1, clock=clock, executor=executor, store=store)
    durable = s._dispatcher.finish_when_durable
    advancers = []

    def timeout_fires_now(run):
        if s._core.lock.locked():  # atomic with the choice: the timeout comes after it
            advancer = threading.Thread(target=clock.advance, args=(1.0,))
            advancer.start()
            advancers.append(advancer)
        else:
            clock.advance(1.0)
        durable(run)

    s._dispatcher.finish_when_durable = timeout_fires_now
    s.start()
    s.add(NOOP, name="job", timeout=1.0)
    assert s.wait(timeout=10)
    for advancer in advancers:
        advancer.join(10)
    assert s.wait(timeout=10)
    store.flush()
    engine_outcomes = [a.outcome for a in s.attempts("job")]
    stored_outcomes = [a["outcome"] for a in store.attempts("job")]
    assert stored_outcomes == engine_outcomes
    assert engine_outcomes == ["succeeded" if s.task("job").state is S.SUCCEEDED else "failed"]
    s.shutdown()


class HeldCommitStore(SQLiteStore):
    """Holds the commit of a batch that holds a succeeded attempt until released."""

    def __init__(self, path):
        super().__init__(path)
        self.holding, self.release = threading.Event(), threading.Event()

    def _commit(self, batch):
        if any(op[0] == "attempt" and op[1][4] == "succeeded" for op in batch):
            self.holding.set()
            assert self.release.wait(10)
        super()._commit(batch)


@pytest.mark.timeout(30)
def test_a_success_waiting_for_its_commit_is_not_timed_out(make_sched, clock, tmp_path):
    store = HeldCommitStore(tmp_path / "t.db")
    s = make_sched(threads=True, workers=1, store=store)
    s.add(NOOP, name="job", timeout=1.0)
    assert store.holding.wait(10)
    clock.advance(5.0)  # past the timeout while the success is being made durable
    assert s.task("job").state is S.RUNNING
    store.release.set()
    assert s.wait(timeout=10)
    store.flush()
    assert s.task("job").state is S.SUCCEEDED
    assert [a.outcome for a in s.attempts("job")] == ["succeeded"]
    assert [a["outcome"] for a in store.attempts("job")] == ["succeeded"]


class PausingResult(RemoteResult):
    """A remote outcome whose hand-over to the engine waits for the test."""

    __slots__ = ("arrived", "go_on")

    def apply_to(self, ctx):
        self.arrived.set()
        assert self.go_on.wait(10)
        super().apply_to(ctx)


class PausingExecutor(Executor):
    """Runs each call on a thread of its own and returns a PausingResult."""

    def __init__(self):
        self.arrived, self.go_on = threading.Event(), threading.Event()
        self.begin = threading.Event()  # after submit returned: outcomes come on its thread

    def submit(self, fn, /, *args, **kwargs):
        future = Future()

        def run():
            assert self.begin.wait(10)
            future.set_running_or_notify_cancel()
            fn()
            result = PausingResult()
            result.arrived, result.go_on = self.arrived, self.go_on
            future.set_result(result)

        threading.Thread(target=run, daemon=True).start()
        return future


@pytest.mark.timeout(30)
def test_an_executor_outcome_arriving_as_its_timeout_fires_is_stored_as_decided(
    make_sched, clock, tmp_path
):
    store = SQLiteStore(tmp_path / "t.db")
    executor = PausingExecutor()
    s = Scheduler(workers=1, clock=clock, executor=executor, store=store)
    s.start()
    s.add(NOOP, name="job", timeout=1.0)
    executor.begin.set()
    assert executor.arrived.wait(10)
    clock.advance(1.0)
    executor.go_on.set()
    assert s.wait(timeout=10)
    store.flush()
    assert s.task("job").state is S.FAILED
    assert [a["outcome"] for a in store.attempts("job")] == ["failed"]
    s.shutdown()


# ---------------------------------------------------------------------- Race B
class RemoteLikeFuture(Future):
    """Like a pool's future: cancel() of a started run asks it to stop, returns False."""

    def __init__(self):
        super().__init__()
        self.stop = threading.Event()

    def cancel(self):
        self.stop.set()
        return False


class BlockingSubmitExecutor(Executor):
    """``submit`` waits for the test; the 'remote' run stops when its future is cancelled."""

    def __init__(self):
        self.in_submit, self.go_on = threading.Event(), threading.Event()
        self.ran_to_end = threading.Event()
        self.futures: list[RemoteLikeFuture] = []

    def submit(self, fn, /, *args, **kwargs):
        self.in_submit.set()
        assert self.go_on.wait(10)
        future = RemoteLikeFuture()
        future.set_running_or_notify_cancel()
        self.futures.append(future)

        def remote():
            if future.stop.wait(5):
                future.set_result(RemoteResult(error=TaskCancelled("terminated")))
            else:
                self.ran_to_end.set()
                future.set_result(RemoteResult())

        threading.Thread(target=remote, daemon=True).start()
        return future


@pytest.mark.timeout(30)
@pytest.mark.parametrize("stop", ["cancel", "timeout"])
def test_a_stop_issued_while_the_run_is_being_submitted_reaches_its_future(clock, stop):
    executor = BlockingSubmitExecutor()
    s = Scheduler(workers=1, clock=clock, executor=executor)
    s.start()
    adder = threading.Thread(
        target=s.add, args=(lambda: None,), kwargs={"name": "job", "timeout": 1.0}
    )
    adder.start()  # its dispatch blocks in submit
    assert executor.in_submit.wait(10)
    if stop == "cancel":
        assert s.cancel("job") is True
    else:
        clock.advance(1.0)
    executor.go_on.set()
    adder.join(10)
    assert executor.futures[0].stop.is_set()  # the run was told to stop
    assert s.wait(timeout=10)
    executor.futures[0].result(timeout=10)
    assert not executor.ran_to_end.is_set()
    info = s.task("job")
    if stop == "cancel":
        assert info.state is S.CANCELLED
        assert s.attempts("job")[-1].outcome == "cancelled"
    else:
        assert info.state is S.FAILED
        assert info.error.startswith("TaskTimeout:")
    s.shutdown()


@pytest.mark.timeout(60)
def test_a_cancel_during_submit_to_a_process_pool_terminates_the_command(tmp_path):
    from taskloom.engine.pools import RecoveringProcessPool

    class SlowSubmitPool(RecoveringProcessPool):
        def submit(self, fn, /, *args, **kwargs):
            in_submit.set()
            assert go_on.wait(10)
            return super().submit(fn, *args, **kwargs)

    in_submit, go_on = threading.Event(), threading.Event()
    pool = SlowSubmitPool(1)
    started = time.monotonic()
    try:
        s = Scheduler(workers=1, executor=pool)
        s.start()
        adder = threading.Thread(
            target=s.add, args=(Command(["sleep", "60"]),), kwargs={"name": "job"}
        )
        adder.start()
        assert in_submit.wait(10)
        assert s.cancel("job") is True
        go_on.set()
        adder.join(10)
        assert s.wait(timeout=30)
        s.shutdown()
    finally:
        pool.shutdown()
    assert s.task("job").state is S.CANCELLED
    assert time.monotonic() - started < 30  # the sleep was 60 s


# ---------------------------------------------------------------------- the hammer
@pytest.mark.slow
@pytest.mark.timeout(60)
def test_eight_threads_hammering_cancel_retry_run_now_never_overlap_an_attempt(monkeypatch):
    crashes = []
    monkeypatch.setattr(threading, "excepthook", crashes.append)
    conc = Concurrency()

    def body():
        run = current_run()
        conc.enter(run.task_id)
        try:
            pause = random.uniform(0.0, 0.04)
            if random.random() < 0.5:
                time.sleep(pause)  # stubborn: ignores cancel and timeout
            else:
                run.wait_cancelled(pause)
            if random.random() < 0.3:
                raise RuntimeError("flaky")
        finally:
            conc.leave(run.task_id)

    s = Scheduler(workers=4, clock=SystemClock())
    policy = RetryPolicy(max_attempts=3, base=0.005, jitter=0.0)
    ids = [s.add(body, name=f"once-{i}", timeout=0.02, retry=policy) for i in range(6)]
    # No retry policy on recurring tasks here: run_now() in RETRY_WAIT keeps the retry
    # timer, which later starts a run from SCHEDULED (IllegalTransition kills a worker),
    # a separate bug.
    serial = [
        s.schedule_every(body, 0.03, name=f"every-{o}", overlap=o, timeout=0.02)
        for o in ("skip", "queue")
    ]
    parallel = s.schedule_every(body, 0.03, name="every-parallel", overlap="parallel", timeout=0.02)
    every = [*ids, *serial, parallel]
    s.start()
    engine_threads = list(s._dispatcher.threads)
    stop, dead = threading.Event(), []

    def watchdog():
        while not stop.wait(0.01):
            dead.extend(t.name for t in engine_threads if not t.is_alive())

    def hammer(seed):
        rnd = random.Random(seed)
        deadline = time.monotonic() + 3.0
        for _ in range(2000):
            if time.monotonic() > deadline:
                return
            op = rnd.choice((s.cancel, s.retry, s.run_now))
            op(rnd.choice(every))
            time.sleep(rnd.uniform(0, 0.002))

    watcher = threading.Thread(target=watchdog, daemon=True)
    watcher.start()
    threads = [threading.Thread(target=hammer, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for task_id in [*serial, parallel]:  # recurring ones never settle: stop them
        s.cancel(task_id)
    settled = s.wait(timeout=20)
    stop.set()
    watcher.join(5)
    closer = threading.Thread(target=s.shutdown)
    closer.start()
    closer.join(20)

    assert not closer.is_alive(), "shutdown() did not return"
    assert settled, {i: s.task(i).state for i in ids}
    assert not dead, f"engine threads died: {sorted(set(dead))}"
    assert not crashes, crashes
    assert sum(conc.started.values()) > 50  # the hammer really ran tasks
    for task_id in [*ids, *serial]:
        assert conc.most.get(task_id, 0) <= 1, (task_id, conc.most)
