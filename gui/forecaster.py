"""The live forecast, computed off the GUI thread.

``Forecaster.request()`` (called on every engine batch, and every few seconds
while time moves) starts a forecast at most ``DEBOUNCE_MS`` later on one
background thread: durations from the run store (or this run's attempts), a copy
of the live scheduler (``Plan.from_scheduler``), and ``forecast()`` with up to
``BUDGET`` seconds of sampled passes. The answer comes back on the GUI thread as
``forecastReady(Live)``. One forecast runs at a time; requests made meanwhile
fold into one more after it, so a refresh lands within DEBOUNCE + one forecast
of a change (under 2 s: a pass over 2,000 tasks takes about 0.1 s).

A forecast that fails (a run watched from another process has no definitions
to copy, the store closed under it) answers None: the views show nothing.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import count

from PySide6.QtCore import QObject, Qt, QTimer, Signal

from taskloom.engine.durations_model import DurationModel
from taskloom.engine.forecast import Forecast, Plan, forecast

from .run_history import store_of

log = logging.getLogger(__name__)

DEBOUNCE_MS = 300  # engine batches come every 33 ms while busy: one forecast per burst
PERIODIC_MS = 5000  # running attempts age and timers come closer even without events
BUDGET = 1.0  # seconds of sampled passes per forecast
MIN_HORIZON = 600.0  # the point pass looks at least this far ahead (ghost bars)


@dataclass(frozen=True)
class Live:
    """One answer: the forecast and the durations it used."""

    forecast: Forecast
    model: DurationModel


class Forecaster(QObject):
    forecastReady = Signal(object)  # Live, or None when no forecast could be made
    _finished = Signal(int, object)  # worker -> GUI thread: (generation, Live | None)

    def __init__(self, scheduler, expected=None, horizon=None, active=None, parent=None):
        super().__init__(parent)
        self.scheduler = scheduler
        self.store = store_of(scheduler)
        # Called on the GUI thread when a forecast starts: {task: expected seconds},
        # and how far ahead the views want to see (seconds).
        self.expected = expected or (lambda: {})
        self.horizon = horizon or (lambda: MIN_HORIZON)
        # Whether time alone changes the forecast (something waits or runs): the
        # periodic refresh skips a run that is over.
        self.active = active or (lambda: True)
        self.last: Live | None = None
        self.computed = 0  # forecasts answered (tests wait on it)
        self._generation = count(1)
        self._running = False
        self._again = False
        self._closed = False
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="taskloom-forecast")
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self._start)
        self._periodic = QTimer(self)
        self._periodic.setInterval(PERIODIC_MS)
        self._periodic.timeout.connect(lambda: self.active() and self.request())
        self._periodic.start()
        self._finished.connect(self._on_finished, Qt.ConnectionType.QueuedConnection)

    def request(self) -> None:
        """Something changed: forecast again soon (requests within DEBOUNCE_MS fold)."""
        if not self._closed and not self._debounce.isActive():
            self._debounce.start()

    def _start(self) -> None:
        if self._closed:
            return
        if self._running:
            self._again = True
            return
        self._running = True
        generation = next(self._generation)
        expected = dict(self.expected())
        horizon = max(MIN_HORIZON, float(self.horizon()))
        self._executor.submit(self._compute, generation, expected, horizon)

    def _compute(self, generation: int, expected: dict, horizon: float) -> None:
        """On the forecast thread: never raises, always answers."""
        answer = None
        try:
            model = self._model(expected)
            plan = Plan.from_scheduler(self.scheduler, expected)
            answer = Live(
                forecast(plan, model, horizon=horizon, until_settled=True, budget=BUDGET),
                model,
            )
        except Exception:  # a view without a forecast, never a crash
            log.debug("no forecast", exc_info=True)
        if not self._closed:
            self._finished.emit(generation, answer)

    def _model(self, expected: dict) -> DurationModel:
        if self.store is not None:
            return DurationModel.from_store(self.store, expected)
        attempts = []
        for info in self.scheduler.tasks():
            attempts += [a._replace(task_id=info.id) for a in self.scheduler.attempts(info.id)]
        return DurationModel.from_attempts(attempts, expected)

    def _on_finished(self, generation: int, answer) -> None:
        self._running = False
        if self._closed:
            return
        self.last = answer
        self.computed += 1
        self.forecastReady.emit(answer)
        if self._again:
            self._again = False
            self._start()

    def close(self) -> None:
        """Stop: no new forecast, no more answers. Does not wait for one running."""
        self._closed = True
        self._debounce.stop()
        self._periodic.stop()
        self._executor.shutdown(wait=False, cancel_futures=True)
