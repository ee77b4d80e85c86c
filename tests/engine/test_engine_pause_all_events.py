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
