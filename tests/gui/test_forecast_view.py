"""The live forecast in the window: ETA, critical path, expected starts, ghost bars,
"slower than usual", and the inspector's duration trend."""

from __future__ import annotations

import time

from PySide6.QtCore import QCoreApplication

from taskloom.engine import Attempt, ManualClock, Outcome, Scheduler, SyncExecutor
from taskloom.engine.durations_model import DurationModel
from taskloom.gui.duration_trend import DurationTrend
from taskloom.gui.forecaster import Live


class Holding(SyncExecutor):
    """Runs stay in flight until the test ends them (a RUNNING task to look at)."""

    def __init__(self):
        self.futures = {}

    def submit(self, fn, /, *args, **kwargs):
        from concurrent.futures import Future

        future = Future()
        future.set_running_or_notify_cancel()
        self.futures[fn()] = future
        return future


def named(name):
    def run():
        return name

    return run


def holding_scheduler():
    held = Holding()
    return Scheduler(workers=2, clock=ManualClock(), executor=held), held


def test_eta_critical_path_badges_and_ghosts_come_from_a_forecast_off_the_gui_thread(
    make_window, qtbot
):
    scheduler, held = holding_scheduler()
    scheduler.add(named("a"), name="a")
    scheduler.add(named("b"), name="b", deps=["a"])
    scheduler.add(named("c"), name="c", deps=["a"])
    scheduler.add(named("d"), name="d", deps=["b", "c"])
    scheduler.start()
    window = make_window(scheduler)
    view = window.forecast_view
    view.forecaster.expected = lambda: {"a": 10.0, "b": 30.0, "c": 5.0, "d": 10.0}
    view.forecaster.request()
    qtbot.waitUntil(
        lambda: view.live is not None and view.live.forecast.critical_path == ["a", "b", "d"],
        timeout=2000,
    )
    f = view.live.forecast
    assert f.finish == 50.0
    assert f.starts == {"a": 0.0, "b": 10.0, "c": 10.0, "d": 40.0}
    assert view.eta.text().startswith("ETA ")
    assert "p90" in view.eta.toolTip() and "a → b → d" in view.eta.toolTip()
    assert not view.critical.path().isEmpty()
    assert set(view.badges) == {"b", "c", "d"}  # a runs: no expected start on it
    assert view.badges["d"].text().startswith("≈ ")
    ghosts = window.timeline.model.ghosts
    assert ghosts["d"] == [(40.0, 50.0, True)]
    assert ghosts["c"] == [(10.0, 15.0, False)]
    assert ghosts["a"] == [(0.0, 10.0, True)]  # the running attempt's rest

    # A change is in the forecast within 2 s: a finishes early, at 2 s.
    scheduler.clock.advance(2.0)
    held.futures["a"].set_result(None)
    qtbot.waitUntil(lambda: "a" not in view.live.forecast.starts, timeout=2000)
    assert view.live.forecast.finish == 40.0  # b 30 s, then d 10 s, from now
    assert view.live.forecast.origin == 2.0
    assert view.live.forecast.critical_path == ["b", "d"]
    view.forecaster.close()
    scheduler.shutdown(wait=False)
    for future in held.futures.values():
        if not future.done():
            future.set_result(None)


def test_a_running_task_past_its_p90_gets_a_ring(make_window):
    scheduler, held = holding_scheduler()
    scheduler.add(named("slow"), name="slow")
    scheduler.add(named("quick"), name="quick")
    scheduler.start()
    window = make_window(scheduler)
    view = window.forecast_view
    view.forecaster.close()  # the test sets the forecast itself
    QCoreApplication.processEvents()
    window.scene.set_tasks(window.bridge.tasks)
    model = DurationModel({"slow": [1.0, 1.0, 1.2], "quick": [10.0, 10.0, 10.0]})
    scheduler.clock.advance(5.0)  # both have run 5 s: slow is past 1.2, quick is not
    window.bridge.drain()
    view.live = Live(None, model)  # only the durations matter here
    view.refresh_slow()
    assert view.slow == {"slow"}
    assert not view.slow_rings.path().isEmpty()
    scheduler.shutdown(wait=False)
    for future in held.futures.values():
        future.set_result(None)


def attempt(n, start, seconds, outcome=Outcome.SUCCEEDED):
    end = None if seconds is None else start + seconds
    return Attempt(n, start, end, outcome, None, None, None, None, None)


def test_duration_trend_shows_median_p90_and_slower_than_usual(qtbot):
    trend = DurationTrend()
    qtbot.addWidget(trend)
    past = [attempt(i, 10.0 * i, s) for i, s in enumerate([2.0, 2.0, 2.0, 4.0], 1)]
    past.append(attempt(5, 50.0, 9.0, Outcome.FAILED))  # failures are drawn, not counted
    trend.show_attempts(past, now=100.0)
    assert trend.caption.text() == "median 2.00 s · p90 3.40 s · 4 successes"
    assert len(trend.sparkline.bars) == 5
    assert trend.slow.isHidden()
    trend.show_attempts([*past, attempt(6, 100.0, None, Outcome.RUNNING)], now=103.0)
    assert trend.slow.isHidden()  # 3 s: not past p90 yet
    trend.show_attempts([*past, attempt(6, 100.0, None, Outcome.RUNNING)], now=104.0)
    assert not trend.slow.isHidden()
    assert trend.slow.text() == "⚠ slower than usual by 0.60 s: running 4.00 s, p90 3.40 s"


