"""The live forecast, computed off the GUI thread and out of the GUI's process.

``Forecaster.request()`` (called on every engine batch, and every few seconds
while tasks run; every minute while tasks only wait, as a forecast of timers alone
does not change with time; never while nothing waits) starts a forecast at most
``DEBOUNCE_MS`` later. A helper
thread copies the live scheduler (``Plan.from_scheduler``, a few ms per 1,000
tasks) and reads the durations from the run store (or this run's attempts); the
passes themselves run in one spawned process shared by every window
(``ForecastProcess``), so they never take the GIL from the GUI thread or the
engine's workers: run on a thread, they took the window's event-loop lag p99 from
13-33 ms to 180-250 ms (benchmarks/gui_bench.py G2, 2,000 nodes). The answer
comes back on the GUI thread as ``forecastReady(Live)``.

One forecast runs at a time; requests made meanwhile fold into one more after it,
started no sooner than ``MIN_GAP`` after it. A change is in a forecast within
DEBOUNCE + two forecasts: about 1.5 s at 2,000 tasks (0.1 s point pass + 0.5 s of
sampled passes). A forecast that fails (a run watched from another process has no
definitions to copy, the store closed under it) answers None: the views show
nothing.
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import count

from PySide6.QtCore import QObject, QTimer, Signal

from taskloom.engine import Outcome
from taskloom.engine.durations_model import DurationModel
from taskloom.engine.forecast import DONE, Forecast, Plan

from . import relay
from .pacing import paced_ms
from .run_history import store_of

log = logging.getLogger(__name__)

# The longest a window holds its first forecast back while its graph is being drawn.
HOLD_MAX_MS = 30_000
DEBOUNCE_MS = 300  # engine batches come every 33 ms while busy: one forecast per burst
PERIODIC_MS = 5000  # running attempts age even without events
# Only waiting (a timer, a retry): the forecast is the same but for how far ahead it
# looks; once a minute keeps its horizon moving without waking the window for nothing.
WAITING_PERIODIC_MS = 60_000
BUDGET = 0.5  # seconds of sampled passes per forecast
MIN_GAP = 0.5  # seconds between forecasts: a busy run asks every batch
# ...and at least pacing.COST_FACTOR times what the last one cost: the helper's time
# from the plan to the answer (most of it the forecast process sampling, up to BUDGET
# of a core) and the GUI thread's showing it.
MODEL_TTL = 10.0  # seconds a durations model is used before it is read again
# ...but one that knows nothing of a task that has succeeded since is read again after
# this long: on a first run every task is a guess until one has run (then the median).
MODEL_NEWS = 2.0
MAX_RUNS = 20_000  # ghost runs per forecast: a task every 3 s would make 23,000 in 19 h


# The forecast process runs at a lower CPU priority: its sampled passes (up to BUDGET
# of a core each forecast) took a core from a busy run on a 2-core machine.
FORECAST_NICENESS = 10
SERVE = f"from taskloom.engine.forecast import serve; serve(niceness={FORECAST_NICENESS})"


class ForecastProcess:
    """The process the passes run in: ``python -c ...serve()`` on two pipes, started
    at the first forecast and shared by every window (``forecast_process()``); it
    ends when its stdin closes, at exit or when this process dies. It does not
    carry the owner mark (TASKLOOM_OWNER): it runs no task, and a store opened
    again by this process ends every process with its own mark."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one request at a time, whichever window asks
        self._proc: subprocess.Popen | None = None

    def forecast(self, plan, model, **arguments) -> Forecast:
        """``engine.forecast.forecast(plan, model, **arguments)``, computed there. A
        process that died is started again once; ``RuntimeError`` if that fails too."""
        request = pickle.dumps((plan, model, arguments))
        with self._lock:
            for tries_left in (1, 0):
                proc = self._started()
                try:
                    assert proc.stdin is not None and proc.stdout is not None
                    proc.stdin.write(struct.pack("!Q", len(request)) + request)
                    proc.stdin.flush()
                    head = proc.stdout.read(8)
                    answer = pickle.loads(proc.stdout.read(struct.unpack("!Q", head)[0]))
                except (OSError, EOFError, struct.error, pickle.UnpicklingError) as exc:
                    self._end()
                    if not tries_left:
                        raise RuntimeError(f"the forecast process failed: {exc}") from exc
                    continue
                kind, value = answer
                if kind != "ok":
                    raise RuntimeError(f"forecast failed: {value}")
                return value
        raise AssertionError("unreachable")

    def _started(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            env = {k: v for k, v in os.environ.items() if k != "TASKLOOM_OWNER"}
            self._proc = subprocess.Popen(
                [sys.executable, "-c", SERVE],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                close_fds=True,
            )
        return self._proc

    def _end(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        """Let the process end (its stdin closes); kill it if it does not soon."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()


_process: ForecastProcess | None = None
_process_lock = threading.Lock()


def forecast_process() -> ForecastProcess:
    global _process
    with _process_lock:
        if _process is None:
            _process = ForecastProcess()
            atexit.register(_process.close)
        return _process


MIN_HORIZON = 600.0  # the point pass looks at least this far ahead (ghost bars)


@dataclass(frozen=True)
class Live:
    """One answer: the forecast and the durations it used."""

    forecast: Forecast
    model: DurationModel


class Forecaster(QObject):
    forecastReady = Signal(object)  # Live, or None when no forecast could be made
    computing = Signal(float)  # a forecast started, looking this many seconds ahead

    def __init__(
        self, scheduler, expected=None, horizon=None, active=None, running=None, parent=None
    ):
        super().__init__(parent)
        self.scheduler = scheduler
        self.store = store_of(scheduler)
        # Called on the GUI thread when a forecast starts: {task: expected seconds},
        # and how far ahead the views want to see (seconds).
        self.expected: Callable[[], dict[str, float]] = expected or (lambda: {})
        self.horizon: Callable[[], float] = horizon or (lambda: MIN_HORIZON)
        # Whether time alone changes the forecast (something waits or runs): the
        # periodic refresh skips a run that is over.
        self.active = active or (lambda: True)
        # Whether attempts run now (they age: the forecast changes every few seconds).
        self.running = running or (lambda: True)
        self.last: Live | None = None
        self.computed = 0  # forecasts answered (tests wait on it)
        self._generation = count(1)
        self._running = False
        self._again = False
        self._closed = False
        self._cool_until = 0.0  # no forecast starts before this
        self.last_cost = 0.0  # seconds the last forecast took (helper's wall time + showing it)
        self._held = False  # hold(): requests wait for release()
        self.started = 0  # forecasts started (tests count them)
        self._cached_model: tuple[dict, float, DurationModel] | None = None  # helper thread
        self._store_lock = threading.Lock()  # held while the helper thread reads the store
        # Task definitions without their actions, kept between copies of the scheduler;
        # replaced whole (never cleared in place) by forget_definitions on the GUI thread.
        self._definitions: dict = {}
        # Copies the scheduler and waits for the pool; holds the GIL for the copy only.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="taskloom-forecast")
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self._start)
        # Armed after each answer, as often as time changes the forecast (_pace).
        self._periodic = QTimer(self)
        self._periodic.setSingleShot(True)
        self._periodic.timeout.connect(self._periodic_refresh)
        relay.install()  # answers come back through it (a closed window may be gone)

    def _periodic_refresh(self) -> None:
        """The periodic refresh: a new forecast while time alone changes it."""
        if self.active():
            self.request()

    def forget_definitions(self) -> None:
        """Tasks were added, removed or edited: copy their definitions afresh."""
        self._definitions = {}

    def request(self) -> None:
        """Something changed: forecast again soon (requests within DEBOUNCE_MS fold)."""
        if not self._closed and not self._debounce.isActive():
            self._debounce.start(DEBOUNCE_MS)

    def hold(self, at_most_ms: int = HOLD_MAX_MS) -> None:
        """No forecast starts until ``release()`` (or ``at_most_ms`` from now): a big
        file's first forecast copies every task, and made its graph wait for the GIL."""
        self._held = True
        QTimer.singleShot(at_most_ms, self, self.release)

    def release(self) -> None:
        """Forecasts start again; one asked for meanwhile starts now."""
        if not self._held:
            return
        self._held = False
        if self._again_after_hold:
            self._again_after_hold = False
            self._start()

    _again_after_hold = False

    def _start(self) -> None:
        if self._closed:
            return
        if self._held:
            self._again_after_hold = True
            return
        if self._running:
            self._again = True
            return
        cooling = self._cool_until - time.monotonic()
        if cooling > 0:
            self._debounce.start(int(cooling * 1000) + 1)
            return
        self._running = True
        self.started += 1
        generation = next(self._generation)
        expected = dict(self.expected())
        horizon = max(MIN_HORIZON, float(self.horizon()))
        self._executor.submit(self._compute, generation, expected, horizon)
        self.computing.emit(horizon)

    def _compute(self, generation: int, expected: dict, horizon: float) -> None:
        """On the helper thread: never raises, always answers."""
        answer = None
        began = time.monotonic()
        try:
            plan = Plan.from_scheduler(self.scheduler, expected, self._definitions)
            done = [p.definition.id for p in plan.tasks if p.kind == DONE]
            model = self._model(expected, done)
            result = forecast_process().forecast(
                plan,
                model,
                horizon=horizon,
                until_settled=True,
                # Every duration the same guess: each sampled pass would draw it again.
                budget=0.0 if model.knows_nothing else BUDGET,
                max_runs=MAX_RUNS,
            )
            answer = Live(result, model)
        except Exception:  # a view without a forecast, never a crash
            log.debug("no forecast", exc_info=True)
        if not self._closed:
            relay.post(self, "_on_finished", generation, answer, time.monotonic() - began)

    def _model(self, expected: dict, done: list | tuple = ()) -> DurationModel:
        """The durations, re-read at most every ``MODEL_TTL`` seconds: they change slowly,
        and reading them is the costliest part left in this process (every attempt of
        a busy run took the event-loop lag p99 from 30 to 130 ms when read per forecast)."""
        cached = self._cached_model
        now = time.monotonic()
        if cached is not None and cached[0] == expected and now - cached[1] < MODEL_TTL:
            age, model = now - cached[1], cached[2]
            if model.knows_nothing and done:
                pass  # the first durations are in: read them now, not MODEL_NEWS later
            elif age < MODEL_NEWS or all(model.has_history(t) for t in done):
                return model
        if self.store is not None:
            # Under the lock close() takes: the store may be closed right after it,
            # and a query on a closed SQLite connection crashes the process.
            with self._store_lock:
                if self._closed:
                    raise RuntimeError("closed: the store may be closed")
                model = DurationModel.from_store(self.store, expected)
        else:  # no store: this run's successes, from the engine's memory
            samples = {}
            for info in self.scheduler.tasks():
                took = [
                    a.ended - a.started
                    for a in self.scheduler.attempts(info.id)
                    if a.ended is not None and a.outcome == Outcome.SUCCEEDED
                ]
                if took:
                    samples[info.id] = took
            model = DurationModel(samples, expected)
        self._cached_model = (expected, now, model)
        return model

    def _on_finished(self, generation: int, answer, cost: float = 0.0) -> None:
        self._running = False
        self._cool_until = time.monotonic() + MIN_GAP
        if self._closed:
            return
        self.last = answer
        self.computed += 1
        shown = time.thread_time()
        self.forecastReady.emit(answer)
        self.last_cost = cost + time.thread_time() - shown
        # A forecast that knew no duration is all guesses (a first run: "ETA in 8 min" for
        # a 3 s run): the next one, with the first real durations, is not held back.
        guessed = answer is None or answer.model.knows_nothing
        gap = MIN_GAP if guessed else paced_ms(int(MIN_GAP * 1000), self.last_cost) / 1000
        self._cool_until = time.monotonic() + gap
        if self._again:
            self._again = False
            self._start()
        self._pace()

    def _pace(self) -> None:
        """The next forecast that time alone asks for: soon while attempts run, once a
        minute while tasks only wait, none when nothing does (an event asks then)."""
        if self._closed:
            return
        if self.running():
            self._periodic.start(PERIODIC_MS)
        elif self.active():
            self._periodic.start(WAITING_PERIODIC_MS)
        else:
            self._periodic.stop()

    def close(self) -> None:
        """Stop: no new forecast, no more answers, no more store reads. Waits only for a
        store read under way (a few ms), so the caller may close the store next."""
        self._closed = True
        with self._store_lock:
            pass
        self._debounce.stop()
        self._periodic.stop()
        self._executor.shutdown(wait=False, cancel_futures=True)
