"""The dependency graph: trigger rules, SKIPPED propagation, cycles, unknown ids."""

from __future__ import annotations

import threading

import pytest

from taskloom.engine import CycleError, TaskState

S = TaskState


def test_all_success_runs_after_every_dependency_succeeded(unstarted, build):
    g = build(unstarted, {"a": [], "b": ["a"], "c": ["a", "b"]})
    assert g.state("a") in (S.READY, S.SCHEDULED)
    assert (g.state("b"), g.state("c")) == (S.PENDING, S.PENDING)
    unstarted.start()
    assert g.ran == ["a", "b", "c"]
    assert set(g.states().values()) == {S.SUCCEEDED}


def test_all_success_waits_for_a_dependency_that_is_not_yet_due(sched, clock, build):
    g = build(sched, {"a": [], "slow": [], "c": ["a", "slow"]}, run_at={"slow": 5.0})
    assert g.ran == ["a"]
    assert g.state("c") is S.PENDING
    clock.advance(5.0)
    assert g.ran == ["a", "slow", "c"]


def test_failed_upstream_skips_downstream_transitively(unstarted, build):
    g = build(unstarted, {"a": [], "b": ["a"], "c": ["b"], "d": ["c"], "other": []}, fail={"a"})
    unstarted.start()
    assert g.ran == ["a", "other"] or g.ran == ["other", "a"]
    assert g.states() == {
        "a": S.FAILED,
        "b": S.SKIPPED,
        "c": S.SKIPPED,
        "d": S.SKIPPED,
        "other": S.SUCCEEDED,
    }


def test_all_success_is_skipped_as_soon_as_one_upstream_fails(sched, build):
    g = build(sched, {"a": [], "later": [], "c": ["a", "later"]}, fail={"a"}, run_at={"later": 50})
    assert g.state("later") is S.SCHEDULED
    assert g.state("c") is S.SKIPPED


def test_cancelled_upstream_skips_downstream(sched, clock, build):
    g = build(sched, {"a": [], "b": ["a"], "c": ["b"]}, run_at={"a": 5.0})
    assert sched.cancel("a") is True
    assert g.states() == {"a": S.CANCELLED, "b": S.SKIPPED, "c": S.SKIPPED}
    clock.advance(10.0)
    assert g.ran == []


def test_all_done_runs_whatever_the_upstream_outcome(unstarted, build):
    g = build(
        unstarted,
        {
            "bad": [],
            "good": [],
            "skipped": ["bad"],
            "cleanup": ["bad", "good", "skipped"],
            "after": ["cleanup"],
        },
        fail={"bad"},
        rules={"cleanup": "all_done"},
    )
    unstarted.start()
    assert g.state("skipped") is S.SKIPPED
    assert g.state("cleanup") is S.SUCCEEDED
    assert g.state("after") is S.SUCCEEDED
    assert g.ran.index("cleanup") > max(g.ran.index("bad"), g.ran.index("good"))


def test_all_done_waits_until_every_upstream_settled(sched, clock, build):
    g = build(
        sched,
        {"a": [], "later": [], "c": ["a", "later"]},
        fail={"a"},
        rules={"c": "all_done"},
        run_at={"later": 5.0},
    )
    assert g.state("c") is S.PENDING
    clock.advance(5.0)
    assert g.state("c") is S.SUCCEEDED


def test_one_failed_runs_as_soon_as_one_upstream_failed(sched, build):
    g = build(
        sched,
        {"a": [], "later": [], "alert": ["a", "later"]},
        fail={"a"},
        rules={"alert": "one_failed"},
        run_at={"later": 50.0},
    )
    assert g.state("later") is S.SCHEDULED
    assert g.state("alert") is S.SUCCEEDED
    assert "alert" in g.ran


def test_one_failed_is_skipped_when_none_failed_and_so_is_its_downstream(sched, build):
    g = build(
        sched,
        {"a": [], "b": [], "alert": ["a", "b"], "after": ["alert"]},
        rules={"alert": "one_failed"},
    )
    assert g.states() == {
        "a": S.SUCCEEDED,
        "b": S.SUCCEEDED,
        "alert": S.SKIPPED,
        "after": S.SKIPPED,
    }
    assert "alert" not in g.ran


def test_one_failed_does_not_count_a_skipped_upstream_as_failed(sched, build):
    g = build(
        sched,
        {"a": [], "b": ["a"], "alert": ["b"]},
        fail={"a"},
        rules={"alert": "one_failed"},
    )
    assert g.state("b") is S.SKIPPED
    assert g.state("alert") is S.SKIPPED


# --- cycles -------------------------------------------------------------------


def _assert_names_cycle(exc: CycleError, members: set[str], edges: set[tuple[str, str]]):
    path = exc.path
    assert path[0] == path[-1], path
    assert set(path) == members, path
    hops = set(zip(path, path[1:], strict=False))
    reversed_hops = {(b, a) for a, b in hops}
    assert hops <= edges or reversed_hops <= edges, (path, edges)
    for name in members:
        assert name in str(exc)


def test_add_dependency_closing_a_cycle_raises_and_changes_nothing(unstarted, build):
    build(unstarted, {"a": [], "b": ["a"], "c": ["b"]})
    before = unstarted.snapshot()
    with pytest.raises(CycleError) as info:
        unstarted.add_dependency("a", "c")  # a would wait for c, which waits for a
    # edges as (task, dependency)
    _assert_names_cycle(info.value, {"a", "b", "c"}, {("b", "a"), ("c", "b"), ("a", "c")})
    assert unstarted.snapshot() == before
    assert unstarted.task("a").deps == ()


