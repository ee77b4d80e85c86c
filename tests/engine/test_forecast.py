"""The forecast: the real engine on a virtual clock, driven by ``engine/forecast.py``.

Each test states what the engine's rules imply for a small plan with known
durations (``expected``), and checks the forecast says exactly that.
"""

from __future__ import annotations

import math
import random
import re
from concurrent.futures import Future
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from taskloom.engine import ManualClock, RetryPolicy, Scheduler, SyncExecutor, TaskDefinition
from taskloom.engine.durations_model import DurationModel
from taskloom.engine.forecast import (
    Plan,
    PlannedTask,
    critical_path,
    forecast,
    serve,
    simulate,
)

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


def plan_of(*definitions, workers=4, wall=T0):
    return Plan([PlannedTask(d) for d in definitions], workers, wall)


def task(tid, seconds, deps=(), **kw):
    return TaskDefinition(tid, print, deps=deps, expected=seconds, **kw)


def spans(result):
    return {r.task_id: (r.start, r.end) for r in result.runs if not r.replay}


def test_a_diamond_runs_as_its_dependencies_and_durations_say():
    plan = plan_of(
        task("a", 2), task("b", 3, ("a",)), task("c", 5, ("a",)), task("d", 1, ("b", "c"))
    )
    result = forecast(plan, passes=0)
    assert spans(result) == {"a": (0, 2), "b": (2, 5), "c": (2, 7), "d": (7, 8)}
    assert result.finish == 8
    assert result.critical_path == ["a", "c", "d"]
    assert result.collisions == []


def test_workers_limit_and_priorities_decide_the_order():
    plan = plan_of(
        task("low", 10, after=0.0),
        task("high", 10, after=0.0, priority=5),
        task("mid", 10, after=0.0, priority=1),
        task("child", 10, ("high",)),
        workers=1,
    )
    result = forecast(plan, passes=0)
    assert spans(result) == {
        "high": (0, 10),
        "mid": (10, 20),
        "low": (20, 30),  # due before child was released: first among equals
        "child": (30, 40),
    }
    queued = {c.task_id: c.seconds for c in result.collisions if c.kind == "queued"}
    # Tasks with a time of their own are news when they wait; child waits as a DAG does.
    assert queued == {"mid": 10, "low": 20}
    assert all("all 1 are busy" in c.detail for c in result.collisions)


def test_trigger_rules_follow_a_failure_replayed_from_the_live_state():
    clock = ManualClock(0.0, T0)
    live = Scheduler(2, clock=clock, executor=SyncExecutor())

    def boom():
        raise RuntimeError("no")

    live.add(boom, name="extract")
    live.add(print, name="load", deps=["extract"])
    live.add(print, name="alert", deps=["extract"], trigger_rule="one_failed")
    live.add(print, name="report", deps=["load", "alert"], trigger_rule="all_done")
    live.start()
    assert live.wait(5)
    result = forecast(Plan.from_scheduler(live), passes=0)
    # Everything settled: the replay reproduces it and nothing is left to run.
    assert result.finish is None
    assert result.critical_path == []
    ran = {r.task_id for r in result.runs}
    assert ran == {"extract", "alert", "report"}  # load is skipped, as it was live
    assert all(r.replay for r in result.runs)
    live.shutdown()


class Holding(SyncExecutor):
    """A live executor that leaves runs in flight until the test ends them."""

    def __init__(self):
        self.futures: dict[str, Future] = {}

    def submit(self, fn, /, *args, **kwargs):
        future: Future = Future()
        future.set_running_or_notify_cancel()
        self.futures[fn()] = future
        return future


def named(name):
    def run():
        return name

    return run


