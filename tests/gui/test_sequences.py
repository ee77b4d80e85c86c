"""Sequences people make in the window, not features alone (issues 24/25 follow-up):
a run's forecast while it goes, as the status bar, the cards and the ring show it."""

from __future__ import annotations

from concurrent.futures import Future

from taskloom.engine import ManualClock, Scheduler, SyncExecutor, TaskState


class Holding(SyncExecutor):
    """Attempts stay in flight until the test ends them (a RUNNING task to look at)."""

    def __init__(self):
        self.futures = {}

    def submit(self, fn, /, *args, **kwargs):
        future = Future()
        future.set_running_or_notify_cancel()
        self.futures[fn()] = future
        return future

    def finish_all(self):
        for future in self.futures.values():
            if not future.done():
                future.set_result(None)


def named(name):
    def run():
        return name

    return run


def chain(*names, executor=None):
    """a -> b -> c ... on a ManualClock, started."""
    held = executor or Holding()
    scheduler = Scheduler(workers=2, clock=ManualClock(), executor=held)
    previous = None
    for name in names:
        scheduler.add(named(name), name=name, deps=[previous] if previous else [])
        previous = name
    scheduler.start()
    return scheduler, held


def ringed(view, window, tid) -> bool:
    """Whether the critical path's ring covers the task's card."""
    node = window.scene.nodes[tid]
    return view.critical.path().contains(node.sceneBoundingRect().center())


def test_ring_and_expected_starts_follow_the_run_between_two_forecasts(make_window, qtbot):
    """The lead's screenshot: the ring stayed on a task that had succeeded and a running
    task kept its expected-start badge, until the next forecast (seconds later under
    load). A task that settles leaves the ring, one that starts loses its badge, at once."""
    scheduler, held = chain("a", "b", "c")
    window = make_window(scheduler)
    view = window.forecast_view
    view.forecaster.expected = lambda: {"a": 10.0, "b": 10.0, "c": 10.0}
    view.forecaster.request()
    qtbot.waitUntil(
        lambda: view.live is not None and view.live.forecast.critical_path == ["a", "b", "c"],
        timeout=5000,
    )
    assert ringed(view, window, "a") and set(view.badges) == {"b", "c"}
    view.forecaster.forecastReady.disconnect(view.show)  # the next forecast is slow to come

    scheduler.clock.advance(10.0)
    held.futures["a"].set_result(None)
    qtbot.waitUntil(lambda: window.scene.tasks["b"].state is TaskState.RUNNING, timeout=3000)
    assert window.scene.tasks["a"].state is TaskState.SUCCEEDED
    assert not ringed(view, window, "a")  # done: not on the way to the finish any more
    assert ringed(view, window, "b")
    assert "b" not in view.badges  # it runs: no expected start on it
    assert set(view.badges) == {"c"}
    scheduler.shutdown(wait=False)
    held.finish_all()
