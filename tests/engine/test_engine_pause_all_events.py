"""Pausing the whole dispatcher is an event too, so every window sees it."""

from taskloom.engine import ManualClock, Scheduler, SyncExecutor


def test_pause_and_resume_all_emit_engine_events_once():
    s = Scheduler(clock=ManualClock(), executor=SyncExecutor())
    got = []
    s.subscribe(got.append)
    s.start()
    s.pause()
    s.pause()  # already paused: no second event
    ran = []
    s.add(lambda: ran.append(1), name="t")
    assert ran == [] and s.paused
    s.resume()
    assert ran == [1] and not s.paused
    engine_events = [(e.kind, e.task_id, e.state) for e in got if e.task_id == ""]
    assert engine_events == [("paused", "", None), ("resumed", "", None)]
    seqs = [e.seq for e in got]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # one global sequence
    s.shutdown()


def _paused_for(seconds: float, misfire: str) -> tuple[list[float], Scheduler, ManualClock]:
    clock = ManualClock()
    s = Scheduler(clock=clock, executor=SyncExecutor())
    ran: list[float] = []
    s.schedule_every(lambda: ran.append(clock.now()), 10, name="tick", misfire=misfire)
    s.start()
    clock.advance(10)  # the first occurrence runs
    assert len(ran) == 1
    s.pause()
    for _ in range(int(seconds)):
        clock.advance(1)  # occurrences come due while paused: none runs
    assert len(ran) == 1
    return ran, s, clock


def test_resume_all_folds_the_occurrences_due_while_paused_into_one_run():
    ran, s, clock = _paused_for(22, "run_once")  # two came due: 20 and 30
    s.resume()
    assert len(ran) == 2  # one run for both, not a burst of two
    assert s.task("tick").state.name == "SCHEDULED"
    clock.advance(8)  # the next occurrence at its time
    assert len(ran) == 3
    s.shutdown()


def test_resume_all_skips_them_for_misfire_skip_and_runs_each_for_run_all():
    ran, s, clock = _paused_for(22, "skip")
    s.resume()
    assert len(ran) == 1 and s.task("tick").state.name == "SCHEDULED"
    clock.advance(8)
    assert len(ran) == 2  # the next one comes at its time
    s.shutdown()
    ran, s, clock = _paused_for(22, "run_all")
    s.resume()
    assert len(ran) == 3  # asked for: each missed occurrence runs
    s.shutdown()


def test_a_fixed_delay_task_whose_paused_occurrence_is_skipped_still_comes_due_again():
    clock = ManualClock()
    s = Scheduler(clock=clock, executor=SyncExecutor())
    ran: list[float] = []
    s.schedule_every(
        lambda: ran.append(clock.now()), 10, name="tick", mode="fixed_delay", misfire="skip"
    )
    s.start()
    s.pause()
    clock.advance(12)  # due at 10 while paused
    s.resume()
    assert ran == [] and s.task("tick").state.name == "SCHEDULED"
    assert s.next_due() is not None  # not stranded: its next occurrence is queued
    clock.advance(10)
    assert len(ran) == 1
    s.shutdown()