def test_a_copy_of_a_live_run_goes_on_from_where_it_stands():
    clock = ManualClock(0.0, T0)
    held = Holding()
    live = Scheduler(1, clock=clock, executor=held)
    live.add(named("a"), name="a")
    live.add(named("b"), name="b", deps=["a"])
    live.add(named("c"), name="c", deps=["b"])
    live.schedule_after(named("later"), 100.0, name="later")
    live.start()
    clock.advance(4.0)
    held.futures["a"].set_result(None)  # a took 4 s; b starts at 4
    clock.advance(6.0)  # b has run 6 s of its usual 10
    model = DurationModel({"b": [10.0, 10.0, 10.0], "c": [20.0]})
    plan = Plan.from_scheduler(live)
    kinds = {p.definition.id: p.kind for p in plan.tasks}
    assert kinds == {"a": "done", "b": "running", "c": "new", "later": "released"}
    result = forecast(plan, model, passes=0)
    b = next(r for r in result.runs if r.task_id == "b")
    assert (b.started_before, b.start, b.end) == (-6.0, 0.0, 4.0)
    assert spans(result)["c"] == (4.0, 24.0)
    # "later" is due 90 s from now; it is the last to finish, alone on its chain
    assert spans(result)["later"][0] == 90.0
    assert result.critical_path == ["later"]
    assert result.wall == T0 + timedelta(seconds=10)
    live.shutdown(wait=False)
    held.futures["b"].set_result(None)


def test_overlap_skip_drops_an_occurrence_and_queue_waits_for_it():
    plan = plan_of(
        task("skipper", 15, every=10.0),
        task("queuer", 15, every=10.0, overlap="queue"),
        workers=4,
    )
    result = forecast(plan, horizon=35, passes=0)
    starts = {}
    for r in result.runs:
        starts.setdefault(r.task_id, []).append(r.start)
    assert starts["skipper"] == [10, 30]  # the one due at 20 was dropped
    assert starts["queuer"] == [10, 25]  # the one due at 20 waited for the run to end
    kinds = {(c.kind, c.task_id, c.at) for c in result.collisions}
    assert ("dropped", "skipper", 20) in kinds
    assert ("overrun", "queuer", 20) in kinds


def test_a_timeout_ends_a_long_attempt_and_the_engine_retries_it():
    retry = RetryPolicy(max_attempts=2, base=5.0, jitter=0.0)
    plan = plan_of(task("slow", 100, timeout=30.0, retry=retry), task("next", 1, ("slow",)))
    result = forecast(plan, passes=0)
    slow = [(r.attempt, r.start, r.end) for r in result.runs if r.task_id == "slow"]
    assert slow == [(1, 0, 30), (2, 35, 65)]
    assert "next" not in spans(result)  # its upstream failed for good: skipped
    assert result.finish == 65


def test_the_same_seed_gives_the_same_forecast():
    model = DurationModel({"a": [1.0, 2.0, 9.0], "b": [3.0, 4.0], "c": [1.0, 30.0]})
    plan = plan_of(task("a", None), task("b", None, ("a",)), task("c", None, ("a",)))
    one = forecast(plan, model, passes=30, budget=None, seed=11)
    two = forecast(plan, model, passes=30, budget=None, seed=11)
    other = forecast(plan, model, passes=30, budget=None, seed=12)
    assert (one.finish_p50, one.finish_p90, one.runs) == (two.finish_p50, two.finish_p90, two.runs)
    assert one.passes == 30
    assert one.finish_p50 <= one.finish_p90
    assert (one.finish_p50, one.finish_p90) != (other.finish_p50, other.finish_p90)


def test_a_sampled_pass_draws_durations_from_history():
    model = DurationModel({"a": [5.0, 7.0]})
    result = simulate(plan_of(task("a", None)), model, rng=random.Random(3))
    assert result.runs[0].end in (5.0, 7.0)


def test_critical_path_follows_the_dependency_that_ended_last():
    from taskloom.engine.forecast import SimRun

    runs = [
        SimRun("a", 1, 0, 0, 4),
        SimRun("b", 1, 0, 0, 9),
        SimRun("c", 1, 9, 9, 10),
        SimRun("x", 1, 0, 0, 0, replay=True),
    ]
    assert critical_path(runs, {"c": ("a", "b", "x")}) == ["b", "c"]
    assert critical_path([], {}) == []


# ---------------------------------------------------------------------- cron, DST
BERLIN = ZoneInfo("Europe/Berlin")


