"""What the engine answers for a GUI: would an edge close a cycle, which actions are
allowed now, how an attempt ended (on its event), which argument a refusal is about.

The answers must agree with what the calls themselves do; the property tests check
that on random graphs and random sequences of calls.
"""

from __future__ import annotations

import pickle
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskloom.engine import (
    Action,
    CycleError,
    InvalidArgument,
    ManualClock,
    RetryPolicy,
    Scheduler,
    SyncExecutor,
    TaskState,
)

S = TaskState
A = Action


def _noop():
    return None


def _manual() -> tuple[Scheduler, ManualClock]:
    clock = ManualClock()
    return Scheduler(workers=2, clock=clock, executor=SyncExecutor()), clock


# --- would_close_cycle ----------------------------------------------------------------


def test_would_close_cycle_names_the_path_add_dependency_refuses(unstarted):
    for name, deps in (("a", ()), ("b", ("a",)), ("c", ("b",)), ("d", ())):
        unstarted.add(_noop, name=name, deps=deps)
    assert unstarted.would_close_cycle("a", "c") == ["a", "b", "c", "a"]
    assert unstarted.would_close_cycle("a", "a") == ["a", "a"]
    assert unstarted.would_close_cycle("c", "a") is None  # already an ancestor: no cycle
    assert unstarted.would_close_cycle("a", "d") is None
    assert unstarted.would_close_cycle("a", "nobody") is None  # unknown deps reach nothing
    with pytest.raises(KeyError):
        unstarted.would_close_cycle("nobody", "a")
    with pytest.raises(CycleError) as refused:
        unstarted.add_dependency("a", "c")
    assert list(refused.value.path) == ["a", "b", "c", "a"]
    assert unstarted.task("a").deps == ()  # read-only: the question changed nothing


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(2, 9),
    edges=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=30),
)
def test_would_close_cycle_agrees_with_add_dependency_on_random_graphs(n, edges):
    s = Scheduler(workers=1, clock=ManualClock(), executor=SyncExecutor())  # not started
    try:
        for i in range(n):
            s.add(_noop, name=f"t{i}")
        for a, b in edges:
            task_id, dep_id = f"t{a % n}", f"t{b}"  # b >= n: a task not added (yet)
            predicted = s.would_close_cycle(task_id, dep_id)
            try:
                s.add_dependency(task_id, dep_id)
            except CycleError as exc:
                assert predicted == list(exc.path)
                assert exc.field == "deps"
            else:
                assert predicted is None
                assert dep_id in s.task(task_id).deps
    finally:
        s.shutdown()


# --- allowed_actions --------------------------------------------------------------------


def test_allowed_actions_of_the_plain_states(sched, clock, runs):
    sched.schedule(runs.fn("later"), run_at=10.0, name="later")
    assert sched.allowed_actions("later") == {
        A.CANCEL,
        A.RUN_NOW,
        A.PAUSE,
        A.REMOVE,
        A.EDIT,
        A.ADD_DEPENDENCY,
    }
    runs.fail.add("bad")
    sched.add(runs.fn("bad"), name="bad")
    assert sched.task("bad").state is S.FAILED
    assert sched.allowed_actions("bad") == {A.RETRY, A.PAUSE, A.REMOVE, A.EDIT, A.CLEAR}
    sched.pause("bad")
    assert A.RESUME in sched.allowed_actions("bad") and A.PAUSE not in sched.allowed_actions("bad")


def test_retry_of_a_task_skipped_because_of_a_failure_is_not_offered(sched, build):
    g = build(sched, {"up": [], "down": ["up"]}, fail={"up"})
    assert g.state("down") is S.SKIPPED
    assert A.RETRY not in sched.allowed_actions("down")
    assert A.RETRY in sched.allowed_actions("up")
    # retry() accepts it, but the task is only skipped again: nothing useful happened
    assert sched.retry("down") is True
    assert g.state("down") is S.SKIPPED and g.ran == ["up"]
    g.fail.clear()
    assert sched.retry("up") is True  # re-arms its skipped downstream
    assert g.ran == ["up", "up", "down"]
    assert g.state("down") is S.SUCCEEDED


def test_run_now_is_offered_while_the_dispatcher_is_paused_and_runs_on_resume(sched, runs):
    sched.schedule(runs.fn("later"), run_at=10.0, name="later")
    sched.pause()
    assert A.RUN_NOW in sched.allowed_actions("later")
    assert sched.run_now("later") is True
    assert runs.order == [] and sched.task("later").state is S.READY
    sched.resume()
    assert runs.order == ["later"]


