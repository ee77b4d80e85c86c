"""The owner's feed and the control channel, in one process: an owner (Scheduler +
SQLiteStore + FeedWriter) and WatchedRuns on the same store (flock locks taken
through separate descriptors conflict within a process as between processes)."""

from __future__ import annotations

import os
import sqlite3
import threading
import time

import pytest

from taskloom.engine import Call, Scheduler, TaskState, current_run
from taskloom.engine.feed import CONTROL_TTL, FeedWriter
from taskloom.engine.store import SQLiteStore
from taskloom.engine.watched_run import OwnerGone, WatchedRun, WatchOnly

S = TaskState


def blocked() -> None:
    current_run().wait_cancelled(30)  # runs until cancelled


def quick() -> None:
    pass


@pytest.fixture
def owner(tmp_path):
    store = SQLiteStore(tmp_path / "run.db")
    scheduler = Scheduler(workers=2, store=store)
    scheduler.add(Call("tests.engine.test_feed:blocked"), name="slow")
    scheduler.add(Call("tests.engine.test_feed:quick"), name="after", deps=["slow"])
    feed = FeedWriter(scheduler, store).start()
    scheduler.start()
    yield scheduler, store, feed
    scheduler.shutdown(wait=True, cancel_running=True)
    feed.close()
    store.close()