def daily_at(start: datetime, days: int, hour: int, minute: int) -> list[datetime]:
    """Debian cron's rule for a fixed time of day, computed with zoneinfo alone: a
    time the spring-forward skips runs at the first minute that exists after it;
    one the fall-back repeats runs once, at its first occurrence (fold=0)."""
    found = []
    first = start.astimezone(BERLIN).date()
    for n in range(days + 1):
        day = first + timedelta(days=n)
        local = datetime(day.year, day.month, day.day, hour, minute, tzinfo=BERLIN)
        back = local.astimezone(UTC).astimezone(BERLIN)
        if (back.hour, back.minute) != (hour, minute):  # does not exist that day
            local = local.replace(minute=0) + timedelta(hours=1)
            local = datetime(day.year, day.month, day.day, local.hour, 0, tzinfo=BERLIN)
        found.append(local.astimezone(UTC))
    return found


@pytest.mark.parametrize(
    "start",
    [datetime(2026, 3, 26, 0, 0, tzinfo=UTC), datetime(2026, 10, 22, 0, 0, tzinfo=UTC)],
    ids=["spring-forward week", "fall-back week"],
)
def test_a_weeks_cron_and_interval_occurrences_equal_an_independent_computation(start):
    week = 7 * 86400.0
    plan = plan_of(
        task("nightly", 1, cron="30 2 * * *", timezone="Europe/Berlin"),
        task("quarter", 1, cron="15 * * * *", timezone="Europe/Berlin"),
        task("tick", 1, every=5400.0),
        wall=start,
    )
    result = forecast(plan, horizon=week, passes=0)
    got: dict[str, list[datetime]] = {}
    for r in result.runs:
        got.setdefault(r.task_id, []).append(result.at(r.start))
    end = start + timedelta(seconds=week)
    nightly = [t for t in daily_at(start, 7, 2, 30) if start < t <= end]
    assert got["nightly"] == nightly
    # "15 * * * *" follows real time: every hour at :15 UTC (Berlin's offset is whole hours).
    hourly = [start + timedelta(minutes=15) + timedelta(hours=h) for h in range(168)]
    assert got["quarter"] == hourly
    assert got["tick"] == [start + timedelta(seconds=5400 * k) for k in range(1, 113)]
    assert result.collisions == []


# ---------------------------------------------------------------------- the driver's two questions
def test_next_due_and_due_by_answer_from_the_timer_heap(make_sched, clock):
    s = make_sched()
    assert s.next_due() is None
    s.schedule_after(print, 30.0, name="late")
    s.schedule_after(print, 10.0, name="early")
    s.schedule_every(print, 20.0, name="tick")
    s.schedule(print, name="slow", run_at=50.0, timeout=5.0)
    assert s.next_due() == 10.0
    assert [(e.task_id, e.run_at, e.kind) for e in s.due_by(20.0)] == [
        ("early", 10.0, "scheduled"),
        ("tick", 20.0, "recurring"),
    ]
    assert s.due_by(5.0) == []
    assert [e.task_id for e in s.due_by(1e9)] == [e.task_id for e in s.upcoming()]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"horizon": -5}, "horizon must be None or seconds > 0, got -5"),
        ({"horizon": math.inf}, "horizon must be None or seconds > 0, got inf"),
        ({"horizon": "1h"}, "horizon must be None or seconds > 0, got '1h'"),
        ({"passes": -1}, "passes must be an int >= 0, got -1"),
        ({"passes": 2.5}, "passes must be an int >= 0, got 2.5"),
        ({"budget": -1.0}, "budget must be None or seconds >= 0, got -1.0"),
    ],
)
def test_a_bad_argument_is_refused_by_name(arguments, message):
    with pytest.raises(ValueError, match="forecast: " + re.escape(message)):
        forecast(plan_of(task("a", 1)), **arguments)


def test_a_copy_keeps_definitions_in_the_callers_cache_and_follows_new_edges(monkeypatch):
    import pickle

    live = Scheduler(2, clock=ManualClock(0.0, T0), executor=SyncExecutor())
    live.schedule_after(print, 50.0, name="a")
    live.schedule_after(print, 60.0, name="b")
    cache: dict = {}
    first = Plan.from_scheduler(live, cache=cache)
    assert set(cache) == {"a", "b"} and all(d.action is None for d in cache.values())
    pickle.dumps(first)  # no action left in it: it can go to another process
    lambdas = plan_of(TaskDefinition("x", lambda: 1))
    assert pickle.loads(pickle.dumps(lambdas.without_actions())).tasks[0].definition.id == "x"
    asked = []
    monkeypatch.setattr(live, "definition", lambda tid: asked.append(tid))
    live.add_dependency("b", "a")  # an edge is read from the task, not the cached definition
    second = Plan.from_scheduler(live, cache=cache)
    assert asked == []
    assert {p.definition.id: p.definition.deps for p in second.tasks} == {"a": (), "b": ("a",)}
    live.shutdown()


