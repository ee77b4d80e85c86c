"""Failures inside tasks and listeners, slow listeners, and timeouts never stop the engine."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

from taskloom.engine import CycleError, SystemClock, TaskState, current_run

S = TaskState


def test_a_task_exception_is_a_failed_attempt_and_the_engine_goes_on(sched, clock, runs):
    def explode():
        raise ZeroDivisionError("division by zero")

    sched.schedule(explode, name="bad")
    sched.schedule(runs.fn("next"), run_at=1.0, name="next")
    clock.advance(1.0)
    assert sched.task("bad").state is S.FAILED
    assert sched.task("bad").error == "ZeroDivisionError: division by zero"
    assert runs.order == ["next"]


@pytest.mark.parametrize("threads", [False, True], ids=["inline", "threads"])
def test_a_failed_attempt_lets_go_of_its_frames_without_a_collection(make_sched, threads):
    """The traceback is kept as text; the frames it came from (and every local in them)
    are freed as soon as the attempt is recorded, not at the next full collection.
    A window's Qt wrappers left in such frames outlived their objects (a segfault)."""

    class Payload:
        pass

    payloads: list[weakref.ref] = []

    def explode():
        held = Payload()  # a local of the failing frame
        payloads.append(weakref.ref(held))
        raise RuntimeError("disk full") from KeyError("cause")

    sched = make_sched(threads=threads, workers=1)
    gc.disable()  # as in a window's process: only explicit collections
    try:
        sched.schedule(explode, name="bad")
        assert sched.wait(timeout=10)
        assert sched.task("bad").state is S.FAILED
        assert "disk full" in sched.attempts("bad")[-1].traceback
        assert payloads and payloads[0]() is None
    finally:
        gc.enable()
        sched.shutdown()


def test_an_import_failure_is_a_failed_attempt(sched):
    sched.schedule("no_such_module_for_taskloom_tests:run", name="missing")
    info = sched.task("missing")
    assert info.state is S.FAILED
    assert "no_such_module_for_taskloom_tests" in info.error


def test_a_module_function_string_runs(sched):
    sched.schedule("json:dumps", name="dumps")  # no kwargs: TypeError -> a FAILED attempt
    assert sched.task("dumps").state is S.FAILED
    sched.schedule("os:getpid", name="pid")
    assert sched.task("pid").state is S.SUCCEEDED


def test_a_listener_exception_never_stops_the_engine(sched, clock, runs):
    got = []

    def broken_listener(event):
        raise RuntimeError("listener bug")

    sched.subscribe(broken_listener)
    sched.subscribe(got.append)
    sched.schedule(runs.fn("a"), name="a")
    sched.schedule(runs.fn("b"), run_at=1.0, name="b")
    clock.advance(1.0)
    assert runs.order == ["a", "b"]
    assert [e.task_id for e in got if e.kind == "succeeded"] == ["a", "b"]


@pytest.mark.timeout(30)
def test_a_listener_exception_does_not_kill_event_delivery_with_threads(make_sched, runs):
    s = make_sched(threads=True, workers=2, clock=SystemClock())
    got = []
    s.on("running", lambda event: 1 / 0)
    s.on("succeeded", got.append)
    for i in range(10):
        s.schedule(runs.fn(f"t{i}"), name=f"t{i}")
    assert s.wait(timeout=10)
    assert sorted(e.task_id for e in got) == sorted(f"t{i}" for i in range(10))


@pytest.mark.timeout(20)
def test_a_listener_may_call_back_into_the_engine(sched, clock, runs):
    seen = []

    def listener(event):
        seen.append((event.kind, len(sched.tasks()), sched.task(event.task_id).id))
        sched.upcoming()
        sched.snapshot()

    sched.subscribe(listener)
    sched.schedule(runs.fn("a"), run_at=1.0, name="a")
    clock.advance(1.0)
    assert [kind for kind, _, _ in seen] == ["scheduled", "ready", "running", "succeeded"]