def until(predicate, timeout: float = 10.0) -> None:
    """Until the owner's or the watcher's threads make ``predicate`` true (as qtbot.waitUntil)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        threading.Event().wait(0.01)


@pytest.mark.slow
def test_a_run_nobody_watches_is_looked_at_twice_a_second_not_ten_times(tmp_path):
    from taskloom.engine.feed import FEED_INTERVAL, UNWATCHED_INTERVAL

    store = SQLiteStore(tmp_path / "run.db")
    scheduler = Scheduler(workers=1, store=store)
    feed = FeedWriter(scheduler, store)
    ticks = []
    tick = feed._tick
    feed._tick = lambda: (ticks.append(time.monotonic()), tick())  # counted, then as ever
    feed.start()
    scheduler.start()
    try:
        threading.Event().wait(1.2)  # the feed's own pace is what is counted
        assert 1 <= len(ticks) <= 1.2 / UNWATCHED_INTERVAL + 1  # ~12 at FEED_INTERVAL
        assert UNWATCHED_INTERVAL >= 5 * FEED_INTERVAL
        watcher = WatchedRun(store.path)  # attached: the owner wrote its snapshot
        try:  # and looks at FEED_INTERVAL again, while watched
            count = len(ticks)
            until(lambda: len(ticks) >= count + 5, timeout=5 * UNWATCHED_INTERVAL)
        finally:
            watcher.close()
    finally:
        scheduler.shutdown(wait=True)
        feed.close()
        store.close()


@pytest.mark.slow
def test_a_watcher_of_a_quiet_run_reads_it_twice_a_second_and_hurries_when_it_asks(owner, tmp_path):
    from taskloom.engine.watched_run import IDLE_POLL_INTERVAL, POLL_INTERVAL, QUIET_POLLS

    scheduler, store, feed = owner
    watcher = WatchedRun(tmp_path / "run.db")
    try:
        until(lambda: watcher.task("slow").state is S.RUNNING)  # then nothing changes
        start = watcher.polls
        until(lambda: watcher.polls >= start + QUIET_POLLS + 2)  # quiet for long enough
        polls = watcher.polls
        threading.Event().wait(1.0)  # the watcher's own pace is what is counted
        assert watcher.polls - polls <= 1.0 / IDLE_POLL_INTERVAL + 1  # ~10 at POLL_INTERVAL
        watcher.cancel("slow")  # asking: read at once, then often until the answer came
        until(lambda: watcher.task("after").state is S.SKIPPED, timeout=10 * POLL_INTERVAL + 2)
    finally:
        watcher.close()


def test_nothing_is_written_while_nobody_watches(owner):
    scheduler, store, feed = owner
    until(lambda: scheduler.task("slow").state is S.RUNNING)
    writes = feed.writes
    feed._tick()  # a round as the feed thread runs it
    assert feed.writes == writes == 0


def test_a_watcher_sees_the_run_and_its_requests_are_answered(owner, tmp_path):
    scheduler, store, feed = owner
    watcher = WatchedRun(tmp_path / "run.db")
    try:
        assert {t.id: t.state for t in watcher.tasks()}["after"] is S.PENDING
        until(lambda: watcher.task("slow").state is S.RUNNING)
        # the attempt's start row may come a little after the state (the store's
        # writer holds it back for its end row), and is read again until it does
        until(lambda: [a.outcome for a in watcher.attempts("slow")][-1:] == ["running"])
        assert watcher.retry("slow") is True  # sent; the owner decides
        until(lambda: bool(watcher._answers))
        (answer,) = watcher.take_answers()
        assert answer[1:] == ("retry", "slow", "refused", "cannot retry slow: it is running")
        watcher.cancel("slow")
        until(lambda: watcher.task("after").state is S.SKIPPED)
        assert scheduler.task("slow").state is S.CANCELLED
        with pytest.raises(WatchOnly, match="edit the workflow file"):
            watcher.add_dependency("after", "slow")
        with pytest.raises(KeyError):
            watcher.cancel("nope")
    finally:
        watcher.close()


def test_a_watcher_that_attaches_gets_the_runs_recent_past_first(owner, tmp_path):
    scheduler, store, feed = owner
    until(lambda: scheduler.task("slow").state is S.RUNNING)  # before anyone watched
    watcher = WatchedRun(tmp_path / "run.db")
    try:
        heard = []
        watcher.subscribe(heard.append)  # handed the recent past at once
        floor = watcher.snapshot()[0]
        assert [(e.task_id, e.kind) for e in heard] == [("slow", "running")]
        assert all(e.seq > floor for e in heard)  # a listener keeps them (bridge rule)
        watcher.cancel("slow")
        until(lambda: ("slow", "cancelled") in [(e.task_id, e.kind) for e in heard])
    finally:
        watcher.close()


def test_an_old_request_is_expired_not_applied(owner, tmp_path):
    scheduler, store, feed = owner
    conn = sqlite3.connect(tmp_path / "run.db", isolation_level=None)
    conn.execute(
        "INSERT INTO control (action, task_id, requested, origin) VALUES (?,?,?,?)",
        ("cancel", "slow", time.time() - CONTROL_TTL - 5, "elsewhere"),
    )
    feed._serve_control()
    store.flush()
    status, answer = conn.execute("SELECT status, answer FROM control").fetchone()
    conn.close()
    assert status == "expired" and "before this owner" in answer
    assert scheduler.task("slow").state is S.RUNNING


def test_a_store_without_an_owner_is_not_watched(tmp_path):
    SQLiteStore(tmp_path / "run.db").close()
    with pytest.raises(OwnerGone):
        WatchedRun(tmp_path / "run.db")


def test_a_failing_feed_write_never_fails_the_owners_commit(owner):
    scheduler, store, feed = owner

    def broken(conn) -> None:
        conn.execute("INSERT INTO no_such_table VALUES (1)")

    store.put_feed(broken)
    assert store.flush() is True
    assert not store.failed


def test_an_owner_that_closes_tells_its_watchers(owner, tmp_path):
    scheduler, store, feed = owner
    watcher = WatchedRun(tmp_path / "run.db")
    try:
        until(lambda: watcher.task("slow").state is S.RUNNING)
        scheduler.shutdown(wait=True, cancel_running=True)
        feed.close()  # as taskloom run does before it closes the store
        until(lambda: not watcher.owner_alive)
        # The owner's last word is in: its final states, as it left them.
        assert watcher.tasks() == scheduler.tasks()
        with pytest.raises(RuntimeError, match="take the run over"):
            watcher.run_now("slow")
        assert watcher.allowed_actions("slow") == frozenset()
    finally:
        watcher.close()


def test_a_burst_too_big_for_one_batch_still_leaves_a_listener_with_every_state(
    tmp_path, monkeypatch
):
    """More events in one round than the feed writes (FEED_TAIL, made tiny here): a
    listener that applies events as the window's bridge does ends with the owner's
    states all the same."""
    from taskloom.engine import feed as feed_module

    monkeypatch.setattr(feed_module, "FEED_TAIL", 20)
    store = SQLiteStore(tmp_path / "run.db")
    scheduler = Scheduler(workers=4, store=store)
    for n in range(1500):
        scheduler.add(Call("tests.engine.test_feed:quick"), name=f"t{n}")
    feed = FeedWriter(scheduler, store).start()
    watcher = WatchedRun(tmp_path / "run.db")
    feed._stop.set()  # no more rounds of its own: the whole run goes into one, below
    feed._thread.join()
    seen = {info.id: info.state for info in watcher.snapshot()[1]}
    seqs = []

    def apply(event) -> None:
        seqs.append(event.seq)
        if event.state is not None:
            seen[event.task_id] = event.state

    watcher.subscribe(apply)
    try:
        scheduler.start()
        assert scheduler.wait(60)
        feed._tick()  # ready, running, succeeded of 1,500 tasks: 4,500 events
        until(lambda: all(state is S.SUCCEEDED for state in seen.values()), timeout=30)
        assert len(seen) == 1500
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        # 20 of the owner's events, and one made here for each task they left out
        assert len(seqs) <= 20 + 1500
        assert watcher.tasks() == scheduler.tasks()
    finally:
        watcher.close()
        scheduler.shutdown(wait=True)
        feed.close()
        store.close()


def test_several_watchers_follow_one_owner_and_one_leaving_stops_nobody(owner, tmp_path):
    scheduler, store, feed = owner
    first, second = WatchedRun(tmp_path / "run.db"), WatchedRun(tmp_path / "run.db")
    try:
        until(lambda: first.task("slow").state is S.RUNNING)
        until(lambda: second.task("slow").state is S.RUNNING)
        first.close()  # the owner keeps publishing for the other one
        scheduler.cancel("slow")
        until(lambda: second.task("after").state is S.SKIPPED)
        assert second.tasks() == scheduler.tasks()
    finally:
        first.close()
        second.close()


def test_an_owner_without_a_feed_is_named_at_once(tmp_path):
    """An owner from before the feed (schema 2: no feed tables) cannot be watched:
    the watcher says so, naming it, without waiting for a feed that never comes."""
    from taskloom.engine.store import StoreBusy

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("PRAGMA user_version = 2")
    conn.close()
    from taskloom.engine._store.lock import StoreLock

    lock = StoreLock.acquire(path)  # an owner, as an older Taskloom holds it
    try:
        started = time.monotonic()
        with pytest.raises(StoreBusy, match="does not publish its run") as refused:
            WatchedRun(path)
        assert time.monotonic() - started < 2.0  # not the 5 s a silent owner gets
        assert refused.value.owner.pid == os.getpid()
    finally:
        lock.release()


def test_a_store_its_owner_is_still_making_is_waited_for_not_called_old(tmp_path):
    """A window opened the moment the file appeared was told the owner was "an older
    Taskloom": the schema's steps commit one by one, the feed tables come at step 3.
    While the schema moves, the watcher waits; once it stands still, it says so."""
    from taskloom.engine._store.lock import StoreLock
    from taskloom.engine.store import StoreBusy
    from taskloom.engine.watched_run import NO_FEED_GRACE

    path = tmp_path / "new.db"
    sqlite3.connect(path).close()
    lock = StoreLock.acquire(path)  # the owner, making its store
    steps_done = threading.Event()

    def make_schema_slowly() -> None:
        for version in (1, 2):
            time.sleep(0.6)  # a loaded machine's pace between two schema steps
            conn = sqlite3.connect(path)
            conn.execute(f"PRAGMA user_version = {version}")
            conn.close()
        steps_done.set()

    maker = threading.Thread(target=make_schema_slowly)
    try:
        started = time.monotonic()
        maker.start()
        with pytest.raises(StoreBusy, match="does not publish its run"):
            WatchedRun(path, attach_timeout=10.0)
        waited = time.monotonic() - started
        assert steps_done.is_set()  # not named old while the schema still moved
        assert waited >= 1.2 + NO_FEED_GRACE - 0.1
    finally:
        maker.join()
        lock.release()


def test_a_watchers_attempts_are_read_again_until_the_store_catches_up_with_the_feed():
    """The feed commits ahead of the engine's attempt rows: attempts read while a
    row says more than the store are not kept (the next call reads them again)."""
    from taskloom.engine.models import Attempt, TaskInfo
    from taskloom.engine.options import Outcome
    from taskloom.engine.watched_run import _complete

    def info(state, attempt):
        return TaskInfo("t", "t", state, (), (), 0, attempt, None, False, False, None)

    def attempt(number, outcome):
        return Attempt(number, 1.0, None, outcome, None, None, None, None, None, None)

    running, succeeded = Outcome.RUNNING, Outcome.SUCCEEDED
    assert _complete(info(S.READY, 0), [])
    assert not _complete(info(S.RUNNING, 1), [])  # its attempt is not on disk yet
    assert _complete(info(S.RUNNING, 1), [attempt(1, running)])
    assert not _complete(info(S.SUCCEEDED, 1), [attempt(1, running)])  # not ended there yet
    assert _complete(info(S.SUCCEEDED, 1), [attempt(1, succeeded)])
    assert not _complete(info(S.RUNNING, 2), [attempt(1, succeeded)])


def test_a_reader_that_missed_folded_log_entries_reads_the_task_table_again(tmp_path, monkeypatch):
    """Each round's rows are one feed_log entry, folded into feed_tasks every
    SYNC_INTERVAL (here every round); a reader that kept up reads just the entries,
    one that missed entries dropped by a fold reads feed_tasks again: both end with
    the owner's tasks."""
    import fcntl

    from taskloom.engine import feed as feed_module
    from taskloom.engine.feed import watch_path
    from taskloom.engine.feed_reader import FeedReader

    monkeypatch.setattr(feed_module, "SYNC_INTERVAL", 0.0)
    monkeypatch.setattr(feed_module, "FOLDS_KEPT", 1)  # entries go one fold later
    store = SQLiteStore(tmp_path / "run.db")
    scheduler = Scheduler(workers=2, store=store)
    for n in range(30):
        scheduler.add(Call("tests.engine.test_feed:quick"), name=f"t{n}")
    feed = FeedWriter(scheduler, store)  # not started: its rounds are run here
    watching = os.open(watch_path(store.path), os.O_RDWR | os.O_CREAT)
    fcntl.flock(watching, fcntl.LOCK_SH)
    steady, behind = FeedReader(store.path), FeedReader(store.path)

    def round_then(*readers):
        feed._tick()
        store.flush()
        return [reader.read(-1, ()) for reader in readers]

    def states(read):
        return {tid: info.state for tid, _order, info, _actions, _changed in read.tasks}

    def heard(kind, count=1):  # the feed has heard them (events are delivered on a thread)
        def enough():
            with feed._lock:
                return sum(event.kind == kind for event in feed._events) >= count

        until(enough)

    try:
        first, _ = round_then(steady, behind)  # the snapshot
        assert first.reload and len(states(first)) == 30
        scheduler.start()
        assert scheduler.wait(30)
        heard("succeeded", 30)
        (during,) = round_then(steady)  # entry 1, folded
        assert not during.reload and set(states(during).values()) == {S.SUCCEEDED}
        scheduler.add(Call("tests.engine.test_feed:blocked"), name="late")
        heard("running")
        (after,) = round_then(steady)  # entry 2; the fold drops entry 1
        assert not after.reload and "late" in states(after)
        caught_up = behind.read(-1, ())
        owner = {info.id: info.state for info in scheduler.tasks()}
        assert caught_up.reload and states(caught_up) == owner
        assert states(during) | states(after) == owner
    finally:
        steady.close()
        behind.close()
        os.close(watching)
        scheduler.shutdown(wait=True, cancel_running=True)
        feed.close()
        store.close()


