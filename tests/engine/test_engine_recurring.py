"""Recurring tasks: cadence, overlap, misfire, and what runs downstream of them."""

from __future__ import annotations

import threading

import pytest

from taskloom.engine import Entry, TaskState

S = TaskState


def test_first_occurrence_is_one_interval_from_now(sched, clock, runs):
    clock.advance(2.0)
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick")
    info = sched.task("tick")
    assert info.recurring is True
    assert info.run_at == 12.0
    assert Entry(12.0, 0, "tick", "recurring") in sched.upcoming()


def test_first_occurrence_at_run_at_when_given(sched, clock, runs):
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick", run_at=3.0)
    clock.advance(3.0)
    assert runs.times("tick") == [3.0]
    assert sched.task("tick").run_at == 13.0


def test_fixed_rate_keeps_cadence_when_runs_start_late(sched, clock, runs):
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick", mode="fixed_rate")
    clock.advance(12.0)  # 2 s late, well inside the misfire grace
    assert runs.times("tick") == [12.0]
    assert sched.task("tick").run_at == 20.0
    clock.advance(8.0)
    clock.advance(10.0)
    assert runs.times("tick") == [12.0, 20.0, 30.0]
    assert sched.task("tick").state is S.SCHEDULED


def test_fixed_delay_counts_from_the_end_of_the_run(sched, clock, runs):
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick", mode="fixed_delay")
    clock.advance(12.0)
    assert sched.task("tick").run_at == 22.0
    clock.advance(10.0)
    assert runs.times("tick") == [12.0, 22.0]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("mode, next_due", [("fixed_delay", 23.0), ("fixed_rate", 20.0)])
def test_a_long_run_moves_fixed_delay_but_not_fixed_rate(
    make_sched, clock, runs, recorder, mode, next_due
):
    s = make_sched(threads=True, workers=1)
    rec = recorder(s)
    release = threading.Event()
    s.schedule_every(runs.fn("tick", lambda: release.wait(10)), 10.0, name="tick", mode=mode)
    clock.advance(10.0)
    rec.wait_kind("tick", "running")
    clock.advance(3.0)  # the run lasts 3 s of scheduler time
    release.set()
    assert next_scheduled_after_success(rec, "tick").run_at == next_due


def test_a_recurring_run_emits_succeeded_then_scheduled(sched, clock, runs, recorder):
    rec = recorder(sched)
    sched.schedule_every(runs.fn("tick"), 5.0, name="tick")
    clock.advance(5.0)
    assert rec.kinds("tick") == ["scheduled", "ready", "running", "succeeded", "scheduled"]


def test_a_failing_recurring_run_emits_failed_then_scheduled_and_keeps_going(
    sched, clock, runs, recorder
):
    rec = recorder(sched)
    runs.fail.add("tick")
    sched.schedule_every(runs.fn("tick"), 5.0, name="tick")
    clock.advance(5.0)
    assert rec.kinds("tick")[-2:] == ["failed", "scheduled"]
    clock.advance(5.0)
    assert runs.count("tick") == 2


def next_scheduled_after_success(rec, task_id, count=1):
    """The ``scheduled`` event that follows the ``count``-th success of ``task_id``."""
    success = rec.wait_kind(task_id, "succeeded", count=count)
    return rec.wait_for(
        lambda e: e.task_id == task_id and e.kind == "scheduled" and e.seq > success.seq
    )


# --- overlap: a run comes due while the previous one still runs ------------------


class Blocking:
    """A task body whose runs block until released; counts concurrent runs."""

    def __init__(self):
        self.release = threading.Event()
        self.started = threading.Semaphore(0)
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    def __call__(self):
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        self.started.release()
        try:
            self.release.wait(10)
        finally:
            with self._lock:
                self.active -= 1

    def wait_started(self, timeout=10.0):
        assert self.started.acquire(timeout=timeout), "run did not start"


@pytest.mark.timeout(30)
def test_overlap_skip_drops_occurrences_that_come_due_during_a_run(
    make_sched, clock, runs, recorder
):
    s = make_sched(threads=True, workers=2)
    rec = recorder(s)
    body = Blocking()
    s.schedule_every(runs.fn("tick", body), 10.0, name="tick", overlap="skip")
    clock.advance(10.0)
    body.wait_started()
    clock.advance(10.0)  # occurrence 20 comes due mid-run
    clock.advance(10.0)  # occurrence 30 too
    body.release.set()
    assert next_scheduled_after_success(rec, "tick").run_at == 40.0
    assert runs.count("tick") == 1
    clock.advance(10.0)
    rec.wait_kind("tick", "succeeded", count=2)
    assert runs.count("tick") == 2
    assert body.max_active == 1


