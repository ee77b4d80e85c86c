"""The six workloads. Each function does one run on one system and returns its metrics.

Sizes live in ``SIZES`` (``full`` is what the README reports; ``quick`` is the
smoke-test size). Timings use ``time.perf_counter``; memory uses ``tracemalloc``.
"""

from __future__ import annotations

import gc
import itertools
import random
import statistics
import threading
import time
import tracemalloc

SEED = 20260401
LOW, HIGH = 0, 10  # W6 priorities

SIZES = {
    "full": {
        "W1": {"n": 20_000, "workers": 4},
        "W2": {"n": 2_000, "span": 2.0},
        "W3": {"n": 20_000, "small": 5_000, "shuffled": 8_000, "shuffled_small": 2_000},
        "W45": {"n": 100_000, "cancel": 50_000},
        "W6": {"low": 1_000, "high": 100},
    },
    "quick": {
        "W1": {"n": 2_000, "workers": 4},
        "W2": {"n": 200, "span": 0.3},
        "W3": {"n": 2_000, "small": 500, "shuffled": 800, "shuffled_small": 200},
        "W45": {"n": 4_000, "cancel": 2_000},
        "W6": {"low": 100, "high": 10},
    },
}

# stdlib sched.cancel is O(n) (list.remove + heapify with Python-level comparisons):
# 50,000 cancels on 100,000 pending would take an hour, so it is timed on fewer.
CANCEL_CAP = {"sched": 200}

TIMEOUT_S = 180.0  # a workload that has not finished by then is reported as a timeout


def noop():
    pass


class Countdown:
    """``on_done`` callback that sets ``done`` after ``n`` calls (from any thread)."""

    def __init__(self, n: int):
        self.n = n
        self.done = threading.Event()
        self.failed = 0
        self._count = itertools.count(1)  # next() on a count is atomic under the GIL
        if n == 0:
            self.done.set()

    def __call__(self, ok: bool) -> None:
        if not ok:
            self.failed += 1
        if next(self._count) == self.n:
            self.done.set()


class NotFinished(RuntimeError):
    pass


def _run_to_end(driver, countdown: Countdown) -> None:
    if not driver.run_until(countdown.done, TIMEOUT_S):
        raise NotFinished(f"not finished after {TIMEOUT_S:.0f} s")
    if countdown.failed:
        raise NotFinished(f"{countdown.failed} tasks failed or were skipped")


# W1 --------------------------------------------------------------------------------


def throughput(make, n: int, workers: int) -> dict:
    """``n`` no-op tasks due now into a started scheduler, one listener; end to end."""
    countdown = Countdown(n)
    driver = make(workers, countdown)
    try:
        driver.start()
        t0 = time.perf_counter()
        for _ in range(n):
            driver.schedule(noop)
        t1 = time.perf_counter()
        _run_to_end(driver, countdown)
        t2 = time.perf_counter()
    finally:
        driver.shutdown()
    return {"tasks_per_s": n / (t2 - t0), "schedule_us": (t1 - t0) / n * 1e6}


# W2 --------------------------------------------------------------------------------


def _recorder(late: list, index: int, due: float):
    def record():
        late[index] = time.monotonic() - due

    return record


def lateness(make, n: int, span: float) -> dict:
    """``n`` timers due uniformly over ``span`` seconds; start minus due, in ms."""
    rng = random.Random(SEED)
    offsets = sorted(rng.uniform(0.0, span) for _ in range(n))
    late = [0.0] * n
    countdown = Countdown(n)
    driver = make(4, countdown)
    lead = 0.5  # scheduling and start() finish before the first timer is due
    try:
        base = time.monotonic() + lead
        for i, offset in enumerate(offsets):
            driver.schedule(_recorder(late, i, base + offset), run_at=base + offset)
        driver.start()
        setup_overran = time.monotonic() > base
        _run_to_end(driver, countdown)
    finally:
        driver.shutdown()
    late_ms = sorted(x * 1e3 for x in late)
    return {
        "p50_ms": statistics.median(late_ms),
        "p99_ms": late_ms[min(n - 1, int(0.99 * n))],
        "max_ms": late_ms[-1],
        "setup_overran": setup_overran,
    }