def test_a_chain_bound_by_too_few_workers_is_the_critical_path():
    plan = plan_of(
        task("high", 10, after=0.0, priority=5),
        task("mid", 10, after=0.0, priority=1),
        task("low", 10, after=0.0),
        task("child", 10, ("high",)),
        task("late", 1, at=T0 + timedelta(seconds=100)),
        workers=1,
    )
    result = forecast(plan, passes=0)
    # late runs at its own time, after everything: alone on its chain
    assert result.critical_path == ["late"]
    plan.tasks.pop()
    # child was ready at 10 but ran when low freed the only worker, at 30
    assert forecast(plan, passes=0).critical_path == ["high", "mid", "low", "child"]


def test_a_paused_task_that_waits_is_not_said_to_wait_for_a_worker():
    clock = ManualClock(0.0, T0)
    live = Scheduler(4, clock=clock, executor=SyncExecutor())
    live.schedule_after(print, 5.0, name="held")
    live.pause("held")
    plan = Plan.from_scheduler(live)
    assert [p.paused for p in plan.tasks] == [True]
    result = forecast(plan, DurationModel(expected={"held": 1.0}), horizon=60, passes=0)
    assert result.runs == []  # paused: it never starts
    assert result.collisions == []
    live.shutdown()


def test_max_runs_stops_the_look_ahead_but_not_before_the_finish():
    plan = plan_of(task("tick", 1, every=3.0), task("job", 100, after=50.0))
    capped = forecast(plan, horizon=86400, until_settled=True, passes=0, max_runs=10)
    assert capped.finish == 150.0  # settling comes first: the finish is known
    assert 150.0 <= capped.reached < 200.0  # then it stopped soon after
    assert len(capped.runs) < 80
    full = forecast(plan, horizon=3000, until_settled=True, passes=0)
    assert full.reached == 3000 and len(full.runs) == 1001


def test_sampled_passes_fail_as_often_as_history_says_and_the_engine_retries():
    retry = RetryPolicy(max_attempts=3, base=5.0, jitter=0.0, factor=1.0)
    plan = plan_of(task("flaky", 10, retry=retry), task("after", 1, ("flaky",)))
    always = DurationModel({"flaky": [10.0], "after": [1.0]}, failures={"flaky": 1.0})
    result = simulate(plan, always, rng=random.Random(1))
    flaky = [(r.attempt, r.start, r.end) for r in result.runs if r.task_id == "flaky"]
    assert flaky == [(1, 0, 10), (2, 15, 25), (3, 30, 40)]  # the engine's backoff, 5 s
    assert "after" not in {r.task_id for r in result.runs}  # skipped: its upstream failed
    # The point pass is the expected path: no failure drawn.
    assert [r.task_id for r in simulate(plan, always).runs] == ["flaky", "after"]


def test_serve_answers_requests_on_a_pipe_until_it_closes():
    import io
    import pickle
    import struct

    def framed(obj):
        data = pickle.dumps(obj)
        return struct.pack("!Q", len(data)) + data

    plan = plan_of(task("a", 2), task("b", 3, ("a",)))
    source = io.BytesIO(
        framed((plan, DurationModel(expected=plan.expected), {"passes": 0}))
        + framed((plan, None, {"horizon": -1}))
    )
    sink = io.BytesIO()
    serve(source, sink)  # returns when the input ends
    sink.seek(0)
    answers = []
    while head := sink.read(8):
        answers.append(pickle.loads(sink.read(struct.unpack("!Q", head)[0])))
    assert answers[0][0] == "ok" and answers[0][1].finish == 5.0
    assert answers[1] == (
        "error",
        "ValueError: forecast: horizon must be None or seconds > 0, got -1",
    )