@pytest.mark.timeout(20)
def test_a_listener_may_schedule_more_work(sched, clock, runs):
    def chain(event):
        if event.task_id == "first":
            sched.schedule(runs.fn("second"), name="second")

    sched.on("succeeded", chain)
    sched.schedule(runs.fn("first"), run_at=1.0, name="first")
    clock.advance(1.0)
    clock.advance(0.0)
    assert runs.order == ["first", "second"]


@pytest.mark.timeout(30)
def test_a_listener_may_call_back_into_the_engine_with_threads(make_sched, runs):
    s = make_sched(threads=True, workers=2, clock=SystemClock())
    counts = []
    s.subscribe(lambda event: counts.append(len(s.tasks())))
    for i in range(20):
        s.schedule(runs.fn(f"t{i}"), name=f"t{i}")
    assert s.wait(timeout=10)
    assert len(counts) >= 20 * 3


@pytest.mark.timeout(30)
def test_a_slow_listener_does_not_block_scheduling(make_sched, runs):
    s = make_sched(threads=True, workers=2, clock=SystemClock())
    gate = threading.Event()
    all_ran = threading.Event()
    s.subscribe(lambda event: gate.wait(20))  # stuck on the very first event

    def body():
        if len(runs.order) == 10:
            all_ran.set()

    try:
        for i in range(10):
            s.schedule(runs.fn(f"t{i}", body), name=f"t{i}", run_at=None)
        assert all_ran.wait(10), f"only {len(runs.order)} of 10 ran while a listener was stuck"
        assert s.task("t9").state in (S.RUNNING, S.SUCCEEDED)
    finally:
        gate.set()
    assert s.wait(timeout=10)


# --- timeouts --------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_a_callable_past_its_timeout_is_a_failed_attempt_and_its_late_result_ignored(
    make_sched, runs, recorder
):
    s = make_sched(threads=True, workers=2, clock=SystemClock())
    rec = recorder(s)
    release = threading.Event()
    returned = threading.Event()

    def slow():
        release.wait(10)
        returned.set()
        return "late"

    s.schedule(runs.fn("slow", slow), name="slow", timeout=0.2)
    failed = rec.wait_kind("slow", "failed")
    assert "timeout" in failed.error.lower() or "timed out" in failed.error.lower()
    assert s.task("slow").state is S.FAILED
    release.set()
    assert returned.wait(10)
    s.shutdown(wait=True)  # the late completion has been handled when this returns
    assert s.task("slow").state is S.FAILED
    assert "succeeded" not in rec.kinds("slow")
    assert [a.outcome for a in s.attempts("slow")] == ["failed"]


@pytest.mark.timeout(30)
def test_a_timeout_asks_the_running_code_to_stop(make_sched, runs, recorder):
    s = make_sched(threads=True, workers=2, clock=SystemClock())
    rec = recorder(s)
    noticed = []
    s.schedule(
        runs.fn("slow", lambda: noticed.append(current_run().wait_cancelled(10))),
        name="slow",
        timeout=0.2,
    )
    rec.wait_kind("slow", "failed")
    assert s.wait(timeout=10)
    s.shutdown(wait=True)
    assert noticed == [True]


@pytest.mark.timeout(30)
def test_a_timed_out_attempt_is_retried(make_sched, runs, recorder):
    from taskloom.engine import RetryPolicy

    s = make_sched(threads=True, workers=2, clock=SystemClock())
    rec = recorder(s)
    release = threading.Event()
    s.schedule(
        runs.fn("slow", lambda: release.wait(10) if len(runs.order) == 1 else None),
        name="slow",
        timeout=0.2,
        retry=RetryPolicy(max_attempts=2, base=0.01, jitter=0),
    )
    rec.wait_kind("slow", "ready", count=2)  # the retry came due...
    assert runs.count("slow") == 1  # ...but waits for the timed-out attempt to return
    release.set()
    rec.wait_kind("slow", "succeeded")
    assert [a.outcome for a in s.attempts("slow")][-1] == "succeeded"
    assert s.task("slow").attempt == 2


