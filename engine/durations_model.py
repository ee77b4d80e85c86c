"""How long a task's runs take, learned from the store: what the forecast samples.

Per task, the durations of its last successful attempts (every run of the store,
newest kept), summarised as the median, the 90th percentile and a recency-weighted
estimate in which each older run counts ``DECAY`` times less than the next one, so
a task that got slower last week is forecast by its last week. A task that never
succeeded has the workflow's ``expected`` key, if any; else the median of the tasks
that did (or ``FALLBACK`` seconds when nothing ran yet), marked as a guess.

Sampling draws one of the task's own durations, with the same recency weights
(a bootstrap): no distribution is assumed, and no dependency beyond the standard
library is needed. ``fails(tid, rng)`` draws whether an attempt fails, at the share
of the task's last finished attempts that failed, so sampled forecasts go through
the engine's retries as often as history says.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate

KEEP = 50  # successful attempts kept per task: enough for a p90, few enough to follow a trend
DECAY = 0.85  # weight of a run relative to the next newer one
FALLBACK = 1.0  # seconds, for a task when nothing at all has run yet
SLOW_MIN_RUNS = 3  # a "slower than usual" cue needs this many past runs to mean anything
EXPECTED_SPREAD = 0.1  # an ``expected`` duration is sampled within +-10%

HISTORY, EXPECTED, GUESS = "history", "expected", "guess"


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of sorted values, linearly interpolated."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    return sorted_values[low] * (1 - fraction) + sorted_values[high] * fraction


@dataclass(frozen=True, slots=True)
class DurationStats:
    """What is known of one task's durations. ``samples`` are oldest first (seconds);
    ``source`` is ``history``, ``expected`` (the workflow key) or ``guess``."""

    task_id: str
    samples: tuple[float, ...]
    median: float
    p90: float
    recent: float  # recency-weighted median: the point estimate the forecast uses
    source: str

    @property
    def runs(self) -> int:
        return len(self.samples)


def _weighted_median(samples: Sequence[float]) -> float:
    weights = [DECAY ** (len(samples) - 1 - i) for i in range(len(samples))]
    pairs = sorted(zip(samples, weights, strict=True))
    half = sum(weights) / 2
    total = 0.0
    for value, weight in pairs:
        total += weight
        if total >= half:
            return value
    return pairs[-1][0]


def stats_of(task_id: str, samples: Sequence[float]) -> DurationStats:
    """The summary of a task's successful durations, oldest first (at least one)."""
    ordered = sorted(samples)
    return DurationStats(
        task_id,
        tuple(samples),
        percentile(ordered, 0.5),
        percentile(ordered, 0.9),
        _weighted_median(samples),
        HISTORY,
    )