@pytest.mark.timeout(30)
def test_overlap_queue_keeps_one_waiting_occurrence(make_sched, clock, runs, recorder):
    s = make_sched(threads=True, workers=2)
    rec = recorder(s)
    body = Blocking()
    s.schedule_every(runs.fn("tick", body), 10.0, name="tick", overlap="queue")
    clock.advance(10.0)
    body.wait_started()
    clock.advance(10.0)
    clock.advance(10.0)  # two occurrences came due; only one may wait
    body.release.set()
    assert next_scheduled_after_success(rec, "tick", count=2).run_at == 40.0
    assert runs.count("tick") == 2
    assert body.max_active == 1


@pytest.mark.timeout(30)
def test_overlap_parallel_starts_a_second_run_alongside(make_sched, clock, runs, recorder):
    s = make_sched(threads=True, workers=2)
    rec = recorder(s)
    body = Blocking()
    s.schedule_every(runs.fn("tick", body), 10.0, name="tick", overlap="parallel")
    clock.advance(10.0)
    body.wait_started()
    clock.advance(10.0)
    body.wait_started()  # the second run started while the first still runs
    assert body.max_active == 2
    body.release.set()
    rec.wait_kind("tick", "succeeded", count=2)


# --- misfire: occurrences missed by a stall ----------------------------------------


@pytest.mark.parametrize(
    "misfire, runs_after_stall", [("run_once", 1), ("skip", 0), ("run_all", 9)]
)
def test_misfire_policy_after_a_stall(sched, clock, runs, misfire, runs_after_stall):
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick", misfire=misfire, misfire_grace=1.0)
    clock.advance(10.0)
    assert runs.count("tick") == 1
    clock.advance(97.0)  # now 107: occurrences 20..100 are all more than 1 s late
    assert runs.count("tick") == 1 + runs_after_stall
    assert sched.task("tick").run_at == 110.0  # fixed_rate cadence continues
    clock.advance(3.0)
    assert runs.count("tick") == 2 + runs_after_stall


def test_a_late_occurrence_within_the_grace_still_runs_under_skip(sched, clock, runs):
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick", misfire="skip", misfire_grace=5.0)
    clock.advance(14.0)  # 4 s late: inside the grace
    assert runs.count("tick") == 1


# --- dependencies on a recurring task ---------------------------------------------


def test_downstream_of_a_recurring_task_runs_after_each_success(sched, clock, runs):
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick")
    sched.add(runs.fn("report"), name="report", deps=("tick",))
    assert sched.task("report").state is S.PENDING
    for n in (1, 2, 3):
        clock.advance(10.0)
        assert runs.count("report") == n
    assert runs.order == ["tick", "report"] * 3


def test_downstream_of_a_recurring_task_waits_for_its_next_success(sched, clock, runs):
    runs.fail.add("tick")
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick")
    sched.add(runs.fn("report"), name="report", deps=("tick",))
    clock.advance(10.0)
    assert runs.count("report") == 0
    runs.fail.clear()
    clock.advance(10.0)
    assert runs.count("report") == 1


def test_wait_ignores_recurring_tasks_and_their_downstream(sched, clock, runs):
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick")
    sched.add(runs.fn("report"), name="report", deps=("tick",))
    sched.schedule(runs.fn("once"), name="once")
    assert sched.wait(timeout=2.0) is True
    assert runs.order == ["once"]


def test_run_now_runs_a_recurring_task_at_once(sched, clock, runs):
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick")
    assert sched.run_now("tick") is True
    assert runs.count("tick") == 1
    assert sched.task("tick").state is S.SCHEDULED


def test_cancel_of_a_recurring_task_stops_it_and_skips_its_downstream(sched, clock, runs):
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick")
    sched.add(runs.fn("report"), name="report", deps=("tick",))
    clock.advance(10.0)
    assert sched.cancel("tick") is True
    assert sched.task("tick").state is S.CANCELLED
    assert sched.upcoming() == []
    clock.advance(100.0)
    assert runs.order == ["tick", "report"]
    assert sched.task("report").state in (S.SKIPPED, S.SUCCEEDED)


def test_intervals_ignore_wall_clock_jumps(sched, clock, runs):
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick")
    clock.jump_wall(3600.0)  # an NTP step or a suspend moves wall time only
    clock.jump_wall(-7200.0)
    assert runs.order == []
    assert sched.task("tick").run_at == 10.0
    clock.advance(10.0)
    assert runs.count("tick") == 1
