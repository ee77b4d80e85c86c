"""The one fold of a run's events into task snapshots (engine/fold.py), and its four
users: the window's bridge, the owner's feed, the watcher and the command line's
run monitor. Event sequences drive the fold (hypothesis) against the plain rule it
states; then one real run (a Scheduler with a store, its feed, a WatchedRun in the
same process, an offscreen bridge and the CLI's monitor) gives each of the four
the same events, and each ends with the same snapshots as the engine."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before anything imports Qt

from hypothesis import given, settings
from hypothesis import strategies as st

from taskloom.engine import Call, Event, RetryPolicy, Scheduler, TaskInfo, TaskState
from taskloom.engine import fold as folding
from taskloom.engine.feed import FeedWriter, _encode, _static_part
from taskloom.engine.feed_reader import decode_info
from taskloom.engine.fold import TaskFold
from taskloom.engine.models import MadeUpEvent
from taskloom.engine.store import SQLiteStore

IDS = ["a", "b", "c", "d"]
STATES = [s for s in TaskState]


def _task(tid: str, state: TaskState = TaskState.PENDING, paused: bool = False) -> TaskInfo:
    return TaskInfo(tid, tid, state, ("x",), (), 3, 0, None, False, paused, None)


@st.composite
def runs(draw):
    """(the snapshot, the events after it): task events of known and unknown tasks,
    pauses, removals, edges and pause/resume all, numbered from the snapshot's seq."""
    known = draw(st.lists(st.sampled_from(IDS), unique=True, min_size=1))
    floor = draw(st.integers(0, 50))
    tasks = [_task(tid, draw(st.sampled_from(STATES)), draw(st.booleans())) for tid in known]
    events = []
    for seq in range(floor + 1, floor + 1 + draw(st.integers(0, 40))):
        kind = draw(
            st.sampled_from(
                ["state", "state", "state", "paused", "resumed", "removed", "edge", "all"]
            )
        )
        tid = draw(st.sampled_from(IDS + ["new"]))
        if kind == "all":
            events.append(
                Event(seq, draw(st.sampled_from(["paused", "resumed"])), "", None, 0, 0, None, None)
            )
            continue
        if kind in ("paused", "resumed", "removed"):
            events.append(
                Event(
                    seq,
                    kind,
                    tid,
                    None if kind == "removed" else TaskState.READY,
                    1.0,
                    0,
                    None,
                    None,
                )
            )
            continue
        state = draw(st.sampled_from(STATES))
        name = "dependency_added" if kind == "edge" else state.value
        # not st.text(): its character map is cached under .hypothesis, outside tmp
        error = draw(st.sampled_from([None, "", "boom", "exit 1: no such file"]))
        run_at = draw(st.none() | st.floats(allow_nan=False))
        events.append(Event(seq, name, tid, state, 1.0, draw(st.integers(0, 5)), run_at, error))
    return floor, tasks, events


def _by_the_rule(tasks: list[TaskInfo], events: list[Event]) -> dict[str, TaskInfo]:
    """The snapshots the fold's docstring promises, applied event by event."""
    out = {t.id: t for t in tasks}
    for e in events:
        if not e.task_id or e.task_id not in out:
            continue
        if e.kind == "removed":
            del out[e.task_id]
        elif e.kind in ("paused", "resumed"):
            out[e.task_id] = out[e.task_id]._replace(paused=e.kind == "paused")
        else:
            out[e.task_id] = out[e.task_id]._replace(
                state=e.state, attempt=e.attempt, run_at=e.run_at, error=e.error
            )
    return out


def _gone_and_back(events: list[Event]) -> set[str]:
    """Tasks removed and then told of again: a reader would have to read them."""
    removed, back = set(), set()
    for e in events:
        if e.kind == "removed":
            removed.add(e.task_id)
        elif e.task_id in removed:
            back.add(e.task_id)
    return back


@settings(max_examples=300, deadline=None)
@given(runs())
def test_the_fold_gives_what_its_rule_says_however_the_events_are_batched(run):
    floor, tasks, events = run
    expected = _by_the_rule(tasks, events)
    back = _gone_and_back(events)

    fold = TaskFold(tasks, floor=floor)
    for event in events:
        what = fold.apply(event)
        if event.task_id and event.kind != "removed" and not fold.known(event.task_id):
            assert what == folding.UNKNOWN
    got = fold.tasks
    assert {t: i for t, i in got.items() if t not in back} == {
        t: i for t, i in expected.items() if t not in back
    }
    assert fold.cursor == (events[-1].seq if events else floor)
    engine_pauses = [e.kind == "paused" for e in events if not e.task_id]
    assert fold.paused == (engine_pauses[-1] if engine_pauses else None)

    # The bridge's batching: only each task's latest state event and latest pause,
    # the pauses after the states, in any order otherwise.
    latest: dict[str, Event] = {}
    for e in events:
        if e.task_id:
            key = ("pause:" if e.kind in ("paused", "resumed") else "") + e.task_id
            latest[key] = e
            if e.kind == "removed":  # a removal ends what came before it
                latest.pop("pause:" + e.task_id, None)
    batched = TaskFold(tasks, floor=floor)
    for key in sorted(latest, key=lambda k: k.startswith("pause:")):
        batched.apply(latest[key])
    if not back:
        assert batched.tasks == got

    # Events at or below the floor are in the snapshot already.
    again = TaskFold(tasks, floor=floor)
    for event in events:
        again.apply(event._replace(seq=floor))
    assert again.tasks == {t.id: t for t in tasks}


