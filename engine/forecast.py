"""The forecast: the real scheduler, run ahead on a virtual clock.

Nothing here decides when a task runs. A pass builds a ``Scheduler`` on a
``ManualClock`` with ``SimExecutor``, which "runs" each attempt for a duration
from the ``DurationModel`` instead of running its code, and a driver moves the
clock to whatever comes next: the earliest timer the engine holds
(``Scheduler.next_due``: a scheduled run, a retry, an occurrence, a timeout) or
the end of a simulated attempt. Workers, priorities, dependencies, trigger
rules, cron and intervals, overlap and misfire are the engine's own code.
Everything runs on the calling thread (``SimExecutor`` is a ``SyncExecutor``, so
the engine starts no thread and delivers events inline): a pass is deterministic
for a given seed.

What a pass starts from is a ``Plan``: a workflow file as it would start
(``Plan.from_workflow``), or a copy of a live scheduler's tasks and states
(``Plan.from_scheduler``): settled tasks are replayed at time 0 in no time,
running attempts go on for what remains of them, timers keep their due times.

``forecast()`` makes one pass with each task's point estimate (the schedule,
the critical path and the collisions), then passes with sampled durations, as
many as ``passes`` and ``budget`` allow, for the p50/p90 of the finish.
Times in the results are seconds from the forecast's start (``Forecast.wall``).

The parts, each with one job: ``_forecast/plan.py`` (what a pass starts from),
``_forecast/simulation.py`` (one pass), ``_forecast/report.py`` (the passes
and the answer) and ``_forecast/service.py`` (answering requests from another
process). This module is their public face.
"""

from __future__ import annotations

from ._forecast.plan import (
    DONE,
    DROPPED,
    FAILED,
    NEW,
    RELEASED,
    RUNNING,
    Plan,
    PlannedTask,
)
from ._forecast.report import Forecast, critical_path, forecast
from ._forecast.service import serve
from ._forecast.simulation import (
    DEFAULT_HORIZON,
    MIN_QUEUE_WAIT,
    Collision,
    PassResult,
    ReplayedFailure,
    SampledFailure,
    SimExecutor,
    SimRun,
    simulate,
)

__all__ = [
    "DEFAULT_HORIZON",
    "DONE",
    "DROPPED",
    "FAILED",
    "MIN_QUEUE_WAIT",
    "NEW",
    "RELEASED",
    "RUNNING",
    "Collision",
    "Forecast",
    "PassResult",
    "Plan",
    "PlannedTask",
    "ReplayedFailure",
    "SampledFailure",
    "SimExecutor",
    "SimRun",
    "critical_path",
    "forecast",
    "serve",
    "simulate",
]