def test_nothing_is_allowed_after_shutdown(make_sched, runs):
    s = make_sched()
    s.schedule(runs.fn("later"), run_at=10.0, name="later")
    s.shutdown()
    assert s.allowed_actions("later") == frozenset()


@pytest.mark.timeout(30)
def test_a_running_task_can_be_cancelled_but_not_removed_edited_or_retried(make_sched, runs):
    s = make_sched(threads=True, workers=1)
    started, release = threading.Event(), threading.Event()

    def body():
        started.set()
        release.wait(10)

    s.add(runs.fn("slow", body), name="slow")
    assert started.wait(10)
    try:
        assert s.allowed_actions("slow") == {A.CANCEL, A.PAUSE}
        assert s.remove("slow") is False
    finally:
        release.set()
    assert s.wait(timeout=10)
    assert A.REMOVE in s.allowed_actions("slow")


OPS = ("advance", "cancel", "retry", "run_now", "pause", "resume", "remove", "edge", "heal")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.lists(
        st.tuples(
            st.sampled_from(("once", "later", "every", "retrying")),
            st.booleans(),  # fails
            st.booleans(),  # depends on the previous task
            st.sampled_from(("skip", "queue", "parallel")),
        ),
        min_size=1,
        max_size=5,
    ),
    steps=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 4)), max_size=25),
    paused_all=st.booleans(),
)
def test_allowed_actions_agree_with_what_the_calls_do(shape, steps, paused_all):
    s, clock = _manual()
    fail: set[str] = set()

    def job(name):
        def run():
            if name in fail:
                raise RuntimeError(f"{name} failed")

        return run

    try:
        s.start()
        if paused_all:
            s.pause()
        ids = []
        for i, (kind, fails, chained, overlap) in enumerate(shape):
            name = f"t{i}"
            if fails:
                fail.add(name)
            deps = (ids[-1],) if chained and ids else ()
            if kind == "every":
                s.schedule_every(job(name), 5.0, name=name, deps=deps, overlap=overlap)
            elif kind == "later":
                s.schedule(job(name), run_at=3.0, name=name, deps=deps)
            elif kind == "retrying":
                policy = RetryPolicy(max_attempts=3, base=2.0, jitter=0)
                s.schedule(job(name), name=name, deps=deps, retry=policy)
            else:
                s.add(job(name), name=name, deps=deps)
            ids.append(name)
        spare = 0
        for op, pick in steps:
            if op == "advance":
                clock.advance(2.0)
                continue
            if op == "heal":
                fail.clear()
                continue
            alive = [t for t in ids if t in {info.id for info in s.tasks()}]
            if not alive:
                break
            tid = alive[pick % len(alive)]
            allowed = s.allowed_actions(tid)
            before = s.task(tid)
            seq = s.snapshot()[0]
            if op == "cancel":
                assert s.cancel(tid) is (A.CANCEL in allowed)
            elif op == "run_now":
                assert s.run_now(tid) is (A.RUN_NOW in allowed)
            elif op == "remove":
                assert (A.EDIT in allowed) <= (A.REMOVE in allowed)
                assert s.remove(tid) is (A.REMOVE in allowed)
            elif op in ("pause", "resume"):
                getattr(s, op)(tid)
                action = A.PAUSE if op == "pause" else A.RESUME
                assert (s.snapshot()[0] > seq) is (action in allowed)
                assert s.task(tid).paused is (op == "pause")
            elif op == "retry":
                done = s.retry(tid)
                after = s.task(tid)
                useful = done and (after.state is not S.SKIPPED or after.attempt > before.attempt)
                assert useful is (A.RETRY in allowed), (before, after)
            elif op == "edge":
                spare += 1
                other = s.add(_noop, name=f"spare{spare}")  # runs at once: a settled upstream
                try:
                    s.add_dependency(tid, other)
                except ValueError:
                    assert A.ADD_DEPENDENCY not in allowed
                else:
                    assert A.ADD_DEPENDENCY in allowed
    finally:
        s.shutdown()


# --- the outcome on the event that ends an attempt --------------------------------------


def test_the_event_ending_an_attempt_carries_its_outcome(sched, clock, runs, recorder):
    rec = recorder(sched)
    runs.fail.add("flaky")
    sched.schedule(runs.fn("flaky"), name="flaky", retry=RetryPolicy(max_attempts=2, jitter=0))
    sched.add(runs.fn("fine"), name="fine")
    sched.schedule(runs.fn("gone"), run_at=50.0, name="gone")
    sched.cancel("gone")
    clock.advance(10.0)
    assert sched.wait(timeout=5)

    def ends(tid):
        return [(e.kind, e.outcome) for e in rec.of(tid) if e.outcome is not None]

    assert ends("flaky") == [("retry_wait", "failed"), ("failed", "failed")]
    assert ends("fine") == [("succeeded", "succeeded")]
    assert ends("gone") == []  # cancelled before it ran: no attempt ended
    assert all(e.outcome is None for e in rec.of("fine") if e.kind != "succeeded")
    outcomes = [a.outcome for a in sched.attempts("flaky")]
    assert outcomes == ["failed", "failed"]


