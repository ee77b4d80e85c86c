"""The forecast's answer: the point pass, the sampled passes within a budget,
the critical path and the ``Forecast`` that says it all (see ``engine/forecast.py``)."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..durations_model import DurationModel, percentile
from .plan import Plan, _repeating
from .simulation import Collision, SimRun, simulate


@dataclass
class Forecast:
    """The answer. ``runs``, ``collisions``, ``critical_path`` and the expected
    starts and finishes come from the point-estimate pass; ``finish_p50`` and
    ``finish_p90`` from the sampled passes (``passes`` of them)."""

    wall: datetime
    horizon: float | None
    workers: int
    runs: list[SimRun]
    collisions: list[Collision]
    finish: float | None
    finish_p50: float | None
    finish_p90: float | None
    passes: int
    critical_path: list[str]
    starts: dict[str, float]
    finishes: dict[str, float]
    seconds_per_pass: float
    origin: float = 0.0  # the live scheduler's clock at t = 0 (Plan.origin)
    reached: float = 0.0  # where the point pass stopped (the horizon, or max_runs sooner)

    def at(self, seconds: float) -> datetime:
        """The wall time ``seconds`` after the forecast's start."""
        return self.wall + timedelta(seconds=seconds)

    def to_json(self) -> dict[str, Any]:
        def when(seconds: float | None) -> str | None:
            return None if seconds is None else self.at(seconds).isoformat(timespec="seconds")

        return {
            "start": self.wall.isoformat(timespec="seconds"),
            "horizon_seconds": self.horizon,
            "workers": self.workers,
            "finish": when(self.finish),
            "finish_p50": when(self.finish_p50),
            "finish_p90": when(self.finish_p90),
            "passes": self.passes,
            "critical_path": self.critical_path,
            "runs": [
                {
                    "task": r.task_id,
                    "ready": when(r.ready),
                    "start": when(r.start),
                    "end": when(r.end),
                    "seconds": round(r.end - r.start, 3),
                }
                for r in self.runs
                if not r.replay
            ],
            "collisions": [
                {
                    "kind": c.kind,
                    "task": c.task_id,
                    "at": when(c.at),
                    "seconds": round(c.seconds, 3),
                    "detail": c.detail,
                }
                for c in self.collisions
            ],
        }


def critical_path(runs: Iterable[SimRun], deps: Mapping[str, Iterable[str]]) -> list[str]:
    """The chain of remaining work that decides the finish, first task first. From the
    run that ends last, each step goes back to what made the run start when it did:
    the dependency that ended last, when the run started as it ended; else, when the
    run waited for a worker after it was ready, the run that freed the worker (so a
    chain bound by too few workers shows as one). A run that started at its own time
    (or was running already) ends the chain. Replays (work done) are not on it."""
    done = [r for r in runs if not r.replay]
    if not done:
        return []
    last: dict[str, SimRun] = {}
    ending_at: dict[float, list[SimRun]] = {}
    for run in done:
        if run.task_id not in last or run.end > last[run.task_id].end:
            last[run.task_id] = run
        ending_at.setdefault(run.end, []).append(run)
    current = max(last.values(), key=lambda r: (r.end, r.start))
    path = [current.task_id]
    while current.started_before is None:
        before = [
            last[d]
            for d in deps.get(current.task_id, ())
            if d in last and last[d].end <= current.start + 1e-9
        ]
        dep = max(before, key=lambda r: r.end) if before else None
        step: SimRun | None = None
        if dep is not None and dep.end >= current.start - 1e-9:
            step = dep  # released by it
        elif current.start > current.ready + 1e-9:  # ready, but every worker was busy
            freed = [r for r in ending_at.get(current.start, ()) if r.task_id not in path]
            step = min(freed, key=lambda r: r.start) if freed else dep
        if step is None or step.task_id in path:
            break
        current = step
        path.append(current.task_id)
    path.reverse()
    return path


def _check_forecast_arguments(horizon: object, passes: object, budget: object) -> None:
    """A refused forecast says which argument and why (nothing has run yet)."""

    def seconds(value: object) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    if horizon is not None and not (seconds(horizon) and 0 < horizon < math.inf):  # type: ignore[operator]
        raise ValueError(f"forecast: horizon must be None or seconds > 0, got {horizon!r}")
    if isinstance(passes, bool) or not isinstance(passes, int) or passes < 0:
        raise ValueError(f"forecast: passes must be an int >= 0, got {passes!r}")
    if budget is not None and not (seconds(budget) and budget >= 0):  # type: ignore[operator]
        raise ValueError(f"forecast: budget must be None or seconds >= 0, got {budget!r}")


def forecast(
    plan: Plan,
    model: DurationModel | None = None,
    *,
    horizon: float | None = None,
    until_settled: bool = False,
    passes: int = 100,
    budget: float | None = 1.0,
    seed: int = 0,
    max_runs: int | None = None,
) -> Forecast:
    """The point-estimate pass, then up to ``passes`` sampled ones within ``budget``
    seconds of CPU time (None: no limit; the count is then deterministic for a seed).
    ``max_runs`` bounds the point pass as in ``simulate`` (``Forecast.reached``)."""
    _check_forecast_arguments(horizon, passes, budget)
    model = model or DurationModel(expected=plan.expected)
    began = time.perf_counter()
    point = simulate(plan, model, horizon=horizon, until_settled=until_settled, max_runs=max_runs)
    per_pass = time.perf_counter() - began
    finishes = []
    rng = random.Random(seed)
    done = 0
    for _ in range(passes if point.finish is not None else 0):  # nothing to finish: no ETA
        if budget is not None and time.perf_counter() - began + per_pass > budget:
            break
        sampled = simulate(
            plan,
            model,
            rng=random.Random(rng.getrandbits(64)),
            until_settled=True,  # only the finish matters: no need to go past it
        )
        done += 1
        if sampled.finish is not None:
            finishes.append(sampled.finish)
    finishes.sort()
    deciding = [r for r in point.runs if point.finish is None or r.end <= point.finish + 1e-9]
    repeating = _repeating(plan)
    path = critical_path([r for r in deciding if r.task_id not in repeating], plan.deps)
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    for r in point.runs:
        if r.replay:
            continue
        starts.setdefault(r.task_id, r.start)
        ends[r.task_id] = r.end
    return Forecast(
        wall=plan.wall,
        horizon=horizon,
        workers=plan.workers,
        runs=point.runs,
        collisions=sorted(point.collisions, key=lambda c: (c.at, c.task_id)),
        finish=point.finish,
        finish_p50=percentile(finishes, 0.5) if finishes else point.finish,
        finish_p90=percentile(finishes, 0.9) if finishes else point.finish,
        passes=done,
        critical_path=path,
        starts=starts,
        finishes=ends,
        seconds_per_pass=per_pass,
        origin=plan.origin,
        reached=point.end,
    )