class DurationModel:
    """Durations per task, from history (``from_store``) or given samples, with the
    workflow's ``expected`` seconds for tasks that have none. Read-only once built,
    so one model may be shared by forecast passes on other threads."""

    def __init__(
        self,
        samples: Mapping[str, Sequence[float]] | None = None,
        expected: Mapping[str, float | None] | None = None,
        failures: Mapping[str, float] | None = None,
    ) -> None:
        self._stats: dict[str, DurationStats] = {}
        for task_id, values in (samples or {}).items():
            kept = [float(v) for v in values if v is not None and math.isfinite(v) and v >= 0]
            if kept:
                self._stats[task_id] = stats_of(task_id, kept[-KEEP:])
        self._expected = {t: float(s) for t, s in (expected or {}).items() if s is not None}
        # Share of finished attempts that failed, per task (0..1); none known: 0.
        self._failures = {t: min(1.0, max(0.0, float(r))) for t, r in (failures or {}).items()}
        medians = sorted(s.median for s in self._stats.values())
        self.fallback = percentile(medians, 0.5) if medians else FALLBACK
        # Cumulative recency weights per task, for sampling (built once, bisected per draw).
        self._cumulative: dict[str, list[float]] = {}

    @classmethod
    def from_store(
        cls, store, expected: Mapping[str, float | None] | None = None, keep: int = KEEP
    ) -> DurationModel:
        """Learn from every run a store kept: the last ``keep`` successful attempts of
        each task (``SQLiteStore.succeeded_durations``), and how often its last
        ``keep`` finished attempts failed (``SQLiteStore.failure_rates``)."""
        return cls(store.succeeded_durations(keep), expected, store.failure_rates(keep))

    @classmethod
    def from_attempts(
        cls, attempts: Iterable, expected: Mapping[str, float | None] | None = None
    ) -> DurationModel:
        """Learn from ``Attempt`` records (their ``task_id`` set, in any order)."""
        by_task: dict[str, list[tuple[float, float]]] = {}
        finished: dict[str, list[bool]] = {}
        for a in attempts:
            outcome = str(a.outcome)
            if outcome in ("succeeded", "failed") and a.ended is not None and a.task_id:
                finished.setdefault(a.task_id, []).append(outcome == "failed")
                if outcome == "succeeded":
                    by_task.setdefault(a.task_id, []).append((a.started, a.ended - a.started))
        failures = {t: sum(f) / len(f) for t, f in finished.items()}
        return cls({t: [d for _, d in sorted(v)] for t, v in by_task.items()}, expected, failures)

    # -- questions ------------------------------------------------------------------
    def stats(self, task_id: str) -> DurationStats:
        """What is known of the task: its history, else its ``expected`` key, else a guess."""
        found = self._stats.get(task_id)
        if found is not None:
            return found
        seconds = self._expected.get(task_id)
        source = EXPECTED
        if seconds is None:
            seconds, source = self.fallback, GUESS
        return DurationStats(task_id, (), seconds, seconds, seconds, source)

    def failure_rate(self, task_id: str) -> float:
        """The share of the task's last finished attempts that failed (0 if none known)."""
        return self._failures.get(task_id, 0.0)

    def fails(self, task_id: str, rng: random.Random) -> bool:
        """Whether a sampled attempt of the task fails (at its ``failure_rate``)."""
        rate = self._failures.get(task_id, 0.0)
        return rate > 0.0 and rng.random() < rate

    def has_history(self, task_id: str) -> bool:
        return task_id in self._stats

    @property
    def knows_nothing(self) -> bool:
        """No task has a past run or an ``expected`` duration: every estimate is the
        same guess (``FALLBACK``), as on a workflow's first run before anything ended."""
        return not self._stats and not self._expected

    def estimate(self, task_id: str) -> float:
        """The point estimate of one run: recency-weighted history, or expected, or a guess."""
        return self.stats(task_id).recent

    def is_slow(self, task_id: str, elapsed: float) -> bool:
        """Whether a run ``elapsed`` seconds old is already slower than the task's p90
        (only for a task with ``SLOW_MIN_RUNS`` past runs: two runs make no p90)."""
        found = self._stats.get(task_id)
        return found is not None and found.runs >= SLOW_MIN_RUNS and elapsed > found.p90

    def sample(self, task_id: str, rng: random.Random) -> float:
        """One duration drawn from the task's history, newer runs more likely; an
        ``expected`` or guessed one within +-``EXPECTED_SPREAD``."""
        found = self._stats.get(task_id)
        if found is None:
            base = self.estimate(task_id)
            return base * (1 + EXPECTED_SPREAD * (2 * rng.random() - 1))
        cumulative = self._cumulative.get(task_id)
        if cumulative is None:
            n = found.runs
            cumulative = list(accumulate(DECAY ** (n - 1 - i) for i in range(n)))
            self._cumulative[task_id] = cumulative
        index = bisect_right(cumulative, rng.random() * cumulative[-1])
        return found.samples[min(index, found.runs - 1)]

    def remaining(self, task_id: str, elapsed: float, rng: random.Random | None = None) -> float:
        """How much longer a run already ``elapsed`` seconds old will take: from the past
        runs that lasted longer (their median, or one drawn with ``rng``). A run
        already slower than all of them is given a tenth of its age again; one of a
        task nothing is known of (a guess), past the guess, as long again as it has
        run: half the time it ends sooner (saying "in 1 s" over and over was untrue)."""
        found = self._stats.get(task_id)
        samples = found.samples if found is not None else (self.estimate(task_id),)
        longer = sorted(s for s in samples if s > elapsed)
        if not longer:
            if found is None and task_id not in self._expected:
                return elapsed
            return 0.1 * elapsed
        if rng is None:
            return percentile(longer, 0.5) - elapsed
        return longer[int(rng.random() * len(longer))] - elapsed