# W3 --------------------------------------------------------------------------------


def chain_specs(n: int) -> list[tuple[str, tuple[str, ...]]]:
    return [(f"t{i}", (f"t{i - 1}",) if i else ()) for i in range(n)]


def dag_specs(n: int, seed: int = SEED) -> list[tuple[str, tuple[str, ...]]]:
    """Each task depends on up to 3 uniformly chosen earlier tasks."""
    rng = random.Random(seed)
    specs = []
    for i in range(n):
        k = min(i, rng.randint(0, 3))
        specs.append((f"t{i}", tuple(f"t{j}" for j in rng.sample(range(i), k))))
    return specs


def shuffled_specs(n: int, seed: int = SEED) -> list[tuple[str, tuple[str, ...]]]:
    """Each task depends on 1-3 of the 10 before it (thousands of levels deep), the
    tasks in random order: most are added before some of their dependencies."""
    rng = random.Random(seed)
    specs = [
        (f"t{i}", tuple(sorted({f"t{rng.randrange(max(0, i - 10), i)}" for _ in range(3)})))
        if i
        else ("t0", ())
        for i in range(n)
    ]
    rng.shuffle(specs)
    return specs


def _add_graph(make, specs, run: bool) -> tuple[float, float | None]:
    countdown = Countdown(len(specs))
    driver = make(4, countdown)
    try:
        gc.collect()  # the last run's garbage is not this run's time (nor its full GC passes)
        t0 = time.perf_counter()
        for name, deps in specs:
            driver.add(noop, name, deps)
        add_s = time.perf_counter() - t0
        run_s = None
        if run:
            t1 = time.perf_counter()
            driver.start()
            _run_to_end(driver, countdown)
            run_s = time.perf_counter() - t1
    finally:
        driver.shutdown()
    return add_s, run_s


def graph(make, n: int, small: int, shuffled: int, shuffled_small: int) -> dict:
    """A chain and a random DAG: add time (cycle checks included), run time, 4x scaling.
    Taskloom also adds a deep DAG in random order (dependents before their
    dependencies; the textbook DAG needs dependencies first): the add time's scaling."""
    metrics = {}
    for shape, specs_of in (("chain", chain_specs), ("dag", dag_specs)):
        small_add, _ = _add_graph(make, specs_of(small), run=False)
        add_s, run_s = _add_graph(make, specs_of(n), run=True)
        metrics[f"{shape}_add_s"] = add_s
        metrics[f"{shape}_run_s"] = run_s
        metrics[f"{shape}_add_ratio"] = add_s / small_add
    if make.name.startswith("taskloom"):
        # Best of 3 each: a ratio of two single runs on a loaded machine is mostly noise.
        small_add = min(_add_graph(make, shuffled_specs(shuffled_small), False)[0] for _ in "123")
        add_s = min(_add_graph(make, shuffled_specs(shuffled), False)[0] for _ in "123")
        metrics["shuffled_add_s"] = add_s
        metrics["shuffled_add_ratio"] = add_s / small_add
    return metrics


# W4 + W5 ---------------------------------------------------------------------------