@settings(max_examples=200, deadline=None)
@given(runs())
def test_the_feed_row_the_watcher_and_the_monitor_read_the_same_fold(run):
    """What each user takes out of its fold: the feed's row text (decoded as a
    watcher does), the watcher's (state, attempt, paused) of what listeners were
    told, the monitor's states: all the fold's snapshot."""
    from taskloom.cli import RunMonitor

    floor, tasks, events = run
    fold = TaskFold(tasks, floor=floor)
    monitor = RunMonitor(_Workflow(), [])
    monitor.seed(tasks)
    for event in events:
        fold.apply(event)
        monitor.on_event(event)
    for tid, info in fold.tasks.items():
        base = fold.readings[tid]  # as the feed makes a row
        fields = fold.latest.get(tid, base)
        text = _encode(_static_part(base), fields, fold.pauses.get(tid, base.paused))
        assert decode_info(tid, text) == info._replace(name=tid)
        assert fold.brief(tid) == (info.state, info.attempt, info.paused)
    told_states = {tid: s for tid, s in monitor.states.items() if tid in fold}
    assert told_states == {tid: info.state for tid, info in fold.tasks.items()}


class _Workflow:
    tasks: dict = {}


def test_a_reading_keeps_the_state_the_events_gave_or_takes_it_all():
    fold = TaskFold([_task("a", TaskState.PENDING)], floor=0)
    fold.apply(Event(1, "running", "a", TaskState.RUNNING, 1.0, 1, None, None))
    ahead = _task("a", TaskState.SUCCEEDED)._replace(priority=9, deps=("y",))
    fold.rebase(ahead)  # the feed's re-read: a reading may be ahead of the events
    assert fold.info("a") == ahead._replace(state=TaskState.RUNNING, attempt=1)
    fold.put(ahead)  # the bridge's re-read: newer than every event applied
    assert fold.info("a") == ahead
    assert (
        fold.apply(Event(2, "ready", "z", TaskState.READY, 1.0, 0, None, None)) == folding.UNKNOWN
    )
    assert fold.info("z") is None and fold.states["z"] is TaskState.READY
    fold.rebase(_task("z"))  # read at last: the event's state stands
    assert fold.info("z") == _task("z", TaskState.READY)


# ---------------------------------------------------------------- the four users, one run
def quick() -> None:
    pass


def broken() -> None:
    raise RuntimeError("no")


def test_the_four_users_end_with_the_engines_snapshots_from_one_run(tmp_path, qtbot, monkeypatch):
    """One real run (retries, a failure, a pause, a task added late, a burst bigger
    than the feed's round) followed by all four: the bridge's tasks, the feed's
    fold, the watcher's tasks and the monitor's states are the engine's. The
    watcher's own events are the ones marked ``made_up``."""
    from taskloom.cli import RunMonitor
    from taskloom.engine import feed as feed_module
    from taskloom.engine.watched_run import WatchedRun
    from taskloom.gui.bridge import EngineBridge

    monkeypatch.setattr(feed_module, "FEED_TAIL", 20)  # the watcher must make some up
    store = SQLiteStore(tmp_path / "run.db")
    scheduler = Scheduler(workers=4, store=store)
    for n in range(300):
        scheduler.add(
            Call("tests.test_fold:quick"), name=f"t{n}", deps=[f"t{n - 1}"] if n % 7 else []
        )
    scheduler.add(Call("tests.test_fold:broken"), name="bad", retry=RetryPolicy(2, base=0.01))
    scheduler.add(Call("tests.test_fold:quick"), name="held")
    scheduler.pause("held")
    monitor = RunMonitor(_Workflow(), [])
    scheduler.subscribe(monitor.on_event)
    monitor.seed(scheduler.tasks())
    feed = FeedWriter(scheduler, store).start()
    watcher = WatchedRun(tmp_path / "run.db")
    heard: list[Event] = []
    seq, tasks, _ = watcher.snapshot()
    told = TaskFold(tasks, floor=seq)  # what a listener of the watcher was told

    def listen(event: Event) -> None:  # the watcher's thread
        heard.append(event)
        told.apply(event)

    watcher.subscribe(listen)
    bridge = EngineBridge(scheduler)
    try:
        scheduler.start()
        scheduler.add(Call("tests.test_fold:quick"), name="late", deps=["t0"])
        qtbot.waitUntil(
            lambda: all(i.state.settled for i in scheduler.tasks() if i.id != "held"),
            timeout=60_000,
        )
        truth = {info.id: info for info in scheduler.tasks()}
        assert truth["bad"].state is TaskState.FAILED and truth["held"].paused

        qtbot.waitUntil(lambda: bridge.tasks == truth, timeout=20_000)
        qtbot.waitUntil(lambda: {t.id: t for t in watcher.tasks()} == truth, timeout=20_000)
        feed.close()  # its last round is written: a watcher that attaches now reads
        store.flush()  # feed_tasks and the log entries since, folded, as the engine has them
        from taskloom.engine.feed_reader import FeedReader

        late = FeedReader(store.path)
        try:
            assert {tid: info for tid, _o, info, _a, _c in late.read(-1, ()).tasks} == truth
        finally:
            late.close()
        assert dict(monitor.states) == {tid: info.state for tid, info in truth.items()}

        # a listener of the watcher ends where the owner is, and can tell the events
        # the watcher made (for rows whose events the busy feed left out) from the owner's
        qtbot.waitUntil(lambda: told.states == {t: i.state for t, i in truth.items()})
        made_up = [e for e in heard if e.made_up]
        assert made_up and all(isinstance(e, MadeUpEvent) for e in made_up)
        assert any(not e.made_up for e in heard)
    finally:
        bridge.close()
        watcher.close()
        scheduler.shutdown(wait=True)
        feed.close()
        store.close()