# ---------------------------------------------------------------------- garbage requests
def _insert(conn, action, task_id, requested, origin="elsewhere") -> int:
    return conn.execute(
        "INSERT INTO control (action, task_id, requested, origin) VALUES (?,?,?,?)",
        (action, task_id, requested, origin),
    ).lastrowid


def _answers(conn) -> dict[int, tuple]:
    return {r[0]: r[1:] for r in conn.execute("SELECT id, status, answer FROM control")}


def test_a_garbage_request_is_refused_and_the_valid_one_beside_it_answered(owner, tmp_path):
    # Issue 21 item 11: a non-numeric 'requested' broke the round: the valid request
    # was applied but never answered, and the garbage broke every later owner's round.
    scheduler, store, feed = owner
    conn = sqlite3.connect(tmp_path / "run.db", isolation_level=None)
    feed._stop.set()  # this test drives the rounds itself
    feed._thread.join()
    bad = [
        _insert(conn, "cancel", "slow", "yesterday"),
        _insert(conn, "cancel", "slow", b"\x00\x01"),
        _insert(conn, b"cancel", "slow", time.time()),
        _insert(conn, "cancel", 12, time.time()),
        _insert(conn, "launch", "slow", time.time()),
    ]
    good = _insert(conn, "pause", "after", time.time())
    feed._serve_control()
    store.flush()
    answers = _answers(conn)
    assert answers[good][0] == "done"
    assert scheduler.task("after").paused
    assert [answers[rid][0] for rid in bad] == ["refused"] * len(bad)
    assert scheduler.task("slow").state is S.RUNNING
    # A later owner's first round is not broken by them either: nothing is pending.
    assert conn.execute("SELECT count(*) FROM control WHERE status = 'pending'").fetchone() == (0,)
    conn.close()