def _pending_pass(make, n: int, n_cancel: int, traced: bool) -> dict:
    """Schedule ``n`` timers an hour ahead, then cancel every other one, ``n_cancel`` in all."""
    if traced:
        tracemalloc.start()
    try:
        driver = make(4, None)
        handles = [None] * n  # allocated up front so the harness adds nothing per task
        victims = range(0, 2 * n_cancel, 2)
        try:
            driver.start()
            base = time.monotonic() + 3600.0
            gc.collect()
            m0 = tracemalloc.get_traced_memory()[0]
            t0 = time.perf_counter()
            for i in range(n):
                handles[i] = driver.schedule(noop, run_at=base + i * 1e-3)
            t1 = time.perf_counter()
            gc.collect()
            m1 = tracemalloc.get_traced_memory()[0]
            t2 = time.perf_counter()
            for i in victims:
                driver.cancel(handles[i])
                handles[i] = None  # the harness lets go too: what stays is the scheduler's
            t3 = time.perf_counter()
            gc.collect()
            m2 = tracemalloc.get_traced_memory()[0]
            removed = traced and driver.remove_cancelled()
            gc.collect()
            m3 = tracemalloc.get_traced_memory()[0]
        finally:
            driver.shutdown()
    finally:
        if traced:
            tracemalloc.stop()
    return {
        "schedule_us": (t1 - t0) / n * 1e6,
        "cancel_us": (t3 - t2) / len(victims) * 1e6,
        "bytes_per_task": (m1 - m0) / n,
        "bytes_freed_per_cancel": (m1 - m2) / len(victims),
        "held_pct": 100.0 * (m2 - m0) / (m1 - m0) if m1 > m0 else None,
        "held_after_remove_pct": 100.0 * (m3 - m0) / (m1 - m0) if removed and m1 > m0 else None,
    }


def pending(make, n: int, cancel: int, system: str, measure_memory: bool = True) -> dict:
    """W4 (memory, schedule cost) and W5 (cancel cost, memory freed).

    Times come from an untraced pass (tracemalloc slows allocation); bytes from a
    traced one, which the runner does once only: they do not vary between runs.
    """
    n_cancel = min(cancel, CANCEL_CAP.get(system, cancel))
    fast = _pending_pass(make, n, n_cancel, traced=False)
    w4 = {"us_per_schedule": fast["schedule_us"]}
    w5 = {"us_per_cancel": fast["cancel_us"], "cancelled": n_cancel}
    if measure_memory:
        mem = _pending_pass(make, n, n_cancel, traced=True)
        w4["bytes_per_task"] = mem["bytes_per_task"]
        w5["freed_pct"] = 100.0 * mem["bytes_freed_per_cancel"] / mem["bytes_per_task"]
        # Only comparable when the full number was cancelled (not for capped sched).
        w5["held_after_pct"] = mem["held_pct"] if n_cancel == cancel else None
        w5["held_after_remove_pct"] = mem["held_after_remove_pct"]
    return {"W4": w4, "W5": w5}


# W6 --------------------------------------------------------------------------------


def _marker(order: list, tag: str):
    def mark():
        order.append(tag)

    return mark


def _run_order(make, low: int, high: int, due: float | None) -> list[str]:
    order: list[str] = []
    countdown = Countdown(low + high)
    driver = make(1, countdown)
    try:
        for _ in range(low):
            driver.schedule(_marker(order, "low"), run_at=due, priority=LOW)
        for _ in range(high):
            driver.schedule(_marker(order, "high"), run_at=due, priority=HIGH)
        driver.start()
        _run_to_end(driver, countdown)
    finally:
        driver.shutdown()
    return order


def _mean_high_position(order: list[str]) -> float:
    return statistics.fmean(pos for pos, tag in enumerate(order, start=1) if tag == "high")


def priority(make, low: int, high: int) -> dict:
    """``low`` tasks at priority 0 then ``high`` at priority 10, all due, 1 worker.

    Everything is scheduled before start(). First each task is "due now" at its
    own schedule call (so due times differ by microseconds), then, where the
    system has timers, all share one due time already past. Ideal mean position
    of the high ones: (high + 1) / 2.
    """
    order = _run_order(make, low, high, due=None)
    shared = None
    if make.timers:
        shared = _mean_high_position(_run_order(make, low, high, due=time.monotonic()))
    return {
        "mean_high_position": _mean_high_position(order),
        "mean_high_position_same_due": shared,
        "ideal": (high + 1) / 2,
    }