def test_self_dependency_is_a_cycle(unstarted, build):
    build(unstarted, {"a": []})
    before = unstarted.snapshot()
    with pytest.raises(CycleError) as info:
        unstarted.add_dependency("a", "a")
    assert info.value.path == ("a", "a")
    assert unstarted.snapshot() == before


def test_adding_a_task_that_closes_a_cycle_raises_and_adds_nothing(unstarted, runs):
    unstarted.add(runs.fn("a"), name="a", deps=("b",))  # b does not exist yet: allowed
    before = unstarted.snapshot()
    with pytest.raises(CycleError) as info:
        unstarted.add(runs.fn("b"), name="b", deps=("a",))
    _assert_names_cycle(info.value, {"a", "b"}, {("a", "b"), ("b", "a")})
    assert unstarted.snapshot() == before
    assert [t.id for t in unstarted.tasks()] == ["a"]


def test_cycle_error_leaves_an_engine_that_still_runs(sched, clock, build):
    g = build(sched, {"a": [], "b": ["a"]}, run_at={"a": 1.0})
    with pytest.raises(CycleError):
        sched.add_dependency("a", "b")
    sched.add(g.runs.fn("after"), name="after", deps=("b",))
    clock.advance(1.0)
    assert g.ran == ["a", "b", "after"]


# --- unknown dependencies --------------------------------------------------------


def test_unknown_dependency_is_allowed_until_start(unstarted, runs):
    unstarted.schedule(runs.fn("root"), name="root")
    unstarted.add(runs.fn("b"), name="b", deps=("ghost",))
    assert unstarted.task("b").deps == ("ghost",)
    with pytest.raises(KeyError) as info:
        unstarted.start()
    message = str(info.value)
    assert "b" in message and "ghost" in message
    assert runs.order == []
    assert {t.state for t in unstarted.tasks()} <= {S.PENDING, S.READY, S.SCHEDULED}


@pytest.mark.timeout(30)
def test_a_start_refused_for_an_unknown_dependency_starts_no_thread(make_sched, runs):
    before = set(threading.enumerate())
    s = make_sched(start=False, threads=True)
    s.schedule(runs.fn("root"), name="root")
    s.add(runs.fn("b"), name="b", deps=("ghost",))
    engine_threads = set(threading.enumerate()) - before
    with pytest.raises(KeyError, match="ghost"):
        s.start()
    assert set(threading.enumerate()) - before == engine_threads
    s.add(runs.fn("ghost"), name="ghost")  # fixed: now it may start
    s.start()
    assert s.wait(timeout=10)
    assert sorted(runs.order) == ["b", "ghost", "root"]
    assert runs.order.index("ghost") < runs.order.index("b")


def test_unknown_dependency_fails_wait_that_would_start(unstarted, runs):
    unstarted.add(runs.fn("b"), name="b", deps=("ghost",))
    with pytest.raises(KeyError, match="ghost"):
        unstarted.wait(timeout=1)
    assert runs.order == []


def test_unknown_dependency_resolved_before_start_is_fine(unstarted, runs):
    unstarted.add(runs.fn("b"), name="b", deps=("a",))
    unstarted.add(runs.fn("a"), name="a")
    unstarted.start()
    assert runs.order == ["a", "b"]


def test_unknown_dependency_after_start_raises_key_error_and_adds_nothing(sched, runs):
    before = sched.snapshot()
    with pytest.raises(KeyError, match="ghost"):
        sched.add(runs.fn("b"), name="b", deps=("ghost",))
    assert sched.snapshot() == before


def test_add_dependency_on_unknown_ids_after_start_raises_key_error(sched, build):
    build(sched, {"a": []}, run_at={"a": 5.0})
    before = sched.snapshot()
    with pytest.raises(KeyError):
        sched.add_dependency("a", "ghost")
    with pytest.raises(KeyError):
        sched.add_dependency("ghost", "a")
    assert sched.snapshot() == before


# --- editing edges ------------------------------------------------------------------


def test_add_dependency_on_a_started_task_raises_value_error(sched, clock, build):
    g = build(sched, {"done": [], "bad": [], "other": []}, fail={"bad"}, run_at={"other": 5.0})
    assert g.state("done") is S.SUCCEEDED and g.state("bad") is S.FAILED
    before = sched.snapshot()
    for started in ("done", "bad"):
        with pytest.raises(ValueError, match=started):
            sched.add_dependency(started, "other")
    assert sched.snapshot() == before


def test_add_dependency_on_a_not_started_task_holds_it_back(sched, clock, build):
    g = build(sched, {"up": [], "down": []}, run_at={"up": 5.0, "down": 1.0})
    sched.add_dependency("down", "up")
    assert sched.task("down").deps == ("up",)
    assert sched.task("up").dependents == ("down",)
    clock.advance(1.0)
    assert g.ran == []
    clock.advance(4.0)
    assert g.ran == ["up", "down"]


def test_remove_dependency_releases_the_task(sched, build):
    g = build(sched, {"up": [], "down": ["up"]}, run_at={"up": 50.0})
    assert g.state("down") is S.PENDING
    sched.remove_dependency("down", "up")
    assert sched.task("down").deps == ()
    assert g.ran == ["down"]


def test_task_info_lists_deps_and_dependents(unstarted, build):
    build(unstarted, {"a": [], "b": ["a"], "c": ["a", "b"]})
    assert unstarted.task("c").deps == ("a", "b")
    assert set(unstarted.task("a").dependents) == {"b", "c"}
    assert unstarted.task("b").dependents == ("c",)
