"""``at`` tasks (an aware ``run_at``) follow the wall clock, as cron occurrences do:
after a suspend or a wall-clock step they run at their wall time, not at a monotonic
time computed when they were scheduled (issue 21, item 3)."""

from datetime import UTC, datetime, timedelta

from taskloom.engine import ManualClock, Scheduler, SyncExecutor
from taskloom.engine.definitions import TaskDefinition

HOUR = 3600.0
EIGHT = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
NINE = EIGHT + timedelta(hours=1)


def _engine(start=EIGHT):
    clock = ManualClock(wall=start)
    return clock, Scheduler(clock=clock, executor=SyncExecutor())


def test_an_at_task_passed_during_a_suspend_runs_on_wake_like_a_cron_occurrence():
    clock, s = _engine()
    runs = []
    s.schedule(lambda: runs.append(("at", clock.wall())), NINE, name="at9")
    s.schedule_cron(lambda: runs.append(("cron", clock.wall())), "0 9 * * *", name="cron9")
    s.start()
    clock.advance(600)  # 08:10
    clock.jump_wall(2 * HOUR)  # a 2 h suspend: the wall clock moved, monotonic time did not
    assert sorted(kind for kind, _ in runs) == ["at", "cron"]
    woke = EIGHT + timedelta(hours=2, minutes=10)
    assert all(wall == woke for _, wall in runs)
    clock.advance(2 * HOUR)  # nothing runs twice
    assert len(runs) == 2
    s.shutdown()


def test_a_wall_step_forward_makes_a_passed_at_task_due_at_once():
    clock, s = _engine(NINE - timedelta(minutes=5))
    runs = []
    s.schedule(lambda: runs.append(clock.wall()), NINE, name="at9")
    s.start()
    clock.jump_wall(600)  # +10 min: 09:05
    assert runs == [NINE + timedelta(minutes=5)]
    s.shutdown()


def test_a_wall_step_back_delays_an_at_task_to_its_wall_time():
    clock, s = _engine()
    runs = []
    s.schedule(lambda: runs.append(clock.wall()), NINE, name="at9")
    s.start()
    clock.jump_wall(-HOUR)  # 07:00 now
    clock.advance(HOUR)  # 08:00: the old monotonic due, not yet its wall time
    assert runs == []
    assert s.upcoming()[0].run_at == 2 * HOUR
    clock.advance(HOUR)
    assert runs == [NINE]
    s.shutdown()


def test_an_at_task_waiting_for_a_dependency_through_a_suspend_uses_the_wall_time():
    clock, s = _engine()
    runs = []
    s.add(lambda: None, name="gate")
    s.pause("gate")
    s.schedule(lambda: runs.append(clock.wall()), NINE, name="at9", deps=["gate"])
    s.start()
    clock.jump_wall(2 * HOUR)  # 10:00, the task still waits
    assert runs == []
    s.resume("gate")  # gate runs, then at9 is released: 09:00 has passed
    assert runs == [EIGHT + timedelta(hours=2)]
    s.shutdown()


def test_an_at_task_from_a_definition_follows_the_wall_clock_too():
    clock, s = _engine()
    runs = []
    TaskDefinition(id="d9", action=lambda: runs.append(clock.wall()), at=NINE).submit(s)
    s.start()
    clock.jump_wall(-HOUR)
    clock.advance(HOUR)
    assert runs == []
    clock.advance(HOUR)
    assert runs == [NINE]
    s.shutdown()


def test_a_cancelled_at_task_is_not_requeued_by_a_wall_jump():
    clock, s = _engine()
    runs = []
    s.schedule(lambda: runs.append(clock.wall()), NINE, name="at9")
    s.start()
    s.cancel("at9")
    clock.jump_wall(2 * HOUR)
    clock.advance(HOUR)
    assert runs == []
    assert s.upcoming() == []
    s.shutdown()


def test_an_at_task_restored_from_a_store_follows_the_wall_clock(tmp_path):
    from taskloom.engine.store import SQLiteStore

    db = tmp_path / "at.db"
    clock = ManualClock(wall=EIGHT)
    store = SQLiteStore(db)
    s = Scheduler(clock=clock, executor=SyncExecutor(), store=store)
    s.schedule("tests.engine._store_jobs:noop", NINE, name="at9")
    s.start()
    s.shutdown()
    store.close()

    clock = ManualClock(wall=EIGHT)
    store = SQLiteStore(db)
    s = Scheduler(clock=clock, executor=SyncExecutor(), store=store)
    s.start()
    clock.jump_wall(-HOUR)  # 07:00
    clock.advance(HOUR)
    assert s.attempts("at9") == []  # 08:00: not its wall time yet
    clock.advance(HOUR)
    assert [a.outcome.value for a in s.attempts("at9")] == ["succeeded"]
    s.shutdown()
    store.close()