@pytest.mark.timeout(30)
def test_cancelled_and_interrupted_attempts_say_so_on_their_event(make_sched, recorder):
    s = make_sched(threads=True, workers=2)
    rec = recorder(s)
    release = threading.Event()
    s.add(lambda: release.wait(10), name="cancelled")
    rec.wait_kind("cancelled", "running")
    s.cancel("cancelled")
    release.set()
    end = rec.wait_kind("cancelled", "cancelled")
    assert end.outcome == "cancelled"

    stop = threading.Event()

    def cooperative():
        from taskloom.engine import current_run

        while not current_run().cancelled and not stop.is_set():
            stop.wait(0.01)
        raise RuntimeError("stopped")

    s.add(cooperative, name="interrupted")
    rec.wait_kind("interrupted", "running")
    s.shutdown(wait=True, cancel_running=True)
    stop.set()
    end = [e for e in rec.of("interrupted") if e.outcome is not None]
    assert [(e.kind, e.outcome) for e in end] == [("ready", "interrupted")]


def test_a_timed_out_attempt_ends_failed_on_its_event(make_sched, recorder):
    clock = ManualClock()
    s = Scheduler(workers=1, clock=clock)  # engine threads: the code can outlive its timeout
    rec = recorder(s)
    release = threading.Event()
    s.schedule(lambda: release.wait(10), name="slow", timeout=5.0)
    s.start()
    try:
        rec.wait_kind("slow", "running")
        clock.advance(6.0)
        end = rec.wait_kind("slow", "failed")
        assert end.outcome == "failed" and "timeout" in end.error
    finally:
        release.set()
        s.shutdown()


# --- refusals name their argument ---------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "field", "message"),
    [
        (lambda s: s.add(_noop, timeout=-1), "timeout", "timeout must be a finite number > 0"),
        (lambda s: s.add(_noop, name="  "), "name", "name must be a non-empty string"),
        (lambda s: s.add(_noop, trigger_rule="x"), "trigger_rule", "trigger_rule must be one"),
        (lambda s: s.schedule_after(_noop, -1), "delay", "delay must be a finite number"),
        (lambda s: s.schedule(_noop, run_at=float("nan")), "run_at", "run_at must be"),
        (lambda s: s.schedule_every(_noop, 0), "interval", "interval must be a finite number"),
        (lambda s: s.schedule_every(_noop, 1, mode="x"), "mode", "mode must be one of"),
        (lambda s: s.schedule_every(_noop, 1, overlap="x"), "overlap", "overlap must be one"),
        (lambda s: s.schedule_every(_noop, 1, misfire="x"), "misfire", "misfire must be one"),
        (
            lambda s: s.schedule_every(_noop, 1, misfire_grace=-1),
            "misfire_grace",
            "misfire_grace must be",
        ),
        (lambda s: s.schedule_cron(_noop, "nope"), "cron", "bad cron expression"),
        (lambda s: s.schedule_cron(_noop, "* * * * *", tz="Mars/Base"), "tz", "unknown time"),
        (lambda s: s.add(_noop, name="x", deps=("x",)), "deps", "dependency cycle: x -> x"),
    ],
)
def test_refusals_name_the_argument_they_are_about(sched, call, field, message):
    with pytest.raises(InvalidArgument, match=message) as refused:
        call(sched)
    assert refused.value.field == field
    assert isinstance(refused.value, ValueError)  # callers catching ValueError still do


def test_a_duplicate_name_is_about_the_name_and_workers_about_workers(sched):
    sched.add(_noop, name="x")
    with pytest.raises(InvalidArgument, match="a task named 'x' already exists") as refused:
        sched.add(_noop, name="x")
    assert refused.value.field == "name"
    with pytest.raises(InvalidArgument, match="workers must be an int >= 1") as refused:
        Scheduler(workers=0)
    assert refused.value.field == "workers"


def test_refusals_survive_pickling():
    again = pickle.loads(pickle.dumps(InvalidArgument("timeout must be > 0", "timeout")))
    assert (str(again), again.field) == ("timeout must be > 0", "timeout")
    cycle = pickle.loads(pickle.dumps(CycleError(["a", "b", "a"])))
    assert cycle.path == ("a", "b", "a") and cycle.field == "deps"