@pytest.mark.parametrize("exc_type", [SystemExit, GeneratorExit])
def test_a_base_exception_in_a_task_is_a_failed_attempt(sched, clock, runs, exc_type):
    def leave():
        raise exc_type("bye")

    sched.schedule(leave, name="leaving")
    sched.schedule(runs.fn("next"), run_at=1.0, name="next")
    clock.advance(1.0)
    assert sched.task("leaving").state is S.FAILED
    assert sched.task("leaving").error == f"{exc_type.__name__}: bye"
    assert runs.order == ["next"]


@pytest.mark.timeout(30)
def test_a_base_exception_in_a_task_does_not_kill_a_worker(make_sched, runs):
    s = make_sched(threads=True, workers=1, clock=SystemClock())

    def leave():
        raise SystemExit(3)

    s.schedule(leave, name="leaving", priority=5)
    for i in range(5):
        s.schedule(runs.fn(f"t{i}"), name=f"t{i}")
    assert s.wait(timeout=10)
    assert s.task("leaving").state is S.FAILED
    assert len(runs.order) == 5


def test_a_listener_exception_is_logged(sched, caplog):
    def broken_listener(event):
        raise RuntimeError("listener bug 1234")

    sched.subscribe(broken_listener)
    with caplog.at_level("ERROR"):
        sched.schedule(print, name="job", run_at=5.0)
    assert "listener bug 1234" in caplog.text


def test_a_listener_may_unsubscribe_itself_while_being_called(sched, clock, runs):
    got_once, got_all = [], []
    unsubscribe = []

    def once(event):
        got_once.append(event)
        unsubscribe[0]()

    unsubscribe.append(sched.subscribe(once))
    sched.subscribe(got_all.append)
    sched.schedule(runs.fn("a"), run_at=1.0, name="a")
    clock.advance(1.0)
    assert len(got_once) == 1
    assert [e.kind for e in got_all] == ["scheduled", "ready", "running", "succeeded"]


def test_two_schedulers_can_share_one_manual_clock(make_sched, clock, runs):
    first, second = make_sched(), make_sched()
    first.schedule(runs.fn("one"), run_at=2.0, name="one")
    second.schedule(runs.fn("two"), run_at=1.0, name="two")
    clock.advance(2.0)
    assert sorted(runs.order) == ["one", "two"]


def test_a_long_chain_runs_and_skips_without_recursion(unstarted, runs):
    n = 3000
    unstarted.schedule(runs.fn("c0"), name="c0")
    for i in range(1, n):
        unstarted.add(runs.fn(f"c{i}"), name=f"c{i}", deps=(f"c{i - 1}",))
    unstarted.start()
    assert len(runs.order) == n
    assert unstarted.task(f"c{n - 1}").state is S.SUCCEEDED
    fresh = unstarted.schedule(runs.fn("x0"), name="x0", run_at=1.0)
    for i in range(1, n):
        unstarted.add(runs.fn(f"x{i}"), name=f"x{i}", deps=(f"x{i - 1}",))
    assert unstarted.cancel(fresh) is True
    assert unstarted.task(f"x{n - 1}").state is S.SKIPPED


def test_a_cycle_through_a_long_chain_is_found(unstarted, runs):
    n = 3000
    unstarted.schedule(runs.fn("c0"), name="c0")
    for i in range(1, n):
        unstarted.add(runs.fn(f"c{i}"), name=f"c{i}", deps=(f"c{i - 1}",))
    with pytest.raises(CycleError) as info:
        unstarted.add_dependency("c0", f"c{n - 1}")
    assert len(info.value.path) == n + 1
    assert unstarted.task("c0").deps == ()


@pytest.mark.timeout(30)
def test_a_timeout_follows_the_manual_clock(make_sched, clock, runs, recorder):
    s = make_sched(threads=True, workers=2)
    rec = recorder(s)
    noticed = []
    s.schedule(
        runs.fn("slow", lambda: noticed.append(current_run().wait_cancelled(10))),
        name="slow",
        timeout=5.0,
    )
    rec.wait_kind("slow", "running")
    clock.advance(4.0)
    assert s.task("slow").state is S.RUNNING
    clock.advance(1.0)
    failed = rec.wait_kind("slow", "failed")
    assert failed.at == 5.0
    assert s.wait(timeout=10)
    s.shutdown(wait=True)
    assert noticed == [True]