@pytest.mark.slow
def test_a_huge_request_is_refused_without_being_read_and_blanked(owner, tmp_path):
    scheduler, store, feed = owner
    conn = sqlite3.connect(tmp_path / "run.db", isolation_level=None)
    feed._stop.set()
    feed._thread.join()
    huge = _insert(conn, "cancel", "x" * (50 << 20), time.time())  # 50 MB
    good = _insert(conn, "pause", "after", time.time())
    feed._serve_control()
    store.flush()
    answers = _answers(conn)
    assert answers[huge][0] == "refused" and "at most" in answers[huge][1]
    assert answers[good][0] == "done"
    size = conn.execute("SELECT length(task_id) FROM control WHERE id = ?", (huge,)).fetchone()
    assert size == (64,)  # not kept: 50 MB in the store until pruned before
    conn.close()


def test_answered_requests_are_pruned_by_age_and_by_count(owner, tmp_path, monkeypatch):
    from taskloom.engine import feed as feed_module

    scheduler, store, feed = owner
    conn = sqlite3.connect(tmp_path / "run.db", isolation_level=None)
    feed._stop.set()
    feed._thread.join()
    monkeypatch.setattr(feed_module, "CONTROL_KEEP_ROWS", 50)
    old = time.time() - feed_module.CONTROL_KEEP - 10
    conn.executemany(
        "INSERT INTO control (action, task_id, requested, origin, status, answered)"
        " VALUES ('pause', 'after', ?, 'x', 'done', ?)",
        [(old, old)] * 30 + [(time.time(), time.time())] * 100,
    )
    feed._last_prune = 0.0
    feed._serve_control()
    store.flush()
    left = conn.execute("SELECT count(*), min(answered) FROM control").fetchone()
    assert left[0] == 50  # the 30 old ones by age, then all but the newest 50
    assert left[1] > old
    conn.close()