def test_closing_waits_for_a_store_read_under_way_and_allows_no_more(qtbot):
    import threading

    from taskloom.gui.forecaster import Forecaster

    reading, release = threading.Event(), threading.Event()

    class SlowStore:
        run = 1

        def succeeded_durations(self, keep):
            reading.set()
            release.wait(5)
            return {}

        def failure_rates(self, keep):
            return {}

    scheduler = Scheduler(workers=1, clock=ManualClock(), executor=SyncExecutor())
    forecaster = Forecaster(scheduler)
    forecaster.store = SlowStore()
    reader = threading.Thread(target=forecaster._model, args=({},))
    reader.start()
    assert reading.wait(5)
    closed = threading.Event()
    closer = threading.Thread(target=lambda: (forecaster.close(), closed.set()))
    closer.start()
    assert not closed.wait(0.2)  # the read is under way: close waits for it
    release.set()
    assert closed.wait(5)
    reader.join(5)
    closer.join(5)
    forecaster._cached_model = None
    try:
        forecaster._model({})
    except RuntimeError as exc:
        assert "closed" in str(exc)
    else:
        raise AssertionError("a closed forecaster read the store")
    scheduler.shutdown()


def costly_view(_answer):
    """A view whose showing of a forecast takes 120 ms of the GUI thread's CPU."""
    until = time.thread_time() + 0.12
    while time.thread_time() < until:
        pass


def test_a_costly_forecast_waits_longer_for_the_next_one(qtbot):
    """A forecast takes at most about a tenth of a core from the run it forecasts: the
    next one waits COST_FACTOR times what the last cost this process (here its showing
    took 120 ms of the GUI thread), not only MIN_GAP."""
    from taskloom.gui import forecaster as module
    from taskloom.gui.forecaster import Forecaster

    scheduler = Scheduler(workers=1, clock=ManualClock(), executor=SyncExecutor())
    scheduler.start()
    scheduler.add(named("a"), name="a")  # ran: its duration is known
    scheduler.schedule(named("b"), 60.0, name="b")
    forecaster = Forecaster(scheduler)
    forecaster.forecastReady.connect(costly_view)
    try:
        with qtbot.waitSignal(forecaster.forecastReady, timeout=10_000):
            forecaster._start()
        assert forecaster.last_cost >= 0.12
        cooling = forecaster._cool_until - time.monotonic()
        assert cooling > module.MIN_GAP + 0.3
        started = forecaster.started
        forecaster._start()  # asked again at once: it waits out the cost, it does not start
        assert forecaster.started == started
        assert forecaster._debounce.remainingTime() > module.MIN_GAP * 1000
    finally:
        forecaster.close()
        scheduler.shutdown()


def test_a_forecast_that_knew_no_duration_does_not_hold_the_next_back(qtbot):
    """A first run's first forecast is all guesses ("ETA in 8 min" for a 3 s run),
    however costly: the next one, with real durations, waits only MIN_GAP."""
    from taskloom.gui import forecaster as module
    from taskloom.gui.forecaster import Forecaster

    scheduler = Scheduler(workers=1, clock=ManualClock(), executor=SyncExecutor())
    scheduler.schedule(named("b"), 60.0, name="b")  # nothing ran: nothing is known
    forecaster = Forecaster(scheduler)
    forecaster.forecastReady.connect(costly_view)
    try:
        with qtbot.waitSignal(forecaster.forecastReady, timeout=10_000) as ready:
            forecaster._start()
        assert ready.args[0].model.knows_nothing and forecaster.last_cost >= 0.12
        assert ready.args[0].forecast.passes == 0  # all one guess: nothing to sample
        assert forecaster._cool_until - time.monotonic() <= module.MIN_GAP
    finally:
        forecaster.close()
        scheduler.shutdown()


def test_the_forecast_process_runs_at_a_lower_cpu_priority():
    """Its sampled passes take the cores only when the run leaves them idle; the serve
    loop renices itself (a test with the priority unchanged fails)."""
    import os

    from taskloom.engine.forecast import Plan
    from taskloom.gui.forecaster import FORECAST_NICENESS, ForecastProcess

    scheduler = Scheduler(workers=1, clock=ManualClock(), executor=SyncExecutor())
    scheduler.add(named("a"), name="a")
    process = ForecastProcess()
    try:
        plan = Plan.from_scheduler(scheduler, {}, {})
        process.forecast(plan, DurationModel({"a": [1.0]}), horizon=600.0, budget=0.01)
        pid = process._proc.pid
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        assert FORECAST_NICENESS > 0 and ours < 19
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, ours + FORECAST_NICENESS) > ours
    finally:
        process.close()
        scheduler.shutdown()


def test_a_model_that_knew_nothing_is_read_again_once_a_task_is_done():
    """The first durations reach the forecast at once, not MODEL_NEWS later."""
    from taskloom.gui.forecaster import Forecaster

    scheduler = Scheduler(workers=1, clock=ManualClock(), executor=SyncExecutor())
    scheduler.start()
    scheduler.add(named("a"), name="a")  # ran just now
    forecaster = Forecaster(scheduler)
    try:
        forecaster._cached_model = ({}, time.monotonic(), DurationModel())  # read before it ran
        assert forecaster._model({}, []).knows_nothing  # nothing done: the cache stands
        model = forecaster._model({}, ["a"])
        assert not model.knows_nothing and model.has_history("a")
    finally:
        forecaster.close()
        scheduler.shutdown()