def _watching(store_path):
    """A shared lock on ``<store>.watch``, as a watcher holds: the owner's feed writes."""
    import fcntl

    from taskloom.engine.feed import watch_path

    fd = os.open(watch_path(store_path), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def test_the_feeds_round_makes_the_same_python_calls_for_300_or_3000_finished_tasks(
    tmp_path, monkeypatch
):
    """Watchers read task states from the journal: a round of the owner's feed makes
    no Python call per event or task (C-level passes only), so 3,000 tasks that ran
    cost it the calls 300 do. (Main made a task row per task: ~10 calls each.)"""
    import cProfile
    import pstats

    from taskloom.engine import feed as feed_module

    monkeypatch.setattr(feed_module, "ACTIONS_BUDGET", 0.0)  # one actions read a round

    def calls_for(count: int, name: str) -> int:
        store = SQLiteStore(tmp_path / f"{name}.db")
        scheduler = Scheduler(workers=4, store=store)
        for n in range(count):
            scheduler.add(Call("tests.engine.test_feed:quick"), name=f"t{n}")
        feed = FeedWriter(scheduler, store)  # not started: its rounds are run here
        fd = _watching(store.path)
        try:
            feed._tick()  # the snapshot: every task once, when watching starts
            scheduler.start()
            assert scheduler.wait(60)

            def heard_all() -> bool:
                with feed._lock:
                    return sum(e.kind == "succeeded" for e in feed._events) == count

            until(heard_all, timeout=30)
            profile = cProfile.Profile()
            profile.enable()
            feed._write_changes()
            profile.disable()
            return sum(stat[1] for stat in pstats.Stats(profile).stats.values())
        finally:
            os.close(fd)
            scheduler.shutdown(wait=True)
            feed.close()
            store.close()

    few, many = calls_for(300, "few"), calls_for(3000, "many")
    assert many - few < 50, (few, many)  # per task it would be thousands more


def test_a_watcher_shows_run_at_pause_and_edges_of_a_task_added_while_it_watches(owner, tmp_path):
    """What a window shows of a task added after watching started (its edges, its
    run_at, its pause) and its dependency's new edge: the watcher's tasks are the
    owner's, with states from the journal and the rest from the feed."""
    scheduler, store, feed = owner
    watcher = WatchedRun(tmp_path / "run.db")
    try:
        until(lambda: watcher.task("slow").state is S.RUNNING)
        scheduler.schedule_every(Call("tests.engine.test_feed:quick"), 3600, name="hourly")
        scheduler.add(Call("tests.engine.test_feed:quick"), name="late", deps=["after"])
        scheduler.pause("late")
        until(lambda: "late" in {t.id for t in watcher.tasks()})
        until(lambda: watcher.tasks() == scheduler.tasks())
        hourly, late = watcher.task("hourly"), watcher.task("late")
        assert hourly.run_at is not None and hourly.run_at == scheduler.task("hourly").run_at
        assert late.paused and late.deps == ("after",)
        assert watcher.task("after").dependents == ("late",)
        scheduler.resume("late")
        scheduler.cancel("slow")  # after skips, then late
        until(lambda: watcher.task("late").state is S.SKIPPED)
        until(lambda: watcher.tasks() == scheduler.tasks())
        assert not watcher.task("late").paused
    finally:
        watcher.close()
